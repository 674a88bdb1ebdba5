"""A real Alertmanager (Debian 0.25, loopback, no cluster) running alerts/alertmanager.yml,
pointed at a real `memhealth serve` and at a loopback stand-in for the healthchecks-style
service outside serve: alerts posted to Alertmanager reach serve's /alerts by severity, the
alert budget records a decision for each, the Watchdog and the target-down alert reach the
outside receiver, and the inhibitions hold, scoped to their own alert.

Absence is never waited for: an alert that must not arrive is shown suppressed (or routed to
the receiver with no integrations) by Alertmanager's own API, and a sentinel posted after it
to the same receiver must arrive first, so the flush that would have carried it has happened.
"""

from __future__ import annotations

import datetime
import http.server
import json
import os
import shutil
import subprocess
import threading
import urllib.parse
import urllib.request

import pytest
import yaml

from telemetry.artifacts import RUNBOOK_URL, SERVE_DOWN_URL, SERVE_URL, WATCHDOG_URL
from tests.conftest import REPO, require_binary, rows, stop_process
from tests.telemetry.test_prometheus_e2e import free_port, get_json, wait_for
from tests.telemetry.test_serve import ServeProcess

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

CONFIG = os.path.join(REPO, "alerts", "alertmanager.yml")
RUNBOOK = RUNBOOK_URL + "#"


def alertmanager_binary() -> str:
    # Debian installs the server as prometheus-alertmanager; upstream tarballs as alertmanager
    return shutil.which("alertmanager") or require_binary("prometheus-alertmanager")


