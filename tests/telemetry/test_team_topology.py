"""The team topology on real engines, on loopback: two developer machines, each a real
`memhealth serve --all` scraped by a real Prometheus in agent mode running the shipped
compose/team/prometheus-agent.yml, remote-writing to a real central Prometheus that loads the
shipped rules; the central Alertmanager's generated routing tree, and a real Alertmanager in
front of a real alert budget serve with each team's page budget.

Every edge that runs here is TLS and authenticated as shipped: the agents write to the central
Prometheus over TLS (the team CA) with basic auth checked against bcrypt hashes in its
--web.config.file; the central Prometheus sends alerts to Alertmanager the same way; Alertmanager
delivers to the alert budget serve over TLS with its bearer token. Certificates and the CA are
made by the test (tests/support/tls_certs.py, the `cryptography` package) for 127.0.0.1.

A "machine" here is its own XDG state dir (its own project registry) and its own agent with
its own `team` and `machine` external labels. Both agents rewrite `instance` to
127.0.0.1:9464, which is what two real machines report (both serves listen there), so the
same-named project on two machines collides exactly as it would in a team.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

from memhealth.config import defaults
from memory_core.store import registry
from telemetry.artifacts.alertmanager import BASE_ROUTES, BUDGET_URL, WATCHDOG_URL
from telemetry.team_secrets import SECRET_FILES
from tests.conftest import REPO, clean_env, require_binary, rows, run_cli, stop_process
from tests.support.tls_certs import TestCA, Web, bcrypt_web_config, write_secret
from tests.telemetry.test_alertmanager import Alertmanager, Outside, alert, sink
from tests.telemetry.test_prometheus_e2e import (
    GRAFANA_VARS,
    RULES,
    PrometheusProcess,
    _panel_queries,
    wait_for,
)
from tests.telemetry.test_serve import ServeProcess
from tests.telemetry.test_serve_all import ServeAll, _init, _prompts

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

AGENT_CONFIG = os.path.join(REPO, "compose", "team", "prometheus-agent.yml")
CENTRAL_CONFIG = os.path.join(REPO, "compose", "team", "prometheus-central.yml")
TEAM_AM = os.path.join(REPO, "compose", "team", "alertmanager.yml")
BUDGET_ENV = os.path.join(REPO, "compose", "team", "alert-budget.env")
# what every developer's serve --all reports as its instance on a real machine
SHARED_INSTANCE = "127.0.0.1:9464"


class Prom(PrometheusProcess):
    """A Prometheus of the topology (an agent or the central one); `query` is the result vector."""

    query = PrometheusProcess.result


class Secrets:
    """What `memhealth generate --team` gives a team, made here: a CA, the central side's
    certificate for 127.0.0.1, a password per basic-auth user, the budget's token, and the web
    configs holding the bcrypt hashes. `lay(dir, names)` copies files into dir/secrets/, where
    the shipped configs read them (relative to the config file)."""

    def __init__(self, directory):
        self.ca = TestCA(directory / "ca")
        self.cert, self.key = self.ca.issue("central", ["127.0.0.1", "localhost"])
        self.dir = directory / "secrets"
        self.dir.mkdir()
        self.values = {"agent.password": "agent-" + os.urandom(16).hex(),
                       "prometheus.password": "prom-" + os.urandom(16).hex(),
                       "grafana.password": "grafana-" + os.urandom(16).hex(),
                       "alert-budget.token": "budget-" + os.urandom(16).hex()}
        for name, value in self.values.items():
            write_secret(self.dir / name, value)
        shutil.copy(self.ca.cert_path, self.dir / "ca.pem")
        self.prometheus_web = bcrypt_web_config(
            directory / "prometheus-web.yml", self.cert, self.key,
            {"memhealth-agent": self.values["agent.password"], "grafana": self.values["grafana.password"]})
        self.alertmanager_web = bcrypt_web_config(
            directory / "alertmanager-web.yml", self.cert, self.key,
            {"prometheus": self.values["prometheus.password"]})
        # how the test itself reads the central Prometheus: as Grafana does
        self.reader = Web(self.ca.cert_path, user="grafana", password=self.values["grafana.password"])

    def lay(self, directory, names: tuple[str, ...], **override: str) -> None:
        target = directory / "secrets"
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            if name in override:
                write_secret(target / name, override[name])
            else:
                shutil.copy(self.dir / name, target / name)
                os.chmod(target / name, 0o600)


def central_config() -> dict:
    """compose/team/prometheus-central.yml with the repo's rules, a 1 s evaluation and no
    scrape of the alert budget (not running here): it receives everything by remote_write."""
    with open(CENTRAL_CONFIG, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    config["global"]["evaluation_interval"] = "1s"
    config["rule_files"] = [RULES]
    del config["alerting"], config["scrape_configs"]
    return config


def agent_config(target: str, central_url: str, variant: str = "shipped") -> dict:
    """compose/team/prometheus-agent.yml as shipped, pointed at this machine's serve and at
    the central Prometheus, scraping every second; every other key stays as shipped. The
    variants an intruder might run: "none" drops the credentials, "plain" writes over HTTP
    ("wrong" is the shipped config with a wrong password laid beside it)."""
    with open(AGENT_CONFIG, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    assert config["global"]["external_labels"] == {"team": "${MEMHEALTH_TEAM}",
                                                   "machine": "${MEMHEALTH_MACHINE}"}
    config["global"].update(scrape_interval="1s", scrape_timeout="900ms")
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [target]}]
    job["relabel_configs"] = [{"target_label": "instance", "replacement": SHARED_INSTANCE}]
    (write,) = config["remote_write"]
    assert write["send_exemplars"] is True
    # TLS with the team CA and basic auth, the files read relative to the config
    assert write["url"].startswith("https://")
    assert write["tls_config"] == {"ca_file": "secrets/ca.pem"}
    assert write["basic_auth"] == {"username": "memhealth-agent", "password_file": "secrets/agent.password"}
    write["url"] = central_url + "/api/v1/write"
    if variant == "none":
        del write["basic_auth"]
    elif variant == "plain":
        write["url"] = write["url"].replace("https://", "http://")
    # ship within a second instead of the default 5 s batch deadline: the test waits less
    write["queue_config"] = {"batch_send_deadline": "1s"}
    return config


class Machine:
    """One developer machine: registered projects, serve --all and a Prometheus agent."""

    def __init__(self, tmp_path, name: str, team: str, projects: dict[str, int], secrets: Secrets):
        self.name, self.team = name, team
        self.secrets = secrets
        self.env = clean_env(XDG_STATE_HOME=str(tmp_path / name / "xdg"))
        self.roots = {}
        for project, prompts in projects.items():
            root = tmp_path / name / "src" / project
            _init(root, self.env)
            _prompts(root, self.env, prompts)
            self.roots[project] = root
        path = tmp_path / name / "xdg" / "memhealth" / "projects.json"
        assert sorted(e.name for e in registry.read(str(path))) == sorted(projects)
        self.serve = ServeAll(self.env, "--no-export")
        self.agent = None
        self.tmp = tmp_path / name

    def start_agent(self, central_url: str) -> None:
        self.agent = start_agent(self.tmp / "agent", self.serve, central_url, self.secrets,
                                 self.team, self.name)

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        self.serve.stop()


def start_agent(workdir, serve, central_url: str, secrets: Secrets, team: str, machine: str,
                variant: str = "shipped") -> Prom:
    """A real agent running the shipped config against `serve`, its ca.pem and agent.password
    laid beside its config (a wrong password for variant "wrong")."""
    target = serve.url.split("://", 1)[1].rstrip("/")
    override = {"agent.password": "not-the-" + os.urandom(8).hex()} if variant == "wrong" else {}
    secrets.lay(workdir, ("ca.pem", "agent.password"), **override)
    return Prom(workdir, agent_config(target, central_url, variant),
                "--enable-feature=agent,expand-external-labels,exemplar-storage",
                f"--storage.agent.path={workdir / 'wal'}",
                env=clean_env(MEMHEALTH_TEAM=team, MEMHEALTH_MACHINE=machine))


def start_central(workdir, secrets: Secrets, config: dict | None = None, *flags: str) -> Prom:
    """The central Prometheus behind its web config (TLS and bcrypt basic auth)."""
    return Prom(workdir, config or central_config(), f"--storage.tsdb.path={workdir / 'tsdb'}",
                "--web.enable-remote-write-receiver", "--enable-feature=exemplar-storage",
                f"--web.config.file={secrets.prometheus_web}", *flags, web=secrets.reader)


def _by(result: list[dict], *labels: str) -> dict[tuple, float]:
    return {tuple(r["metric"].get(k) for k in labels): float(r["value"][1]) for r in result}


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """Machine alice (team-a: `app` with 1 prompt, `lib` with 2) and machine bob (team-b: `app`
    with 3 prompts, its capture queue over the limit so its gate says RED), agents forwarding
    to one central Prometheus."""
    tmp_path = tmp_path_factory.mktemp("team")
    secrets = Secrets(tmp_path)
    central = None
    machines: list[Machine] = []
    try:
        machines.append(Machine(tmp_path, "alice", "team-a", {"app": 1, "lib": 2}, secrets))
        machines.append(Machine(tmp_path, "bob", "team-b", {"app": 3}, secrets))
        # bob's `app`: more capture items than [gate].capture_queue_max (40): capture_queue RED
        bob_db = machines[1].roots["app"] / ".memhealth" / "memory.db"
        from memory_core.store.db import sqlite3
        db = sqlite3.connect(bob_db)
        with db:
            db.execute("INSERT INTO meta(key, value) VALUES ('capture.pending', '41')")
        db.close()
        central = start_central(tmp_path / "central", secrets)
        central.secrets = secrets
        for machine in machines:
            machine.start_agent(central.url)
        yield central, {m.name: m for m in machines}
    finally:
        for machine in machines:
            machine.stop()
        if central is not None:
            central.stop()


def test_central_prometheus_holds_each_machines_projects_with_the_external_labels(team):
    central, machines = team
    got = wait_for("every machine's projects on the central side", lambda: (lambda r: r if len(r) == 3
                   else None)(_by(central.query('memhealth_hook_invocations_total{hook="prompt",'
                                                'outcome="ok"}'), "team", "machine", "project")),
                   timeout=45)
    # each store's own count under its own machine: alice's app 1, alice's lib 2, bob's app 3
    assert got == {("team-a", "alice", "app"): 1.0, ("team-a", "alice", "lib"): 2.0,
                   ("team-b", "bob", "app"): 3.0}
    # the labels: the agent's external team and machine, the (rewritten) instance, the job
    info = wait_for("every project's build_info", lambda: (lambda r: r if len(r) == 3 else None)(
        central.query("memhealth_build_info")), timeout=30)
    assert {(s["metric"]["machine"], s["metric"]["project"], s["metric"]["instance"],
             s["metric"]["job"]) for s in info} == {
        ("alice", "app", SHARED_INSTANCE, "memhealth"), ("alice", "lib", SHARED_INSTANCE, "memhealth"),
        ("bob", "app", SHARED_INSTANCE, "memhealth")}
    # `up` travels too (MemhealthTargetDown reads it): one per machine, labelled
    assert wait_for("both agents' up", lambda: (lambda r: r if len(r) == 2 else None)(
        _by(central.query('up{job="memhealth"}'), "team", "machine"))) == {
        ("team-a", "alice"): 1.0, ("team-b", "bob"): 1.0}
    # the agents really used remote_write (nothing scrapes central) and dropped nothing
    for machine in machines.values():
        assert machine.agent.metric("prometheus_remote_storage_samples_total") > 0
        assert machine.agent.metric("prometheus_remote_storage_samples_failed_total") == 0


def test_two_machines_with_a_project_named_app_stay_apart_in_the_recording_rules(team):
    central, _ = team
    record = "instance_project_hook:memhealth_hook_invocations:increase1h"
    # the rules aggregate by team, machine, instance, project: alice's app and bob's app are
    # two series, with the same instance and project
    got = wait_for("the hourly invocation record per machine", lambda: (lambda r: r if len(r) == 3
                   else None)(_by(central.query(f'{record}{{hook="prompt"}}'),
                                  "machine", "instance", "project")), timeout=30)
    assert set(got) == {("alice", SHARED_INSTANCE, "app"), ("alice", SHARED_INSTANCE, "lib"),
                        ("bob", SHARED_INSTANCE, "app")}
    # and why the machine label is needed: grouping by (instance, project) alone, as a
    # single machine's rules did, adds alice's and bob's `app` into one series
    merged = _by(central.query('sum by (instance, project) (memhealth_hook_invocations_total'
                               '{hook="prompt",outcome="ok"})'), "instance", "project")
    assert merged == {(SHARED_INSTANCE, "app"): 4.0, (SHARED_INSTANCE, "lib"): 2.0}
    # every rule loaded centrally evaluates healthy over the forwarded series
    groups = central.get_json("/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    with open(RULES, encoding="utf-8") as fh:
        assert len(rules) == sum(len(g["rules"]) for g in yaml.safe_load(fh)["groups"])
    wait_for("every central rule to evaluate healthy",
             lambda: all(r["health"] == "ok" for g in central.get_json("/api/v1/rules")
                         ["data"]["groups"] for r in g["rules"]), timeout=15)


def test_a_hook_duration_exemplar_with_its_trace_id_reaches_the_central_side(team):
    central, machines = team
    now = time.time()

    def exemplars():
        path = "/api/v1/query_exemplars?" + urllib.parse.urlencode({
            "query": 'memhealth_hook_duration_seconds_bucket{hook="prompt"}',
            "start": now - 600, "end": now + 120})
        return [(series["seriesLabels"], e) for series in central.get_json(path)["data"]
                for e in series["exemplars"]]

    got = wait_for("prompt-duration exemplars on the central Prometheus", exemplars, timeout=30)
    traces = {(name, project): {t for (t,) in rows(root, "SELECT trace_id FROM heartbeats "
                                                         "WHERE hook = 'prompt'")}
              for name, m in machines.items() for project, root in m.roots.items()}
    for labels, exemplar in got:
        # the trace id is one of the prompt hooks that project's store recorded on that machine
        key = (labels["machine"], labels["project"])
        assert exemplar["labels"]["trace_id"] in traces[key], (key, exemplar)
        assert labels["team"] == {"alice": "team-a", "bob": "team-b"}[labels["machine"]]
    assert {(labels["machine"], labels["project"]) for labels, _ in got} == set(traces)


def test_every_dashboard_panel_evaluates_centrally_with_one_machine_selected(team):
    central, _ = team
    wait_for("bob's series on the central side", lambda: central.query(
        'memhealth_build_info{machine="bob"}'), timeout=30)
    errors = []
    for dashboard, title, ref, expr in _panel_queries():
        assert 'machine=~".*"' in expr and 'team=~".*"' in expr, (dashboard, title)
        answer = central.get_json("/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr.replace('machine=~".*"', 'machine=~"bob"')}))
        if answer.get("status") != "success":
            errors.append(f"{dashboard} / {title} {ref}: {answer.get('error')}")
    assert not errors, errors
    # the dashboards' selector, as Grafana fills it for machine bob and project app: bob's 3
    # prompts, not alice's app beside them
    one = central.query('sum(memhealth_hook_invocations_total{team=~".*",machine=~"bob",'
                        'instance=~".*",project=~"app",hook="prompt"})')
    assert float(one[0]["value"][1]) == 3.0
    assert GRAFANA_VARS["$machine"] == GRAFANA_VARS["$team"] == ".*"


@pytest.mark.parametrize("variant", ["none", "wrong", "plain"])
def test_a_write_without_credentials_with_wrong_ones_or_over_plain_http_is_refused_and_counted(
        team, tmp_path, variant):
    """An agent on the shipped config scraping a real serve, but without the password, with a
    wrong one, or over plain HTTP: every write is refused, the sender counts each sample as
    failed, and the central side holds none of its series (the shipped agents beside it
    still write: the same central Prometheus, the same serve, the right password)."""
    central, machines = team
    intruder = f"intruder-{variant}"
    agent = start_agent(tmp_path / "agent", machines["bob"].serve, central.url, central.secrets,
                        "team-b", intruder, variant)
    try:
        failed = wait_for(f"{intruder}'s writes to be refused", lambda: agent.metric(
            "prometheus_remote_storage_samples_failed_total"), timeout=45)
        assert failed > 0
        assert central.query(f'count({{machine="{intruder}"}})') == []
        assert central.query(f'count(memhealth_build_info{{machine="{intruder}"}})') == []
        # the right credentials were not locked out meanwhile
        assert machines["bob"].agent.metric("prometheus_remote_storage_samples_failed_total") == 0
    finally:
        agent.stop()
    # and the central Prometheus answers no one without the password, nor over plain HTTP
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(central.url + "/api/v1/query?query=up", timeout=5,
                               context=central.web.context)
    assert refused.value.code == 401
    with pytest.raises(urllib.error.HTTPError) as plain:
        urllib.request.urlopen(central.url.replace("https://", "http://") + "/-/ready", timeout=5)
    assert plain.value.code == 400


def test_a_red_gate_check_on_one_machine_raises_its_alert_centrally_with_the_team(team):
    central, machines = team

    def pending_capture_queue():
        return {(a["labels"].get("team"), a["labels"].get("machine"), a["labels"].get("project"))
                for a in central.alerts("MemhealthGateCheckRed")
                if a["labels"].get("check") == "capture_queue"}

    # serve --all's scheduled gate ran on bob's app; its RED crossed by remote_write
    assert wait_for("MemhealthGateCheckRed{check=capture_queue} on the central side",
                    pending_capture_queue, timeout=60) == {("team-b", "bob", "app")}
    (fired,) = [a for a in central.alerts("MemhealthGateCheckRed")
                if a["labels"].get("check") == "capture_queue"]
    assert fired["labels"]["severity"] == "warning" and fired["labels"]["instance"] == SHARED_INSTANCE
    # the central routing tree sends it to bob's team's ticket route
    assert _route(fired["labels"]) == "team-b-ticket"

    # alice's serve dies while her agent runs: `up` = 0 crosses, MemhealthTargetDown goes
    # pending for team-a only, and its page goes to team-a's page route
    stop_process(machines["alice"].serve.proc)
    down = wait_for("MemhealthTargetDown for alice on the central side", lambda: [
        a for a in central.alerts("MemhealthTargetDown") if a["labels"].get("machine") == "alice"],
        timeout=45)
    assert down[0]["labels"]["team"] == "team-a" and down[0]["labels"]["severity"] == "critical"
    assert _route(down[0]["labels"]) == "team-a-page"
    assert not [a for a in central.alerts("MemhealthTargetDown") if a["labels"].get("machine") == "bob"]


def test_a_second_machine_started_with_bobs_label_raises_the_duplicate_alert_centrally(team, tmp_path):
    """Carol's machine (her own state dir, so her own instance id, and a project `app` like
    bob's) runs the shipped agent with MEMHEALTH_MACHINE=bob: the central side now holds two
    instance ids under (team-b, bob) and the shipped central rule goes pending for it alone."""
    central, machines = team
    assert central.query('count by (team, machine) (count by (team, machine, instance_id) '
                         '(memhealth_build_info)) > 1') == []
    carol = Machine(tmp_path, "carol", "team-b", {"app": 1}, central.secrets)
    try:
        carol.name = "bob"  # the mistake: the same MEMHEALTH_MACHINE as bob's
        carol.start_agent(central.url)
        # the two agents' identical series collide: a write of carol's holding a sample older
        # than bob's latest for one of them is refused whole (out of order), so hers get in
        # only between bob's writes; give that time
        ids = wait_for("two instance ids under machine bob", lambda: (lambda r: r if len(r) == 2 else None)(
            {s["metric"]["instance_id"] for s in central.query(
                'last_over_time(memhealth_build_info{machine="bob"}[10m])')}), timeout=120)
        # (alice's serve was stopped by the test before: her last series, within 10 minutes)
        alice_ids = {s["metric"]["instance_id"] for s in central.query(
            'last_over_time(memhealth_build_info{machine="alice"}[10m])')}
        assert len(alice_ids) == 1 and not alice_ids & ids
        # the shipped central rule's expression on the central side (its `for:` and firing are
        # promtool's test above; this central loads the main rules only)
        with open(os.path.join(REPO, "compose", "team", "central.rules.yaml"), encoding="utf-8") as fh:
            (group,) = yaml.safe_load(fh)["groups"]
        (rule,) = [r for r in group["rules"] if r["alert"] == "MemhealthMachineLabelDuplicated"]
        got = central.query(rule["expr"])
        assert [(r["metric"]["team"], r["metric"]["machine"], float(r["value"][1])) for r in got] == [
            ("team-b", "bob", 2.0)]
    finally:
        carol.stop()


def _route(labels: dict) -> str:
    """The receiver(s) the generated central routing tree picks for these labels (amtool)."""
    amtool = require_binary("amtool")
    proc = subprocess.run([amtool, "config", "routes", "test", f"--config.file={TEAM_AM}",
                           *[f"{k}={v}" for k, v in labels.items()]],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


# -- the central Alertmanager and the per-team page budget -----------------------------------------

@pytest.mark.parametrize("receiver,labels", [
    ("team-a-page", {"alertname": "MemhealthGateCheckRed", "severity": "critical", "team": "team-a",
                     "check": "index_integrity", "machine": "alice", "project": "app"}),
    ("team-a-ticket", {"alertname": "MemhealthIngestStale", "severity": "warning", "team": "team-a"}),
    ("team-b-page", {"alertname": "MemhealthHookErrorBudgetBurn", "severity": "critical",
                     "team": "team-b", "slo": "hook-success"}),
    ("team-a-ticket", {"alertname": "SomethingUnlabelled", "team": "team-a"}),
    # no known team (an agent without the label, or a misspelt one): the shared routes
    ("page", {"alertname": "MemhealthEmbeddingDown", "severity": "critical", "team": "team-z"}),
    ("page", {"alertname": "MemhealthTargetDown", "severity": "critical", "job": "memhealth"}),
    ("null", {"alertname": "MemhealthEmbeddingColdStart", "severity": "info", "team": "team-a"}),
    ("deadman,watchdog", {"alertname": "MemhealthWatchdog", "severity": "none"}),
], ids=lambda v: v if isinstance(v, str) else v["alertname"])
def test_central_routing_tree_sends_each_teams_alerts_to_its_own_receivers(receiver, labels):
    assert _route(labels) == receiver


def test_central_alertmanager_config_checks_and_the_budget_knows_every_route():
    amtool = require_binary("amtool")
    proc = subprocess.run([amtool, "check-config", TEAM_AM], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(TEAM_AM, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    webhooks = {r["name"]: [h["url"] for h in r.get("webhook_configs", [])] for r in config["receivers"]}
    teams_routes = {n for n in webhooks if n.startswith("team-")}
    assert teams_routes == {"team-a-page", "team-a-ticket", "team-b-page", "team-b-ticket"}
    assert all(webhooks[n] == [BUDGET_URL] for n in teams_routes | {"page", "ticket", "watchdog"})
    assert webhooks["deadman"] == [WATCHDOG_URL]  # the dead man's switch stays outside
    assert "serve-down" not in webhooks  # a laptop's dead serve pages its team, budgeted
    routes = _budget_routes()
    # the budget's own default routes, then each team's (memhealth.config keeps the defaults)
    assert routes[:len(BASE_ROUTES)] == list(BASE_ROUTES) == defaults()["alerts"]["routes"]
    # every receiver that reaches the budget is a route it knows (not the shared "unknown")
    assert {n for n, urls in webhooks.items() if urls == [BUDGET_URL]} <= set(routes)
    # inhibitions stay scoped to one alert on one machine's project
    for rule in config["inhibit_rules"]:
        assert {"team", "machine", "instance", "project"} <= set(rule["equal"])


def _budget_routes() -> list[str]:
    with open(BUDGET_ENV, encoding="utf-8") as fh:
        (line,) = [x for x in fh.read().splitlines() if x and not x.startswith("#")]
    key, value = line.split("=", 1)
    assert key == "MEMHEALTH_ALERTS_ROUTES"
    return value.split(",")


def budget_serve(tmp_path, secrets: Secrets, **extra_env: str) -> tuple:
    """(store root, the central alert budget): a real serve over TLS with the bearer token, its
    routes from the generated alert-budget.env."""
    root = tmp_path / "central"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates",
                   env=clean_env(XDG_STATE_HOME=str(tmp_path / "xdg"))).returncode == 0
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "xdg"),
                    MEMHEALTH_ALERTS_ROUTES=",".join(_budget_routes()), **extra_env)
    app = ServeProcess(root, "--no-probes", "--no-export", "--tls-cert", secrets.cert,
                       "--tls-key", secrets.key, "--token-file", str(secrets.dir / "alert-budget.token"),
                       env=env, web=Web(secrets.ca.cert_path, token=secrets.values["alert-budget.token"]))
    return root, app


def central_am_config(app, outside: Outside) -> dict:
    """compose/team/alertmanager.yml as generated, its budget receivers at this serve (TLS and
    token as generated, read from secrets/ beside the config), the outside ones at the
    stand-in, and short waits."""
    with open(TEAM_AM, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    for receiver in config["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            if hook["url"] == BUDGET_URL:
                assert hook["http_config"]["authorization"] == {
                    "type": "Bearer", "credentials_file": "secrets/alert-budget.token"}
                assert hook["http_config"]["tls_config"] == {"ca_file": "secrets/ca.pem"}
                hook["url"] = app.url.rstrip("/") + "/alerts"
            else:
                hook["url"] = outside.at(hook["url"])

    def shorten(route):
        route["group_wait"], route["group_interval"] = "100ms", "1s"
        for child in route.get("routes", []):
            shorten(child)
    shorten(config["route"])
    return config


def test_each_team_has_its_own_page_budget_through_a_real_alertmanager(tmp_path):
    """The generated central config in a real Alertmanager, its budget receivers at a real
    serve configured by the generated alert-budget.env, over TLS with the budget's token:
    team-a's third page in the window folds (2 per 12 h), team-b still pages, each team's
    pages reach its own pager (`generate --pager-url`); a delivery without the token is
    refused, stores nothing and is counted."""
    secrets = Secrets(tmp_path / "team")
    outside = Outside()
    made = run_cli("generate", "--out", str(tmp_path / "out"), "--secrets-dir", str(tmp_path / "gen"),
                   "--pager-url", f"team-a={outside.url}/pager-a", "--pager-url", f"team-b={outside.url}/pager-b")
    assert made.returncode == 0, made.stderr
    (line,) = [x for x in (tmp_path / "gen" / "pagers.env").read_text().splitlines() if not x.startswith("#")]
    key, value = line.split("=", 1)
    root, app = budget_serve(tmp_path, secrets, **{key: value})
    am = None
    try:
        config = central_am_config(app, outside)
        (tmp_path / "am").mkdir()
        secrets.lay(tmp_path / "am", ("ca.pem", "alert-budget.token"))
        am = Alertmanager(tmp_path / "am", config)
        # three different pages for team-a (three projects), then one for team-b
        am.post(*[alert("MemhealthEmbeddingDown", "critical", team="team-a", machine="alice",
                        project=p, component="embedding") for p in ("app", "lib", "web")])

        def decided(team_route: str, n: int):
            got = [r for r in sink(root) if r.get("route") == team_route
                   and r.get("alertname") == "MemhealthEmbeddingDown"]
            return got if len(got) >= n else None

        first = wait_for("team-a's three pages decided", lambda: decided("team-a-page", 3), timeout=20)
        assert sorted(r["decision"] for r in first) == ["folded", "paged", "paged"]
        am.post(alert("MemhealthEmbeddingDown", "critical", team="team-b", machine="bob",
                      project="app", component="embedding"))
        (other,) = wait_for("team-b's page decided", lambda: decided("team-b-page", 1), timeout=20)
        assert other["decision"] == "paged"  # team-a's spent budget is not team-b's
        meta = [r for r in sink(root) if r.get("alertname") == "MemhealthAlertBudgetExhausted"]
        assert [r["route"] for r in meta] == ["team-a-page"]
        _, metrics, _ = app.get("/metrics")
        text = metrics.decode()
        assert 'memhealth_alert_budget_remaining{route="team-a-page"} 0.0' in text
        assert 'memhealth_alert_budget_remaining{route="team-b-page"} 1.0' in text
        assert 'route="unknown"' not in text
        # each team's pager got its own pages (and team-a its budget's meta-alert), no other's

        def paged(path: str) -> list[tuple[str, str]]:
            return [(d["route"], d.get("alertname", "")) for p, body in outside.received
                    if p == path for d in body.get("decisions", [])]
        wait_for("both pagers called", lambda: paged("/pager-a") and paged("/pager-b"), timeout=20)
        assert {r for r, _ in paged("/pager-a")} == {"team-a-page"}
        assert sorted(n for _, n in paged("/pager-a")) == [
            "MemhealthAlertBudgetExhausted", "MemhealthEmbeddingDown", "MemhealthEmbeddingDown"]
        assert paged("/pager-b") == [("team-b-page", "MemhealthEmbeddingDown")]
        # a delivery that does not come from this Alertmanager (no token, or another): 401
        # before the body is read, nothing in the sink, counted
        stored = len(sink(root))
        body = json.dumps({"receiver": "team-b-page", "status": "firing", "alerts": [
            alert("MemhealthEmbeddingDown", "critical", team="team-b") | {"status": "firing"}]}).encode()
        for header in ({}, {"Authorization": "Bearer " + "f" * 40}):
            req = urllib.request.Request(app.url.rstrip("/") + "/alerts", data=body, headers=header)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(req, timeout=10, context=app.web.context)
            assert refused.value.code == 401
        assert len(sink(root)) == stored
        _, metrics, _ = app.get("/metrics")
        assert 'memhealth_serve_refused_total{reason="no_credentials"} 1.0' in metrics.decode()
        assert 'memhealth_serve_refused_total{reason="bad_credentials"} 1.0' in metrics.decode()
    finally:
        if am is not None:
            am.stop()
        outside.stop()
        app.kill()


def test_an_alert_crosses_every_authenticated_edge_from_prometheus_to_the_budget(tmp_path):
    """The central Prometheus (behind its web config) sends the always-firing Watchdog to a
    real Alertmanager behind its own web config (TLS, bcrypt basic auth: the shipped
    `alerting` section, its password file beside the config), which delivers it to the budget
    serve over TLS with the token: the budget records it on the watchdog route."""
    secrets = Secrets(tmp_path / "team")
    root, app = budget_serve(tmp_path, secrets)
    outside = Outside()
    am = central = None
    try:
        (tmp_path / "am").mkdir()
        secrets.lay(tmp_path / "am", ("ca.pem", "alert-budget.token"))
        am = Alertmanager(tmp_path / "am", central_am_config(app, outside),
                          f"--web.config.file={secrets.alertmanager_web}",
                          web=Web(secrets.ca.cert_path, user="prometheus",
                                  password=secrets.values["prometheus.password"]))
        with pytest.raises(urllib.error.HTTPError) as refused:  # no password: 401
            urllib.request.urlopen(am.url + "/api/v2/status", timeout=5, context=am.web.context)
        assert refused.value.code == 401
        with open(CENTRAL_CONFIG, encoding="utf-8") as fh:
            shipped = yaml.safe_load(fh)
        config = central_config()
        (alerting,) = shipped["alerting"]["alertmanagers"]
        assert alerting["scheme"] == "https" and alerting["tls_config"] == {"ca_file": "secrets/ca.pem"}
        assert alerting["basic_auth"] == {"username": "prometheus",
                                          "password_file": "secrets/prometheus.password"}
        alerting["static_configs"] = [{"targets": [f"127.0.0.1:{am.port}"]}]
        config["alerting"] = {"alertmanagers": [alerting]}
        secrets.lay(tmp_path / "central", ("ca.pem", "prometheus.password"))
        # the first notification can go out before Alertmanager is discovered (dropped): resend
        # every second rather than after the default minute
        central = start_central(tmp_path / "central", secrets, config, "--rules.alert.resend-delay=1s")
        got = wait_for("the Watchdog decided by the budget", lambda: [
            r for r in sink(root) if r.get("alertname") == "MemhealthWatchdog"], timeout=60)
        assert got[0]["route"] == "watchdog"
        assert central.metric("prometheus_notifications_errors_total") == 0  # 401s would count here
        assert central.metric("prometheus_notifications_sent_total") > 0
        assert "MemhealthWatchdog" in outside.alertnames("memhealth-watchdog")  # and outside, as routed
    finally:
        for proc in (central, am):
            if proc is not None:
                proc.stop()
        outside.stop()
        app.kill()


# -- the compose profiles (Docker cannot run here: validated, not run) -----------------------------

def _team_compose() -> dict:
    with open(os.path.join(REPO, "compose", "team", "docker-compose.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_team_compose_profiles_mount_existing_paths_and_bind_loopback_by_default():
    compose = _team_compose()
    services = compose["services"]
    assert {n for n, s in services.items() if s["profiles"] == ["central"]} == {
        "prometheus", "alertmanager", "alert-budget-init", "alert-budget", "otel-collector",
        "tempo", "grafana"}
    assert services["agent"]["profiles"] == ["agent"]
    base = os.path.join(REPO, "compose", "team")
    mounted = set()
    for name, svc in services.items():
        for port in svc.get("ports", []):
            # the central side's team-facing ports default to loopback until told otherwise
            assert port.startswith(("127.0.0.1:", "${MEMHEALTH_CENTRAL_BIND:-127.0.0.1}:")), (name, port)
        for volume in svc.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith("."):
                assert source in compose["volumes"], f"{name}: volume {source} undeclared"
                continue
            if source.startswith("./secrets/"):  # written by `generate --team`, never committed
                assert source[len("./secrets/"):] in SECRET_FILES, (name, source)
                assert volume.endswith(":ro"), (name, volume)
                continue
            path = os.path.normpath(os.path.join(base, source))
            assert os.path.exists(path), f"{name} mounts {source}, missing in the repo"
            mounted.add(os.path.relpath(path, REPO))
            if source == "./secrets":
                assert volume.endswith(":ro"), (name, volume)
        for env_file in svc.get("env_file", []):
            if env_file.startswith("secrets/"):
                assert env_file[len("secrets/"):] in SECRET_FILES, (name, env_file)
            else:
                assert os.path.exists(os.path.join(base, env_file))
        if "build" in svc:
            assert os.path.exists(os.path.join(base, svc["build"]["context"], svc["build"]["dockerfile"]))
    # one source each: the repo's rules and dashboards, the single-machine Tempo, the team's
    # own Collector and Grafana data sources (TLS and auth), the secrets directory
    assert {"alerts", "dashboards", "compose/tempo.yaml", "compose/team/otel-collector.yaml",
            "compose/team/grafana-datasources.yaml", "compose/team/secrets",
            "compose/team/alertmanager.yml", "compose/team/prometheus-central.yml",
            "compose/team/prometheus-agent.yml", "compose/team/central.rules.yaml"} <= mounted
    # every service a developer's machine reaches is behind TLS and authentication
    assert "--web.config.file=/etc/prometheus/secrets/prometheus-web.yml" in services["prometheus"]["command"]
    assert "--web.config.file=/etc/alertmanager/secrets/alertmanager-web.yml" in \
        services["alertmanager"]["command"]
    budget = services["alert-budget"]["command"]
    for flag, value in (("--tls-cert", "central.pem"), ("--tls-key", "central.key"),
                        ("--token-file", "alert-budget.token")):
        assert budget[budget.index(flag) + 1] == f"/etc/memhealth/secrets/{value}"
    grafana = services["grafana"]["environment"]
    assert grafana["GF_AUTH_ANONYMOUS_ENABLED"] == "false" and grafana["GF_SERVER_PROTOCOL"] == "https"
    assert services["grafana"]["env_file"] == ["secrets/grafana.env"]  # the admin password
    central = services["prometheus"]["command"]
    assert "--web.enable-remote-write-receiver" in central
    assert "--enable-feature=exemplar-storage,otlp-write-receiver" in central
    assert any(a.startswith("--storage.tsdb.retention.time=") for a in central)
    assert "--enable-feature=agent,expand-external-labels" in services["agent"]["command"]
    assert services["agent"]["network_mode"] == "host"  # serve --all listens on the host's loopback
    assert services["alert-budget"]["depends_on"]["alert-budget-init"]["condition"] == \
        "service_completed_successfully"
    assert {"--no-probes", "--no-export"} <= set(services["alert-budget"]["command"])
    with open(os.path.join(REPO, "compose", "team", "docker-compose.yml"), encoding="utf-8") as fh:
        assert "Compose v2" in fh.read()


@pytest.mark.parametrize("name", ["prometheus-central.yml", "prometheus-agent.yml"])
def test_team_prometheus_configs_pass_promtool(tmp_path, name):
    """Both configs read their credentials from secrets/ beside them, and pass with what
    `memhealth generate --team` writes there; promtool refuses the central one without them
    (it checks a scrape's credentials file; the agent's remote_write files it does not, and
    the real agents above read them)."""
    promtool = require_binary("promtool")
    with open(os.path.join(REPO, "compose", "team", name), encoding="utf-8") as fh:
        text = fh.read()
    path = tmp_path / name
    path.write_text(text.replace("/etc/memhealth/alerts/", os.path.join(REPO, "alerts") + "/")
                    .replace("/etc/memhealth/central/", os.path.join(REPO, "compose", "team") + "/"))
    check = [promtool, "check", "config", str(path)]
    if "central" in name:
        missing = subprocess.run(check, capture_output=True, text=True, timeout=30)
        assert missing.returncode == 1 and "secrets/alert-budget.token" in missing.stdout + missing.stderr
    made = run_cli("generate", "--out", str(tmp_path / "out"), "--secrets-dir", str(tmp_path / "secrets"))
    assert made.returncode == 0, made.stderr
    proc = subprocess.run(check, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = yaml.safe_load(text)
    jobs = [j["job_name"] for j in config.get("scrape_configs", [])]
    # the agent's job is what MemhealthTargetDown selects; the budget's job is not
    assert jobs == (["memhealth"] if "agent" in name else ["memhealth-alert-budget"])


def test_generate_takes_the_teams_and_refuses_a_bad_name(tmp_path):
    ok = run_cli("generate", "--out", str(tmp_path), "--team", "search", "--team", "infra_1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    routes = (tmp_path / "compose" / "team" / "alert-budget.env").read_text()
    assert "search-page,search-ticket,infra_1-page,infra_1-ticket" in routes
    config = yaml.safe_load((tmp_path / "compose" / "team" / "alertmanager.yml").read_text())
    assert {r["name"] for r in config["receivers"]} >= {"search-page", "infra_1-ticket"}
    assert "team-a-page" not in {r["name"] for r in config["receivers"]}
    # the committed files are the defaults': --check with other teams says they are stale
    stale = run_cli("generate", "--check", "--team", "search")
    assert stale.returncode == 1 and "compose/team/alertmanager.yml" in stale.stderr
    for bad in (["--team", "Team A"], ["--team", "a", "--team", "a"]):
        proc = run_cli("generate", "--out", str(tmp_path), *bad)
        assert proc.returncode == 2 and "team" in proc.stderr, proc.stderr


def test_parallel_deliveries_to_one_route_never_page_past_the_budget(tmp_path):
    """Alertmanager flushes groups in parallel: twelve deliveries at once to one route page
    exactly twice (the budget), however their threads interleave; three routes, three rounds."""
    import threading

    root = tmp_path / "central"
    root.mkdir()
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "xdg"))
    assert run_cli("init", "--project", str(root), "--no-templates", env=env).returncode == 0
    app = ServeProcess(root, "--no-probes", "--no-export",
                       env=dict(env, MEMHEALTH_ALERTS_ROUTES=",".join(_budget_routes())))
    try:
        for route in ("team-a-page", "team-b-page", "page"):
            barrier = threading.Barrier(12)
            statuses: list[int] = []

            def deliver(i: int, route=route, barrier=barrier, statuses=statuses) -> None:
                body = {"receiver": route, "status": "firing", "alerts": [
                    alert("MemhealthEmbeddingDown", "critical", project=f"p{i}")
                    | {"status": "firing", "fingerprint": f"{route}-{i}"}]}
                barrier.wait(10)
                statuses.append(app.post("/alerts", json.dumps(body).encode())[0])

            threads = [threading.Thread(target=deliver, args=(i,)) for i in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            assert statuses == [200] * 12
            decisions = [r["decision"] for r in sink(root)
                         if r.get("alertname") == "MemhealthEmbeddingDown" and r["route"] == route]
            assert sorted(decisions) == ["folded"] * 10 + ["paged"] * 2, route
    finally:
        app.kill()


def test_the_alert_budget_down_pages_outside_the_budget(tmp_path):
    """Every central receiver is the alert budget: its own death must fire (promtool runs the
    shipped central rule, over a down target and over a missing job) and be routed to the
    serve-down receiver outside it, whatever team label it carries (amtool)."""
    promtool, amtool = require_binary("promtool"), require_binary("amtool")
    rules = os.path.join(REPO, "compose", "team", "central.rules.yaml")
    (tmp_path / "central.rules.yaml").write_text(open(rules, encoding="utf-8").read())
    up = 'up{job="memhealth-alert-budget", instance="alert-budget:9464"}'
    labels = {"alertname": "MemhealthAlertBudgetDown", "severity": "critical",
              "component": "alert-budget"}
    tests = {"rule_files": ["central.rules.yaml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": [{"series": up, "values": "1 1 0 0 0 0 1 1"}],
         "alert_rule_test": [
             {"eval_time": "1m", "alertname": "MemhealthAlertBudgetDown", "exp_alerts": []},
             {"eval_time": "4m", "alertname": "MemhealthAlertBudgetDown", "exp_alerts": [{
                 "exp_labels": {**labels, "job": "memhealth-alert-budget",
                                "instance": "alert-budget:9464"},
                 "exp_annotations": _annotations(rules)}]},
             {"eval_time": "7m", "alertname": "MemhealthAlertBudgetDown", "exp_alerts": []}]},
        # a central Prometheus that does not scrape the budget at all (a config lost its job)
        {"interval": "1m", "input_series": [{"series": 'up{job="memhealth"}', "values": "1x5"}],
         "alert_rule_test": [
             {"eval_time": "3m", "alertname": "MemhealthAlertBudgetDown", "exp_alerts": [{
                 "exp_labels": {**labels, "job": "memhealth-alert-budget"},
                 "exp_annotations": _annotations(rules)}]}]},
    ]}
    (tmp_path / "central.test.yaml").write_text(yaml.safe_dump(tests))
    proc = subprocess.run([promtool, "test", "rules", "central.test.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = os.path.join(REPO, "compose", "team", "alertmanager.yml")
    for extra in ([], ["team=team-a"]):
        routed = subprocess.run([amtool, "config", "routes", "test", f"--config.file={config}",
                                 "alertname=MemhealthAlertBudgetDown", "severity=critical", *extra],
                                capture_output=True, text=True, timeout=30)
        assert routed.stdout.split() == ["budget-down"], routed.stdout + routed.stderr
    receivers = {r["name"]: r for r in yaml.safe_load(open(config, encoding="utf-8"))["receivers"]}
    (hook,) = receivers["budget-down"]["webhook_configs"]
    assert "alert-budget" not in hook["url"]  # outside the budget, the serve-down check


def _annotations(path: str, alertname: str = "MemhealthAlertBudgetDown") -> dict:
    (group,) = yaml.safe_load(open(path, encoding="utf-8"))["groups"]
    (rule,) = [r for r in group["rules"] if r["alert"] == alertname]
    return rule["annotations"]


def test_two_instance_ids_under_one_machine_label_alert_centrally(tmp_path):
    """promtool runs the shipped central rule: two build_info series with one (team, machine)
    and two instance ids fire after 5 minutes; one id per machine, or the same id on two
    scrapes of one serve (two projects), never do."""
    promtool, amtool = require_binary("promtool"), require_binary("amtool")
    rules = os.path.join(REPO, "compose", "team", "central.rules.yaml")
    shutil.copy(rules, tmp_path / "central.rules.yaml")
    info = ('memhealth_build_info{{job="memhealth", instance="127.0.0.1:9464", team="team-b", '
            'machine="{m}", project="{p}", version="0.1.0", python="3.11.7", sqlite="3.51.1", '
            'sqlite_vec="v0.1.9", instance_id="{i}"}}')
    name = "MemhealthMachineLabelDuplicated"
    expected = {"exp_labels": {"alertname": name, "severity": "warning", "component": "topology",
                               "team": "team-b", "machine": "bob"},
                "exp_annotations": {
                    "summary": "two machines report the same machine label: their series merge",
                    "description": "More than one memhealth instance id is reported under one team "
                                   "and machine label: two agents were started with the same "
                                   "MEMHEALTH_MACHINE, so rules and dashboards add two developers' "
                                   "projects into one machine's, and one machine's alerts can be "
                                   "muted or resolved by the other's series.",
                    "runbook_url": "http://127.0.0.1:9464/runbook#memhealthmachinelabelduplicated"}}
    tests = {"rule_files": ["central.rules.yaml"], "evaluation_interval": "1m", "tests": [
        # bob's two projects on bob's serve (one id) and carol started as "bob" (another id)
        {"interval": "1m", "input_series": [
            {"series": info.format(m="bob", p="app", i="id-bob"), "values": "1x10"},
            {"series": info.format(m="bob", p="lib", i="id-bob"), "values": "1x10"},
            {"series": info.format(m="bob", p="app", i="id-carol"), "values": "_ _ 1x8"}],
         "alert_rule_test": [
             {"eval_time": "5m", "alertname": name, "exp_alerts": []},  # pending, not yet
             {"eval_time": "8m", "alertname": name, "exp_alerts": [expected]}]},
        # two machines, each its own label: silent
        {"interval": "1m", "input_series": [
            {"series": info.format(m="bob", p="app", i="id-bob"), "values": "1x10"},
            {"series": info.format(m="carol", p="app", i="id-carol"), "values": "1x10"}],
         "alert_rule_test": [{"eval_time": "10m", "alertname": name, "exp_alerts": []}]},
    ]}
    (tmp_path / "central.test.yaml").write_text(yaml.safe_dump(tests))
    proc = subprocess.run([promtool, "test", "rules", "central.test.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    routed = subprocess.run([amtool, "config", "routes", "test", f"--config.file={TEAM_AM}",
                             f"alertname={name}", "severity=warning", "team=team-b", "machine=bob"],
                            capture_output=True, text=True, timeout=30)
    assert routed.stdout.split() == ["team-b-ticket"], routed.stdout + routed.stderr
