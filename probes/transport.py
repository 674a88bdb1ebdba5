"""The HTTP hook transport: which events Claude Code POSTs to `memhealth serve`, and whether
serve answers them.

    hooks = http_wiring(ev.settings_paths)      # [HttpHook(event, url, authorization, file)]
    state, info = ping("http://127.0.0.1:9464", "Bearer …", timeout_s=1.0)
    result = hook_transport(ev)

With nothing listening Claude Code skips the event and goes on: the transcript gets a
`hook_non_blocking_error` ("connect ECONNREFUSED …"), memhealth gets no heartbeat, and no
recall, cue or decision row is written. So a dead transport must be named from the outside:
SessionStart (a command hook) runs this check through the gate, and `memhealth gate` does.
"""

from __future__ import annotations

import json
import os
import shlex

from probes.result import MEMORY, CheckResult, green, red

HOOK_PATH = "/memhealth/hook/"  # telemetry.hook_endpoint.PREFIX (probes do not import telemetry)
PING_PATH = HOOK_PATH + "ping"
PING_TIMEOUT_S = 1.0


class HttpHook:
    """One of our http hook entries in a settings file."""

    __slots__ = ("event", "url", "authorization", "file")

    def __init__(self, event: str, url: str, authorization: str | None, file: str):
        self.event = event
        self.url = url
        self.authorization = authorization
        self.file = file

    @property
    def base(self) -> str:
        """scheme://host:port of the URL."""
        return self.url.split(HOOK_PATH, 1)[0]

    @property
    def listen(self) -> str:
        """host:port, as `memhealth serve --listen` takes it."""
        return self.base.split("://", 1)[-1]

    def __repr__(self) -> str:
        return f"HttpHook({self.event!r}, {self.url!r})"


def http_wiring(paths: list[str]) -> list[HttpHook]:
    """Our http hook entries (a URL whose path is under /memhealth/hook/) in these files;
    unreadable files are the heartbeat check's to report."""
    found: list[HttpHook] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for groups in hooks.values() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for handler in handlers if isinstance(handlers, list) else ():
                    if not isinstance(handler, dict) or handler.get("type") != "http":
                        continue
                    url = handler.get("url")
                    if not isinstance(url, str) or HOOK_PATH not in url:
                        continue
                    headers = handler.get("headers")
                    auth = headers.get("Authorization") if isinstance(headers, dict) else None
                    event = url.split(HOOK_PATH, 1)[1].split("?", 1)[0]
                    found.append(HttpHook(event, url, auth if isinstance(auth, str) else None,
                                          os.path.basename(path)))
    return found


def ping(base: str, authorization: str | None, timeout_s: float = PING_TIMEOUT_S) -> tuple[str, str]:
    """(state, detail): ok (the project root serve answers for), unauthorized, not_hooks
    (something answers, but not memhealth's hook endpoint), unreachable."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(base)
    if parts.scheme != "http" or not parts.hostname:
        return "unreachable", f"{base} is not an http:// URL"
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=max(0.05, timeout_s))
    try:
        conn.request("GET", PING_PATH, headers={"Authorization": authorization or ""})
        resp = conn.getresponse()
        body = resp.read(65536)
    except (OSError, http.client.HTTPException) as exc:
        return "unreachable", f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    finally:
        conn.close()
    if resp.status == 401:
        return "unauthorized", "401"
    if resp.status != 200:
        return "not_hooks", f"HTTP {resp.status}"
    try:
        answer = json.loads(body)
        root = answer["project"]
    except (ValueError, KeyError, TypeError):
        return "not_hooks", "HTTP 200 without a project"
    return "ok", str(root)


def serve_command(root: str, listen: str) -> str:
    """The command that starts serve where the settings point, in the background."""
    return f"memhealth serve --detach --project {shlex.quote(root)} --listen {listen}"


def hook_transport(ev) -> CheckResult:
    """RED when Claude Code's http hook entries point at a serve that does not answer, does
    not take this project's secret, or serves another project; green otherwise (command hooks:
    nothing to check)."""
    wired = http_wiring(ev.settings_paths)
    if not wired:
        return green("command hooks (no HTTP transport wired)", state="command")
    reds: list[tuple[str, str]] = []
    by_base: dict[tuple[str, str | None], list[HttpHook]] = {}
    for hook in wired:
        by_base.setdefault((hook.base, hook.authorization), []).append(hook)
    for (base, auth), hooks in by_base.items():
        events = ", ".join(sorted({h.event for h in hooks}))
        left = ev.remaining_s()
        timeout = PING_TIMEOUT_S if left is None else max(0.05, min(PING_TIMEOUT_S, left))
        state, detail = ping(base, auth, timeout)
        listen = hooks[0].listen
        back = "or go back to a process per event: `memhealth init --transport command`"
        if state == "unreachable":
            reds.append((f"the HTTP hook transport at {base} does not answer ({detail}): Claude Code "
                         f"skips {events} (a hook_non_blocking_error each), so no recall, no cues and "
                         "no decision rows",
                         f"{serve_command(ev.root, listen)} (or set [serve] hook_autostart = true and "
                         f"the next SessionStart starts it); {back}"))
        elif state == "unauthorized":
            reds.append((f"memhealth serve at {base} refuses the hook secret in {hooks[0].file} "
                         f"({events} get 401): the secret changed, or another project's serve holds "
                         "the port",
                         "`memhealth init --transport http` (writes .memhealth/hook-secret into the "
                         "settings); if another project's serve holds the port, set [serve] listen to "
                         f"a free port first; {back}"))
        elif state == "not_hooks":
            reds.append((f"{base} answers ({detail}) but is not memhealth serve's hook endpoint: "
                         f"{events} fail there",
                         f"stop what listens on {listen}, then {serve_command(ev.root, listen)}; {back}"))
        elif os.path.realpath(detail) != os.path.realpath(ev.root):
            reds.append((f"memhealth serve at {base} serves {detail}, not this project: {events} "
                         "would write that project's store",
                         f"set [serve] listen to a free port and run `memhealth init --transport http`; "
                         f"{back}"))
    if reds:
        detail = "; ".join(d for d, _ in reds)
        return red(detail, reds[0][1] if len(reds) == 1 else " | ".join(f for _, f in reds),
                   state="down", audience=MEMORY)
    events = ", ".join(sorted({h.event for h in wired}))
    return CheckResult("green", f"HTTP transport answers at {', '.join(sorted({b for b, _ in by_base}))} "
                                f"({events})", state="http")
