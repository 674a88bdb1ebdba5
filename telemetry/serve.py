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
registered project on one port; the webhook intake both use is telemetry/alert_intake.py,
the HTTP server, handler and routes both use telemetry/serve_http.py.
"""

from __future__ import annotations

import os
import threading
import time

from memory_core.errors import StoreError
from memory_core.store.db import connect
from telemetry.alert_intake import AlertIntake
from telemetry.collector import StoreCollector
from telemetry.console import POST_ROUTES as CONSOLE_POST
from telemetry.console import ROUTES as CONSOLE_PAGES
from telemetry.errors import TelemetryError
from telemetry.serve_http import (  # re-exported: serve's public names before the split
    MAX_CONNECTIONS,
    REQUEST_SOCKET_TIMEOUT_S,
    BoundedServer,
    ServeHandler,
    ServeThreads,
    parse_listen,
    runbook_page,
    stderr_line,
)

__all__ = ["MAX_CONNECTIONS", "REQUEST_SOCKET_TIMEOUT_S", "BoundedServer", "Serve", "ServeHandler",
           "ServeThreads", "find_default_probe", "gate_probe", "parse_listen", "runbook_page",
           "stderr_line"]

CONSOLE_GET = CONSOLE_PAGES + CONSOLE_POST  # a GET of an action answers 405: no change on GET

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
            elif not self._shared_get(app, path):
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
                self._post_form(app.console, path)
            elif path == "/alerts":
                self._post_alerts(app)
            else:
                self._json(404, {"error": f"no route {path}"})

    return Handler
