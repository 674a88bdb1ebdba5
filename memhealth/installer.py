"""`memhealth init`: create `.memhealth/` and wire the hooks into Claude Code settings.

    actions = init_project("/path/to/project", settings="local", dry_run=False)

Idempotent: a second run changes nothing. Existing settings entries are kept; an entry of
ours whose command changed (a new interpreter path) is updated in place.

Local settings (per machine, not committed) run this machine's interpreter by absolute path.
Shared settings (`.claude/settings.json`, committed) must work on a teammate's machine, so
they run a portable launcher committed beside the config, `.memhealth/bin/memhealth`, which
finds memhealth at run time ($MEMHEALTH_BIN, then `memhealth` on PATH, then a python3 that
imports it). Where none is found, SessionStart prints one line to the person and every other
hook exits 0 silently: never an error on every hook. An unparsable
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
from memory_core.store.layout import CONFIG_NAME, DB_NAME, STATE_DIR

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
# -- the HTTP transport (`memhealth init --transport http`) ---------------------------------
# Events Claude Code POSTs to `memhealth serve` instead of starting a process: the per-event
# hooks on the turn's path. SessionStart stays a command (CLI 2.1.332 does not call a
# SessionStart http entry in a -p session, and it must check that serve answers), and so do
# PreCompact and SessionEnd (the re-arm and the capture hand-off must run with serve down).
HTTP_EVENTS = ("prompt", "pre-tool", "post-tool", "stop")
HOOK_PATH = "/memhealth/hook/"  # telemetry.hook_endpoint.PREFIX
TRANSPORTS = ("command", "http")
MARKER = " hook "
NOTE = "note: "  # an action line that reports, and changes nothing  # our commands are "<launcher> hook <event>"

GITIGNORE = """# memhealth state: the database and runtime files are per machine.
memory.db
memory.db-*
spill.ndjson*
journal.ndjson*
store-id
.config-cache.json
alerts.ndjson
hook-secret
serve.log
serve.pid
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


SHIM_REL = os.path.join(STATE_DIR, "bin", "memhealth")
# Claude Code sets CLAUDE_PROJECT_DIR for hook commands; "." covers one that does not (hooks
# run from the project directory)
SHARED_LAUNCHER = '"${CLAUDE_PROJECT_DIR:-.}"/' + SHIM_REL.replace(os.sep, "/")
NOT_INSTALLED = ("memhealth is not installed on this machine, so this project's memory hooks are "
                 "off. Install it (pip install memhealth, or pipx) so `memhealth` is on PATH, or set "
                 "MEMHEALTH_BIN to its command; the other hooks stay silent until then.")

SHIM = """#!/bin/sh
# memhealth launcher for .claude/settings.json (committed; written by `memhealth init
# --settings shared`). It holds no path from the machine that wrote it: it finds memhealth
# here, at run time. Not found: SessionStart says so in one line, other hooks exit 0.
if [ -n "${MEMHEALTH_BIN:-}" ]; then
    exec $MEMHEALTH_BIN "$@"
fi
self_dir=$(cd "$(dirname "$0")" 2>/dev/null && pwd -P)
IFS_SAVE=$IFS; IFS=:
for dir in $PATH; do
    IFS=$IFS_SAVE
    [ -n "$dir" ] || continue
    candidate="$dir/memhealth"
    if [ -f "$candidate" ] && [ -x "$candidate" ]; then
        cand_dir=$(cd "$dir" 2>/dev/null && pwd -P)
        [ "$cand_dir" = "$self_dir" ] && continue   # not this launcher again
        exec "$candidate" "$@"
    fi
done
IFS=$IFS_SAVE
for py in python3 python; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import memhealth" >/dev/null 2>&1; then
        exec "$py" -m memhealth "$@"
    fi
done
cat >/dev/null 2>&1   # Claude Code's payload: read it so the writer never sees a broken pipe
if [ "$1" = "hook" ] && [ "$2" = "session-start" ]; then
    printf '%s\\n' __MESSAGE__
fi
exit 0
""".replace("__MESSAGE__", shlex.quote(json.dumps({"systemMessage": NOT_INSTALLED})))


