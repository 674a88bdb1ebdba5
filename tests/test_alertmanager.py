"""A real Alertmanager (Debian 0.25, loopback, no cluster) running alerts/alertmanager.yml,
pointed at a real `memhealth serve`: alerts posted to Alertmanager reach serve's /alerts by
severity, the alert budget records a decision for each, and the inhibitions hold."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.conftest import REPO, require_binary, rows, stop_process
from tests.test_prometheus_e2e import free_port, get_json, wait_for
from tests.test_serve import ServeProcess

CONFIG = os.path.join(REPO, "alerts", "alertmanager.yml")
RUNBOOK = "alerts/runbook.md#"


def alertmanager_binary() -> str:
    # Debian installs the server as prometheus-alertmanager; upstream tarballs as alertmanager
    return shutil.which("alertmanager") or require_binary("prometheus-alertmanager")


def test_config(serve_url: str) -> dict:
    """alerts/alertmanager.yml as shipped, with the webhook at this serve and short waits."""
    with open(CONFIG, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            assert hook["url"] == "http://127.0.0.1:9464/alerts"
            hook["url"] = serve_url + "/alerts"

    def shorten(route):
        route["group_wait"] = "100ms"
        route["group_interval"] = "1s"
        for child in route.get("routes", []):
            shorten(child)

    shorten(config["route"])
    return config


test_config.__test__ = False  # a helper, not a test


class Alertmanager:
    def __init__(self, tmp_path, config: dict):
        binary = alertmanager_binary()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        path = tmp_path / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = open(tmp_path / "alertmanager.log", "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={path}", f"--storage.path={tmp_path / 'am-data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("alertmanager /-/ready", self._ready, timeout=20)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            with open(self.log.name, encoding="utf-8", errors="replace") as fh:
                pytest.fail(f"alertmanager exited {self.proc.returncode}: {fh.read()[-3000:]}")
        with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
            return resp.status == 200

    def post(self, *alerts: dict) -> None:
        now = datetime.datetime.now(datetime.UTC)
        body = [{"labels": a["labels"], "annotations": a.get("annotations", {}),
                 "startsAt": now.isoformat(),
                 "endsAt": (now + datetime.timedelta(minutes=5)).isoformat()} for a in alerts]
        req = urllib.request.Request(self.url + "/api/v2/alerts", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 200

    def alert(self, alertname: str) -> dict | None:
        query = urllib.parse.urlencode({"filter": f'alertname="{alertname}"'})
        found = get_json(f"{self.url}/api/v2/alerts?{query}")
        return found[0] if found else None

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


def alert(name: str, severity: str, **labels) -> dict:
    return {"labels": {"alertname": name, "severity": severity, "instance": "p1", **labels},
            "annotations": {"summary": f"{name} test", "description": "posted by the test",
                            "runbook_url": RUNBOOK + name.lower()}}


@pytest.fixture
def stack(project, tmp_path):
    app = ServeProcess(project, "--no-probes", "--no-export")
    am = None
    try:
        am = Alertmanager(tmp_path, test_config(app.url.rstrip("/")))
        yield project, am
    finally:
        if am is not None:
            am.stop()
        app.kill()


def sink(project) -> list[dict]:
    path = project / ".memhealth" / "alerts.ndjson"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decision_for(project, alertname: str, timeout: float = 15.0) -> dict:
    return wait_for(f"serve to decide {alertname}", lambda: next(
        (r for r in sink(project) if r.get("alertname") == alertname), None), timeout=timeout)


def test_a_critical_alert_reaches_serve_and_the_budget_pages_it(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingDown", "critical", component="embedding",
                  state="unreachable"))
    record = decision_for(project, "MemhealthEmbeddingDown")
    assert record["route"] == "page" and record["decision"] == "paged"
    assert record["fix"] == RUNBOOK + "memhealthembeddingdown"
    stored = rows(project, "SELECT route, alertname, decision FROM alert_decisions")
    assert ("page", "MemhealthEmbeddingDown", "paged") in stored


def test_tickets_are_noted_watchdog_has_its_own_route_and_info_goes_nowhere(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingColdStart", "info", component="embedding", state="cold"),
            alert("MemhealthIngestStale", "warning", component="ingest", source="docs"),
            {"labels": {"alertname": "MemhealthWatchdog", "severity": "none",
                        "component": "meta"},
             "annotations": {"runbook_url": RUNBOOK + "memhealthwatchdog"}})
    ticket = decision_for(project, "MemhealthIngestStale")
    assert (ticket["route"], ticket["decision"]) == ("ticket", "noted")
    watchdog = decision_for(project, "MemhealthWatchdog")
    assert (watchdog["route"], watchdog["decision"]) == ("watchdog", "noted")
    cold = am.alert("MemhealthEmbeddingColdStart")
    assert cold["receivers"] == [{"name": "null"}]
    # both other groups were delivered and the null receiver has no integrations: give it
    # one more group interval and check it never reached serve
    time.sleep(1.2)
    assert not [r for r in sink(project) if r.get("alertname") == "MemhealthEmbeddingColdStart"]


def test_cold_start_inhibits_latency_burn_and_a_page_inhibits_same_component_tickets(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingColdStart", "info", component="embedding", state="cold"),
            alert("MemhealthEmbeddingDown", "critical", component="embedding",
                  state="unreachable"))
    decision_for(project, "MemhealthEmbeddingDown")
    am.post(alert("MemhealthHookLatencyBudgetBurn", "critical", component="hooks",
                  slo="hook-latency"),
            alert("MemhealthEmbeddingModelMissing", "warning", component="embedding",
                  state="model_missing"),
            # another project's ticket is not muted by p1's page
            alert("MemhealthEmbeddingModelMissing", "warning", component="embedding",
                  state="model_missing", instance="p2"))

    def suppressed(name):
        found = am.alert(name)
        return found if found and found["status"]["state"] == "suppressed" else None

    latency = wait_for("the latency burn to be inhibited", lambda: suppressed(
        "MemhealthHookLatencyBudgetBurn"), timeout=10)
    assert latency["status"]["inhibitedBy"]
    query = urllib.parse.urlencode({"filter": 'alertname="MemhealthEmbeddingModelMissing"'})
    expected = {"p1": "suppressed", "p2": "active"}

    def states():
        got = {a["labels"]["instance"]: a["status"]["state"]
               for a in get_json(f"{am.url}/api/v2/alerts?{query}")}
        return got if got == expected else None

    wait_for(f"only p1's ticket to be inhibited ({expected})", states, timeout=10)
    other = decision_for(project, "MemhealthEmbeddingModelMissing")
    assert other["route"] == "ticket"
    time.sleep(1.2)  # one more group interval: nothing muted leaks through
    names = [r.get("alertname") for r in sink(project)]
    assert names.count("MemhealthEmbeddingModelMissing") == 1
    assert "MemhealthHookLatencyBudgetBurn" not in names
