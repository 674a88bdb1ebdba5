"""The shipped artifacts (dashboards/, alerts/, compose/) are generated, committed, fresh and
valid: promtool and amtool accept them, every expression names a catalog metric or a rule
recorded beside it, every alert is actionable and routed where its severity says."""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from telemetry import generate
from telemetry.catalog import CATALOG, HOOK_DURATION_BUCKETS, HOOK_LATENCY_BUDGETS_S, HOOKS
from tests.conftest import REPO, require_binary, run_cli

RULES = os.path.join(REPO, "alerts", "memhealth.rules.yaml")
AM_CONFIGS = [os.path.join(REPO, "alerts", "alertmanager.yml"),
              os.path.join(REPO, "compose", "alertmanager.yml")]
# Grafana's variables, replaced the way the e2e test does before PromQL sees them
GRAFANA_VARS = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "15s",
                "$instance": ".*"}
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "bool", "offset", "inf", "nan",
}


def _load(path: str):
    with open(os.path.join(REPO, path), encoding="utf-8") as fh:
        return yaml.safe_load(fh) if path.endswith((".yaml", ".yml")) else json.load(fh)


def _rules() -> list[dict]:
    return [r for g in _load("alerts/memhealth.rules.yaml")["groups"] for r in g["rules"]]


def _alert_rules() -> list[dict]:
    return [r for r in _rules() if "alert" in r]


def _dashboards() -> dict[str, dict]:
    out = {}
    for name in sorted(os.listdir(os.path.join(REPO, "dashboards"))):
        if name.endswith(".json"):
            out[name] = _load(f"dashboards/{name}")
    return out


def _panel_exprs() -> list[tuple[str, str]]:
    """(where, PromQL with Grafana variables substituted) for every dashboard target."""
    out = []
    for name, dash in _dashboards().items():
        for panel in dash["panels"]:
            for target in panel["targets"]:
                expr = target["expr"]
                for var, value in GRAFANA_VARS.items():
                    expr = expr.replace(var, value)
                out.append((f"{name} panel {panel['id']} {target['refId']} ({panel['title']})", expr))
    return out


