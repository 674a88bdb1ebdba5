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

A handler runs memhealth when it is a command ending in `hook NAME` (OURS), or, with the HTTP
transport (`memhealth init --transport http`), an http entry POSTing to memhealth serve's
hook endpoint, `http://<loopback>:PORT/memhealth/hook/NAME` (our_url), for one of the events
Claude Code POSTs (HTTP_HOOKS). An http entry elsewhere is another program's hook.
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
# -- the HTTP transport ------------------------------------------------------------------------
# memhealth serve's hook endpoint (telemetry.hook_endpoint.PREFIX; probes do not import
# telemetry) and the hooks `memhealth init --transport http` sends there
# (memhealth.installer.HTTP_EVENTS; a test keeps the two equal). The others stay commands:
# Claude Code 2.1.332 calls no SessionStart http entry in a -p session, and SessionStart,
# PreCompact and SessionEnd must run with serve down.
HOOK_URL_PATH = "/memhealth/hook/"
HTTP_HOOKS = ("prompt", "pre-tool", "post-tool", "stop")
_HOOK_NAME = re.compile(r"^[a-z][a-z-]*$")


def our_url(url) -> str | None:
    """The hook NAME when `url` is memhealth serve's hook endpoint for it
    (http://<loopback>:PORT/memhealth/hook/NAME, serve binds only loopback), else None."""
    if not isinstance(url, str):
        return None
    import ipaddress  # here: only HTTP hook entries need them (~12 M instructions with urllib)
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return None
    if parts.scheme != "http" or not host or not parts.path.startswith(HOOK_URL_PATH):
        return None
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:
            return None
    name = parts.path[len(HOOK_URL_PATH):]
    return name if _HOOK_NAME.match(name) else None


def hook_named(text) -> str | None:
    """The memhealth hook a command (`... hook NAME`) or a hook URL runs, else None."""
    if not isinstance(text, str):
        return None
    match = OURS.search(text)
    if match:
        return match.group(1)
    return our_url(text)


def handler_hook(handler) -> tuple[str | None, str]:
    """(memhealth hook NAME or None, what the handler runs as shown to a person)."""
    if not isinstance(handler, dict):
        return None, ""
    if handler.get("type") == "http" or (handler.get("url") and not handler.get("command")):
        url = handler.get("url")
        return our_url(url), f"POST {url}" if isinstance(url, str) else "an http entry without a url"
    command = handler.get("command")
    if not isinstance(command, str):
        return None, ""
    match = OURS.search(command)
    return (match.group(1) if match else None), command


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

    __slots__ = ("ours", "others", "misplaced", "problems", "disabled", "scopes", "http", "http_unsupported")

    def __init__(self):
        self.ours: dict[str, list[tuple[str, object, str]]] = {}
        self.others: dict[str, list[tuple[str, str]]] = {}   # event -> (scope, command) not ours
        self.misplaced: list[tuple[str, str, str]] = []   # (scope, event found under, our hook)
        self.http: dict[str, str] = {}                     # event -> the hook URL it POSTs to
        self.http_unsupported: list[tuple[str, str]] = []  # (scope, event): ours over HTTP, not run so
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
                    hook, shown = handler_hook(handler)
                    if hook is None:
                        if shown:
                            wiring.others.setdefault(event, []).append((scope, shown))
                        continue
                    wiring.scopes.add(scope)
                    if HOOK_OF.get(event) != hook:
                        wiring.misplaced.append((scope, event, hook if not shown.startswith("POST ")
                                                 else f"{hook} (over HTTP)"))
                    elif shown.startswith("POST ") and hook not in HTTP_HOOKS:
                        wiring.http_unsupported.append((scope, event))
                    else:
                        wiring.ours.setdefault(event, []).append((scope, group.get("matcher"), shown))
                        if shown.startswith("POST "):
                            wiring.http[event] = shown[len("POST "):]
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
    another command (or an http entry that is not serve's hook endpoint), matches too few
    tools, or when hooks are disabled altogether."""
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
    unsupported = {event for _scope, event in wiring.http_unsupported}
    for scope, event in wiring.http_unsupported:
        if wiring.runs(event):
            continue  # a command of ours runs there too: the http entry is only never called
        path = dict(files)[scope]
        reds.append((f"{event} POSTs to memhealth serve in {_show(path)}, but {event} must be a command hook "
                     f"(Claude Code does not call it over HTTP in every session, and it must run with serve "
                     f"down): {_CONSEQUENCE.get(event, 'that hook never runs')}",
                     f"{init} (puts the command hook back for {event}; restart a running Claude Code session)"))
    missing = [event for event, _hook, _tools in NEEDED if not wiring.runs(event) and event not in unsupported]
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
        if not wiring.runs(EVENT_OF.get(hook.split(" ", 1)[0], "")):
            continue  # already named as missing above
        path = dict(files)[scope]
        what = f"memhealth's {hook.split(' ', 1)[0]} hook over HTTP" if hook.endswith("(over HTTP)") \
            else f"`memhealth hook {hook}`"
        reds.append((f"{_show(path)} runs {what} under {event}, which is not its event",
                     f"remove that entry from {event} in {_show(path)} (`{init}` keeps the right one)"))
    if reds:
        detail = "; ".join(d for d, _ in reds)
        if len(reds) > 1:
            detail = f"{len(reds)} problems: {detail}"
        return red(detail, reds[0][1] if len(reds) == 1 else " | ".join(dict.fromkeys(f for _, f in reds)))
    scopes = sorted(wiring.scopes, key=["user", "project", "local"].index)
    over_http = ""
    if wiring.http:
        from urllib.parse import urlsplit

        bases = sorted({urlsplit(u).netloc for u in wiring.http.values()})
        over_http = f"; {', '.join(e for e, _h, _t in NEEDED if e in wiring.http)} over HTTP to {', '.join(bases)}"
    return green(f"all {len(NEEDED)} events run memhealth ({', '.join(scopes)} settings{over_http})")


_CONSEQUENCE = {
    "SessionStart": "no verdict or memory at session start, and no pinned items after a compaction",
    "UserPromptSubmit": "prompts get no recall and no decision rows",
    "PreToolUse": "path cues never fire before a tool call",
    "PostToolUse": "tool results are never read for cues or re-reads",
    "PreCompact": "compactions are not recorded",
    "Stop": "turn ends are not recorded",
    "SessionEnd": "sessions are never captured at their end",
}
