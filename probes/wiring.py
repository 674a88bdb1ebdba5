"""The hook wiring at configuration time: is every event memhealth needs in a settings file
Claude Code reads, and does it run memhealth?

    hook_wiring(ev)                     # the gate check
    read_wiring(settings_files(root))   # what each file wires, for the witness and the check

Claude Code merges hooks from the user's settings (`~/.claude/settings.json`, or
`$CLAUDE_CONFIG_DIR/settings.json`), the project's shared `.claude/settings.json` and its
local `.claude/settings.local.json` (code.claude.com/docs/en/hooks; managed and plugin hooks
are not read here). Matchers follow the documented rule: "*", "" or none match every tool;
letters, digits, "_" and "|" alone are an exact list; anything else is a regular expression.

NEEDED is what `memhealth init` writes (memhealth.installer.WIRING; a test keeps the two
equal): the event, our hook's name in `memhealth hook NAME`, and the tools a tool event must
match for the cues to fire.
"""

from __future__ import annotations

import json
import os
import re

from probes.result import CheckResult, green, red

TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Bash")
# Claude Code event, our hook, the tools it must match (None: not a tool event)
NEEDED: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("SessionStart", "session-start", None),
    ("UserPromptSubmit", "prompt", None),
    ("PreToolUse", "pre-tool", TOOLS),
    ("PostToolUse", "post-tool", TOOLS),
    ("PreCompact", "pre-compact", None),
    ("Stop", "stop", None),
    ("SessionEnd", "session-end", None),
)
HOOK_OF = {event: hook for event, hook, _tools in NEEDED}
EVENT_OF = {hook: event for event, hook, _tools in NEEDED}
TOOLS_OF = {event: tools for event, _hook, tools in NEEDED}
# a command that runs memhealth's hook NAME: "<launcher> hook NAME" (the launcher may be a
# path to memhealth, `python -m memhealth`, or the shared settings' portable launcher)
OURS = re.compile(r"memhealth.*\bhook\s+([a-z][a-z-]*)\s*$")
_EXACT = re.compile(r"^[A-Za-z0-9_|]+$")


def settings_files(root: str, environ=None) -> list[tuple[str, str]]:
    """(scope, path) of each settings file Claude Code reads hooks from, user first."""
    environ = os.environ if environ is None else environ
    user_dir = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    base = os.path.join(os.path.abspath(root), ".claude")
    return [("user", os.path.join(user_dir, "settings.json")),
            ("project", os.path.join(base, "settings.json")),
            ("local", os.path.join(base, "settings.local.json"))]


def matcher_covers(matcher, tool: str) -> bool:
    """Whether a PreToolUse/PostToolUse matcher selects `tool` (Claude Code's rule)."""
    if matcher is None or matcher in ("", "*"):
        return True
    if not isinstance(matcher, str):
        return False
    if _EXACT.match(matcher):
        return tool in matcher.split("|")
    try:
        return re.search(matcher, tool) is not None
    except re.error:
        return False


class Wiring:
    """What the settings files wire: per event, our handlers as (scope, matcher, command);
    our commands filed under the wrong event; files that cannot be read; `disableAllHooks`."""

    __slots__ = ("ours", "others", "misplaced", "problems", "disabled", "scopes")

    def __init__(self):
        self.ours: dict[str, list[tuple[str, object, str]]] = {}
        self.others: dict[str, list[tuple[str, str]]] = {}   # event -> (scope, command) not ours
        self.misplaced: list[tuple[str, str, str]] = []   # (scope, event found under, our hook)
        self.problems: list[str] = []
        self.disabled: list[str] = []
        self.scopes: set[str] = set()                      # scopes holding any of our hooks

    def runs(self, event: str) -> bool:
        return bool(self.ours.get(event))

    def uncovered(self, event: str) -> list[str]:
        """The tools memhealth needs that none of our handlers for `event` matches."""
        tools = TOOLS_OF.get(event) or ()
        entries = self.ours.get(event, [])
        return [t for t in tools if not any(matcher_covers(m, t) for _s, m, _c in entries)]


