"""`memhealth serve --all`: every registered project on one port.

    app = MultiServe(registry_path, host="127.0.0.1", port=9464)
    app.start()
    ...
    app.stop()

/metrics with a `project` label, /healthz, /runbook, each project's console under
/p/<name>/, and POST /alerts routed by the `project` label; each project's gate and export
run in `Lanes` (bounded threads, one run per project at a time), so a hung project holds up
no other. Single-project serve: telemetry/serve.py; the HTTP server and the routes both
answer alike: telemetry/serve_http.py; the lanes: telemetry/lanes.py.
"""

from __future__ import annotations

import os
import threading
import time

from memory_core.errors import StoreError
from memory_core.store.db import connect
from telemetry.alert_intake import AlertIntake, Sink, bounded, parse_webhook
from telemetry.collector import StoreCollector
from telemetry.errors import TelemetryError
from telemetry.lanes import Lanes
from telemetry.serve import find_default_probe
from telemetry.serve_http import ServeHandler, ServeThreads, stderr_line
from telemetry.serve_projects import (
    ProjectsCollector,
    absent_cause,
    absent_state,
    entry_error_state,
    fix_for,
    read_state,
)

__all__ = ["Lanes", "MultiServe", "Target", "project_prefix"]  # Lanes: where it lived before

REGISTRY_RECHECK_S = 2.0  # a scrape re-stats the registry at most this often (one stat call)
PROJECT_PREFIX = "/p/"  # a project's console under serve --all: /p/<quoted registered name>/...
UNROUTED_SINK = "alerts-unrouted.ndjson"  # beside the registry: alerts no project's store took
LANE_WORKERS = 4  # probe runs (and, separately, exports) in flight at once across all projects
MAX_STALLED = 8  # runs past their stall bound, each still holding a thread nobody can kill
SCRAPE_WORKERS = 8  # stores read at once by one scrape (each read bounded by its own deadline)


def project_prefix(name: str) -> str:
    """The URL prefix of a project's console: the registered name, percent-quoted whole."""
    from urllib.parse import quote

    return PROJECT_PREFIX + quote(name, safe="")


class Target:
    """One registered project as serve --all holds it: its store's collector, config, the
    probe/export state of its own, its console (under /p/<name>/) and its alert intake."""

    __slots__ = ("name", "project", "cfg", "server", "collector", "probe_state", "exporter", "export_last",
                 "export_runs", "next_probe", "next_export", "problems", "retired", "_console", "_intake",
                 "_lock")

    def __init__(self, name: str, project, cfg, server: MultiServe | None = None):
        self.name = name
        self.project = project
        self.cfg = cfg
        self.server = server
        self.collector = StoreCollector(project.db_path, killed_after_s=cfg["hooks"]["killed_after_s"])
        self.probe_state: dict = {"runs": 0, "errors": 0, "last_error": None, "last_finished": None,
                                  "running_since": None, "last_duration_s": None}
        self.exporter = None
        self.export_last: dict | None = None
        self.export_runs = 0
        self.next_probe = 0.0  # monotonic: due at once, then probe_interval_s after each run ends
        self.next_export = 0.0
        self.problems: list[str] = []
        self.retired = False  # left the registry: its exporter shuts down when its run ends
        self._console = None
        self._intake = None
        self._lock = threading.Lock()

    # what telemetry.console.Console reads of its app: the listen address is serve's
    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    def console(self):
        with self._lock:
            if self._console is None:
                from telemetry.console import Console

                self._console = Console(self, secret=self.server.secret, prefix=project_prefix(self.name))
            return self._console

    def intake(self) -> AlertIntake:
        with self._lock:
            if self._intake is None:
                self._intake = AlertIntake(self.project, self.cfg, self.problems)
            return self._intake

    def close_exporter(self) -> None:
        with self._lock:
            exporter, self.exporter = self.exporter, None
        if exporter is not None:
            exporter.shutdown()

    def close(self) -> None:
        """Drop what it holds open (an alert connection); the exporter goes with close_exporter."""
        with self._lock:
            intake = self._intake
        if intake is not None:
            intake.close()