def hook_command(event: str, launch: str | None = None) -> str:
    return f"{launch or launcher()} hook {event}"


def _is_ours(command: str, event: str) -> bool:
    return isinstance(command, str) and command.rstrip().endswith(f"{MARKER.strip()} {event}") \
        and "memhealth" in command


def _is_our_handler(handler, event: str) -> bool:
    """A command entry running `... hook EVENT`, or an http entry POSTing to our EVENT path."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        url = handler.get("url")
        return isinstance(url, str) and url.split("?", 1)[0].endswith(HOOK_PATH + event)
    return _is_ours(handler.get("command", ""), event)


def uses_http(settings: dict) -> bool:
    """Whether these settings send any of our events over HTTP."""
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    return any(_is_our_handler(handler, event)
               for groups in (hooks.values() if isinstance(hooks, dict) else ())
               for group in (groups if isinstance(groups, list) else ()) if isinstance(group, dict)
               for handler in (group.get("hooks") or []) for event in HTTP_EVENTS
               if isinstance(handler, dict) and handler.get("type") == "http")


def hook_base_url(listen: str) -> str:
    """http://host:port for `[serve] listen` (an IPv6 host in brackets)."""
    from telemetry.errors import ListenError
    from telemetry.serve import parse_listen

    try:
        host, port = parse_listen(listen)
    except ListenError as exc:
        raise SettingsError(f"--transport http: [serve] listen = {listen!r} cannot take hooks ({exc}); "
                            "hooks go to a loopback address: set [serve] listen, e.g. 127.0.0.1:9464") from None
    if port == 0:
        raise SettingsError("--transport http: [serve] listen has port 0; the settings need a fixed port")
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


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


def merge_hooks(settings: dict, launch: str, timeouts: dict | None = None, *,
                http_base: str | None = None, authorization: str | None = None) -> tuple[dict, list[str]]:
    """Return (new settings, changes). Never drops or reorders an existing entry. With
    `http_base`, HTTP_EVENTS are http entries POSTing to it with `authorization`; an entry of
    ours of the other transport is replaced in place (its group keeps its matcher)."""
    timeouts = timeouts or {}
    merged = json.loads(json.dumps(settings))
    hooks = merged.setdefault("hooks", {})
    changes = []
    for claude_event, event, matcher, timeout, status in WIRING:
        timeout = int(timeouts.get(event, timeout))
        if http_base is not None and event in HTTP_EVENTS:
            wanted = {"type": "http", "url": f"{http_base}{HOOK_PATH}{event}", "timeout": timeout,
                      "headers": {"Authorization": authorization or ""}}
            target = f"POST {wanted['url']}"
        else:
            wanted = {"type": "command", "command": hook_command(event, launch), "timeout": timeout}
            target = wanted["command"]
        if status:
            wanted["statusMessage"] = status
        groups = hooks.setdefault(claude_event, [])
        found = False
        for group in groups:
            if not isinstance(group, dict):
                continue
            for i, handler in enumerate(group.get("hooks") or []):
                if _is_our_handler(handler, event):
                    found = True
                    if handler != wanted:
                        group["hooks"][i] = wanted
                        changes.append(f"updated {claude_event} → {target} (timeout {timeout}s)")
        if not found:
            group = {"hooks": [wanted]}
            if matcher:
                group = {"matcher": matcher, "hooks": [wanted]}
            groups.append(group)
            changes.append(f"added {claude_event} → {target} (timeout {timeout}s)")
    return merged, changes