def read_wiring(files: list[tuple[str, str]]) -> Wiring:
    """Parse the settings files; never raises (an unreadable file is a problem, named)."""
    wiring = Wiring()
    for scope, path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            wiring.problems.append(f"{_show(path)} unreadable ({exc})")
            continue
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            wiring.problems.append(f"{_show(path)} is not valid JSON ({exc})")
            continue
        if not isinstance(data, dict):
            continue
        if data.get("disableAllHooks") is True:
            wiring.disabled.append(_show(path))
        hooks = data.get("hooks")
        if not isinstance(hooks, dict):
            continue
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else ():
                if not isinstance(group, dict):
                    continue
                handlers = group.get("hooks")
                for handler in handlers if isinstance(handlers, list) else ():
                    command = handler.get("command") if isinstance(handler, dict) else None
                    match = OURS.search(command) if isinstance(command, str) else None
                    if not match:
                        if isinstance(command, str) or isinstance(handler, dict) and handler.get("url"):
                            wiring.others.setdefault(event, []).append(
                                (scope, command if isinstance(command, str) else str(handler.get("url"))))
                        continue
                    wiring.scopes.add(scope)
                    if HOOK_OF.get(event) == match.group(1):
                        wiring.ours.setdefault(event, []).append((scope, group.get("matcher"), command))
                    else:
                        wiring.misplaced.append((scope, event, match.group(1)))
    return wiring


def _show(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home and home != os.sep and path.startswith(home + os.sep) else path


def init_command(wiring: Wiring) -> str:
    """The `memhealth init` that rewrites our entries where they live: the shared settings
    when only they hold our hooks, else the local ones (init's default)."""
    return "memhealth init --settings shared" if wiring.scopes == {"project"} else "memhealth init"


def hook_wiring(ev) -> CheckResult:
    """RED when an event memhealth needs is in no settings file Claude Code reads, runs
    another command, matches too few tools, or when hooks are disabled altogether."""
    files = settings_files(ev.root)
    wiring = read_wiring(files)
    reds: list[tuple[str, str]] = []
    init = init_command(wiring)
    for where in wiring.disabled:
        reds.append((f"disableAllHooks is true in {where}: Claude Code runs no hook, memhealth included",
                     f"remove \"disableAllHooks\" from {where}"))
    for problem in wiring.problems:
        reds.append((f"{problem}: Claude Code cannot load the hooks there",
                     "fix the JSON by hand (memhealth init refuses to overwrite it)"))
    missing = [event for event, _hook, _tools in NEEDED if not wiring.runs(event)]
    if missing:
        places = ", ".join(_show(p) for _s, p in files)
        instead = []
        for event in missing:  # what runs there now: a wrapper that replaced ours, another tool's hook
            others = wiring.others.get(event, [])
            if others:
                shown = ", ".join(f"`{c[:80]}` ({os.path.basename(dict(files)[sc])})" for sc, c in others[:2])
                instead.append(f"{event} runs {shown}" + (f" and {len(others) - 2} more" if len(others) > 2 else ""))
        reds.append((f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not run memhealth in any "
                     f"settings file Claude Code reads ({places}): "
                     + ("nothing memhealth does on those events happens" if len(missing) > 1 else
                        _CONSEQUENCE.get(missing[0], "that hook never runs"))
                     + (f"; instead {'; '.join(instead)}" if instead else ""),
                     f"{init} (adds the missing entries; restart a running Claude Code session)"))
    for event, _hook, tools in NEEDED:
        if not tools or not wiring.runs(event):
            continue
        uncovered = wiring.uncovered(event)
        if uncovered:
            scope, matcher, _command = wiring.ours[event][0]
            path = dict(files)[scope]
            reds.append((f"{event} runs memhealth only for tools matching {matcher!r}: "
                         f"{', '.join(uncovered)} never reach its cues",
                         f"set that entry's \"matcher\" in {_show(path)} to \"{'|'.join(TOOLS)}\" "
                         "(memhealth init keeps an existing entry's matcher)"))
    for scope, event, hook in wiring.misplaced:
        if not wiring.runs(EVENT_OF.get(hook, "")):
            continue  # already named as missing above
        path = dict(files)[scope]
        reds.append((f"{_show(path)} runs `memhealth hook {hook}` under {event}, which is not its event",
                     f"remove that entry from {event} in {_show(path)} (`{init}` keeps the right one)"))
    if reds:
        detail = "; ".join(d for d, _ in reds)
        if len(reds) > 1:
            detail = f"{len(reds)} problems: {detail}"
        return red(detail, reds[0][1] if len(reds) == 1 else " | ".join(dict.fromkeys(f for _, f in reds)))
    scopes = sorted(wiring.scopes, key=["user", "project", "local"].index)
    return green(f"all {len(NEEDED)} events run memhealth ({', '.join(scopes)} settings)")


_CONSEQUENCE = {
    "SessionStart": "no verdict or memory at session start, and no pinned items after a compaction",
    "UserPromptSubmit": "prompts get no recall and no decision rows",
    "PreToolUse": "path cues never fire before a tool call",
    "PostToolUse": "tool results are never read for cues or re-reads",
    "PreCompact": "compactions are not recorded",
    "Stop": "turn ends are not recorded",
    "SessionEnd": "sessions are never captured at their end",
}
