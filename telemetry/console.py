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
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import os
import secrets
import time
from urllib.parse import parse_qs, urlencode

PAGE_SIZE = 50
MAX_FORM_BODY = 64 * 1024
TOKEN_TTL_S = 12 * 3600
HEARTBEAT_DAYS = 7
GATE_HISTORY = 30
CONTEXT_LINES = 2  # transcript lines shown either side of a candidate
MAX_CONTEXT_SCAN = 200_000  # lines read at most to reach a candidate's line
CLIP = 300
MAX_ITEMS = 500  # memory items listed (a project has tens to hundreds)
CURRENT = ' aria-current="page"'
HERE_CLASS = ' class="here"'

ROUTES = ("/", "/decisions", "/memory", "/triage", "/alerts-budget")
POST_ROUTES = ("/triage/confirm", "/triage/reject", "/triage/retitle", "/triage/merge")
NAV = (("/", "Health"), ("/decisions", "Decisions"), ("/memory", "Memory"), ("/triage", "Triage"),
       ("/alerts-budget", "Alerts"))

STYLE = """
:root{color-scheme:light dark;--fg:CanvasText;--bg:Canvas;--muted:#5f6368;--line:#8884;
--red:#c62828;--green:#2e7d32;--note:#a15c00;--link:LinkText}
@media (prefers-color-scheme:dark){:root{--muted:#a8adb3;--red:#ff8a80;--green:#81c784;--note:#ffb74d}}
caption{text-align:left;padding:.2rem 0}
body{margin:0;font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
header{border-bottom:1px solid var(--line);padding:.5rem 1rem;display:flex;gap:1.5rem;align-items:baseline;flex-wrap:wrap}
header strong{font-size:1.1rem}
nav ul{list-style:none;margin:0;padding:0;display:flex;gap:1rem;flex-wrap:wrap}
nav a{padding:.2rem .4rem;border-radius:.25rem}
nav a[aria-current=page]{font-weight:700;outline:2px solid var(--line)}
main{padding:0 1rem 2rem;max-width:80rem}
a{color:var(--link)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible{outline:3px solid #1e88e5;outline-offset:2px}
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}
th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:13px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.25rem 0}
.muted{color:var(--muted)}
.red{color:var(--red);font-weight:700}.green{color:var(--green);font-weight:700}.note{color:var(--note);font-weight:700}
.verdict{font-size:1.3rem;margin:.75rem 0}
.card{border:1px solid var(--line);border-radius:.4rem;padding:.6rem .8rem;margin:.75rem 0}
.card h3{margin:.1rem 0 .4rem;font-size:1rem}
form.inline{display:inline-flex;gap:.4rem;align-items:center;margin:.2rem .6rem .2rem 0;flex-wrap:wrap}
form.filters{display:flex;gap:.8rem;align-items:end;flex-wrap:wrap;margin:.5rem 0}
form.filters label{display:flex;flex-direction:column;font-size:.85rem}
input,select,button{font:inherit;padding:.2rem .4rem}
button{cursor:pointer}
.flash{border-left:4px solid var(--green);padding:.4rem .7rem;margin:.75rem 0}
.flash.error{border-color:var(--red)}
.context{border-left:3px solid var(--line);padding-left:.6rem;margin:.3rem 0}
.context .here{font-weight:700}
.pager{display:flex;gap:1rem;margin:.5rem 0}
td ul{margin:0;padding-left:1rem}
"""
STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode("utf-8")).digest()).decode("ascii")
CSP = (f"default-src 'none'; style-src 'sha256-{STYLE_HASH}'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make a form POST send Origin: null
    "Cache-Control": "no-store",
}


def esc(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def when(ns) -> str:
    if not ns:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(ns) / 1e9)) + "Z"


def clip(text, n: int = CLIP) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _qs(query: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(query or "", keep_blank_values=False).items() if v}


def _int(value, default: int | None = None) -> int | None:
    try:
        return int(str(value).lstrip("#"))
    except (TypeError, ValueError):
        return default


def status_badge(status: str) -> str:
    cls = {"red": "red", "green": "green", "note": "note"}.get(status or "", "muted")
    return f'<span class="{cls}">{esc((status or "?").upper())}</span>'


class Page:
    """What a handler returns: status, extra headers, body."""

    __slots__ = ("code", "headers", "body")

    def __init__(self, code: int, body: bytes, headers: dict | None = None):
        self.code = code
        self.body = body
        self.headers = {**SECURITY_HEADERS, "Content-Type": "text/html; charset=utf-8", **(headers or {})}

    def as_tuple(self) -> tuple[int, dict, bytes]:
        return self.code, self.headers, self.body


def _text_page(code: int, message: str) -> Page:
    page = Page(code, (message + "\n").encode("utf-8"))
    page.headers["Content-Type"] = "text/plain; charset=utf-8"
    return page