class MultiServe(ServeThreads):
    """`memhealth serve --all`: every project in the per-user registry
    (memory_core/store/registry.py) on one port: /metrics with a `project` label, /healthz, the
    runbook, a project index at / linking to each project's console under /p/<name>/, and
    POST /alerts routed by each alert's `project` label to that project's budget and sinks.
    The gate and the OTLP exporter run per project in Lanes: a hung project holds its own
    thread, not the others' schedule.

        app = MultiServe(registry_path, open_entry, cfg, port=0).start()
        app.stop()

    `open_entry(entry)` returns (project, cfg) for a registry entry (the app layer loads
    configs); a project whose store is gone is left out until it is back. The registry is
    re-read when its file changes (checked by one stat, at most every REGISTRY_RECHECK_S),
    so projects added or removed show up without a restart."""

    def __init__(self, registry_path: str, open_entry, cfg, host: str = "127.0.0.1", port: int = 9464, *,
                 probe="default", export: bool = True, environ=None, log=None,
                 recheck_s: float = REGISTRY_RECHECK_S, guard=None):
        import secrets

        from telemetry.serve_auth import OPEN

        self.guard = guard if guard is not None else OPEN
        self.registry_path = registry_path
        self.open_entry = open_entry
        self.cfg = cfg
        self.host = host
        self.port = port
        self.environ = os.environ if environ is None else environ
        self.probe = find_default_probe() if probe == "default" else probe
        self.export_enabled = export
        self.log = log if log is not None else stderr_line
        self.recheck_s = recheck_s
        self.started_at = time.time()
        self.stopping = threading.Event()
        self.secret = secrets.token_bytes(32)  # console form tokens; each bound to its project's prefix
        self.problems: dict[str, str] = {}  # registered name -> why it is not served
        self._lost: dict[str, str] = {}  # registered name -> its state (catalog PROJECT_STATES)
        self._fixes: dict[str, str] = {}  # registered name -> the command that brings it back
        # alerts that name no served project: kept beside the registry, never dropped
        self.sink = Sink(os.path.join(os.path.dirname(os.path.abspath(registry_path)), UNROUTED_SINK))
        self.unrouted = 0
        probe_s = float(cfg["serve"]["probe_interval_s"])
        export_s = float(cfg["serve"]["export_interval_s"])
        # a run past its stall bound stops holding a worker: one interval, and never less
        # than an export's own bounded attempt
        self.probes = Lanes("probe", LANE_WORKERS, max(probe_s, 10.0), MAX_STALLED)
        self.exports = Lanes("export", LANE_WORKERS,
                             max(export_s, float(cfg["telemetry"]["export_timeout_s"]) * 2 + 1.0), MAX_STALLED)
        self._targets: dict[str, Target] = {}
        self._stamp: tuple | None = ("unread",)
        self._checked = 0.0
        self._lock = threading.Lock()
        self._server = None
        self._threads: list[threading.Thread] = []
        self._registry = None
        self._scrape_pool = None

    def targets(self) -> dict[str, Target]:
        """The projects served now; re-reads the registry when its file changed, and drops a
        project whose store is gone (and takes it back when it returns)."""
        from memory_core.store import registry

        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.recheck_s and self._stamp != ("unread",):
                return dict(self._targets)
            self._checked = now
            stamp = registry.stamp(self.registry_path)
            stores_ok = all(os.path.exists(t.project.db_path) for t in self._targets.values())
            if stamp == self._stamp and stores_ok and not self.problems:
                return dict(self._targets)
            self._stamp = stamp
            kept: dict[str, Target] = {}
            problems: dict[str, str] = {}
            lost: dict[str, str] = {}
            fixes: dict[str, str] = {}
            for entry in registry.read(self.registry_path):
                old = self._targets.get(entry.name)
                if old is not None and old.project.root == entry.root and os.path.exists(old.project.db_path):
                    kept[entry.name] = old  # keeps its scrape error count and last good values
                    continue
                state_dir = None
                try:
                    project, cfg = self.open_entry(entry)
                    state_dir = project.state_dir
                    absent = absent_state(project)
                    if absent is None:
                        kept[entry.name] = Target(entry.name, project, cfg, self)
                        continue
                    (state, detail), cause = absent, absent_cause(project)
                except Exception as exc:  # one broken project must not take the others down
                    state, detail, cause = entry_error_state(exc), f"{type(exc).__name__}: {exc}"[:300], exc
                # never dropped from /metrics: memhealth_project_up 0 and its state say why
                lost[entry.name] = state
                problems[entry.name] = f"{state}: {detail}"
                # names the path: /healthz only
                fixes[entry.name] = fix_for(state, entry.root, state_dir, cause=cause)
            retired = [gone for name, gone in self._targets.items() if kept.get(name) is not gone]
            self._targets, self.problems, self._lost, self._fixes = kept, problems, lost, fixes
        for gone in retired:  # outside the lock: a scrape never waits on an exporter's shutdown
            gone.retired = True
            gone.close()
            if not self.exports.busy(gone):  # else its export run closes it on the way out
                gone.close_exporter()
        return dict(kept)

    def lost_states(self) -> dict[str, str]:
        """{registered name: state} of the projects registered and not served (as of the last
        registry read; targets() refreshes it)."""
        with self._lock:
            return dict(self._lost)

    def read_stores(self, targets: list[Target]) -> list:
        """Each target's families (StoreCollector.read), SCRAPE_WORKERS stores at a time."""
        if self._scrape_pool is not None and len(targets) > 1:
            try:
                return list(self._scrape_pool.map(lambda t: t.collector.read(), targets))
            except RuntimeError:  # the pool shut down under a scrape in flight at stop: read in turn
                pass
        return [t.collector.read() for t in targets]

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> MultiServe:
        from concurrent.futures import ThreadPoolExecutor

        from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector

        self._registry = CollectorRegistry()
        self._registry.register(ProjectsCollector(self))
        ProcessCollector(registry=self._registry)
        PlatformCollector(registry=self._registry)
        from telemetry.serve_auth import GuardCollector

        self._registry.register(GuardCollector(self.guard))
        self._scrape_pool = ThreadPoolExecutor(SCRAPE_WORKERS, thread_name_prefix="memhealth-scrape")
        for target in self.targets().values():
            try:
                connect(target.project.db_path, create=False).close()  # migrate up front, not in a scrape
            except StoreError as exc:  # one unreadable store is that project's problem, not serve's
                self.problems[target.name] = str(exc)[:300]
        self._listen(_multi_handler(self))
        return self

    def stop(self) -> None:
        """Stop serving; each exporter makes one final attempt, bounded by its timeout."""
        self._stop_threads()
        if self._scrape_pool is not None:
            self._scrape_pool.shutdown(wait=False, cancel_futures=True)
        for target in self._targets.values():
            target.close()

    # -- background work: a scheduler thread each, the runs in Lanes -----------------------

    def _tick(self, interval: float) -> float:
        return min(0.5, interval / 4)

    def _probe_loop(self) -> None:
        interval = float(self.cfg["serve"]["probe_interval_s"])
        while not self.stopping.is_set():
            now = time.monotonic()
            for target in self.targets().values():
                due = target.next_probe
                if due <= now:
                    target.next_probe = float("inf")  # before the run starts: it sets the next one when it ends
                    if not self.probes.submit(target, lambda t=target: self._probe_one(t)):
                        target.next_probe = due  # busy, or no worker free: next tick
            self.stopping.wait(self._tick(interval))

    def _probe_one(self, target: Target) -> None:
        interval = float(self.cfg["serve"]["probe_interval_s"])
        state = target.probe_state
        state["running_since"] = time.time()
        t0 = time.monotonic()
        try:  # a connection per run: a project removed meanwhile holds nothing open
            conn = connect(target.project.db_path, create=False)
            try:
                self.probe(conn, target.cfg, target.project)
            finally:
                conn.close()
            state["last_error"] = None
        except Exception as exc:  # one project's failing probe must not stop the rest
            state["errors"] += 1
            state["last_error"] = f"{type(exc).__name__}: {exc}"[:300]
        state["runs"] += 1
        state["running_since"] = None
        state["last_finished"] = time.time()
        state["last_duration_s"] = round(time.monotonic() - t0, 3)
        target.next_probe = time.monotonic() + interval

    def _export_loop(self) -> None:
        interval = float(self.cfg["serve"]["export_interval_s"])
        while not self.stopping.is_set():
            now = time.monotonic()
            for target in self.targets().values():
                due = target.next_export
                if due <= now:
                    target.next_export = float("inf")
                    if not self.exports.submit(target, lambda t=target: self._export_one(t)):
                        target.next_export = due
            self.stopping.wait(self._tick(interval))
        # one final attempt per project not already mid-export, bounded as single serve's is
        deadline = time.monotonic() + float(self.cfg["telemetry"]["export_timeout_s"]) * 2 + 1.0
        pending = [t for t in self._targets.values() if not self.exports.busy(t)]
        while pending and time.monotonic() < deadline:
            pending = [t for t in pending if not self.exports.submit(t, lambda t=t: self._export_one(t, final=True))]
            if pending:
                time.sleep(0.05)
        self.exports.wait(deadline)

    def _export_one(self, target: Target, final: bool = False) -> None:
        from telemetry.export import OtlpExporter

        interval = float(self.cfg["serve"]["export_interval_s"])
        try:
            if target.exporter is None:
                target.exporter = OtlpExporter(target.cfg, self.environ)
            conn = connect(target.project.db_path, create=False)
            try:
                result = target.exporter.run_once(conn, scrape_errors=target.collector.errors)
            finally:
                conn.close()
            last = result.as_dict()
        except (TelemetryError, StoreError) as exc:
            last = {"ok": False, "error": str(exc)}
        except Exception as exc:  # an exporter bug is this project's, never the lane's
            last = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        if (target.export_last or {}).get("ok", True) != last.get("ok", True):
            self.log(f"memhealth serve --all: {target.name}: export "
                     f"{'recovered' if last.get('ok', True) else 'failed: ' + str(last.get('error'))}")
        target.export_last = last
        target.export_runs += 1
        target.next_export = time.monotonic() + interval
        if final or target.retired:
            target.close_exporter()

    # -- endpoints --------------------------------------------------------------------------

    def health(self) -> dict:
        targets = self.targets()
        refused = self._server.refused if self._server is not None else 0
        projects = {}
        for name, t in sorted(targets.items()):
            probe = dict(t.probe_state)
            if probe["running_since"] is not None:
                probe["running_for_s"] = round(time.time() - probe["running_since"], 3)
            state = read_state(t.collector.last_reason)  # as the latest scrape read its store
            projects[name] = {"state": state, "scrape_errors": t.collector.errors,
                              "last_scrape_error": t.collector.last_error,
                              "probe": probe, "export": t.export_last, "export_runs": t.export_runs,
                              "console": project_prefix(name) + "/", "problems": list(t.problems)}
            if state != "served":
                projects[name]["fix"] = fix_for(state, t.project.root, t.project.state_dir,
                                                cause=t.collector.last_cause, reason=t.collector.last_reason)
        # a registered project that is not served (deleted, unreadable, no store), or one whose
        # store or config has a problem, is not "ok"
        problems, fixes = self.problems, self._fixes  # replaced together under the lock
        lost = bool(problems) or any(p["problems"] or p["state"] != "served" for p in projects.values())
        return {"status": "degraded" if lost else "ok", "uptime_s": round(time.time() - self.started_at, 3),
                "connections_refused": refused, "requests_refused": self.guard.snapshot(),
                "registry": self.registry_path,
                "lanes": {"probe": self.probes.state(), "export": self.exports.state()},
                "alerts_unrouted": self.unrouted, "projects": projects,
                "not_served": {name: f"{why}; FIX: {fixes[name]}" if name in fixes else why
                               for name, why in problems.items()}}

    @property
    def export_state(self) -> dict:
        """Serve's shape for the stop line: ok unless some project's last export failed."""
        failed = sorted(t.name for t in self._targets.values()
                        if t.export_last is not None and not t.export_last.get("ok", True))
        return {"last": {"ok": not failed, "failed": failed}}

    def target(self, quoted: str) -> Target | None:
        """The project a /p/<quoted name>/ path names, or None."""
        from urllib.parse import unquote

        return self.targets().get(unquote(quoted))

    def alerts(self, body: bytes) -> tuple[int, dict]:
        """POST /alerts for every project: each alert goes, by its `project` label, to that
        project's AlertIntake (its budget, store, sink and webhook: what single-project serve
        does with it). An alert with no `project` label, or one naming no served project, is
        decided by no budget: it is appended to the unrouted sink beside the registry and
        counted in the reply, which is still 200 (a retry would not make it routable). A
        malformed body gets 400 and is kept in the same sink, as single serve keeps it in its
        own. The status is the worst of the projects' (a project's failed policy answers 500,
        so Alertmanager retries; what other projects decided then dedupes)."""
        now = time.time()
        try:
            payload, alerts, receiver = parse_webhook(body)
        except ValueError as exc:
            self.sink.append({"ts": now, "decision": "rejected", "error": str(exc)[:300], **bounded(body)})
            return 400, {"error": str(exc)[:300]}
        targets = self.targets()
        lost = self.lost_states()
        groups: dict[str, list[dict]] = {}
        unrouted: list[tuple[dict, str]] = []
        for alert in alerts:
            name = (alert.get("labels") or {}).get("project")
            if not isinstance(name, str) or not name:
                unrouted.append((alert, "no project label"))
            elif name in lost:  # its budget and sinks are what is lost (MemhealthProjectNotServed)
                unrouted.append((alert, f"project {name[:80]!r} is registered but not served ({lost[name]})"))
            elif name not in targets:
                unrouted.append((alert, f"project {name[:80]!r} is not served here"))
            else:
                groups.setdefault(name, []).append(alert)
        code, projects, total = 200, {}, 0
        for name, group in sorted(groups.items()):
            status, reply = targets[name].intake().decide(group, now, receiver, payload, body)
            code = max(code, status)
            projects[name] = reply
            total += int(reply.get("decisions", 0))
        for alert, why in unrouted:
            labels = alert.get("labels") or {}
            self.sink.append({"ts": now, "decision": "unrouted", "reason": why, "receiver": receiver,
                              "alertname": labels.get("alertname", ""), "status": alert.get("status"),
                              "labels": labels})
        self.unrouted += len(unrouted)
        reply: dict = {"decisions": total, "projects": projects, "unrouted": len(unrouted)}
        if unrouted:
            reply["note"] = (f"{len(unrouted)} alert(s) named no served project (a `project` label is "
                             f"needed): kept in {self.sink.path}, decided by no project's budget")
        return code, reply

    def index(self) -> bytes:
        """GET /: the projects served, each linking to its console."""
        from html import escape

        from telemetry.console import STYLE

        rows = []
        for name, t in sorted(self.targets().items()):
            base = escape(project_prefix(name))
            links = " · ".join(f'<a href="{base}{path}">{label}</a>' for path, label in
                               (("/", "Health"), ("/decisions", "Decisions"), ("/memory", "Memory"),
                                ("/triage", "Triage"), ("/alerts-budget", "Alerts")))
            probe = t.probe_state
            rows.append(f"<tr><th scope=\"row\"><a href=\"{base}/\"><code>{escape(name)}</code></a></th>"
                        f"<td>{links}</td><td class=\"num\">{probe['runs']}</td>"
                        f"<td>{escape(probe['last_error'] or '')}</td></tr>")
        table = ("<table><thead><tr><th scope=\"col\">Project</th><th scope=\"col\">Console</th>"
                 "<th scope=\"col\" class=\"num\">Gate runs</th><th scope=\"col\">Last probe error</th></tr>"
                 "</thead><tbody>" + "".join(rows) + "</tbody></table>") if rows else "<p>No project served.</p>"
        skipped = "".join(f"<li><code>{escape(name)}</code>: {escape(why)}</li>"
                          for name, why in sorted(self.problems.items()))
        page = ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                f"<title>memhealth serve --all</title><style>{STYLE}</style></head><body>"
                "<header><strong>memhealth serve --all</strong><a href=\"/runbook\">Runbook</a></header>"
                "<main id=\"main\"><h1>Projects</h1>"
                f"<p>{len(rows)} project(s) from the registry; every series on "
                "<a href=\"/metrics\">/metrics</a> carries a <code>project</code> label, and Alertmanager "
                "webhooks to <code>/alerts</code> go to the project their <code>project</code> label names.</p>"
                + table + (f"<h2>Not served</h2><ul>{skipped}</ul>" if skipped else "") + "</main></body></html>\n")
        return page.encode("utf-8")