def _write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def init_project(root: str, settings: str = "local", dry_run: bool = False,
                 launch: str | None = None, timeouts: dict | None = None,
                 templates: bool = True, register: bool = True,
                 transport: str | None = None) -> list[str]:
    """Set up memhealth in `root`; return the list of actions taken (or that would be).
    Shared settings get the portable launcher (SHARED_LAUNCHER) unless `launch` is given;
    `templates` installs the convention files (memhealth.templates) that do not exist yet;
    `register` lists the project in the per-user registry (the demo's throwaway project is
    not, so `serve --all` never serves it). `transport` "http" wires HTTP_EVENTS to
    `memhealth serve` at `[serve] listen` with the project's secret (local settings only: the
    secret is per machine, never committed); None keeps the transport the settings already
    use (a repairing `memhealth init` never switches)."""
    root = os.path.abspath(root)
    if not os.path.isdir(root):
        raise SettingsError(f"{root} is not a directory")
    if transport is None:
        transport = "http" if settings == "local" and uses_http(read_settings(settings_path(root, settings))) \
            else "command"
    if transport not in TRANSPORTS:
        raise SettingsError(f"--transport must be command or http, not {transport!r}")
    if transport == "http" and settings != "local":
        raise SettingsError("--transport http writes this machine's hook secret into the settings: "
                            "use --settings local (.claude/settings.local.json, not committed)")
    spath = settings_path(root, settings)
    current = read_settings(spath)  # refuse before writing anything
    if launch is None:
        launch = SHARED_LAUNCHER if settings == "shared" else launcher()
    state = os.path.join(root, STATE_DIR)
    http_base = authorization = None
    secret_action = None
    if transport == "http":
        from memhealth.config import load
        from memory_core.store import secret

        listen = load(state if os.path.isdir(state) else None)["serve"]["listen"]
        http_base = hook_base_url(listen)
        value = secret.read(state)
        if value is None:
            secret_action = f"wrote {secret.path(state)} (mode 0600: the HTTP hooks' secret)"
            value = "0" * (secret.SECRET_BYTES * 2) if dry_run else None
        authorization = secret.header(value) if value else None
    merged, hook_changes = merge_hooks(current, launch, timeouts, http_base=http_base,
                                       authorization=authorization or "pending")

    actions = []
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
            from memory_core.store.db import connect

            connect(db).close()
    if launch == SHARED_LAUNCHER:
        shim = os.path.join(root, SHIM_REL)
        try:
            with open(shim, encoding="utf-8") as fh:
                same = fh.read() == SHIM
        except OSError:
            same = False
        if not same or not os.access(shim, os.X_OK):
            actions.append(f"wrote {shim} (portable launcher for "
                           "shared settings: finds memhealth on each machine)")
            if not dry_run:
                os.makedirs(os.path.dirname(shim), exist_ok=True)
                _write_atomic(shim, SHIM, 0o755)
    if secret_action is not None:
        actions.append(secret_action)
        if not dry_run:
            from memory_core.store import secret

            value, _created = secret.ensure(state)
            merged, hook_changes = merge_hooks(current, launch, timeouts, http_base=http_base,
                                               authorization=secret.header(value))
    if templates:
        from memhealth.templates import install_templates

        actions.extend(install_templates(root, dry_run))
    if register:
        actions.extend(_register(root, dry_run))
    if hook_changes:
        actions.extend(hook_changes)
        actions.append(f"wrote {spath}")  # past tense always; `init --dry-run` rewords
        if not dry_run:
            os.makedirs(os.path.dirname(spath), exist_ok=True)
            # a file that carries the hook secret is its owner's alone
            _write_atomic(spath, json.dumps(merged, indent=2, ensure_ascii=False) + "\n",
                          0o600 if uses_http(merged) else 0o644)
    return actions


def _register(root: str, dry_run: bool) -> list[str]:
    """List the project in the per-user registry (memory_core/store/registry.py) so one
    `memhealth serve --all` serves it; a full or unwritable registry is said, never fatal."""
    from memory_core.store import registry

    path = registry.registry_path()
    if any(e.root == root for e in registry.read(path)):
        return []
    if dry_run:
        return [f"registered this project in {path} (for `memhealth serve --all`)"]
    try:
        name, added = registry.register(root)
    except (OSError, registry.RegistryError) as exc:
        # a note, not a change: a second init still reads "nothing changed"
        return [f"{NOTE}not registered for `memhealth serve --all`: {exc}"]
    return [f"registered this project as {name!r} in {path} (for `memhealth serve --all`)"] if added else []