class Console:
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

    # -- request checks --------------------------------------------------------------------

    def allowed_hosts(self) -> set[str]:
        port = self.app.port
        hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
        host = self.app.host
        hosts.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return hosts

    def host_ok(self, headers) -> bool:
        """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends Host: evil.example."""
        host = (headers.get("Host") or "").strip().lower()
        return host in self.allowed_hosts()

    def token(self, now: float | None = None) -> str:
        issued = str(int(time.time() if now is None else now))
        return f"{issued}.{self._mac(issued)}"

    def _mac(self, issued: str) -> str:
        scope = f"console-post|{self.prefix}|{issued}" if self.prefix else f"console-post|{issued}"
        return hmac.new(self.secret, scope.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, token: str | None, now: float | None = None) -> bool:
        if not token or "." not in token:
            return False
        issued, _, mac = token.partition(".")
        if not issued.isdigit():
            return False
        expected = self._mac(issued)
        age = (time.time() if now is None else now) - int(issued)
        return hmac.compare_digest(mac, expected) and -60 <= age <= TOKEN_TTL_S

    def origin_ok(self, headers) -> bool:
        """A browser names the page a POST came from; when it does, it must be this console."""
        if (headers.get("Sec-Fetch-Site") or "").lower() == "cross-site":
            return False
        origin = headers.get("Origin")
        if origin is None:
            return True  # non-browser clients; the token still has to be right
        return origin.lower() in {f"http://{h}" for h in self.allowed_hosts()}

    # -- dispatch --------------------------------------------------------------------------

    def get(self, path: str, query: str, headers) -> tuple[int, dict, bytes]:
        if not self.host_ok(headers):
            return _text_page(421, "misdirected request: the Host header is not this console's "
                                   "listen address (DNS rebinding is refused)").as_tuple()
        if path in POST_ROUTES:
            page = _text_page(405, "this action changes the store: POST it from the triage form")
            page.headers["Allow"] = "POST"
            return page.as_tuple()
        params = _qs(query)
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
            return _text_page(421, "misdirected request: the Host header is not this console's "
                                   "listen address; nothing was changed").as_tuple()
        if not self.origin_ok(headers):
            return _text_page(403, "cross-site request refused; nothing was changed").as_tuple()
        ctype = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            return _text_page(415, "expected a form (application/x-www-form-urlencoded)").as_tuple()
        try:
            form = _qs(body.decode("utf-8"))
        except UnicodeDecodeError:
            return _text_page(400, "the form is not UTF-8; nothing was changed").as_tuple()
        if not self.token_ok(form.get("csrf")):
            return _text_page(403, "missing or stale form token (reload the page); nothing was changed").as_tuple()
        action = path.rsplit("/", 1)[1]
        cid = _int(form.get("id"))
        if cid is None:
            return self._after(f"{action}: no candidate id given", error=True)
        extra: dict = {}
        if action == "retitle":
            extra["title"] = form.get("title", "")
        elif action == "merge":
            into = _int(form.get("into"))
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

    # -- Health ----------------------------------------------------------------------------

    def health(self, conn, params) -> tuple[str, str]:
        out = []
        run = conn.execute("SELECT id, ts_ns, total, green, red, verdict, duration_ms FROM gate_runs "
                           "ORDER BY id DESC LIMIT 1").fetchone()
        out.append("<section aria-labelledby=\"now\"><h2 id=\"now\">Verdict now</h2>")
        if run is None:
            out.append("<p>No gate run recorded yet. It runs at every session start and on serve's "
                       "probe schedule; <code>memhealth gate</code> runs it now.</p>")
        else:
            rid, ts, total, green, red, verdict, ms = run
            head = (f"MEMORY-HEALTH: {green}/{total} GREEN ({red} RED)" if red
                    else f"MEMORY-HEALTH: {total}/{total} GREEN")
            out.append(f'<p class="verdict">{status_badge(verdict)} <strong>{esc(head)}</strong> '
                       f'<span class="muted">run #{rid} at {when(ts)}, {esc(_fmt(ms))} ms</span></p>')
            checks = conn.execute(
                "SELECT name, status, state, detail, fix, duration_ms FROM gate_checks WHERE run_id = ? "
                "ORDER BY CASE status WHEN 'red' THEN 0 WHEN 'note' THEN 1 ELSE 2 END, name", (rid,)).fetchall()
            out.append("<table><caption class=\"muted\">Every check of the latest run, REDs first</caption>"
                       "<thead><tr><th scope=\"col\">Status</th><th scope=\"col\">Check</th>"
                       "<th scope=\"col\">State</th><th scope=\"col\">Detail</th><th scope=\"col\">FIX</th>"
                       "<th scope=\"col\" class=\"num\">ms</th></tr></thead><tbody>")
            for name, status, state, detail, fix, cms in checks:
                out.append(f"<tr><td>{status_badge(status)}</td><th scope=\"row\">{esc(name)}</th>"
                           f"<td>{esc(state)}</td><td>{esc(detail)}</td><td>{esc(fix) if fix else '—'}</td>"
                           f"<td class=\"num\">{esc(_fmt(cms))}</td></tr>")
            out.append("</tbody></table>")
        out.append("</section>")

        runs = conn.execute("SELECT id, ts_ns, total, green, red, verdict FROM gate_runs ORDER BY id DESC "
                            f"LIMIT {GATE_HISTORY}").fetchall()
        if runs:
            ids = [r[0] for r in runs]
            reds: dict[int, list[str]] = {}
            marks = ",".join("?" * len(ids))
            for rid, name in conn.execute(f"SELECT run_id, name FROM gate_checks WHERE status = 'red' AND "
                                          f"run_id IN ({marks}) ORDER BY name", ids):
                reds.setdefault(rid, []).append(name)
            out.append("<section aria-labelledby=\"hist\"><h2 id=\"hist\">Verdict history</h2>"
                       f"<table><caption class=\"muted\">The last {len(runs)} gate runs</caption><thead><tr>"
                       "<th scope=\"col\">Run</th><th scope=\"col\">When</th><th scope=\"col\">Verdict</th>"
                       "<th scope=\"col\" class=\"num\">Green</th><th scope=\"col\">RED checks</th></tr></thead><tbody>")
            for rid, ts, total, green, _red, verdict in runs:
                out.append(f"<tr><td>#{rid}</td><td>{when(ts)}</td><td>{status_badge(verdict)}</td>"
                           f"<td class=\"num\">{green}/{total}</td><td>{esc(', '.join(reds.get(rid, [])) or '—')}</td></tr>")
            out.append("</tbody></table></section>")

        since = time.time_ns() - HEARTBEAT_DAYS * 86400 * 10 ** 9
        per: dict[tuple, dict] = {}
        for day, hook, outcome, reason, n in conn.execute(
                "SELECT date(started_ns / 1000000000, 'unixepoch') AS day, hook, ifnull(outcome, 'open'), "
                "reason, count(*) FROM heartbeats WHERE started_ns >= ? GROUP BY day, hook, outcome, reason "
                "ORDER BY day DESC, hook", (since,)):
            row = per.setdefault((day, hook), {"ok": 0, "error": {}, "killed": 0, "open": 0})
            if outcome == "error":
                row["error"][reason or "unknown"] = row["error"].get(reason or "unknown", 0) + n
            else:
                row[outcome] = row.get(outcome, 0) + n
        out.append("<section aria-labelledby=\"hb\"><h2 id=\"hb\">Hook heartbeats</h2>")
        if not per:
            out.append(f"<p>No hook ran in the last {HEARTBEAT_DAYS} days.</p>")
        else:
            out.append(f"<table><caption class=\"muted\">Per day (UTC) and hook, the last {HEARTBEAT_DAYS} days. "
                       "Open: running, or killed and not yet reaped.</caption><thead><tr>"
                       "<th scope=\"col\">Day</th><th scope=\"col\">Hook</th><th scope=\"col\" class=\"num\">OK</th>"
                       "<th scope=\"col\">Errors by reason</th><th scope=\"col\" class=\"num\">Killed</th>"
                       "<th scope=\"col\" class=\"num\">Open</th></tr></thead><tbody>")
            for (day, hook), row in per.items():
                errors = ", ".join(f"{esc(k)} {v}" for k, v in sorted(row["error"].items())) or "—"
                if row["error"]:
                    errors = f'<span class="red">{errors}</span>'
                killed = f'<span class="red">{row["killed"]}</span>' if row["killed"] else "0"
                out.append(f"<tr><td>{esc(day)}</td><th scope=\"row\">{esc(hook)}</th>"
                           f"<td class=\"num\">{row['ok']}</td><td>{errors}</td>"
                           f"<td class=\"num\">{killed}</td><td class=\"num\">{row['open']}</td></tr>")
            out.append("</tbody></table>")
        last = last_runs(conn, since)
        if last:
            out.append(f"<h3>Last success per hook</h3><table><thead><tr><th scope=\"col\">Hook</th>"
                       "<th scope=\"col\">Last success</th><th scope=\"col\" class=\"num\">Successes (all time)</th>"
                       f"<th scope=\"col\">Last failure ({HEARTBEAT_DAYS} d)</th></tr></thead><tbody>")
            for hook, ok_ns, n, bad in last:
                bad_text = (f'<span class="red">{when(bad[0])} ({esc(bad[1])}{": " + esc(bad[2]) if bad[2] else ""})</span>'
                            if bad else "—")
                out.append(f"<tr><th scope=\"row\">{esc(hook)}</th><td>{when(ok_ns)}</td><td class=\"num\">{n}</td>"
                           f"<td>{bad_text}</td></tr>")
            out.append("</tbody></table>")
        out.append("</section>")
        return "Health", "".join(out)

    # -- Decisions -------------------------------------------------------------------------

    def decisions(self, conn, params) -> tuple[str, str]:
        from telemetry.catalog import INJECTION_OUTCOMES

        outcome = params.get("outcome", "")
        session = params.get("session", "").strip()
        before = _int(params.get("before"))
        where, args = [], []
        if outcome:
            where.append("outcome = ?")
            args.append(outcome)
        if session:
            where.append("session_id = ?")
            args.append(session)
        if before is not None:
            where.append("id < ?")
            args.append(before)
        sql = ("SELECT id, ts_ns, hook, session_id, prompt_hash, prompt_len, outcome, intent, retrieval_ms, "
               "trace_id, detail FROM decisions" + (" WHERE " + " AND ".join(where) if where else "")
               + f" ORDER BY id DESC LIMIT {PAGE_SIZE + 1}")
        rows = conn.execute(sql, args).fetchall()
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        texts = self._prompt_texts(conn, [r[9] for r in rows if r[9]])
        cues_by_trace = cue_evaluations(conn, [r[9] for r in rows if r[9]])

        options = "".join(f'<option value="{esc(o)}"{" selected" if o == outcome else ""}>{esc(o or "all")}</option>'
                          for o in ("", *INJECTION_OUTCOMES))
        out = ["<p>Every prompt writes one row here, injected or not: this is the denominator of the "
               "injection rate. Newest first.</p>",
               f"<form class=\"filters\" method=\"get\" action=\"{self.base}/decisions\" role=\"search\">"
               f"<label for=\"f-outcome\">Outcome<select id=\"f-outcome\" name=\"outcome\">{options}</select></label>"
               f"<label for=\"f-session\">Session<input id=\"f-session\" name=\"session\" value=\"{esc(session)}\" "
               "size=\"24\"></label><button type=\"submit\">Filter</button>"
               f"<a href=\"{self.base}/decisions\">Clear</a></form>"]
        counts = outcome_totals(conn) if before is None and not session and not outcome else []
        if counts:
            out.append("<p>" + " · ".join(
                f'<a href="{self.base}/decisions?{esc(urlencode({"outcome": o}))}">{esc(o)}</a> {n}' for o, n in counts) + "</p>")
        if not rows:
            out.append("<p>No decision matches.</p>")
            return "Decisions", "".join(out)
        capture = bool(self.app.cfg["injection"].get("capture_content"))
        out.append("<table id=\"decisions\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th>"
                   "<th scope=\"col\">Session</th><th scope=\"col\">Prompt</th><th scope=\"col\">Outcome</th>"
                   "<th scope=\"col\">Cascade</th><th scope=\"col\">Cues</th><th scope=\"col\" class=\"num\">ms</th>"
                   "</tr></thead><tbody>")
        for rid, ts, _hook, sid, phash, plen, oc, intent, ms, trace_id, detail_text in rows:
            detail = _loads(detail_text)
            text = texts.get(trace_id)
            if text is not None:
                prompt = f"<q>{esc(clip(text, 200))}</q> <span class=\"muted\">({plen} chars)</span>"
            else:
                prompt = (f"<code>{esc(phash or '—')}</code> <span class=\"muted\">{plen if plen is not None else '?'} "
                          f"chars{'' if capture else ', text not captured'}</span>")
            session_link = (f'<a href="{self.base}/decisions?{esc(urlencode({"session": sid}))}">{esc(clip(sid, 14))}</a>'
                            if sid else "—")
            cls = "green" if oc == "injected" else ("red" if oc == "error" else "")
            out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{session_link}</td><td>{prompt}</td>"
                       f"<td><span class=\"{cls}\">{esc(oc)}</span>{'<br><span class=muted>' + esc(intent) + '</span>' if intent else ''}</td>"
                       f"<td>{cascade(oc, detail)}</td><td>{cue_cell(cues_by_trace.get(trace_id, []))}</td>"
                       f"<td class=\"num\">{esc(_fmt(ms))}</td></tr>")
        out.append("</tbody></table><nav class=\"pager\" aria-label=\"Pages of decisions\">")
        keep = {k: v for k, v in (("outcome", outcome), ("session", session)) if v}
        if before is not None:
            out.append(f'<a href="{self.base}/decisions?{esc(urlencode(keep))}">Newest</a>')
        if more:
            out.append(f'<a href="{self.base}/decisions?{esc(urlencode({**keep, "before": rows[-1][0]}))}" rel="next">Older →</a>')
        out.append("</nav>")
        out.append(self._cue_audit(conn, params, session))
        return "Decisions", "".join(out)

    def _cue_audit(self, conn, params, session: str) -> str:
        """Every cue evaluation (tool calls, session starts, prompts), newest first, by keyset."""
        if not _has_table(conn, "cue_audit"):
            return ""
        cue = params.get("cue", "")
        before = _int(params.get("cue_before"))
        where, args = [], []
        if session:
            where.append("a.session_id = ?")
            args.append(session)
        if cue in ("fired", "skipped"):
            where.append("a.outcome = ?")
            args.append(cue)
        if before is not None:
            where.append("a.id < ?")
            args.append(before)
        rows = conn.execute(
            "SELECT a.id, a.ts_ns, a.session_id, a.event, a.trigger, m.name, a.outcome, a.reason, a.epoch, a.detail "
            "FROM cue_audit a LEFT JOIN memory_items m ON m.id = a.item_id"
            + (" WHERE " + " AND ".join(where) if where else "") + f" ORDER BY a.id DESC LIMIT {PAGE_SIZE + 1}",
            args).fetchall()
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        options = "".join(f'<option value="{c}"{" selected" if c == cue else ""}>{c or "all"}</option>'
                          for c in ("", "fired", "skipped"))
        out = ["<h2 id=\"cues\">Cue evaluations</h2><p>Every evaluation of a cue (a tool call touching a "
               "file or symbol, a session start, a prompt) leaves a row: fired, or skipped and why.</p>"
               f"<form class=\"filters\" method=\"get\" action=\"{self.base}/decisions#cues\">"
               + (f'<input type="hidden" name="session" value="{esc(session)}">' if session else "")
               + f"<label for=\"f-cue\">Cue outcome<select id=\"f-cue\" name=\"cue\">{options}</select></label>"
               "<button type=\"submit\">Filter</button></form>"]
        if not rows:
            out.append("<p>No cue evaluation recorded.</p>")
            return "".join(out)
        out.append("<table id=\"cue-audit\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th>"
                   "<th scope=\"col\">Session</th><th scope=\"col\">Event</th><th scope=\"col\">Trigger</th><th scope=\"col\">Item</th>"
                   "<th scope=\"col\">Outcome</th><th scope=\"col\">Touched</th></tr></thead><tbody>")
        for rid, ts, sid, event, trigger, name, outcome, reason, epoch, detail in rows:
            what = ('<span class="green">fired</span>' if outcome == "fired"
                    else f"skipped{': ' + esc(reason) if reason else ''}")
            out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{esc(clip(sid, 14)) if sid else '—'}</td>"
                       f"<td>{esc(event)}</td><td>{esc(trigger)}</td><td>{esc(name or '—')}</td>"
                       f"<td>{what}{' <span class=muted>epoch ' + esc(epoch) + '</span>' if epoch else ''}</td>"
                       f"<td>{esc(clip(detail, 120))}</td></tr>")
        out.append("</tbody></table>")
        if more:
            keep = {k: v for k, v in (("session", session), ("cue", cue)) if v}
            out.append(f'<nav class="pager" aria-label="Pages of cue evaluations"><a rel="next" '
                       f'href="{self.base}/decisions?{esc(urlencode({**keep, "cue_before": rows[-1][0]}))}#cues">Older →</a></nav>')
        return "".join(out)

    def _prompt_texts(self, conn, trace_ids: list[str]) -> dict[str, str]:
        """Prompt text by trace id, from the prompt's root span: only recorded when
        [injection].capture_content is on, and only while the span is in the outbox."""
        if not trace_ids or not self.app.cfg["injection"].get("capture_content"):
            return {}
        marks = ",".join("?" * len(trace_ids))
        found = {}
        for trace_id, attrs in conn.execute(
                f"SELECT trace_id, attributes FROM spans WHERE parent_span_id IS NULL AND trace_id IN ({marks})",
                trace_ids):
            text = _loads(attrs).get("memhealth.prompt.text")
            if isinstance(text, str):
                found[trace_id] = text
        return found

    # -- Memory ----------------------------------------------------------------------------

    def memory(self, conn, params) -> tuple[str, str]:
        q = params.get("q", "").strip()
        source = params.get("source", "")
        before = _int(params.get("before"))
        # Counting reads the whole (source, path) index (~10 ms per 100,000 chunks): on request
        # only, so the page itself costs the same with 1,000 chunks as with 100,000.
        counts = []
        if params.get("counts"):
            counts = [(s, "", n) for s, n in conn.execute("SELECT source, count(*) FROM chunks GROUP BY source")
                      if s != "memory"]
            counts += [("memory", k, n) for k, n in conn.execute(
                "SELECT ifnull(kind, ''), count(*) FROM chunks WHERE source = 'memory' GROUP BY kind "
                "ORDER BY count(*) DESC")]
            counts.sort(key=lambda c: c[0])
        from memory_core.ingest.base import SOURCES

        sources = list(SOURCES)
        options = "".join(f'<option value="{esc(s)}"{" selected" if s == source else ""}>{esc(s or "all")}</option>'
                          for s in ("", *sources))
        out = [f"<form class=\"filters\" method=\"get\" action=\"{self.base}/memory\" role=\"search\">"
               f"<label for=\"m-q\">Search memory<input id=\"m-q\" name=\"q\" type=\"search\" size=\"40\" value=\"{esc(q)}\"></label>"
               f"<label for=\"m-source\">Source<select id=\"m-source\" name=\"source\">{options}</select></label>"
               f"<button type=\"submit\">Search</button><a href=\"{self.base}/memory\">Clear</a></form>"]
        if counts:
            out.append("<h2>What memory holds: " + esc(sum(n for *_x, n in counts))
                       + " chunks</h2><table id=\"counts\"><thead><tr><th scope=\"col\">Source</th><th scope=\"col\">Kind</th>"
                       "<th scope=\"col\" class=\"num\">Chunks</th></tr></thead><tbody>")
            out += [f"<tr><td>{esc(s)}</td><td>{esc(k or '—')}</td><td class=\"num\">{n}</td></tr>" for s, k, n in counts]
            out.append("</tbody></table>")
        else:
            out.append(f'<p><a href="{self.base}/memory?counts=1">Count the chunks by source and kind</a></p>')
        if q:
            from memory_core.index.search import search

            result = search(conn, q, self.app.cfg, k=20)
            hits = [h for h in result.hits if not source or h.source == source]
            legs = ", ".join(result.legs_answered) or "none"
            note = f"; vector leg: {esc(result.degraded)}" if result.degraded else ""
            out.append(f"<h2>Search: “{esc(q)}”</h2><p class=\"muted\">{len(hits)} hit(s), legs answered: {esc(legs)}{note}, "
                       f"{esc(_fmt(result.timings.get('total_ms')))} ms</p>")
            out.append('<section id="hits" aria-label="Search results">' + _chunk_table(
                [(h.chunk_id, h.source, _kind(conn, h.chunk_id), h.path, h.lines, h.title, h.snippet, h.signal_weight,
                  f"{h.score:.4f} ({'+'.join(h.legs)})") for h in hits], score=True) + "</section>")
        else:
            where, args = [], []
            if source:
                where.append("source = ?")
                args.append(source)
            if before is not None:
                where.append("id < ?")
                args.append(before)
            rows = conn.execute(
                "SELECT id, source, kind, path, line_start, line_end, title, substr(content, 1, 400), signal_weight "
                "FROM chunks" + (" WHERE " + " AND ".join(where) if where else "")
                + f" ORDER BY id DESC LIMIT {PAGE_SIZE + 1}", args).fetchall()
            more = len(rows) > PAGE_SIZE
            rows = rows[:PAGE_SIZE]
            out.append("<h2>Chunks, newest first</h2>")
            out.append(_chunk_table([(r[0], r[1], r[2], r[3], _lines(r[4], r[5]), r[6], clip(r[7], 240), r[8], None)
                                     for r in rows]))
            keep = {"source": source} if source else {}
            out.append("<nav class=\"pager\" aria-label=\"Pages of chunks\">")
            if before is not None:
                out.append(f'<a href="{self.base}/memory?{esc(urlencode(keep))}">Newest</a>')
            if more:
                out.append(f'<a href="{self.base}/memory?{esc(urlencode({**keep, "before": rows[-1][0]}))}" rel="next">Older →</a>')
            out.append("</nav>")
        out.append(self._memory_items(conn))
        records = conn.execute(
            "SELECT id, kind, title, statement, transcript, line, session_id, ts, role, record_path, decided_ns "
            "FROM capture_candidates WHERE state = 'confirmed' ORDER BY decided_ns DESC LIMIT 100").fetchall()
        out.append("<h2>Confirmed records</h2>")
        if not records:
            out.append(f"<p>No record confirmed yet: <a href=\"{self.base}/triage\">triage</a> decides which captured "
                       "statements become memory.</p>")
        else:
            out.append("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Kind</th><th scope=\"col\">Title</th>"
                       "<th scope=\"col\">Statement</th><th scope=\"col\">Provenance</th><th scope=\"col\">File</th>"
                       "<th scope=\"col\">Confirmed</th></tr></thead><tbody>")
            for cid, kind, title, stmt, tr, line, sid, ts, role, path, decided in records:
                prov = _provenance(tr, line, sid, ts, role)
                out.append(f"<tr><td>{cid}</td><td>{esc(kind)}</td><td>{esc(title)}</td><td>{esc(clip(stmt))}</td>"
                           f"<td>{esc(prov)}</td><td><code>{esc(path)}</code></td><td>{when(decided)}</td></tr>")
            out.append("</tbody></table>")
        return "Memory", "".join(out)

    def _memory_items(self, conn) -> str:
        """Memory items (one per memory file, compiled at ingest): kind, triggers, provenance,
        state; pinned items and the resume anchor first."""
        if not _has_table(conn, "memory_items"):
            return ""
        from memory_core.items.compile import list_cues

        out = []
        anchor = conn.execute("SELECT path, line_start, title, content FROM chunks WHERE source = 'memory' AND "
                              "title LIKE '%LATEST%' ORDER BY id DESC LIMIT 1").fetchone()
        out.append("<h2>Resume anchor</h2>")
        if anchor:
            out.append(f'<div class="card"><h3>{esc(anchor[2])}</h3><p class="muted"><code>{esc(anchor[0])}:'
                       f'{esc(anchor[1])}</code></p><pre>{esc(anchor[3][:1500])}</pre></div>')
        else:
            out.append("<p>No resume anchor: a <code>## LATEST</code> heading in a memory file is where the next "
                       "session picks up.</p>")
        now = time.time_ns()
        cued = {c["id"]: c for c in list_cues(conn, self.app.project.root, self.app.cfg, now_ns=now)}
        items = conn.execute(f"SELECT id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns FROM memory_items "
                             f"ORDER BY pinned DESC, recorded_ns DESC LIMIT {MAX_ITEMS + 1}").fetchall()
        out.append(f"<h2>Memory items: {min(len(items), MAX_ITEMS)}{'+' if len(items) > MAX_ITEMS else ''}</h2>")
        if not items:
            out.append("<p>No memory item: memory files (with frontmatter naming their kind and triggers) "
                       "become items at ingest.</p>")
            return "".join(out)
        out.append("<table><thead><tr><th scope=\"col\">Item</th><th scope=\"col\">Kind</th>"
                   "<th scope=\"col\">Triggers</th><th scope=\"col\">State</th><th scope=\"col\">Provenance</th>"
                   "<th scope=\"col\">Fired</th></tr></thead><tbody>")
        for iid, path, line, name, kind, scope, pinned, expires_ns, recorded_ns in items[:MAX_ITEMS]:
            info = cued.get(iid)
            expired = expires_ns is not None and expires_ns <= now
            triggers = "".join(f"<li>{esc(c['trigger'])}: <code>{esc(c['pattern'])}</code>"
                               f"{'' if c['state'] == 'active' else ' — <span class=note>' + esc(c['state']) + '</span>'}</li>"
                               for c in (info or {}).get("cues", []))
            states = {c["state"].split(":")[0] for c in (info or {}).get("cues", [])}
            state = "expired" if expired else ("stale" if "stale" in states else "active")
            cls = {"expired": "muted", "stale": "note", "active": "green"}[state]
            errors = (info or {}).get("errors") or []
            fired = (f"{info['fired']}× · last {when(info['last_fired_ns'])}" if info and info["fired"] else "never")
            out.append(
                f"<tr><th scope=\"row\">{esc(name)}{' <span class=note>pinned</span>' if pinned else ''}"
                f"{'<br><span class=muted>scope ' + esc(scope) + '</span>' if scope else ''}</th><td>{esc(kind)}</td>"
                f"<td>{'<ul>' + triggers + '</ul>' if triggers else '—'}"
                + "".join(f'<div class="red">{esc(e[0])}: {esc(e[1])}</div>' for e in errors
                          if isinstance(e, (list, tuple)) and len(e) == 2)
                + f"</td><td><span class=\"{cls}\">{state}</span>"
                f"{'<br><span class=muted>expires ' + when(expires_ns) + '</span>' if expires_ns else ''}</td>"
                f"<td><code>{esc(path)}{':' + esc(line) if line else ''}</code><br><span class=muted>recorded "
                f"{when(recorded_ns)}</span></td><td>{fired}</td></tr>")
        out.append("</tbody></table>")
        return "".join(out)

    # -- Triage ----------------------------------------------------------------------------

    def triage(self, conn, params) -> tuple[str, str]:
        from memory_core.records import triage

        items = triage.pending(conn)
        token = self.token()
        out = []
        if params.get("done"):
            out.append(f'<p class="flash" role="status">{esc(params["done"])}</p>')
        if params.get("error"):
            out.append(f'<p class="flash error" role="alert">{esc(params["error"])}</p>')
        out.append("<p>The session-end capture proposes decisions, dead ends and corrections; only what "
                   "you confirm becomes memory (a file under <code>.memhealth/memory/records/</code>, indexed "
                   "at once). Rejected and merged statements are never proposed again. These are the "
                   "operations of <code>memhealth triage</code>, recorded the same way.</p>")
        targets = conn.execute("SELECT id, title, state FROM capture_candidates WHERE state IN ('pending', 'confirmed') "
                               "ORDER BY id").fetchall()
        out.append(f"<h2>Pending: {len(items)}</h2>")
        if not items:
            out.append("<p>Nothing pending.</p>")
        for item in items:
            cid = item["id"]
            merge_opts = "".join(f'<option value="{t[0]}">#{t[0]} {esc(clip(t[1], 60))} ({esc(t[2])})</option>'
                                 for t in targets if t[0] != cid)
            hidden = f'<input type="hidden" name="csrf" value="{esc(token)}"><input type="hidden" name="id" value="{cid}">'
            also = "".join(f"<li>#{a['id']}: {esc(clip(a['statement']))}</li>" for a in item.get("also") or [])
            out.append(
                f'<article class="card" id="c{cid}" aria-labelledby="c{cid}-t">'
                f'<h3 id="c{cid}-t">#{cid} <span class="muted">{esc(item["kind"])}</span> · {esc(item["title"])}</h3>'
                f"<p>{esc(item['statement'])}</p>"
                f"<p class=\"muted\">From {esc(triage.provenance(item))} · proposed {when(item['created_ns'])}</p>"
                f"{_context_html(item)}"
                + (f"<p>Also said:</p><ul>{also}</ul>" if also else "")
                + f'<form class="inline" method="post" action="{self.base}/triage/confirm">{hidden}'
                f'<button type="submit" name="confirm" aria-label="Confirm #{cid}">Confirm</button></form>'
                f'<form class="inline" method="post" action="{self.base}/triage/reject">{hidden}'
                f'<button type="submit" aria-label="Reject #{cid}">Reject</button></form>'
                f'<form class="inline" method="post" action="{self.base}/triage/retitle">{hidden}'
                f'<label for="t{cid}">New title</label><input id="t{cid}" name="title" required size="36" '
                f'value="{esc(item["title"])}"><button type="submit">Retitle</button></form>'
                + (f'<form class="inline" method="post" action="{self.base}/triage/merge">{hidden}'
                   f'<label for="m{cid}">Same as</label><select id="m{cid}" name="into">{merge_opts}</select>'
                   f'<button type="submit">Merge</button></form>' if merge_opts else "")
                + "</article>")
        decided = conn.execute(
            "SELECT id, kind, title, state, merged_into, record_path, decided_ns FROM capture_candidates "
            "WHERE state != 'pending' ORDER BY decided_ns DESC LIMIT 30").fetchall()
        if decided:
            out.append("<h2>Recently decided</h2><table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Kind</th>"
                       "<th scope=\"col\">Title</th><th scope=\"col\">Decision</th><th scope=\"col\">When</th></tr></thead><tbody>")
            for cid, kind, title, state, into, path, ts in decided:
                what = {"confirmed": f"confirmed → <code>{esc(path)}</code>", "merged": f"merged into #{into}"}.get(
                    state, esc(state))
                out.append(f"<tr><td>{cid}</td><td>{esc(kind)}</td><td>{esc(title)}</td><td>{what}</td><td>{when(ts)}</td></tr>")
            out.append("</tbody></table>")
        return "Triage", "".join(out)

    # -- Alerts ----------------------------------------------------------------------------

    def alerts(self, conn, params) -> tuple[str, str]:
        from probes import budget

        acfg = self.app.cfg["alerts"]
        now = time.time()
        start = budget.window_start(now, self.app.cfg)
        size = float(acfg["window_h"]) * 3600
        per_window = int(acfg["pages_per_window"])
        routes = list(dict.fromkeys([*(acfg.get("routes") or ()), budget.DEFAULT_ROUTE, budget.UNKNOWN_ROUTE]))
        out = [f"<p>A page is a person interrupted: at most {per_window} per route per {acfg['window_h']:g} h window "
               f"(this one: {when(start * 1e9)} to {when((start + size) * 1e9)}). Over budget, an alert folds "
               "into the window's digest.</p>",
               "<h2>Page budget, this window</h2><table><thead><tr><th scope=\"col\">Route</th>"
               "<th scope=\"col\" class=\"num\">Pages used</th><th scope=\"col\" class=\"num\">Remaining</th>"
               "<th scope=\"col\" class=\"num\">Folded</th><th scope=\"col\">Noisiest</th></tr></thead><tbody>"]
        for route in routes:
            used = budget.pages_used(conn, route, start, now)
            dig = budget.digest(conn, route, start, now + 1)
            left = max(0, per_window - used)
            out.append(f"<tr><th scope=\"row\">{esc(route)}</th><td class=\"num\">{used}</td>"
                       f"<td class=\"num\">{'<span class=red>0</span>' if not left else left}</td>"
                       f"<td class=\"num\">{dig['folded']}</td><td>{esc(dig['noisiest'] or '—')}</td></tr>")
        out.append("</tbody></table>")
        digests = conn.execute("SELECT ts_ns, route, detail FROM alert_decisions WHERE decision = 'digest' "
                               "ORDER BY id DESC LIMIT 10").fetchall()
        out.append("<h2>Digests</h2>")
        out.append("<ul>" + "".join(f"<li>{when(ts)} · {esc(r)}: {esc(d)}</li>" for ts, r, d in digests) + "</ul>"
                   if digests else "<p>No digest sent yet (one goes out when the first alert of a new window "
                                   "arrives after anything folded).</p>")
        decision = params.get("decision", "")
        before = _int(params.get("before"))
        where, args = [], []
        if decision:
            where.append("decision = ?")
            args.append(decision)
        if before is not None:
            where.append("id < ?")
            args.append(before)
        rows = conn.execute("SELECT id, ts_ns, route, alertname, severity, status, decision, detail FROM alert_decisions"
                            + (" WHERE " + " AND ".join(where) if where else "")
                            + f" ORDER BY id DESC LIMIT {PAGE_SIZE + 1}", args).fetchall()
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        options = "".join(f'<option value="{d}"{" selected" if d == decision else ""}>{d or "all"}</option>'
                          for d in ("", "paged", "folded", "deduped", "noted", "digest"))
        out.append(f"<h2>Decisions</h2><form class=\"filters\" method=\"get\" action=\"{self.base}/alerts-budget\">"
                   f"<label for=\"a-d\">Decision<select id=\"a-d\" name=\"decision\">{options}</select></label>"
                   "<button type=\"submit\">Filter</button></form>")
        if not rows:
            out.append("<p>No alert decision recorded.</p>")
        else:
            out.append("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th><th scope=\"col\">Route</th>"
                       "<th scope=\"col\">Alert</th><th scope=\"col\">Severity</th><th scope=\"col\">Status</th>"
                       "<th scope=\"col\">Decision</th><th scope=\"col\">Why</th></tr></thead><tbody>")
            for rid, ts, route, name, sev, status, dec, detail in rows:
                cls = "red" if dec == "paged" else ("note" if dec == "folded" else "")
                out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{esc(route)}</td><td>{esc(name)}</td>"
                           f"<td>{esc(sev)}</td><td>{esc(status)}</td><td><span class=\"{cls}\">{esc(dec)}</span></td>"
                           f"<td>{esc(clip(detail))}</td></tr>")
            out.append("</tbody></table>")
            if more:
                keep = {"decision": decision} if decision else {}
                out.append(f'<nav class="pager" aria-label="Pages of alert decisions"><a rel="next" '
                           f'href="{self.base}/alerts-budget?{esc(urlencode({**keep, "before": rows[-1][0]}))}">Older →</a></nav>')
        return "Alerts", "".join(out)