def _multi_handler(app: MultiServe):
    from telemetry.console import SECURITY_HEADERS

    class Handler(ServeHandler):
        def _text(self, code: int, line: str, headers: dict | None = None) -> None:
            self._send(code, (line + "\n").encode("utf-8"), "text/plain; charset=utf-8",
                       {**SECURITY_HEADERS, **(headers or {})})

        def _project(self, path: str, query: str):
            """(target, console path) for /p/<name>/...; None after answering it (404, redirect)."""
            from urllib.parse import unquote

            quoted, slash, rest = path[len(PROJECT_PREFIX):].partition("/")
            target = app.target(quoted) if quoted else None
            if target is None:
                self._text(404, f"no project {unquote(quoted)[:100]!r} is served here; the projects are listed at /")
                return None
            if not slash:  # /p/name -> /p/name/: relative reading of the page stays inside it
                location = project_prefix(target.name) + "/" + (f"?{query}" if query else "")
                self._text(308, f"see {location}", {"Location": location})
                return None
            return target, "/" + rest

        def do_GET(self):
            from telemetry.console import POST_ROUTES, ROUTES

            if not self._admit():
                return
            path, _, query = self.path.partition("?")
            if self._shared_get(app, path):
                return
            if path == "/":
                self._send(200, app.index(), "text/html; charset=utf-8", SECURITY_HEADERS)
            elif path.startswith(PROJECT_PREFIX):
                found = self._project(path, query)
                if found is None:
                    return
                target, page = found
                if page not in ROUTES + POST_ROUTES:
                    self._text(404, f"no console page {page[:100]} (the pages: {', '.join(ROUTES)})")
                    return
                self._console(target.console().get(page, query, self.headers))
            else:
                self._json(404, {"error": f"no route {path[:200]} in serve --all (a project's console is "
                                          f"under {PROJECT_PREFIX}<name>/; the list is at /)"})

        do_HEAD = do_GET

        def do_POST(self):
            from telemetry.console import POST_ROUTES

            if not self._admit():
                return
            path = self.path.split("?", 1)[0]
            if path == "/alerts":
                self._post_alerts(app)
                return
            if path.startswith(PROJECT_PREFIX):
                found = self._project(path, "")
                if found is None:
                    self.close_connection = True
                    return
                target, action = found
                if action in POST_ROUTES:
                    self._post_form(target.console(), action)
                    return
            self.close_connection = True
            self._json(404, {"error": f"no route POST {path[:200]}"})

    return Handler
