"""`memhealth init`: create `.memhealth/` and wire the hooks into Claude Code settings.

    actions = init_project("/path/to/project", settings="local", dry_run=False)

Idempotent: a second run changes nothing. Existing settings entries are kept; an entry of
ours whose command changed (a new interpreter path) is updated in place. An unparsable
settings file is never overwritten: SettingsError before anything is written. Timeouts are
written in seconds (Claude Code reads seconds; the reference design wrote milliseconds and
so gave its 3 s prompt hook 50 minutes).
"""

from __future__ import annotations

import json
import os
import shlex
import sys

from memhealth.config import render_default
from memhealth.errors import SettingsError
from memory_core.layout import CONFIG_NAME, DB_NAME, STATE_DIR

# Claude Code event -> (our event, matcher or None, timeout config key, status message)
WIRING = (
    ("SessionStart", "session-start", None, 30, "memhealth: memory health gate"),
    ("UserPromptSubmit", "prompt", None, 10, "memhealth: recalling"),
    ("PreToolUse", "pre-tool", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash", 5, None),
    ("PostToolUse", "post-tool", "Read|Edit|Write|MultiEdit|NotebookEdit|Bash", 5, None),
    ("PreCompact", "pre-compact", None, 10, None),
    ("Stop", "stop", None, 5, None),
    ("SessionEnd", "session-end", None, 5, None),
)
MARKER = " hook "  # our commands are "<launcher> hook <event>"

GITIGNORE = """# memhealth state: the database and runtime files are per machine.
memory.db
memory.db-*
spill.ndjson*
journal.ndjson*
store-id
.config-cache.json
alerts.ndjson
*.tmp
"""


def launcher_argv() -> list[str]:
    """The absolute argv that runs memhealth with the interpreter that has it installed."""
    script = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "memhealth")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return [script]
    return [os.path.abspath(sys.executable), "-m", "memhealth"]


def launcher() -> str:
    """launcher_argv() as one shell-quoted command, for settings.json."""
    return shlex.join(launcher_argv())


def hook_command(event: str, launch: str | None = None) -> str:
    return f"{launch or launcher()} hook {event}"


def _is_ours(command: str, event: str) -> bool:
    return isinstance(command, str) and command.rstrip().endswith(f"{MARKER.strip()} {event}") \
        and "memhealth" in command


def settings_path(root: str, which: str) -> str:
    if which not in ("local", "shared"):
        raise SettingsError(f"--settings must be local or shared, not {which!r}")
    name = "settings.local.json" if which == "local" else "settings.json"
    return os.path.join(root, ".claude", name)


def read_settings(path: str) -> dict:
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {exc}; nothing was written") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix it by hand, nothing was written") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} holds a JSON {type(data).__name__}, expected an object; nothing was written")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise SettingsError(f"{path}: \"hooks\" is not an object of lists; nothing was written")
    return data


def merge_hooks(settings: dict, launch: str, timeouts: dict | None = None) -> tuple[dict, list[str]]:
    """Return (new settings, changes). Never drops or reorders an existing entry."""
    timeouts = timeouts or {}
    merged = json.loads(json.dumps(settings))
    hooks = merged.setdefault("hooks", {})
    changes = []
    for claude_event, event, matcher, timeout, status in WIRING:
        timeout = int(timeouts.get(event, timeout))
        wanted = {"type": "command", "command": hook_command(event, launch), "timeout": timeout}
        if status:
            wanted["statusMessage"] = status
        groups = hooks.setdefault(claude_event, [])
        found = False
        for group in groups:
            if not isinstance(group, dict):
                continue
            for i, handler in enumerate(group.get("hooks") or []):
                if isinstance(handler, dict) and _is_ours(handler.get("command", ""), event):
                    found = True
                    if handler != wanted:
                        group["hooks"][i] = wanted
                        changes.append(f"updated {claude_event} → {wanted['command']} (timeout {timeout}s)")
        if not found:
            group = {"hooks": [wanted]}
            if matcher:
                group = {"matcher": matcher, "hooks": [wanted]}
            groups.append(group)
            changes.append(f"added {claude_event} → {wanted['command']} (timeout {timeout}s)")
    return merged, changes


def _write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def init_project(root: str, settings: str = "local", dry_run: bool = False,
                 launch: str | None = None, timeouts: dict | None = None) -> list[str]:
    """Set up memhealth in `root`; return the list of actions taken (or that would be)."""
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise SettingsError(f"{root} is not a directory")
    spath = settings_path(root, settings)
    current = read_settings(spath)  # refuse before writing anything
    merged, hook_changes = merge_hooks(current, launch or launcher(), timeouts)

    actions = []
    state = os.path.join(root, STATE_DIR)
    if not os.path.isdir(state):
        actions.append(f"created {state}/ (mode 0700)")
        if not dry_run:
            os.makedirs(state, mode=0o700, exist_ok=True)
    else:
        st = os.lstat(state)
        if st.st_mode & 0o022:
            # group- or world-writable state lets another user plant a symlink or a spill
            # row: tighten it to the owner, and say so
            actions.append(f"tightened {state}/ from mode {st.st_mode & 0o777:04o} to 0700 "
                           "(it was writable by other users)")
            if not dry_run:
                os.chmod(state, 0o700)
    config = os.path.join(state, CONFIG_NAME)
    if not os.path.exists(config):
        actions.append(f"wrote {config} (commented defaults)")
        if not dry_run:
            _write_atomic(config, render_default(), 0o600)
    ignore = os.path.join(state, ".gitignore")
    if not os.path.exists(ignore):
        actions.append(f"wrote {ignore}")
        if not dry_run:
            _write_atomic(ignore, GITIGNORE, 0o600)
    db = os.path.join(state, DB_NAME)
    if not os.path.exists(db):
        actions.append(f"created {db}")
        if not dry_run:
            from memory_core.db import connect

            connect(db).close()
    if hook_changes:
        actions.extend(hook_changes)
        actions.append(f"{'would write' if dry_run else 'wrote'} {spath}")
        if not dry_run:
            os.makedirs(os.path.dirname(spath), exist_ok=True)
            _write_atomic(spath, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    return actions
