"""`memhealth serve`: the long-lived side of telemetry, on one loopback HTTP port.

    app = Serve(project, cfg, host="127.0.0.1", port=9464)
    app.start()                      # HTTP thread, probe thread, exporter thread
    ...
    app.stop()                       # final export bounded by telemetry.export_timeout_s

Endpoints:
- `GET /metrics`: Prometheus exposition from the store (`telemetry.collector`). A scrape
  is bounded: a locked or slow store yields the last good values and
  `memhealth_scrape_errors_total` goes up, never a hang (a scrape that waits past
  scrape_timeout makes a live target read as dead).
- `GET /`, `/decisions`, `/memory`, `/triage`, `/alerts-budget` and `POST /triage/*`: the
  console (telemetry/console/): pages for a person, Host-checked, CSRF-tokened, strict CSP.
- `GET /healthz`: liveness of serve itself, from memory only; never waits on a probe or
  the database.
- `POST /alerts`: Alertmanager webhook (v4) → alert budget policy → sinks. Every decision
  is appended to `alerts.sink_file` (NDJSON); pages and digests are also POSTed to
  `alerts.webhook_url` when set. A malformed body gets 400 and is still written to the
  sink, marked rejected, so nothing is lost.

Background threads: scheduled probes (the gate, every `serve.probe_interval_s`; a cold
model load or a hung probe never blocks a scrape), the OTLP exporter (every
`serve.export_interval_s`) and, with embeddings configured, the vector backfill (every
`serve.backfill_interval_s`, within `ingest.budget_s`: chunks an ingest indexed as text and
left without a vector get one; memory_core.ingest.vectorize).

`MultiServe` (`memhealth serve --all`, telemetry/serve_all.py) serves the same for every
registered project on one port; the webhook intake both use is telemetry/alert_intake.py.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from memory_core.errors import StoreError
from memory_core.store.db import connect
from telemetry.alert_intake import MAX_ALERT_BODY, AlertIntake
from telemetry.collector import StoreCollector
from telemetry.console import POST_ROUTES as CONSOLE_POST
from telemetry.console import ROUTES as CONSOLE_PAGES
from telemetry.errors import ListenError, TelemetryError

CONSOLE_GET = CONSOLE_PAGES + CONSOLE_POST  # a GET of an action answers 405: no change on GET
REQUEST_SOCKET_TIMEOUT_S = 10.0  # a stalled client cannot hold a handler thread forever


REFUSED_BODY_DRAIN = 64 * 1024  # bytes of a refused request's body read (and dropped) before the 401
MAX_CONNECTIONS = 64  # concurrent connections; a slowloris crowd cannot grow threads without bound
HEADER_DEADLINE_S = 2.0  # a connection still sending headers after this yields its slot when all are taken
SLOT_WAIT_S = 2.0        # how long a new connection waits for the slot an eviction frees
EVICT_AT_ONCE = 8        # overdue connections closed per connection that found no slot


class BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most MAX_CONNECTIONS handler threads: a connection over
    the cap is closed at once (a hostile client costs a socket, not a thread), and each
    handler's socket times out after REQUEST_SOCKET_TIMEOUT_S."""

    request_queue_size = 128  # socketserver's 5 makes a burst of scrapes wait 1 s for SYN retries

    def __init__(self, *args, guard=None, **kwargs):
        from telemetry.serve_auth import OPEN

        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0
        # -- slowloris: connections still sending their headers, and when they started ------
        self.pending: dict = {}
        self._pending_lock = threading.Lock()
        self.guard = guard if guard is not None else OPEN
        super().__init__(*args, **kwargs)

    def finish_request(self, request, client_address):
        """With TLS, the handshake runs here, on the handler's thread and under its socket
        timeout: a client that never completes it holds one slot, never the accept loop."""
        ctx = self.guard.ssl_context
        if ctx is None:
            return super().finish_request(request, client_address)
        import ssl

        request.settimeout(REQUEST_SOCKET_TIMEOUT_S)
        try:
            tls = ctx.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            tls.do_handshake()
        except (ssl.SSLError, OSError):  # plain HTTP to the TLS port, an untrusted client, a stall
            self.guard.count("tls_handshake")
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            # every slot is taken: a connection whose headers are overdue gives its slot up,
            # so a scrape gets through a crowd trickling header bytes (it waits a moment for
            # the slot; a burst of real requests frees slots in milliseconds)
            evicted = self._evict_overdue()
            if not (evicted and self.slots.acquire(timeout=SLOT_WAIT_S)):
                self.refused += 1
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        with self._pending_lock:
            self.pending[request] = time.monotonic()
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.headers_done(request)
            self.slots.release()

    def headers_done(self, request) -> None:
        with self._pending_lock:
            self.pending.pop(request, None)

    def _evict_overdue(self) -> int:
        """Close up to EVICT_AT_ONCE connections whose headers are overdue; how many."""
        now = time.monotonic()
        with self._pending_lock:
            overdue = sorted((t, id(r), r) for r, t in self.pending.items() if now - t > HEADER_DEADLINE_S)
            for _t, _id, request in overdue[:EVICT_AT_ONCE]:
                self.pending.pop(request, None)
                self.refused += 1
                try:
                    request.shutdown(socket.SHUT_RDWR)  # its handler's read returns: the slot frees
                except OSError:
                    pass
            return len(overdue[:EVICT_AT_ONCE])
        # -- end slowloris ---------------------------------------------------------------------


