"""End to end: real hooks write a real store, a real `memhealth serve` exposes it, a real
Prometheus (Debian 2.42, loopback, private storage) scrapes it with alerts/memhealth.rules.yaml
loaded, and every dashboard panel's PromQL is evaluated through the HTTP API."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.conftest import REPO, clean_env, payload, require_binary, run_cli, run_hook, stop_process
from tests.telemetry.test_serve import ServeProcess

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

RULES = os.path.join(REPO, "alerts", "memhealth.rules.yaml")
# Grafana variables as a panel would resolve them on a 1 s scrape interval
GRAFANA_VARS = {"$__rate_interval": "30s", "$__range": "5m", "$__interval": "1s", "$team": ".*", "$machine": ".*",
               "$instance": ".*", "$project": ".*"}
# Panels that must show data after one short session (the rest may be legitimately empty:
# no export ever ran, no retrieval histogram quantile over a zero rate, ...)
KEY_PANELS = {
    "heartbeat.json": {"Success ratio per hook (dashboard range)", "Success ratio per hook",
                       "Invocations by outcome", "Last success age", "Killed hooks",
                       "Hook success SLO: failure ratio vs objective"},
    "latency.json": {"prompt: duration vs 1 s budget", "Retrievals per second",
                     "Hook latency SLO: share of runs over budget"},
    "injection.json": {"Injection cascade (funnel)", "Decisions by outcome",
                       "Injected share of prompts (dashboard range)",
                       "Agent memory tool calls (MCP)"},
    "gate.json": {"Gate check status over time", "Gate checks by status now",
                  "Ingest watermark age", "Embedding state timeline (cold vs dead)",
                  "Gate runs by verdict", "Chunks and vector coverage", "Telemetry pipeline"},
    "alert-budget.json": {"Pages left in this window", "Decisions in range",
                          "Decisions by route"},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, timeout: float = 5.0, web=None) -> dict:
    """GET url as JSON; `web` (tests.support.tls_certs.Web) for a server behind TLS and auth."""
    opener = web.urlopen if web is not None else urllib.request.urlopen
    with opener(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def wait_for(what: str, check, timeout: float = 20.0, interval: float = 0.25):
    """Poll check() until it returns something truthy; fail saying what never happened."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except OSError as exc:  # not listening yet
            last = exc
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


class PrometheusProcess:
    """A Prometheus process on 127.0.0.1:<free port> with its own config, data dir and log;
    `web` (tests.support.tls_certs.Web) when its --web.config.file asks for TLS and basic auth."""

    def __init__(self, workdir, config: dict, *flags: str, env: dict | None = None, web=None):
        binary = require_binary("prometheus")
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.web = web
        self.url = f"{'https' if web is not None else 'http'}://127.0.0.1:{self.port}"
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = open(workdir / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={workdir / 'prometheus.yml'}",
             f"--web.listen-address=127.0.0.1:{self.port}", *flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=env or clean_env())
        wait_for(f"prometheus in {workdir.name} /-/ready", self._ready, timeout=20)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"prometheus exited {self.proc.returncode}: {self.logs()}")
        with self.open(self.url + "/-/ready", timeout=2) as resp:
            return resp.status == 200

    def open(self, url, timeout: float = 5.0):
        return (self.web.urlopen if self.web is not None else urllib.request.urlopen)(url, timeout=timeout)

    def get_json(self, path: str) -> dict:
        return get_json(self.url + path, web=self.web)

    def logs(self) -> str:
        self.log.flush()
        with open(self.log.name, encoding="utf-8", errors="replace") as fh:
            return fh.read()[-3000:]

    def answer(self, expr: str) -> dict:
        """The /api/v1/query answer; an HTTP error still returns Prometheus' JSON body."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            return get_json(url, web=self.web)
        except urllib.error.HTTPError as err:
            return json.loads(err.read())

    def result(self, expr: str) -> list[dict]:
        """The query's result vector; the query must succeed."""
        answer = self.answer(expr)
        assert answer["status"] == "success", answer
        return answer["data"]["result"]

    def metric(self, name: str) -> float:
        """A sample of the process's own metrics (an agent's remote-write counters)."""
        with self.open(self.url + "/metrics", timeout=5) as resp:
            text = resp.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + " ") or line.startswith(name + "{"))

    def alerts(self, alertname: str) -> list[dict]:
        return [a for a in self.get_json("/api/v1/alerts")["data"]["alerts"]
                if a["labels"]["alertname"] == alertname]

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