# -- helpers ---------------------------------------------------------------------------------

def _has_table(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def cue_evaluations(conn, trace_ids: list[str]) -> dict[str, list[tuple]]:
    """The cue audit rows of these hook invocations (by the trace id a decision row shares)."""
    if not trace_ids or not _has_table(conn, "cue_audit"):
        return {}
    marks = ",".join("?" * len(trace_ids))
    found: dict[str, list[tuple]] = {}
    for trace_id, trigger, name, outcome, reason in conn.execute(
            "SELECT a.trace_id, a.trigger, m.name, a.outcome, a.reason FROM cue_audit a LEFT JOIN memory_items m "
            f"ON m.id = a.item_id WHERE a.trace_id IN ({marks}) ORDER BY a.id", trace_ids):
        found.setdefault(trace_id, []).append((trigger, name, outcome, reason))
    return found


def cue_cell(evaluations: list[tuple]) -> str:
    if not evaluations:
        return "—"
    parts = []
    for trigger, name, outcome, reason in evaluations[:8]:
        label = f"{esc(name or 'no item')} ({esc(trigger)})"
        parts.append(f'<span class="green">fired</span> {label}' if outcome == "fired"
                     else f"skipped {label}{': ' + esc(reason) if reason else ''}")
    more = f"<br><span class=muted>+{len(evaluations) - 8} more</span>" if len(evaluations) > 8 else ""
    return "<br>".join(parts) + more


def last_runs(conn, since_ns: int) -> list[tuple]:
    """(hook, last ok end, ok count, last failure in the window or None) per hook. Counts
    come from the invocation rollup and each "last" is one step down the (hook, started_ns)
    index, so the page costs the same with a year of heartbeats as with a day."""
    counts: dict[str, int] = {}
    for labels, value in conn.execute("SELECT labels, value FROM rollups WHERE metric = "
                                      "'memhealth_hook_invocations_total'"):
        lab = _loads(labels)
        hook = lab.get("hook")
        if hook:
            counts[hook] = counts.get(hook, 0) + (int(value) if lab.get("outcome") == "ok" else 0)
    out = []
    for hook in sorted(counts):
        ok = conn.execute("SELECT ended_ns FROM heartbeats WHERE hook = ? AND outcome = 'ok' "
                          "ORDER BY id DESC LIMIT 1", (hook,)).fetchone()
        bad = conn.execute("SELECT started_ns, outcome, reason FROM heartbeats WHERE hook = ? AND started_ns >= ? "
                           "AND outcome IN ('error', 'killed') ORDER BY id DESC LIMIT 1",
                           (hook, since_ns)).fetchone()
        out.append((hook, ok[0] if ok else None, counts[hook], bad))
    return out


def outcome_totals(conn) -> list[tuple[str, int]]:
    """Decisions per outcome from the counter rollup the hooks keep on write: a GROUP BY over
    100,000 rows would make the first page the slow one."""
    totals = []
    for labels, value in conn.execute("SELECT labels, value FROM rollups WHERE metric = "
                                      "'memhealth_injection_decisions_total'"):
        outcome = _loads(labels).get("outcome")
        if outcome and value:
            totals.append((str(outcome), int(value)))
    return sorted(totals, key=lambda t: -t[1])


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return str(value)


def _loads(text) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _kind(conn, chunk_id: int) -> str | None:
    row = conn.execute("SELECT kind FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return row[0] if row else None


def _lines(start, end) -> str:
    if start is None:
        return ""
    return str(start) if end in (None, start) else f"{start}-{end}"


def _provenance(transcript, line, session, ts, role) -> str:
    extra = ", ".join(x for x in (f"session {session}" if session else "", ts or "", role or "") if x)
    return f"{transcript}:{line}" + (f" ({extra})" if extra else "")


OUTCOME_MEANING = {
    "no_intent": "no decision, debugging or recall intent in the prompt: retrieval not run",
    "system_turn": "a harness turn, not the person: skipped",
    "capped": "the session's injection cap was reached",
    "error": "the cascade could not decide (store unavailable)",
}


def cascade(outcome: str, detail: dict) -> str:
    """The cascade's arithmetic in a line or two: which gate stopped the prompt and by how much."""
    parts = []
    if "marker" in detail:
        parts.append(f"system turn ({esc(detail['marker'])})")
    if "tokens" in detail:
        parts.append(f"{esc(detail['tokens'])} tokens")
    small = bool(detail.get("small_corpus"))
    if "corpus" in detail:
        parts.append(f"corpus {esc(detail['corpus'])} chunks"
                     + (" (small: the IDF gates are waived)" if small else ""))
    if "max_prompt_idf" in detail and "distinctive_idf" in detail and not small:
        parts.append("most distinctive word IDF " + _versus(detail["max_prompt_idf"], detail["distinctive_idf"]))
    if detail.get("inventory"):
        parts.append(f"inventory {esc(detail['inventory'])} entries, {esc(detail.get('dnr_passed', 0))} named")
    if "matched" in detail:
        need = detail.get("min_matches")
        parts.append(f"best: {esc(detail['matched'])} matched" + (f" (need {esc(need)})" if need is not None else ""))
    if "idf_sum" in detail and "threshold" in detail:
        parts.append("IDF sum " + _versus(detail["idf_sum"], detail["threshold"])
                     + (" (waived)" if small else ""))
    if "candidates" in detail:
        parts.append(f"{esc(detail['candidates'])} candidate(s), {esc(detail.get('passed', 0))} passed")
    if detail.get("reason"):
        parts.append(f"<em>{esc(detail['reason'])}</em>")
    items = detail.get("items") or []
    if items:
        parts.append("injected: " + ", ".join(
            f"chunk {esc(i.get('chunk_id'))}" + (f" “{esc(clip(i.get('block'), 60))}”" if i.get("block") else "")
            for i in items if isinstance(i, dict)))
    if "chars" in detail:
        parts.append(f"{esc(detail['chars'])} chars")
    line = "<br>".join(parts) or esc(OUTCOME_MEANING.get(outcome, "—"))
    if detail:
        line += ("<details><summary>detail</summary><pre>"
                 + esc(json.dumps(detail, indent=1, ensure_ascii=False, default=str)[:4000]) + "</pre></details>")
    return line


def _versus(value, threshold) -> str:
    """"9.40 ≥ 7.00" (or "<"): a number against the threshold it had to reach."""
    try:
        v, t = float(value), float(threshold)
    except (TypeError, ValueError):
        return f"{esc(value)} vs {esc(threshold)}"
    return f"{v:.2f} {'≥' if v >= t else '<'} {t:.2f}"


def _message_text(raw: str) -> tuple[str, str]:
    """(role, text) of one transcript line, best effort."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return "", raw
    if not isinstance(obj, dict):
        return "", raw
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    content = msg.get("content")
    if isinstance(content, list):
        content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text")
    return str(msg.get("role") or obj.get("type") or ""), str(content or "")


def transcript_context(path: str, line: int, around: int = CONTEXT_LINES) -> list[tuple[int, str, str]]:
    """(line number, role, text) of the transcript lines around `line` (1-based); empty when
    the file is gone. Reads at most MAX_CONTEXT_SCAN lines."""
    if not path or not line or line > MAX_CONTEXT_SCAN or not os.path.isfile(path):
        return []
    first, last = max(1, line - around), line + around
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, raw in enumerate(fh, 1):
                if n > last:
                    break
                if n >= first and raw.strip():
                    role, text = _message_text(raw[:200_000])
                    if text.strip():
                        out.append((n, role, clip(text)))
    except OSError:
        return []
    return out


def _context_html(item: dict) -> str:
    lines = transcript_context(item.get("transcript") or "", int(item.get("line") or 0))
    if not lines:
        return '<p class="muted">(transcript context unavailable: the file is gone or moved)</p>'
    body = "".join(
        f'<div{HERE_CLASS if n == item["line"] else ""}><span class="muted">{n} {esc(role)}:</span> {esc(text)}</div>'
        for n, role, text in lines)
    return f'<details open><summary>Transcript context</summary><div class="context">{body}</div></details>'


def _chunk_table(rows, score: bool = False) -> str:
    if not rows:
        return "<p>No chunk matches.</p>"
    head = ("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Source</th><th scope=\"col\">Kind</th>"
            "<th scope=\"col\">Provenance</th><th scope=\"col\">Title</th><th scope=\"col\">Text</th>"
            "<th scope=\"col\" class=\"num\">Weight</th>" + ("<th scope=\"col\">Score</th>" if score else "")
            + "</tr></thead><tbody>")
    body = []
    for cid, source, kind, path, lines, title, snippet, weight, sc in rows:
        body.append(f"<tr><td>{cid}</td><td>{esc(source)}</td><td>{esc(kind or '—')}</td>"
                    f"<td><code>{esc(path)}{':' + esc(lines) if lines else ''}</code></td><td>{esc(title or '')}</td>"
                    f"<td>{esc(snippet)}</td><td class=\"num\">{esc(_fmt(weight))}</td>"
                    + (f"<td>{esc(sc)}</td>" if score else "") + "</tr>")
    return head + "".join(body) + "</tbody></table>"