def parse_listen(listen: str, allow_remote: bool = False, secured: bool = False) -> tuple[str, int]:
    """"host:port" (or "[v6]:port") → (host, port); non-loopback refused unless allowed, and
    allowed only when `secured` (TLS and a bearer token, telemetry/serve_auth.py)."""
    text = listen.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ListenError(f"listen address {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9464")
    try:
        port = int(port_text)
    except ValueError:
        raise ListenError(f"listen address {listen!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ListenError(f"listen address {listen!r}: port out of range")
    host = host or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"  # IPv4 literal: localhost may resolve to ::1 first
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise ListenError(f"listen address {listen!r}: {host!r} is not an IP address") from None
    if not loopback and not allow_remote:
        raise ListenError(f"refusing to bind {host}: /metrics and /alerts are unauthenticated; "
                          "bind a loopback address or pass --allow-remote")
    if not loopback and not secured:
        raise ListenError(f"refusing to serve {host} without TLS and a token: --allow-remote needs "
                          "--tls-cert, --tls-key and --token-file (every request then needs the "
                          "bearer token)")
    return host, port


def gate_probe(conn, cfg, project) -> None:
    """The default scheduled probe: one gate run (probes/gate.py), recorded in the store
    (gate_runs, gate_checks, rollups, its own heartbeat and trace)."""
    from probes import gate
    from probes.evidence import Evidence

    # off the hook path: may read transcripts; a one-time notice (a store reset) is the
    # person's to hear, not the schedule's
    ev = Evidence(project.root, conn, cfg, witness=True)
    ev.scheduled = True
    gate.run(ev)


def find_default_probe():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return gate_probe if os.path.exists(os.path.join(here, "probes", "gate.py")) else None


def runbook_page() -> tuple[int, bytes]:
    """The alert runbook as HTML: where every alert's runbook_url points by default (one
    runbook for every project, so serve --all serves the same page)."""
    from telemetry import runbook

    try:
        return 200, runbook.render(runbook.load())
    except OSError as exc:  # an install without the packaged runbook: say where it is
        return 404, f"runbook not installed ({exc.strerror}); see alerts/runbook.md\n".encode()


def stderr_line(line: str) -> None:
    import sys

    print(line, file=sys.stderr, flush=True)


class ServeThreads:
    """What Serve and MultiServe share: the HTTP server on its address, the background
    threads (http, probe, export), and a bounded stop. Needs host, port, cfg, probe,
    export_enabled, guard, stopping, _server, _threads, _probe_loop and _export_loop."""

    @property
    def scheme(self) -> str:
        return "https" if self.guard.tls else "http"

    def _listen(self, handler) -> None:
        server_cls = BoundedServer
        if ":" in self.host:
            import socket

            class V6Server(BoundedServer):
                address_family = socket.AF_INET6

            server_cls = V6Server
        self._server = server_cls((self.host, self.port), handler, guard=self.guard)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._spawn("http", self._server.serve_forever, 0.1)
        if self.probe is not None:
            self._spawn("probe", self._probe_loop)
        if self.export_enabled:
            self._spawn("export", self._export_loop)

    def _spawn(self, name, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=f"memhealth-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _stop_threads(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        budget = float(self.cfg["telemetry"]["export_timeout_s"]) * 2 + 2.0
        deadline = time.monotonic() + budget
        for thread in self._threads:
            if thread.name in ("memhealth-probe", "memhealth-vectors"):
                continue  # a hung probe or embed is abandoned (daemon thread), never waited on
            thread.join(max(0.0, deadline - time.monotonic()))


class Serve(ServeThreads):
    """One project's serve process: HTTP endpoints plus probe and exporter threads.

        app = Serve(project, cfg, port=0).start()   # app.port is the bound port
        app.stop()

    `probe` is called as probe(conn, cfg, project) on the probe thread (default: the gate
    when probes/gate.py exists; None disables probing)."""

    def __init__(self, project, cfg, host: str = "127.0.0.1", port: int = 9464, *,
                 probe="default", export: bool = True, environ=None, log=None, hooks=None,
                 guard=None):
        from telemetry.serve_auth import OPEN

        self.guard = guard if guard is not None else OPEN
        self.project = project
        # -- the HTTP hook transport (telemetry/hook_endpoint.py): a HookEndpoint or None
        self.hooks = hooks
        self.cfg = cfg
        self.host = host
        self.port = port
        self.environ = os.environ if environ is None else environ
        self.probe = find_default_probe() if probe == "default" else probe
        self.export_enabled = export
        self.collector = StoreCollector(project.db_path, killed_after_s=cfg["hooks"]["killed_after_s"])
        self.problems: list[str] = []
        self.intake = AlertIntake(project, cfg, self.problems)
        self.sink = self.intake.sink
        self.started_at = time.time()
        self.stopping = threading.Event()
        self.probe_state = {"runs": 0, "errors": 0, "running_since": None, "last_finished": None,
                            "last_error": None, "last_duration_s": None}
        self.export_state: dict = {"runs": 0, "last": None}
        self.backfill_state: dict = {"runs": 0, "errors": 0, "last": None, "last_error": None}
        self.log = log if log is not None else stderr_line  # one line per exporter state change
        self._export_logged: str | None = None
        self._store_id = None
        self._server = None
        self._threads: list[threading.Thread] = []
        self._registry = None
        from telemetry.console import Console

        self.console = Console(self)  # reads self.host/self.port per request: the bound port

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> Serve:
        from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector

        self._registry = CollectorRegistry()
        self._registry.register(self.collector)  # describe(): no query at registration
        # the serve process itself (process_* from /proc, python_info), on this registry
        # only: the global default registry is never touched
        ProcessCollector(registry=self._registry)
        PlatformCollector(registry=self._registry)
        from telemetry.serve_auth import GuardCollector

        self._registry.register(GuardCollector(self.guard))
        connect(self.project.db_path).close()  # migrate once, up front, not inside a scrape
        self._store_id = self.store_identity()
        self._listen(_handler(self))
        if self.cfg["embedding"]["url"] and float(self.cfg["serve"]["backfill_interval_s"]) > 0:
            self._spawn("vectors", self._backfill_loop)
        return self

    def stop(self) -> None:
        """Stop serving; the exporter makes one final attempt, bounded by its timeout."""
        self._stop_threads()
        self.collector.close()
        self.intake.close()
        if self.hooks is not None:  # -- the HTTP hook transport
            self.hooks.close()

    # -- background work ------------------------------------------------------------------

    def _probe_loop(self) -> None:
        interval = float(self.cfg["serve"]["probe_interval_s"])
        conn = opened = None
        while not self.stopping.is_set():
            state = self.probe_state
            state["running_since"] = time.time()
            t0 = time.monotonic()
            try:
                if conn is not None and self.store_changed(opened):
                    conn.close()  # deleted or replaced under us: never probe a ghost file
                    conn = None
                if conn is None:
                    # never create it: a store deleted under serve stays missing (and /healthz
                    # says so) until a hook or `memhealth init` makes the new one
                    conn = connect(self.project.db_path, create=False)
                    opened = self._store_id = self.store_identity()
                self.probe(conn, self.cfg, self.project)
                state["last_error"] = None
            except Exception as exc:  # a probe bug must not kill the schedule
                state["errors"] += 1
                state["last_error"] = f"{type(exc).__name__}: {exc}"[:300]
            state["runs"] += 1
            state["running_since"] = None
            state["last_finished"] = time.time()
            state["last_duration_s"] = round(time.monotonic() - t0, 3)
            self.stopping.wait(interval)

    def _backfill_loop(self) -> None:
        """Embed what has no vector, one bounded vector phase per interval; a failure is
        recorded by the phase (a degradation) and the schedule goes on."""
        from memory_core.ingest.vectorize import backfill

        interval = float(self.cfg["serve"]["backfill_interval_s"])
        budget = float(self.cfg["ingest"]["budget_s"])
        state = self.backfill_state
        while not self.stopping.is_set():
            conn = None
            try:
                conn = connect(self.project.db_path)
                report = backfill(conn, self.cfg, budget)
                state["last"] = None if report is None else {
                    "embedded": report.vectors_embedded, "pending": report.vectors_pending,
                    "state": report.vectors_backfill or report.vectors_state}
                state["last_error"] = None
            except Exception as exc:  # a store or embedding bug must not kill the schedule
                state["errors"] += 1
                state["last_error"] = f"{type(exc).__name__}: {exc}"[:300]
            finally:
                if conn is not None:
                    conn.close()
            state["runs"] += 1
            self.stopping.wait(interval)

    def _export_loop(self) -> None:
        from telemetry.export import OtlpExporter

        interval = float(self.cfg["serve"]["export_interval_s"])
        try:
            exporter = OtlpExporter(self.cfg, self.environ)
        except TelemetryError as exc:  # e.g. gRPC configured, not installed: say so, keep serving
            self.export_state["last"] = {"ok": False, "error": str(exc)}
            self.log(f"memhealth serve: export off: {exc}")
            return
        conn = opened = None
        try:
            while True:
                final = self.stopping.is_set()
                try:
                    if conn is not None and self.store_changed(opened):
                        conn.close()  # export from the file the hooks write, not a deleted one
                        conn = None
                    if conn is None:
                        conn = connect(self.project.db_path, create=False)
                        opened = self.store_identity()
                    result = exporter.run_once(conn, scrape_errors=self.collector.errors)
                    self.export_state["last"] = result.as_dict()
                except StoreError as exc:
                    self.export_state["last"] = {"ok": False, "error": str(exc)}
                self.export_state["runs"] += 1
                self._log_export_change(self.export_state["last"], interval)
                if final:
                    return
                self.stopping.wait(interval)
        finally:
            exporter.shutdown()
            if conn is not None:
                conn.close()

    def _log_export_change(self, last: dict, interval: float) -> None:
        """One stderr line when the exporter starts failing, changes its error, or recovers;
        nothing per attempt (a dead collector would otherwise log every interval)."""
        if last.get("disabled"):
            state = "disabled"
        elif last.get("ok", True):
            state = "ok"
        else:
            state = f"failed: {last.get('error') or 'unknown error'}"
        previous, self._export_logged = self._export_logged, state
        if state == previous or (previous is None and state in ("ok", "disabled")):
            return  # the first success is not news: serve's start line already said it runs
        if state == "ok":
            line = f"memhealth serve: export recovered; backlog {last.get('backlog', 0)} span(s)"
        elif state == "disabled":
            line = "memhealth serve: export disabled (OTEL_SDK_DISABLED)"
        else:
            line = (f"memhealth serve: export {state}; backlog {last.get('backlog', 0)} span(s), "
                    f"retrying every {interval:g} s (logged again only when this changes)")
        self.log(line)

    # -- endpoints --------------------------------------------------------------------------

    def metrics(self, accept: str | None) -> tuple[bytes, str]:
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept or "")
        return encoder(self._registry), content_type

    def runbook(self) -> tuple[int, bytes]:
        return runbook_page()

    def store_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the database file now, None when it is missing."""
        try:
            st = os.stat(self.project.db_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def store_changed(self, opened: tuple[int, int] | None) -> bool:
        """Whether the file a long-lived connection opened is no longer the database's file
        (deleted or replaced under serve): the caller reopens instead of reading a ghost."""
        return opened is not None and self.store_identity() != opened

    def health(self) -> dict:
        probe = dict(self.probe_state)
        if probe["running_since"] is not None:
            probe["running_for_s"] = round(time.time() - probe["running_since"], 3)
        now_id = self.store_identity()
        if now_id is None:
            store = f"missing: {self.project.db_path} was deleted; scrapes serve the last good values"
        elif now_id != self._store_id:
            store = "replaced: the database file changed under serve; connections reopen on next use"
        else:
            store = "ok"
        refused = self._server.refused if self._server is not None else 0
        return {"status": "ok" if now_id is not None else "degraded", "store": store,
                "connections_refused": refused, "requests_refused": self.guard.snapshot(),
                "uptime_s": round(time.time() - self.started_at, 3), "problems": self.problems,
                "scrape_errors": self.collector.errors, "last_scrape_error": self.collector.last_error,
                "probe": probe, "export": self.export_state, "vectors": dict(self.backfill_state)}

    def alerts(self, body: bytes) -> tuple[int, dict]:
        """Handle one webhook POST (AlertIntake.receive); (HTTP status, response JSON)."""
        return self.intake.receive(body)


class ServeHandler(BaseHTTPRequestHandler):
    """What serve's and serve --all's request handlers share: no access log, a socket
    timeout, and one way to answer (a body with its length; none for HEAD)."""

    server_version = "memhealth"
    timeout = REQUEST_SOCKET_TIMEOUT_S

    def log_message(self, *args):
        pass

    def parse_request(self) -> bool:
        ok = super().parse_request()
        headers_done = getattr(self.server, "headers_done", None)
        if headers_done is not None:  # the request line and headers are in: never evicted now
            headers_done(self.request)
        return ok

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj) -> None:
        self._send(code, (json.dumps(obj, default=str) + "\n").encode("utf-8"))

    def _admit(self) -> bool:
        """Whether this request carries the bearer token serve requires (always, without one).
        A refusal answers 401 before any body is read, stores nothing, and is counted."""
        reason = self.server.guard.admit(self.headers.get("Authorization"))
        if reason is None:
            return True
        self.close_connection = True  # an unread body must not be parsed as the next request
        try:  # a small body is read and dropped: closing on unread bytes resets the connection,
            # and the client would see a reset instead of the 401
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= REFUSED_BODY_DRAIN:
                self.rfile.read(length)
        except (ValueError, OSError):
            pass
        self._send(401, (json.dumps({"error": "a bearer token is required" if reason == "no_credentials"
                                     else "wrong bearer token"}) + "\n").encode("utf-8"),
                   headers={"WWW-Authenticate": 'Bearer realm="memhealth"'})
        return False

    def _read_body(self, limit: int) -> tuple[bytes | None, int]:
        """(the request body, 200), or (None, 400) for a missing or bad Content-Length and
        (None, 413) for one over `limit`. A refused body is never read, so the connection
        closes after the answer: its bytes must not be parsed as the next request."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > limit:
            self.close_connection = True
            return None, 400 if length < 0 else 413
        return self.rfile.read(length), 200

    def _console(self, result: tuple[int, dict, bytes]) -> None:
        code, headers, body = result
        headers = dict(headers)
        self._send(code, body, headers.pop("Content-Type"), headers)


def _handler(app: Serve):
    class Handler(ServeHandler):

        def do_GET(self):
            if not self._admit():
                return
            path, _, query = self.path.partition("?")
            if app.hooks is not None and app.hooks.handles(path):  # -- the HTTP hook transport
                app.hooks.handle(self)
                return
            if path in CONSOLE_GET:
                self._console(app.console.get(path, query, self.headers))
            elif path == "/metrics":
                body, content_type = app.metrics(self.headers.get("Accept"))
                self._send(200, body, content_type)
            elif path == "/healthz":
                self._json(200, app.health())
            elif path == "/runbook":
                code, body = app.runbook()
                self._send(code, body, "text/html; charset=utf-8" if code == 200 else "text/plain")
            else:
                self._json(404, {"error": f"no route {path}"})

        do_HEAD = do_GET

        def do_POST(self):
            if not self._admit():
                return
            path = self.path.split("?", 1)[0]
            if app.hooks is not None and app.hooks.handles(path):  # -- the HTTP hook transport
                app.hooks.handle(self)
                return
            if path in CONSOLE_POST:
                self._console_post(path)
                return
            if path != "/alerts":
                self._json(404, {"error": f"no route {path}"})
                return
            body, status = self._read_body(MAX_ALERT_BODY)
            if body is None:
                app.sink.append({"ts": time.time(), "decision": "rejected",
                                 "error": f"bad Content-Length {self.headers.get('Content-Length')!r}"})
                self._json(status, {"error": "bad or oversized body"})
                return
            code, obj = app.alerts(body)
            self._json(code, obj)

        def _console_post(self, path: str) -> None:
            from telemetry.console import MAX_FORM_BODY

            body, status = self._read_body(MAX_FORM_BODY)
            if body is None:
                self._send(status, b"bad or oversized form\n", "text/plain")
                return
            self._console(app.console.post(path, body, self.headers))

    return Handler


# -- serve --all: every registered project on one port ----------------------------------------
