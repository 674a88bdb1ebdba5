"""Every HTTP endpoint `memhealth serve` and `memhealth serve --all` answer, in one table.

    for e in ENDPOINTS: print(e.method, e.path, e.servers)

`docs/reference/http.md` is generated from it, and `tests/telemetry/test_endpoints.py` requests each
entry from a real serve and serve --all (and a path that is not here, which must be 404), so
the table and the handlers cannot drift apart. Standard library only.
"""

from __future__ import annotations

SERVE = "serve"
SERVE_ALL = "serve --all"
BOTH = (SERVE, SERVE_ALL)


class Endpoint:
    """One route: method, path (`{name}` for a registered project's name), who serves it,
    what it answers, and who may call it."""

    __slots__ = ("method", "path", "servers", "what", "access")

    def __init__(self, method: str, path: str, servers: tuple[str, ...], what: str, access: str):
        self.method = method
        self.path = path
        self.servers = servers
        self.what = what
        self.access = access

    def __repr__(self) -> str:
        return f"Endpoint({self.method} {self.path})"


LOOPBACK = "anyone who can reach the listen address (loopback unless --allow-remote)"
CONSOLE = "a browser on the listen address: Host checked (421 otherwise), strict CSP"
FORM = "the console's own form: Host, Origin and a form token checked (403 otherwise)"

_PAGES = (("/", "Health: the latest gate run with every check and FIX, verdict history, heartbeats"),
          ("/decisions", "every prompt's decision row, newest first, with the cascade's arithmetic"),
          ("/memory", "memory chunks by source and kind, search, confirmed records"),
          ("/triage", "pending candidates with their transcript context, and the triage forms"),
          ("/alerts-budget", "the page budget per route, the digest, the alert decisions"))
_ACTIONS = ("confirm", "reject", "retitle", "merge")

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/metrics", BOTH, "Prometheus exposition of the catalog's metrics "
             "(OpenMetrics with exemplars when asked for); under --all, every project's with a "
             "`project` label", LOOPBACK),
    Endpoint("GET", "/healthz", BOTH, "serve's own state as JSON (not the gate's verdict)", LOOPBACK),
    Endpoint("GET", "/runbook", BOTH, "the runbook every alert's runbook_url points at", LOOPBACK),
    Endpoint("POST", "/memhealth/hook/prompt", (SERVE,), "a Claude Code HTTP hook: the event's JSON "
             "payload, answered as the command hook would (heartbeat first, the same output); "
             "likewise /memhealth/hook/pre-tool, post-tool and stop", "Claude Code with the "
             "project's hook secret (Authorization: Bearer; 401 and counted otherwise)"),
    Endpoint("GET", "/memhealth/hook/ping", (SERVE,), "whether this serve takes this project's hooks, "
             "with serve-side time per event", "the project's hook secret"),
    Endpoint("POST", "/alerts", BOTH, "Alertmanager's webhook: the alert budget decides page, fold, "
             "dedupe or note (under --all, routed by the `project` label); 400 for a malformed "
             "body, 413 for an oversized one, kept in the sink either way", LOOPBACK),
    *(Endpoint("GET", path, (SERVE,), what, CONSOLE) for path, what in _PAGES),
    *(Endpoint("POST", f"/triage/{action}", (SERVE,), f"the triage form: {action} a candidate "
               "(post/redirect/get)", FORM) for action in _ACTIONS),
    Endpoint("GET", "/", (SERVE_ALL,), "the projects served, each linking to its console", CONSOLE),
    *(Endpoint("GET", "/p/{name}" + path, (SERVE_ALL,), f"project {{name}}'s console: {what}", CONSOLE)
      for path, what in _PAGES),
    *(Endpoint("POST", "/p/{name}/triage/" + action, (SERVE_ALL,), f"project {{name}}'s triage form: "
               f"{action}", FORM) for action in _ACTIONS),
)