class Outside:
    """A loopback stand-in for the healthchecks-style service outside serve: records every
    POST (path and Alertmanager's webhook body)."""

    def __init__(self):
        self.received: list[tuple[str, dict]] = []
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.append((self.path, json.loads(body or b"{}")))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def at(self, shipped_url: str) -> str:
        """This stand-in's URL with the shipped URL's path (…/memhealth-watchdog, …/fail)."""
        return self.url + urllib.parse.urlsplit(shipped_url).path

    def alertnames(self, path_suffix: str) -> list[str]:
        return [a["labels"]["alertname"] for path, body in self.received
                if path.endswith(path_suffix) for a in body.get("alerts", [])]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_config(serve_url: str, outside: Outside) -> dict:
    """alerts/alertmanager.yml as shipped, with serve's webhook at this serve, the outside
    receivers at the stand-in, and short waits."""
    with open(CONFIG, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    moved = {SERVE_URL: serve_url + "/alerts", WATCHDOG_URL: outside.at(WATCHDOG_URL),
             SERVE_DOWN_URL: outside.at(SERVE_DOWN_URL)}
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            assert hook["url"] in moved, hook["url"]
            hook["url"] = moved[hook["url"]]

    def shorten(route):
        route["group_wait"] = "100ms"
        route["group_interval"] = "1s"
        for child in route.get("routes", []):
            shorten(child)

    shorten(config["route"])
    return config


test_config.__test__ = False  # a helper, not a test


class Alertmanager:
    """A real Alertmanager on 127.0.0.1:<free port>; `web` (tests.support.tls_certs.Web) with the
    --web.config.file in `flags` when it asks for TLS and basic auth."""

    def __init__(self, tmp_path, config: dict, *flags: str, web=None):
        binary = alertmanager_binary()
        self.port = free_port()
        self.web = web
        self.url = f"{'https' if web is not None else 'http'}://127.0.0.1:{self.port}"
        path = tmp_path / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.log = open(tmp_path / "alertmanager.log", "wb")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={path}", f"--storage.path={tmp_path / 'am-data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("alertmanager /-/ready", self._ready, timeout=20)

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            with open(self.log.name, encoding="utf-8", errors="replace") as fh:
                pytest.fail(f"alertmanager exited {self.proc.returncode}: {fh.read()[-3000:]}")
        with self._open(self.url + "/-/ready", timeout=2) as resp:
            return resp.status == 200

    def _open(self, req, timeout: float = 5.0):
        return (self.web.urlopen if self.web is not None else urllib.request.urlopen)(req, timeout=timeout)

    def post(self, *alerts: dict) -> None:
        now = datetime.datetime.now(datetime.UTC)
        body = [{"labels": a["labels"], "annotations": a.get("annotations", {}),
                 "startsAt": now.isoformat(),
                 "endsAt": (now + datetime.timedelta(minutes=5)).isoformat()} for a in alerts]
        req = urllib.request.Request(self.url + "/api/v2/alerts", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with self._open(req, timeout=5) as resp:
            assert resp.status == 200

    def alerts(self, alertname: str) -> list[dict]:
        query = urllib.parse.urlencode({"filter": f'alertname="{alertname}"'})
        return get_json(f"{self.url}/api/v2/alerts?{query}", web=self.web)

    def alert(self, alertname: str) -> dict | None:
        found = self.alerts(alertname)
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
    outside = Outside()
    am = None
    try:
        am = Alertmanager(tmp_path, test_config(app.url.rstrip("/"), outside))
        am.outside = outside
        yield project, am
    finally:
        if am is not None:
            am.stop()
        outside.stop()
        app.kill()


def sink(project) -> list[dict]:
    path = project / ".memhealth" / "alerts.ndjson"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decision_for(project, alertname: str, timeout: float = 15.0) -> dict:
    return wait_for(f"serve to decide {alertname}", lambda: next(
        (r for r in sink(project) if r.get("alertname") == alertname), None), timeout=timeout)


def sentinels(project, am: Alertmanager, *severities: str) -> None:
    """Post one sentinel per severity (so per serve route) and wait until serve has decided
    each: every flush of those routes up to now has been delivered."""
    am.post(*[alert(f"MemhealthTestSentinel{s.title()}", s, component="test")
              for s in severities])
    for s in severities:
        decision_for(project, f"MemhealthTestSentinel{s.title()}")


def suppressed(am: Alertmanager, name: str, **labels) -> dict | None:
    for found in am.alerts(name):
        if all(found["labels"].get(k) == v for k, v in labels.items()):
            return found if found["status"]["state"] == "suppressed" else None
    return None


def test_a_critical_alert_reaches_serve_and_the_budget_pages_it(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingDown", "critical", component="embedding",
                  state="unreachable", check="embedding_path"))
    record = decision_for(project, "MemhealthEmbeddingDown")
    assert record["route"] == "page" and record["decision"] == "paged"
    assert record["fix"] == RUNBOOK + "memhealthembeddingdown"
    stored = rows(project, "SELECT route, alertname, decision FROM alert_decisions")
    assert ("page", "MemhealthEmbeddingDown", "paged") in stored


def test_tickets_are_noted_and_info_goes_nowhere(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingColdStart", "info", component="embedding", state="cold"),
            alert("MemhealthIngestStale", "warning", component="ingest", source="docs",
                  check="ingest_freshness"))
    ticket = decision_for(project, "MemhealthIngestStale")
    assert (ticket["route"], ticket["decision"]) == ("ticket", "noted")
    # info is routed to `null`, a receiver with no integrations: nothing can leave it
    cold = am.alert("MemhealthEmbeddingColdStart")
    assert cold["receivers"] == [{"name": "null"}]
    running = yaml.safe_load(get_json(am.url + "/api/v2/status")["config"]["original"])
    null = next(r for r in running["receivers"] if r["name"] == "null")
    assert set(null) == {"name"}
    sentinels(project, am, "warning", "critical")
    assert "MemhealthEmbeddingColdStart" not in [r.get("alertname") for r in sink(project)]


def test_the_watchdog_reaches_the_dead_mans_switch_outside_serve_and_serve(stack):
    project, am = stack
    am.post({"labels": {"alertname": "MemhealthWatchdog", "severity": "none",
                        "component": "meta"},
             "annotations": {"runbook_url": RUNBOOK + "memhealthwatchdog"}})
    wait_for("the Watchdog at the outside dead man's switch",
             lambda: am.outside.alertnames("/memhealth-watchdog"), timeout=15)
    assert am.outside.alertnames("/memhealth-watchdog") == ["MemhealthWatchdog"]
    watchdog = decision_for(project, "MemhealthWatchdog")
    assert (watchdog["route"], watchdog["decision"]) == ("watchdog", "noted")
    assert am.alert("MemhealthWatchdog")["receivers"] == [{"name": "deadman"},
                                                           {"name": "watchdog"}]


def test_serve_down_goes_only_to_the_receiver_outside_serve(stack):
    project, am = stack
    am.post(alert("MemhealthTargetDown", "critical", component="serve", job="memhealth",
                  instance="127.0.0.1:9464"))
    wait_for("the target-down alert at the outside receiver",
             lambda: am.outside.alertnames("/memhealth-serve-down/fail"), timeout=15)
    assert am.outside.alertnames("/memhealth-serve-down/fail") == ["MemhealthTargetDown"]
    assert am.alert("MemhealthTargetDown")["receivers"] == [{"name": "serve-down"}]
    sentinels(project, am, "critical")
    assert "MemhealthTargetDown" not in [r.get("alertname") for r in sink(project)]


def test_a_page_mutes_only_the_ticket_of_its_own_alert(stack):
    """Scoped by alertname: the critical burn tier mutes the ticket tier of the
    same burn alert, and not MemhealthHookHeartbeatMissing on the same component; one gate
    check's page does not mute another check's ticket; a dedicated alert mutes the generic
    RED of the check it explains."""
    project, am = stack
    am.post(alert("MemhealthHookErrorBudgetBurn", "critical", component="hooks",
                  slo="hook-success"),
            alert("MemhealthGateCheckRed", "critical", component="store",
                  check="index_integrity"),
            alert("MemhealthEmbeddingDown", "critical", component="embedding",
                  state="unreachable", check="embedding_path"))
    for name in ("MemhealthHookErrorBudgetBurn", "MemhealthGateCheckRed",
                 "MemhealthEmbeddingDown"):
        decision_for(project, name)
    am.post(alert("MemhealthHookErrorBudgetBurn", "warning", component="hooks",
                  slo="hook-success"),
            alert("MemhealthHookHeartbeatMissing", "warning", component="hooks", hook="prompt",
                  check="hook_heartbeats"),
            alert("MemhealthGateCheckRed", "warning", component="memory", check="capture_queue"),
            alert("MemhealthGateCheckRed", "warning", component="embedding",
                  check="embedding_path"))
    ticket_tier = wait_for("the ticket tier to be inhibited by its page tier", lambda: suppressed(
        am, "MemhealthHookErrorBudgetBurn", severity="warning"), timeout=10)
    assert ticket_tier["status"]["inhibitedBy"]
    generic = wait_for("the generic embedding_path RED to be inhibited", lambda: suppressed(
        am, "MemhealthGateCheckRed", check="embedding_path"), timeout=10)
    assert generic["status"]["inhibitedBy"]
    # another alert on the same component, and another check, are delivered
    heartbeat = decision_for(project, "MemhealthHookHeartbeatMissing")
    assert heartbeat["route"] == "ticket"
    states = {a["labels"]["check"]: a["status"]["state"]
              for a in am.alerts("MemhealthGateCheckRed")}
    assert states == {"index_integrity": "active", "capture_queue": "active",
                      "embedding_path": "suppressed"}
    assert am.alert("MemhealthHookHeartbeatMissing")["status"]["state"] == "active"
    sentinels(project, am, "warning")
    # the budget's severity words: critical is a page, warning a ticket
    decided = [(r.get("alertname"), r.get("severity")) for r in sink(project)]
    assert ("MemhealthHookErrorBudgetBurn", "ticket") not in decided
    assert decided.count(("MemhealthGateCheckRed", "ticket")) == 1  # capture_queue only
    assert ("MemhealthGateCheckRed", "page") in decided


def test_a_cold_start_inhibits_latency_burn_on_its_project_only(stack):
    project, am = stack
    am.post(alert("MemhealthEmbeddingColdStart", "info", component="embedding", state="cold"))
    wait_for("the cold start to be active", lambda: (am.alert("MemhealthEmbeddingColdStart")
                                                    or {}).get("status", {}).get("state") == "active")
    am.post(alert("MemhealthHookLatencyBudgetBurn", "critical", component="hooks",
                  slo="hook-latency"),
            # another project's latency burn is not explained by p1's cold start
            alert("MemhealthHookLatencyBudgetBurn", "critical", component="hooks",
                  slo="hook-latency", instance="p2"))
    latency = wait_for("p1's latency burn to be inhibited", lambda: suppressed(
        am, "MemhealthHookLatencyBudgetBurn", instance="p1"), timeout=10)
    assert latency["status"]["inhibitedBy"]
    other = decision_for(project, "MemhealthHookLatencyBudgetBurn")
    assert other["route"] == "page"
    sentinels(project, am, "critical")
    burns = [r for r in sink(project) if r.get("alertname") == "MemhealthHookLatencyBudgetBurn"]
    assert len(burns) == 1  # p2's; p1's stayed muted
