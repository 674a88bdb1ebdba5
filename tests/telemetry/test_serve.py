"""`memhealth serve` as a real process on 127.0.0.1:0: /metrics reflects what the hooks did,
/healthz never waits, /alerts never loses a body, a hung probe or a locked store never
blocks a scrape, and SIGTERM stops it cleanly after a final export."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memhealth.config import load
from memhealth.project import Project
from memory_core.store.db import connect
from telemetry.serve import Serve
from tests.conftest import REPO, clean_env, memhealth_cmd, payload, rows, run_cli, run_hook
from tests.support.otlp_receiver import OtlpReceiver


class ServeProcess:
    """`memhealth serve --listen 127.0.0.1:0` in a subprocess; .url is its base URL. `web`
    (tests.support.tls_certs.Web) when it serves TLS with a token (--tls-cert, --token-file in args)."""

    def __init__(self, project, *args, env=None, web=None):
        self.web = web
        self.proc = subprocess.Popen(
            memhealth_cmd() + ["serve", "--project", str(project), "--listen", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or clean_env())
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(20)
        if not first or "listening on" not in first[0]:
            self.proc.kill()
            raise AssertionError(f"serve did not start: {first!r} {self.proc.stderr.read()}")
        self.url = first[0].split("listening on ", 1)[1].split()[0]

    def get(self, path: str, timeout: float = 10) -> tuple[int, bytes, float]:
        t0 = time.monotonic()
        try:
            with self._open(self.url + path, timeout=timeout) as resp:
                return resp.status, resp.read(), time.monotonic() - t0
        except urllib.error.HTTPError as err:
            return err.code, err.read(), time.monotonic() - t0

    def post(self, path: str, body: bytes) -> tuple[int, dict]:
        req = urllib.request.Request(self.url + path, data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with self._open(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def _open(self, req, timeout: float):
        return (self.web.urlopen if self.web is not None else urllib.request.urlopen)(req, timeout=timeout)

    def samples(self) -> dict:
        status, body, _ = self.get("/metrics")
        assert status == 200
        out = {}
        for family in text_string_to_metric_families(body.decode()):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def stop(self, sig=signal.SIGTERM, timeout: float = 15) -> tuple[int, str, float]:
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out + err, time.monotonic() - t0

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)


@pytest.fixture
def serve(project):
    started = []

    def start(*args, env=None):
        s = ServeProcess(project, *args, env=env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def hook(project, event, **fields):
    run = run_hook(event, payload(event, project, **fields), cwd=str(project))
    assert run.returncode == 0


def test_metrics_values_match_what_the_hooks_did(project, serve):
    hook(project, "session-start", source="startup")
    hook(project, "prompt", prompt="hello there")
    hook(project, "prompt", prompt="thanks, that is all")
    run_hook("stop", b"{not json", cwd=str(project), env=clean_env(CLAUDE_PROJECT_DIR=str(project)))
    app = serve("--no-probes", "--no-export")
    got = app.samples()

    def value(name, **labels):
        return got[(name, tuple(sorted(labels.items())))]

    for h, outcome, n in rows(project, "SELECT hook, outcome, count(*) FROM heartbeats GROUP BY hook, outcome"):
        assert value("memhealth_hook_invocations_total", hook=h, outcome=outcome) == n
    assert value("memhealth_hook_invocations_total", hook="prompt", outcome="ok") == 2
    assert value("memhealth_hook_invocations_total", hook="pre-compact", outcome="ok") == 0
    for outcome, n in rows(project, "SELECT outcome, count(*) FROM decisions GROUP BY outcome"):
        assert value("memhealth_injection_decisions_total", outcome=outcome) == n
    assert value("memhealth_hook_duration_seconds_count", hook="prompt") == 2
    assert value("memhealth_hook_duration_seconds_bucket", hook="prompt", le="+Inf") == 2
    (spans,) = rows(project, "SELECT count(*) FROM spans")[0]
    assert value("memhealth_outbox_backlog_spans") == spans
    assert value("memhealth_scrape_errors_total") == 0


def test_every_alert_runbook_link_opens_a_section_of_serves_runbook_page(serve):
    import html
    import re

    import yaml

    status, body, _ = serve("--no-probes", "--no-export").get("/runbook")
    assert status == 200
    ids = set(re.findall(r'<h[1-6] id="([^"]+)"', body.decode("utf-8")))
    with open(os.path.join(REPO, "alerts", "memhealth.rules.yaml"), encoding="utf-8") as fh:
        rules = [r for g in yaml.safe_load(fh)["groups"] for r in g["rules"] if "alert" in r]
    links = {r["annotations"]["runbook_url"] for r in rules}
    assert links and all(u.startswith("http://127.0.0.1:9464/runbook#") for u in links), links
    missing = sorted(u for u in links if html.escape(u.split("#", 1)[1]) not in ids)
    assert missing == []


def test_healthz_answers_with_serves_own_state_without_reading_the_store(project, serve):
    """Serve's own state, not the store's: it answers while another process holds the store
    under an exclusive lock (a read would wait for the busy timeout, then fail)."""
    from memory_core.store.db import connect

    app = serve("--no-probes", "--no-export")
    locker = connect(project / ".memhealth" / "memory.db")
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        status, body, _seconds = app.get("/healthz", timeout=5)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert status == 200 and json.loads(body)["status"] == "ok"
    assert app.get("/nope")[0] == 404


def test_a_malformed_alerts_body_gets_400_and_is_kept_in_the_sink(project, serve):
    app = serve("--no-probes", "--no-export")
    for body in (b"{not json", b'{"alerts": "nope"}', b"\xff\xfe", b"[]"):
        status, reply = app.post("/alerts", body)
        assert status == 400 and reply["error"]
    sink = [json.loads(line) for line in (project / ".memhealth" / "alerts.ndjson").read_text().splitlines()]
    assert [r["decision"] for r in sink] == ["rejected"] * 4
    assert sink[0]["raw"] == "{not json" and sink[1]["raw"] == '{"alerts": "nope"}'
    assert app.get("/healthz")[0] == 200  # still serving


class WebhookCatcher:
    """A generic webhook on 127.0.0.1:0 that records JSON bodies."""

    def __init__(self):
        self.bodies: list[dict] = []
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                catcher.bodies.append(json.loads(data))
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def alert(name, severity, **labels):
    return {"status": "firing", "labels": {"alertname": name, "severity": severity, **labels},
            "annotations": {"summary": name, "runbook_url": f"https://example.invalid/runbook#{name.lower()}"},
            "startsAt": "2026-01-01T00:00:00Z", "fingerprint": name.lower()}


def test_an_alertmanager_webhook_is_decided_recorded_and_pages_are_forwarded(project, serve):
    catcher = WebhookCatcher()
    try:
        app = serve("--no-probes", "--no-export",
                    env=clean_env(MEMHEALTH_ALERTS_WEBHOOK_URL=catcher.url))
        body = {"version": "4", "status": "firing", "receiver": "memhealth", "groupKey": "{}:{}",
                "alerts": [alert("MemhealthHookFailing", "critical"), alert("MemhealthIngestStale", "warning")]}
        status, reply = app.post("/alerts", json.dumps(body).encode())
        assert status == 200 and reply["decisions"] >= 2
        deadline = time.monotonic() + 5
        while not catcher.bodies and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        catcher.close()
    sink = [json.loads(line) for line in (project / ".memhealth" / "alerts.ndjson").read_text().splitlines()]
    decisions = {r["alertname"]: r["decision"] for r in sink}
    assert decisions["MemhealthIngestStale"] == "noted"
    stored = rows(project, "SELECT alertname, decision FROM alert_decisions ORDER BY id")
    assert len(stored) == len(sink)
    assert decisions["MemhealthHookFailing"] == "paged"
    assert catcher.bodies and catcher.bodies[0]["decisions"][0]["alertname"] == "MemhealthHookFailing"
    got = app.samples()
    assert sum(v for (n, _l), v in got.items() if n == "memhealth_alert_decisions_total") == len(sink)


def test_a_hanging_probe_never_blocks_metrics_or_healthz(project):
    release = threading.Event()
    entered = threading.Event()
    returned = threading.Event()  # the probe came back: released, or its 30 s hang ran out

    def hung_probe(conn, cfg, proj):
        entered.set()
        release.wait(30)
        returned.set()

    cfg = load(str(project / ".memhealth"))
    app = Serve(Project(str(project)), cfg, port=0, probe=hung_probe, export=False).start()
    try:
        assert entered.wait(30)
        for path in ("/healthz", "/metrics"):
            # a read timeout past the probe's hang: an endpoint that waited on the probe would
            # answer only after the probe came back
            with urllib.request.urlopen(f"http://127.0.0.1:{app.port}{path}", timeout=60) as resp:
                assert resp.status == 200
                body = resp.read()
            assert not returned.is_set(), f"{path} answered only after the probe returned"
        health = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{app.port}/healthz", timeout=60).read())
        assert health["probe"]["running_for_s"] >= 0 and health["probe"]["runs"] == 0
        assert b"memhealth_hook_invocations_total" in body
        app.stop()  # a hung probe is abandoned, not waited on
        assert not returned.is_set(), "stop() waited for the hung probe"
    finally:
        release.set()


def test_a_locked_database_during_a_scrape_still_answers_within_a_bound(project, serve):
    hook(project, "prompt", prompt="hello there")
    app = serve("--no-probes", "--no-export")
    before = app.samples()
    key = ("memhealth_hook_invocations_total", (("hook", "prompt"), ("outcome", "ok")))
    assert before[key] == 1
    locker = connect(str(project / ".memhealth" / "memory.db"))
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("INSERT INTO meta(key, value) VALUES ('test.lock', 'held')")
    try:
        status, body, _seconds = app.get("/metrics", timeout=60)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    # answered while the lock was still held (it is released only after get() returns): the
    # scrape gave up on the lock instead of waiting for it
    assert status == 200
    during = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for f in text_string_to_metric_families(body.decode()) for s in f.samples}
    assert during[key] == 1  # the last good value
    assert during[("memhealth_scrape_errors_total", ())] == 1
    assert app.samples()[key] == 1  # and fresh values once the lock is gone


def test_sigterm_stops_serve_cleanly_after_a_final_export(project, serve):
    with OtlpReceiver() as rx:
        env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint, MEMHEALTH_SERVE_EXPORT_INTERVAL_S="3600",
                        MEMHEALTH_TELEMETRY_EXPORT_TIMEOUT_S="1.0")
        app = serve("--no-probes", env=env)
        deadline = time.monotonic() + 10
        while not rx.requests and time.monotonic() < deadline:  # the first run at start-up
            time.sleep(0.05)
        hook(project, "prompt", prompt="recorded after the first export")
        code, output, _seconds = app.stop()
    assert code == 0, output
    assert "stopped (SIGTERM)" in output and "final export ok" in output
    assert any(s.name == "memhealth.hook prompt" for s in rx.spans)


def test_sigterm_with_a_dead_collector_still_stops_within_the_export_timeout(project, serve):
    rx = OtlpReceiver().up()
    rx.mode = "hang"
    try:
        hook(project, "prompt", prompt="hello there")
        env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint, MEMHEALTH_TELEMETRY_EXPORT_TIMEOUT_S="0.5")
        app = serve("--no-probes", env=env)
        time.sleep(0.2)
        # the receiver holds every request for 60 s: serve stops before that (stop() gives it
        # 50) only by abandoning its final export at the export timeout
        code, output, _seconds = app.stop(timeout=50)
    finally:
        rx.down()
    assert code == 0, output
    assert "stopped (SIGTERM)" in output and "final export failed" in output
    assert rx.requests  # the export was attempted, and held


def test_serve_refuses_a_non_loopback_address_without_allow_remote(project):
    proc = run_cli("serve", "--project", str(project), "--listen", "0.0.0.0:0", timeout=20)
    assert proc.returncode == 2
    assert "--allow-remote" in proc.stderr and "Traceback" not in proc.stderr


def test_the_scheduled_gate_runs_in_the_background_and_shows_in_metrics(project, serve):
    app = serve("--no-export")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        health = json.loads(app.get("/healthz")[1])
        if health["probe"]["runs"] >= 1:
            break
        time.sleep(0.1)
    assert health["probe"]["runs"] >= 1, health
    got = app.samples()
    checks = {dict(labels)["check"]: v for (n, labels), v in got.items() if n == "memhealth_gate_check_status"}
    assert "ingest_freshness" in checks and set(checks.values()) <= {0.0, 1.0, 2.0}
    assert sum(v for (n, _l), v in got.items() if n == "memhealth_gate_runs_total") >= 1


def test_serve_logs_one_line_per_exporter_state_change_not_per_attempt(project):
    """A dead collector used to leave serve silent; logging every attempt would bury the log."""
    lines: list[str] = []

    def wait_runs(app, n: int) -> None:
        deadline = time.monotonic() + 30
        while app.export_state["runs"] < n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.export_state["runs"] >= n, app.export_state

    with OtlpReceiver() as rx:
        rx.mode = "error"  # answers 503
        cfg = load(str(project / ".memhealth"), environ={
            "MEMHEALTH_TELEMETRY_OTLP_ENDPOINT": rx.endpoint, "MEMHEALTH_SERVE_EXPORT_INTERVAL_S": "1",
            "MEMHEALTH_TELEMETRY_EXPORT_TIMEOUT_S": "5"})  # 503 at once; slack for a loaded box (a timeout is another error text, another line)
        app = Serve(Project(str(project)), cfg, port=0, probe=None, export=True, log=lines.append).start()
        try:
            wait_runs(app, 3)
            failing = list(lines)
            rx.mode = "ok"
            runs = app.export_state["runs"]
            wait_runs(app, runs + 2)
        finally:
            app.stop()
    assert len(failing) == 1, failing  # three failed attempts, one line
    assert failing[0].startswith("memhealth serve: export failed: ")
    assert "retrying every 1 s" in failing[0]
    assert len(lines) == 2 and lines[1].startswith("memhealth serve: export recovered; backlog ")


def test_the_serve_command_writes_exporter_failures_to_stderr(project):
    with OtlpReceiver() as rx:
        rx.mode = "error"
        proc = subprocess.Popen(memhealth_cmd() + ["serve", "--project", str(project), "--listen", "127.0.0.1:0",
                                                  "--no-probes"],
                                env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint,
                                              MEMHEALTH_SERVE_EXPORT_INTERVAL_S="1"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            import select

            ready, _, _ = select.select([proc.stderr], [], [], 30)  # bounded wait for a line
            line = proc.stderr.readline() if ready else ""
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
    assert line.startswith("memhealth serve: export failed: "), line


def test_an_openmetrics_scrape_links_hook_buckets_to_their_traces_and_shows_the_process(
        project, serve):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

    hook(project, "prompt", prompt="hello there")
    app = serve("--no-probes", "--no-export")
    req = urllib.request.Request(app.url + "/metrics",
                                 headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        families = {f.name: f for f in om_parse(resp.read().decode())}
    exemplars = [s.exemplar for s in families["memhealth_hook_duration_seconds"].samples
                 if s.labels.get("hook") == "prompt" and s.exemplar is not None]
    traces = {t for (t,) in rows(project, "SELECT trace_id FROM heartbeats WHERE hook = 'prompt'")}
    assert len(exemplars) == 1 and exemplars[0].labels["trace_id"] in traces
    # the trace id is one the outbox holds spans for, so the link opens a trace
    assert rows(project, "SELECT count(*) FROM spans WHERE trace_id = ?",
                (exemplars[0].labels["trace_id"],))[0][0] > 0
    # serve's own process and platform collectors, beside the store's metrics
    assert families["process_resident_memory_bytes"].samples[0].value > 0
    assert families["python_info"].samples[0].labels["implementation"] == "CPython"
    assert families["memhealth_build_info"].samples[0].value == 1


def test_promtool_accepts_serves_whole_text_exposition(project, serve):
    from tests.conftest import require_binary

    promtool = require_binary("promtool")
    hook(project, "prompt", prompt="hello there")
    status, body, _ = serve("--no-probes", "--no-export").get("/metrics")
    assert status == 200 and b"process_cpu_seconds_total" in body
    proc = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
