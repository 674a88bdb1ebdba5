"""The console: pages `memhealth serve` shows a person at `/`, to see what memory holds, what
it decided, and to triage what the capture proposed.

    console = Console(app)                       # app: the Serve instance (project, cfg, port)
    code, headers, body = console.get("/decisions", "outcome=injected", request_headers)
    code, headers, body = console.post("/triage/confirm", form_bytes, request_headers)

Pages (server-rendered HTML, no script, one inline stylesheet allowed by its CSP hash):
- `/` Health: the latest gate run with every check and its FIX, the verdict history, hook
  heartbeats per day (ok, error by reason, killed, open) and the last success per hook.
- `/decisions`: every prompt's decision row, newest first, by keyset (`id < before`, 50 a
  page: a deep page costs what the first does), filterable by outcome and session, with the
  cascade's arithmetic from the detail JSON. Prompt text only when capture is opted in
  ([injection].capture_content: the root span of the prompt's trace holds it), else its
  hash and length.
- `/memory`: memory chunks by source and kind with provenance, search (the same hybrid
  search the hooks use), and the confirmed records with where they were said.
- `/triage`: pending candidates with their transcript context; confirm, reject, retitle and
  merge are POST forms calling memory_core.records.triage, exactly what `memhealth triage` calls.
- `/alerts-budget`: the page budget per route in the current window, the digest of what
  folded, and the alert decisions (`/alerts` is Alertmanager's webhook).

Security (the store holds a month of someone's work; a web page in the same browser must
not read or change it):
- serve binds loopback (telemetry.serve.parse_listen);
- every console request's Host must be the listen address (127.0.0.1:PORT, localhost:PORT,
  [::1]:PORT or the bound literal): a DNS-rebinding page gets 421 and nothing runs;
- state changes are POST only, each carrying a CSRF token in a form field: an HMAC of its
  issue time under a per-process random secret, valid 12 h. A form field, not a cookie:
  cookies are not isolated by port, so any other local server could set or read one. A POST
  whose Origin (or Sec-Fetch-Site) says another site is refused as well;
- every page carries a strict Content-Security-Policy (no script, no frames, forms to self),
  nosniff, same-origin referrers and no-store; every value from the store is html.escape'd.

Parts: `security` (request checks, CSP), `html` (escaping, the page, shared renderers),
`queries` (reads beyond a page's own), `pages` (one method per page), and `Console` here,
which routes a request to its page or its triage action.
"""

from __future__ import annotations

import os
import secrets
from urllib.parse import urlencode

from telemetry.console.html import (
    CURRENT,
    MAX_FORM_BODY,
    NAV,
    PAGE_SIZE,
    POST_ROUTES,
    ROUTES,
    Page,
    as_int,
    esc,
    parse_query,
    text_page,
)
from telemetry.console.pages import Pages
from telemetry.console.security import SECURITY_HEADERS, TOKEN_TTL_S, RequestGuard
from telemetry.console.style import STYLE

__all__ = ["Console", "MAX_FORM_BODY", "PAGE_SIZE", "POST_ROUTES", "ROUTES", "SECURITY_HEADERS",
           "STYLE", "TOKEN_TTL_S"]