def metric_names(expr: str) -> set[str]:
    """Metric (or recorded rule) names an expression selects: strings, matchers, ranges and
    grouping label lists are removed, then identifiers that are not functions or keywords."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"'(?:[^'\\]|\\.)*'", "''", s)
    s = re.sub(r"\{[^}]*\}", "", s)
    s = re.sub(r"\[[^\]]*\]", "", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:$])([a-zA-Z_:][\w:]*)", s):
        if s[m.end():].lstrip().startswith("(") or m.group(1).lower() in PROMQL_WORDS:
            continue
        names.add(m.group(1))
    return names


def test_metric_name_extraction_sees_through_promql_syntax():
    expr = ('sum by (hook, le) (rate(foo_total{a="b",c=~"x|y"}[$__rate_interval])) / on (instance) '
            'group_left () bar:baz:rate5m > 1e9 and time() - qux offset 5m or vector(1) '
            'unless label_replace(zed, "hook", "p", "hook", "s")')
    assert metric_names(expr) == {"foo_total", "bar:baz:rate5m", "qux", "zed"}


def _known_series() -> set[str]:
    known = set()
    for metric in CATALOG.values():
        known.add(metric.name)
        if metric.type == "histogram":
            known |= {metric.name + s for s in ("_bucket", "_count", "_sum")}
    return known


# -- generated, committed, fresh ---------------------------------------------------------------

def test_committed_artifacts_are_byte_identical_to_a_fresh_generate(tmp_path):
    proc = run_cli("generate", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    generated = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                       for d, _, files in os.walk(tmp_path) for f in files)
    assert generated == sorted(generate.artifacts())
    stale = []
    for rel in generated:
        with open(tmp_path / rel, "rb") as fh:
            fresh = fh.read()
        try:
            with open(os.path.join(REPO, rel), "rb") as fh:
                committed = fh.read()
        except FileNotFoundError:
            committed = None
        if fresh != committed:
            stale.append(rel)
    assert not stale, f"stale artifacts (run `memhealth generate` and commit): {stale}"
    check = run_cli("generate", "--check", "--out", REPO)
    assert check.returncode == 0, check.stderr


def test_generate_check_lists_changed_missing_and_unexpected_files(tmp_path):
    assert run_cli("generate", "--out", str(tmp_path)).returncode == 0
    assert run_cli("generate", "--check", "--out", str(tmp_path)).returncode == 0
    (tmp_path / "alerts" / "runbook.md").write_text("# edited by hand\n")
    (tmp_path / "dashboards" / "latency.json").unlink()
    (tmp_path / "dashboards" / "old.json").write_text("{}")
    proc = run_cli("generate", "--check", "--out", str(tmp_path))
    assert proc.returncode == 1
    assert "alerts/runbook.md: differs" in proc.stderr
    assert "dashboards/latency.json: missing" in proc.stderr
    assert "dashboards/old.json: not produced by the generator" in proc.stderr
    # writing repairs the changed and missing files and leaves the others untouched
    again = run_cli("generate", "--out", str(tmp_path))
    assert "wrote alerts/runbook.md" in again.stdout and "wrote dashboards/latency.json" in again.stdout
    assert "wrote dashboards/heartbeat.json" not in again.stdout


def test_generate_command_has_help_text():
    proc = run_cli("generate", "--help")
    assert proc.returncode == 0 and "--check" in proc.stdout and "catalog" in proc.stdout


# -- rules ---------------------------------------------------------------------------------------

def test_promtool_check_rules_passes():
    promtool = require_binary("promtool")
    proc = subprocess.run([promtool, "check", "rules", RULES], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_unit_tests_pass_with_must_fire_and_must_not_fire_cases():
    promtool = require_binary("promtool")
    test_dir = os.path.join(REPO, "alerts", "tests")
    files = sorted(f for f in os.listdir(test_dir) if f.endswith(".yaml"))
    assert {"slo.test.yaml", "embedding.test.yaml", "heartbeat.test.yaml", "misc.test.yaml"} <= set(files)
    for name in files:
        tests = _load(f"alerts/tests/{name}")["tests"]
        checks = [c for t in tests for c in t["alert_rule_test"]]
        assert any(c["exp_alerts"] for c in checks), f"{name} has no must-fire case"
        assert any(not c["exp_alerts"] for c in checks), f"{name} has no must-not-fire case"
        for c in checks:
            for exp in c["exp_alerts"]:
                assert exp["exp_annotations"]["runbook_url"].endswith(
                    "#" + c["alertname"].lower())
                assert "severity" in exp["exp_labels"]

    def run(name):  # one process per file: two cores, and the slowest file bounds the wait
        return name, subprocess.run([promtool, "test", "rules", name], cwd=test_dir,
                                    capture_output=True, text=True, timeout=60)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, proc in pool.map(run, files):
            assert proc.returncode == 0, f"{name}:\n{proc.stdout}{proc.stderr}"


def test_promtool_tests_cover_the_promised_scenarios():
    names = {t["name"] for f in os.listdir(os.path.join(REPO, "alerts", "tests"))
             for t in _load(f"alerts/tests/{f}")["tests"]}
    text = " ".join(names)
    for phrase in ("5 % error burst pages within 20 minutes", "idle", "cold start",
                   "never a page", "prompt hook silent while turns end",
                   "idle after a session never fires"):
        assert phrase in text, phrase
    slo = _load("alerts/tests/slo.test.yaml")["tests"]
    burst = next(t for t in slo if t["name"].startswith("5 % error burst"))
    times = {c["eval_time"]: [e["exp_labels"]["severity"] for e in c["exp_alerts"]]
             for c in burst["alert_rule_test"]}
    assert "critical" not in times["165m"] and "critical" in times["170m"]  # burst began at 150m


def test_every_rule_expression_names_only_catalog_metrics_or_recorded_rules():
    known = _known_series() | generate.recorded_names()
    for rule in _rules():
        names = metric_names(rule["expr"])
        assert names <= known, f"{rule.get('record') or rule.get('alert')}: unknown {names - known}"
        if rule["expr"].strip() != "vector(1)":
            assert names, rule["expr"]


def test_recording_rules_follow_level_metric_operations_and_divide_sums():
    for rule in _rules():
        if "record" not in rule:
            continue
        assert re.fullmatch(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]
        level = rule["record"].split(":")[0]
        expr = rule["expr"]
        # never average a ratio: ratios divide two recorded sums, and nothing uses avg
        assert "avg" not in expr
        if ":ratio_" in rule["record"]:
            assert re.fullmatch(r"\S+\n/ \(\S+ > 0\)", expr), expr  # 0/0 on idle: no sample
        elif "sum by" in expr:
            grouping = re.findall(r"sum by \(([^)]*)\)", expr)
            assert all("_".join(g.replace(" ", "").split(",")) == level for g in grouping), expr


def test_burn_tiers_follow_the_workbook():
    tiers = {(sev, long, short, burn) for sev, long, short, burn in generate.BURN_TIERS}
    assert tiers == {("critical", "1h", "5m", 14.4), ("critical", "6h", "30m", 6.0),
                     ("warning", "1d", "2h", 3.0), ("warning", "3d", "6h", 1.0)}
    for _, long, short, _ in generate.BURN_TIERS:
        assert generate.WINDOW_SECONDS[long] == 12 * generate.WINDOW_SECONDS[short]
    for hook, budget in HOOK_LATENCY_BUDGETS_S.items():
        assert hook in HOOKS and budget in HOOK_DURATION_BUCKETS
    burns = [r for r in _alert_rules() if "BudgetBurn" in r["alert"]]
    assert {(r["alert"], r["labels"]["severity"]) for r in burns} == {
        (f"MemhealthHook{kind}BudgetBurn", sev)
        for kind in ("Error", "Latency") for sev in ("critical", "warning")}
    for rule in burns:  # both windows of every tier, plus the low-traffic guard
        assert rule["expr"].count(" and ") == 4 and ">= 3" in rule["expr"]


def test_every_alert_is_actionable_named_and_has_a_runbook_section():
    with open(os.path.join(REPO, "alerts", "runbook.md"), encoding="utf-8") as fh:
        runbook = fh.read()
    anchors = {re.sub(r"[^a-z0-9 _-]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^## (.+)$", runbook, re.M)}
    rules = _alert_rules()
    names = {r["alert"] for r in rules}
    assert {"MemhealthWatchdog", "MemhealthEmbeddingDown", "MemhealthEmbeddingWedged",
            "MemhealthEmbeddingModelMissing", "MemhealthEmbeddingColdStart",
            "MemhealthHookHeartbeatMissing", "MemhealthIngestStale",
            "MemhealthExporterDown"} <= names
    for rule in rules:
        name = rule["alert"]
        assert re.fullmatch(r"Memhealth(?:[A-Z][a-z0-9]*)+", name), name
        assert rule["labels"]["severity"] in ("critical", "warning", "info", "none"), name
        ann = rule["annotations"]
        assert ann["summary"].strip() and ann["description"].strip(), name
        url = ann["runbook_url"]
        assert url == f"alerts/runbook.md#{name.lower()}", url
        assert url.split("#", 1)[1] in anchors, f"no runbook section for {name}"
        section = runbook.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
        for part in ("What it means", "How to check", "How to fix"):
            assert part in section, (name, part)
        assert "memhealth " in section or "ollama" in section or "amtool" in section, name
    assert set(anchors) == {n.lower() for n in names}  # no orphan sections
    cold = next(r for r in rules if r["alert"] == "MemhealthEmbeddingColdStart")
    assert cold["labels"]["severity"] == "info" and cold["labels"]["state"] == "cold"
    watchdog = next(r for r in rules if r["alert"] == "MemhealthWatchdog")
    assert watchdog["expr"] == "vector(1)"


# -- dashboards ----------------------------------------------------------------------------------

def test_dashboards_have_fixed_unique_uids_unique_panel_ids_and_a_datasource_variable():
    dashboards = _dashboards()
    assert set(dashboards) == {"heartbeat.json", "latency.json", "injection.json", "gate.json",
                               "alert-budget.json"}
    uids = [d["uid"] for d in dashboards.values()]
    assert len(set(uids)) == len(uids) and all(u.startswith("memhealth-") for u in uids)
    for name, dash in dashboards.items():
        assert dash["schemaVersion"] >= 39, name
        variables = {v["name"]: v for v in dash["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == "prometheus"
        ids = [p["id"] for p in dash["panels"]]
        assert len(set(ids)) == len(ids), name
        for panel in dash["panels"]:
            assert panel["datasource"]["uid"] == "${datasource}", (name, panel["title"])
            assert panel["targets"] and panel["description"], (name, panel["title"])
            refs = [t["refId"] for t in panel["targets"]]
            assert all(refs) and len(set(refs)) == len(refs), (name, panel["title"])
            grid = panel["gridPos"]
            assert grid["x"] + grid["w"] <= 24, (name, panel["title"])


def test_every_dashboard_expression_parses_and_names_only_known_series(tmp_path):
    promtool = require_binary("promtool")
    known = _known_series() | generate.recorded_names()
    exprs = _panel_exprs()
    assert len(exprs) > 30
    for where, expr in exprs:
        names = metric_names(expr)
        assert names and names <= known, f"{where}: {names - known or 'no metric'}"
    for dash in _dashboards().values():
        for var in dash["templating"]["list"]:
            if var["type"] == "query":
                inner = re.fullmatch(r"label_values\((\w+), *\w+\)", var["definition"])
                assert inner and inner.group(1) in known
    rules = {"groups": [{"name": "dashboard-expressions", "rules": [
        {"record": f"dashboard_check:expr:n{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]}]}
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dashboards_cover_the_promised_views():
    exprs = {name: " ".join(t["expr"] for p in d["panels"] for t in p["targets"])
             for name, d in _dashboards().items()}
    assert "memhealth_hook_last_success_timestamp_seconds" in exprs["heartbeat.json"]
    assert 'outcome="killed"' in exprs["heartbeat.json"]
    for hook in HOOKS:
        assert f'hook="{hook}"' in exprs["latency.json"]
    assert "memhealth_retrieval_duration_seconds_bucket" in exprs["latency.json"]
    funnel = next(p for p in _dashboards()["injection.json"]["panels"] if p["type"] == "bargauge")
    assert [t["legendFormat"] for t in funnel["targets"]][:2] == ["prompts", "not a machine turn"]
    gate = _dashboards()["gate.json"]["panels"]
    assert {p["type"] for p in gate} >= {"state-timeline"}
    assert "memhealth_embedding_state" in exprs["gate.json"]
    assert "memhealth_alert_budget_remaining" in exprs["alert-budget.json"]


def test_grafana_provisioning_points_at_the_mounted_dashboards():
    providers = _load("dashboards/provisioning/dashboards.yaml")
    assert providers["apiVersion"] == 1
    provider = providers["providers"][0]
    assert provider["type"] == "file"
    datasources = _load("dashboards/provisioning/datasources.yaml")["datasources"]
    assert {d["type"] for d in datasources} == {"prometheus", "tempo"}
    grafana = _load("compose/docker-compose.yml")["services"]["grafana"]
    targets = {v.split(":")[1] for v in grafana["volumes"]}
    assert provider["options"]["path"] in targets


# -- Alertmanager --------------------------------------------------------------------------------

@pytest.mark.parametrize("path", AM_CONFIGS, ids=["alerts", "compose"])
def test_amtool_check_config_passes(path):
    amtool = require_binary("amtool")
    proc = subprocess.run([amtool, "check-config", path], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


ROUTES = [
    ("page", {"alertname": "MemhealthEmbeddingDown", "severity": "critical", "instance": "p1"}),
    ("page", {"alertname": "MemhealthHookErrorBudgetBurn", "severity": "critical",
              "slo": "hook-success"}),
    ("ticket", {"alertname": "MemhealthHookErrorBudgetBurn", "severity": "warning",
                "slo": "hook-success"}),
    ("ticket", {"alertname": "MemhealthIngestStale", "severity": "warning"}),
    ("ticket", {"alertname": "SomethingUnlabelled"}),  # paging must be declared
    ("null", {"alertname": "MemhealthEmbeddingColdStart", "severity": "info", "state": "cold"}),
    ("watchdog", {"alertname": "MemhealthWatchdog", "severity": "none"}),
]


@pytest.mark.parametrize("receiver,labels", ROUTES, ids=[f"{r}-{lab['alertname']}" for r, lab in ROUTES])
def test_amtool_routes_each_severity_to_its_receiver(receiver, labels):
    amtool = require_binary("amtool")
    proc = subprocess.run(
        [amtool, "config", "routes", "test", f"--config.file={AM_CONFIGS[0]}",
         f"--verify.receivers={receiver}", *[f"{k}={v}" for k, v in labels.items()]],
        capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_generated_alert_routes_where_its_severity_says():
    amtool = require_binary("amtool")
    expected = {"critical": "page", "warning": "ticket", "info": "null", "none": "watchdog"}
    for rule in _alert_rules():
        labels = {"alertname": rule["alert"], **rule["labels"]}
        proc = subprocess.run(
            [amtool, "config", "routes", "test", f"--config.file={AM_CONFIGS[0]}",
             *[f"{k}={v}" for k, v in labels.items()]], capture_output=True, text=True, timeout=30)
        assert proc.stdout.strip() == expected[rule["labels"]["severity"]], (rule["alert"], proc.stdout)


def test_alertmanager_configs_send_to_serve_and_inhibit_as_designed():
    local, composed = (_load(os.path.relpath(p, REPO)) for p in AM_CONFIGS)
    urls = {c["url"] for r in local["receivers"] for c in r.get("webhook_configs", [])}
    assert urls == {"http://127.0.0.1:9464/alerts"}
    curls = {c["url"] for r in composed["receivers"] for c in r.get("webhook_configs", [])}
    assert curls == {"http://memhealth:9464/alerts"}
    # the two differ only in the webhook address
    assert json.dumps(local).replace("127.0.0.1", "memhealth") == json.dumps(composed)
    inhibit = {tuple(r["source_matchers"]): r for r in local["inhibit_rules"]}
    assert inhibit[('alertname="MemhealthEmbeddingColdStart"',)]["target_matchers"] == [
        'slo="hook-latency"']
    crit = inhibit[('severity="critical"',)]
    assert "alertname" not in crit["equal"] and "instance" in crit["equal"]


# -- compose -------------------------------------------------------------------------------------

def test_compose_file_parses_mounts_existing_paths_and_binds_loopback():
    compose = _load("compose/docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"memhealth", "prometheus", "alertmanager", "grafana",
                             "otel-collector", "tempo"}
    compose_dir = os.path.join(REPO, "compose")
    mounted = set()
    for name, svc in services.items():
        for port in svc.get("ports", []):
            assert port.startswith("127.0.0.1:"), (name, port)
        for volume in svc.get("volumes", []):
            if volume.startswith("${"):
                assert volume.startswith("${MEMHEALTH_PROJECT:?"), f"{name}: {volume} must say what to set"
                continue
            source = volume.split(":", 1)[0]
            path = os.path.normpath(os.path.join(compose_dir, source))
            assert os.path.exists(path), f"{name} mounts {source}, missing in the repo"
            mounted.add(os.path.relpath(path, REPO))
        if "build" in svc:
            context = os.path.join(compose_dir, svc["build"]["context"])
            assert os.path.exists(os.path.join(context, svc["build"]["dockerfile"]))
    assert {"dashboards", "alerts"} <= mounted  # mounted as they are, not copied
    for path in ("compose/otel-collector.yaml", "compose/tempo.yaml"):
        assert isinstance(_load(path), dict)


def test_compose_prometheus_config_passes_promtool_with_repo_paths(tmp_path):
    promtool = require_binary("promtool")
    with open(os.path.join(REPO, "compose", "prometheus.yml"), encoding="utf-8") as fh:
        text = fh.read()
    assert "/etc/memhealth/alerts/memhealth.rules.yaml" in text
    path = tmp_path / "prometheus.yml"
    path.write_text(text.replace("/etc/memhealth/alerts/", os.path.join(REPO, "alerts") + "/"))
    proc = subprocess.run([promtool, "check", "config", str(path)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 57 rules found" in proc.stdout or "rules found" in proc.stdout