class Prometheus(PrometheusProcess):
    """Scraping one target every second with the repo's rules loaded, keeping exemplars as
    compose runs it. `query` is the whole answer (tests read its status and error)."""

    def __init__(self, tmp_path, target: str):
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s",
                       "scrape_timeout": "900ms"},
            "rule_files": [RULES],
            "scrape_configs": [{"job_name": "memhealth",
                                "static_configs": [{"targets": [target]}]}],
        }
        super().__init__(tmp_path, config, f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                         "--enable-feature=exemplar-storage")

    query = PrometheusProcess.answer


def hook(project, event: str, **fields) -> None:
    assert run_hook(event, payload(event, project, **fields), cwd=str(project)).returncode == 0


def _panel_queries():
    for name in sorted(os.listdir(os.path.join(REPO, "dashboards"))):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(REPO, "dashboards", name), encoding="utf-8") as fh:
            dash = json.load(fh)
        for panel in dash["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for var, value in GRAFANA_VARS.items():
                    expr = expr.replace(var, value)
                yield name, panel["title"], target["refId"], expr


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """A session's worth of real hooks, a gate run and an alert decision in the store, then
    serve and Prometheus scraping it; more hooks run while Prometheus watches, so rates move.
    Module-scoped: both tests read the same running stack (it takes seconds to build)."""
    tmp_path = tmp_path_factory.mktemp("e2e")
    project = tmp_path / "proj"
    project.mkdir()
    assert run_cli("init", "--project", str(project)).returncode == 0
    (project / "README.md").write_text("# sample\n\nThe ingest watermark scheduler decides.\n")
    ingest = run_cli("ingest", "--project", str(project))
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    # the README, and the convention files init installed (MEMORY.md's anchor, invariants, ...)
    assert "docs +1, memory +" in ingest.stdout and ", 0 errors" in ingest.stdout, ingest.stdout
    hook(project, "session-start", source="startup")
    hook(project, "prompt", prompt="thanks")
    run_cli("gate", "--project", str(project))
    app = ServeProcess(project, "--no-export")  # probes on: the scheduled gate runs at start
    app.project = project
    prom = None
    try:
        alert = {"receiver": "page", "status": "firing", "alerts": [{
            "status": "firing", "fingerprint": "e2e1",
            "labels": {"alertname": "MemhealthEmbeddingDown", "severity": "critical",
                       "instance": "e2e"},
            "annotations": {"runbook_url": "alerts/runbook.md#memhealthembeddingdown"}}]}
        status, _ = app.post("/alerts", json.dumps(alert).encode())
        assert status == 200
        target = app.url.split("://", 1)[1].rstrip("/")
        prom = Prometheus(tmp_path, target)
        wait_for("a first scrape", lambda: prom.query("memhealth_hook_invocations_total")
                 ["data"]["result"])
        for prompt in ("investigate why the ingest watermark scheduler decides late", "ok",
                       "should we build the scheduler again"):
            hook(project, "prompt", prompt=prompt)
        hook(project, "pre-tool", tool_name="Read", tool_input={"file_path": "README.md"},
             tool_use_id="t1")
        hook(project, "stop", stop_hook_active=False, last_assistant_message="done")
        # rates need two samples that differ: wait until Prometheus has seen the new prompts
        wait_for("the prompts to show as a rate", lambda: prom.query(
            'sum(increase(memhealth_hook_invocations_total{hook="prompt"}[30s])) > 0')
            ["data"]["result"])
        # and until the rules evaluated over that data (they run a beat after the scrape)
        for record in ("instance_project:memhealth_hook_failures_per_invocation:ratio_rate5m",
                       "instance_project:memhealth_hook_over_budget_per_completion:ratio_rate1h"):
            wait_for(f"{record} to be recorded", lambda r=record: prom.query(r)["data"]["result"])
        yield app, prom
    finally:
        if prom is not None:
            prom.stop()
        app.kill()


def test_every_dashboard_panel_query_evaluates_against_real_scraped_data(stack):
    _, prom = stack
    queries = list(_panel_queries())
    assert len(queries) > 30
    errors, empty_keys = [], []
    for dashboard, title, ref, expr in queries:
        answer = prom.query(expr)
        if answer.get("status") != "success":
            errors.append(f"{dashboard} / {title} {ref}: {answer.get('error')}")
        elif not answer["data"]["result"] and title in KEY_PANELS.get(dashboard, ()):
            empty_keys.append(f"{dashboard} / {title} {ref}: {expr}")
    assert not errors, "\n".join(errors)
    assert not empty_keys, "key panels returned nothing:\n" + "\n".join(empty_keys)
    titles = {(d, t) for d, t, _, _ in queries}
    for dashboard, wanted in KEY_PANELS.items():
        assert {(dashboard, t) for t in wanted} <= titles, f"{dashboard}: a key panel was renamed"


def test_prometheus_keeps_the_trace_id_exemplars_of_hook_duration_buckets(stack):
    app, prom = stack
    now = time.time()

    def exemplars():
        url = prom.url + "/api/v1/query_exemplars?" + urllib.parse.urlencode({
            "query": 'memhealth_hook_duration_seconds_bucket{hook="prompt"}',
            "start": now - 600, "end": now + 60})
        return [e for series in get_json(url)["data"] for e in series["exemplars"]]

    got = wait_for("prompt duration exemplars in Prometheus", exemplars, timeout=15)
    db = sqlite3.connect(app.project / ".memhealth" / "memory.db")
    try:
        traces = {t for (t,) in db.execute("SELECT trace_id FROM heartbeats WHERE hook = 'prompt'")}
    finally:
        db.close()
    assert {e["labels"]["trace_id"] for e in got} <= traces
    assert all(float(e["value"]) > 0 for e in got)


def test_rules_load_healthy_and_a_quiet_session_pages_nobody(stack):
    _, prom = stack

    def all_evaluated():
        groups = get_json(prom.url + "/api/v1/rules")["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return rules if rules and all(r["health"] == "ok" for r in rules) else None

    rules = wait_for("every rule to evaluate healthy", all_evaluated, timeout=15)
    with open(RULES, encoding="utf-8") as fh:
        defined = [r for g in yaml.safe_load(fh)["groups"] for r in g["rules"]]
    assert len(rules) == len(defined)
    # recorded SLIs exist for the scraped project; the failure ratio is 0 (hooks succeeded)
    ratio = prom.query("instance_project:memhealth_hook_failures_per_invocation:ratio_rate5m")
    assert [float(s["value"][1]) for s in ratio["data"]["result"]] == [0.0]
    firing = wait_for("the Watchdog to fire", lambda: [
        a for a in get_json(prom.url + "/api/v1/alerts")["data"]["alerts"]
        if a["labels"]["alertname"] == "MemhealthWatchdog" and a["state"] == "firing"])
    assert firing
    alerts = get_json(prom.url + "/api/v1/alerts")["data"]["alerts"]
    assert not [a for a in alerts if a["labels"].get("severity") in ("critical", "warning")], alerts


def test_a_red_gate_check_and_a_dead_serve_raise_their_alerts_in_a_real_prometheus(tmp_path):
    """The two silences once reproduced: a RED gate check fired nothing, and neither did
    a killed serve. Here both alerts go pending in a real Prometheus with the shipped rules
    (their `for` is minutes; pending is the state a rule enters the moment it matches)."""
    project = tmp_path / "proj"
    project.mkdir()
    assert run_cli("init", "--project", str(project)).returncode == 0
    db = sqlite3.connect(project / ".memhealth" / "memory.db")
    with db:  # more capture items than [gate].capture_queue_max (40): capture_queue is RED
        db.execute("INSERT INTO meta(key, value) VALUES ('capture.pending', '41')")
    db.close()
    gate = run_cli("gate", "--project", str(project), "--json")
    assert gate.returncode == 1, gate.stdout + gate.stderr
    checks = json.loads(gate.stdout)["checks"]
    reds = {c["name"] for c in checks if c["status"] == "red"}
    assert "capture_queue" in reds and len(reds) < len(checks)  # some stay green or noted
    app = ServeProcess(project, "--no-probes", "--no-export")
    prom = None
    try:
        target = app.url.split("://", 1)[1].rstrip("/")
        prom = Prometheus(tmp_path, target)

        def pending(alertname: str, **labels) -> list[dict]:
            return [a for a in get_json(prom.url + "/api/v1/alerts")["data"]["alerts"]
                    if a["labels"]["alertname"] == alertname and a["state"] == "pending"
                    and all(a["labels"].get(k) == v for k, v in labels.items())]

        red = wait_for("MemhealthGateCheckRed for capture_queue to go pending", lambda: pending(
            "MemhealthGateCheckRed", check="capture_queue"), timeout=20)
        assert red[0]["labels"]["severity"] == "warning"
        assert red[0]["annotations"]["runbook_url"].endswith("#gate-check-capture_queue")
        assert "memhealth gate" in red[0]["annotations"]["description"]
        # one alert per RED check, none for the green and noted ones
        wait_for(f"every RED check ({sorted(reds)}) to go pending", lambda: {
            a["labels"]["check"] for a in pending("MemhealthGateCheckRed")} == reds, timeout=10)
        assert not pending("MemhealthTargetDown")
        app.kill()
        down = wait_for("MemhealthTargetDown to go pending", lambda: pending(
            "MemhealthTargetDown", job="memhealth"), timeout=20)
        assert down[0]["labels"]["severity"] == "critical"
        assert down[0]["labels"]["instance"] == target
    finally:
        if prom is not None:
            prom.stop()
        app.kill()