class Console(RequestGuard, Pages):
    """The console of one project. `app` gives project, cfg, host and port (and, under
    serve --all, `name`: the registered name shown instead of the directory's).

    `prefix` is where its pages live: "" for single-project serve, "/p/<quoted name>" for a
    project under serve --all. Every link, form action and redirect carries it, and a form
    token is bound to it, so one project's form cannot act on another's store."""

    def __init__(self, app, secret: bytes | None = None, prefix: str = ""):
        self.app = app
        self.secret = secret or secrets.token_bytes(32)  # per process: a restart voids old forms
        self.prefix = prefix.rstrip("/")
        self.base = esc(self.prefix)  # the prefix as it goes into an attribute

    # -- dispatch --------------------------------------------------------------------------

    def get(self, path: str, query: str, headers) -> tuple[int, dict, bytes]:
        if not self.host_ok(headers):
            return text_page(421, "misdirected request: the Host header is not this console's "
                                   "listen address (DNS rebinding is refused)").as_tuple()
        if path in POST_ROUTES:
            page = text_page(405, "this action changes the store: POST it from the triage form")
            page.headers["Allow"] = "POST"
            return page.as_tuple()
        params = parse_query(query)
        render = {"/": self.health, "/decisions": self.decisions, "/memory": self.memory,
                  "/triage": self.triage, "/alerts-budget": self.alerts}[path]
        try:
            conn = self._connect()
        except Exception as exc:  # a missing or locked store is shown, not a stack trace
            return Page(503, self._layout(path, "Store unavailable",
                                          f"<p class=\"red\">The store cannot be opened: {esc(exc)}</p>")).as_tuple()
        try:
            title, body = render(conn, params)
        except Exception as exc:  # a locked store or a bad row: a page that says so, not a dropped connection
            return Page(500, self._layout(path, "Page failed", f"<p class=\"red\">{esc(type(exc).__name__)}: "
                                                               f"{esc(str(exc)[:500])}</p><p>Reload to retry.</p>")).as_tuple()
        finally:
            conn.close()
        return Page(200, self._layout(path, title, body)).as_tuple()

    def post(self, path: str, body: bytes, headers) -> tuple[int, dict, bytes]:
        if not self.host_ok(headers):
            return text_page(421, "misdirected request: the Host header is not this console's "
                                   "listen address; nothing was changed").as_tuple()
        if not self.origin_ok(headers):
            return text_page(403, "cross-site request refused; nothing was changed").as_tuple()
        ctype = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            return text_page(415, "expected a form (application/x-www-form-urlencoded)").as_tuple()
        try:
            form = parse_query(body.decode("utf-8"))
        except UnicodeDecodeError:
            return text_page(400, "the form is not UTF-8; nothing was changed").as_tuple()
        if not self.token_ok(form.get("csrf")):
            return text_page(403, "missing or stale form token (reload the page); nothing was changed").as_tuple()
        action = path.rsplit("/", 1)[1]
        cid = as_int(form.get("id"))
        if cid is None:
            return self._after(f"{action}: no candidate id given", error=True)
        extra: dict = {}
        if action == "retitle":
            extra["title"] = form.get("title", "")
        elif action == "merge":
            into = as_int(form.get("into"))
            if into is None:
                return self._after(f"#{cid} merge: choose the candidate it repeats", error=True)
            extra["into"] = into
        return self._apply(action, cid, extra)

    def _apply(self, action: str, cid: int, extra: dict) -> tuple[int, dict, bytes]:
        from memory_core.records import triage

        if action == "retitle" and not extra["title"].strip():
            return self._after(f"#{cid} retitle: a title cannot be empty", error=True)
        from memory_core.errors import MemoryCoreError

        try:
            conn = self._connect()
        except MemoryCoreError as exc:
            return self._after(f"#{cid} {action}: the store cannot be opened ({exc}); nothing was changed", error=True)
        try:
            line = triage.apply_one(conn, self.app.project.root, self.app.cfg, action, cid, extra)
        except MemoryCoreError as exc:  # TriageError, or a locked store: the action did not apply
            return self._after(f"#{cid} {action}: {exc}", error=True)
        finally:
            conn.close()
        return self._after(line)

    def _after(self, message: str, error: bool = False) -> tuple[int, dict, bytes]:
        """Post/redirect/get: a reload never repeats the action."""
        target = self.prefix + "/triage?" + urlencode({"error" if error else "done": message})
        page = Page(303, f'<a href="{esc(target)}">back to triage</a>'.encode())
        page.headers["Location"] = target
        return page.as_tuple()

    def _connect(self):
        from memory_core.store.db import connect

        return connect(self.app.project.db_path, create=False)

    # -- layout ----------------------------------------------------------------------------

    def _layout(self, path: str, title: str, body: str) -> bytes:
        links = "".join(
            f'<li><a href="{self.base}{href}"{CURRENT if href == path else ""}>{label}</a></li>'
            for href, label in NAV)
        project = getattr(self.app, "name", None) or os.path.basename(os.path.normpath(self.app.project.root))
        page = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                "<meta name=\"color-scheme\" content=\"light dark\">"
                f"<title>{esc(title)} · memhealth · {esc(project)}</title><style>{STYLE}</style></head><body>"
                f"<header><strong>memhealth</strong><span class=\"muted\" title=\"{esc(self.app.project.root)}\">"
                f"{esc(project)}</span><nav aria-label=\"Console pages\"><ul>{links}</ul></nav>"
                + ("<a href=\"/\">All projects</a>" if self.prefix else "")
                + "<a href=\"/runbook\">Runbook</a></header>"
                f"<main id=\"main\"><h1>{esc(title)}</h1>{body}</main></body></html>\n")
        return page.encode("utf-8")
