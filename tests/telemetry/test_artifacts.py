"""The shipped artifacts (dashboards/, alerts/, compose/) are generated or hand-written,
committed, fresh and valid: promtool and amtool accept them, every expression names a catalog
metric or a rule recorded beside it, every alert is actionable, links to a runbook section that
exists, and is routed where its severity says."""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
import yaml

from memhealth.config import defaults
from probes.gate import CHECKS
from telemetry import artifacts as generate
from telemetry import runbook
from telemetry.artifacts.alertmanager import SERVE_DOWN_URL, WATCHDOG_URL
from telemetry.artifacts.promql import TOPOLOGY_LABELS
from telemetry.catalog import CATALOG, HOOK_DURATION_BUCKETS, HOOK_LATENCY_BUDGETS_S, HOOKS
from telemetry.slo import (
    BURN_TIERS,
    GATE_CHECK_LIST,
    GATE_CHECKS,
    INGEST_MAX_AGE_DAYS,
    SCRAPE_JOB,
    WINDOW_SECONDS,
)
from tests.conftest import REPO, require_binary, run_cli

RULES = os.path.join(REPO, "alerts", "memhealth.rules.yaml")
AM_CONFIGS = [os.path.join(REPO, "alerts", "alertmanager.yml"),
              os.path.join(REPO, "compose", "alertmanager.yml")]
# Grafana's variables, replaced the way the e2e test does before PromQL sees them
GRAFANA_VARS = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "15s",
                "$instance": ".*", "$project": ".*"}
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right",
    "and", "or", "unless", "bool", "offset", "inf", "nan",
}


def _load(path: str):
    with open(os.path.join(REPO, path), encoding="utf-8") as fh:
        return yaml.safe_load(fh) if path.endswith((".yaml", ".yml")) else json.load(fh)


def _rules() -> list[dict]:
    """Every rule shipped: the rules file, and the team topology's central-only file."""
    return [r for path in ("alerts/memhealth.rules.yaml", "compose/team/central.rules.yaml")
            for g in _load(path)["groups"] for r in g["rules"]]


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
    from memhealth.reference import reference_docs

    generated = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                       for d, _, files in os.walk(tmp_path) for f in files)
    assert generated == sorted({**generate.artifacts(), **reference_docs()})
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
    (tmp_path / "alerts" / "memhealth.rules.yaml").write_text("# edited by hand\n")
    (tmp_path / "dashboards" / "latency.json").unlink()
    (tmp_path / "dashboards" / "old.json").write_text("{}")
    (tmp_path / "alerts" / "tests" / "old.test.yaml").write_text("tests: []\n")
    # hand-written files beside the generated ones are not the generator's business
    (tmp_path / "alerts" / "runbook.md").write_text("# written by a person\n")
    (tmp_path / "dashboards" / "provisioning").mkdir()
    (tmp_path / "dashboards" / "provisioning" / "dashboards.yaml").write_text("apiVersion: 1\n")
    proc = run_cli("generate", "--check", "--out", str(tmp_path))
    assert proc.returncode == 1
    stale = sorted(line for line in proc.stderr.splitlines() if line.startswith("stale: "))
    assert stale == ["stale: alerts/memhealth.rules.yaml: differs from the generator's output",
                     "stale: alerts/tests/old.test.yaml: not produced by the generator",
                     "stale: dashboards/latency.json: missing",
                     "stale: dashboards/old.json: not produced by the generator"]
    # writing repairs the changed and missing files and leaves the others untouched
    again = run_cli("generate", "--out", str(tmp_path))
    assert "wrote alerts/memhealth.rules.yaml" in again.stdout
    assert "wrote dashboards/latency.json" in again.stdout
    assert "wrote dashboards/heartbeat.json" not in again.stdout
    assert (tmp_path / "alerts" / "runbook.md").read_text() == "# written by a person\n"


def test_hand_written_artifacts_are_committed_and_not_generated():
    generated = set(generate.artifacts())
    for rel in ("alerts/runbook.md", "dashboards/provisioning/dashboards.yaml",
                "dashboards/provisioning/datasources.yaml", "compose/docker-compose.yml",
                "compose/prometheus.yml", "compose/otel-collector.yaml", "compose/tempo.yaml",
                "compose/Dockerfile", "compose/team/docker-compose.yml",
                "compose/team/prometheus-agent.yml", "compose/team/prometheus-central.yml"):
        assert rel not in generated, rel
        with open(os.path.join(REPO, rel), encoding="utf-8") as fh:
            assert "Do not edit" not in fh.read(), f"{rel} is hand-written: no generated header"


def test_runbook_and_receiver_urls_are_set_at_generate_time(tmp_path):
    base = "https://git.example.com/team/memhealth/-/blob/main/alerts/runbook.md"
    ping = "https://hc.example.com/ping/abc/memhealth-watchdog"
    down = "https://hc.example.com/ping/abc/memhealth-serve-down/fail"
    flags = ["--runbook-url", base, "--watchdog-url", ping, "--serve-down-url", down]
    assert run_cli("generate", "--out", str(tmp_path), *flags).returncode == 0
    rules = yaml.safe_load((tmp_path / "alerts" / "memhealth.rules.yaml").read_text())
    urls = [r["annotations"]["runbook_url"] for g in rules["groups"] for r in g["rules"]
            if "alert" in r]
    assert urls and all(u.startswith(base + "#") for u in urls)
    am = yaml.safe_load((tmp_path / "alerts" / "alertmanager.yml").read_text())
    hooks = {r["name"]: [c["url"] for c in r.get("webhook_configs", [])] for r in am["receivers"]}
    assert hooks["deadman"] == [ping] and hooks["serve-down"] == [down]
    assert run_cli("generate", "--check", "--out", str(tmp_path), *flags).returncode == 0
    # the defaults differ: --check without the flags reports the files
    assert run_cli("generate", "--check", "--out", str(tmp_path)).returncode == 1
    # a relative link is not clickable in Alertmanager or Grafana: a usage error
    bad = run_cli("generate", "--out", str(tmp_path), "--runbook-url", "alerts/runbook.md")
    assert bad.returncode == 2 and "runbook_url must be an absolute http(s) URL" in bad.stderr


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
    assert {"slo.test.yaml", "embedding.test.yaml", "heartbeat.test.yaml", "misc.test.yaml",
            "gate.test.yaml"} <= set(files)
    for name in files:
        tests = _load(f"alerts/tests/{name}")["tests"]
        checks = [c for t in tests for c in t["alert_rule_test"]]
        assert any(c["exp_alerts"] for c in checks), f"{name} has no must-fire case"
        assert any(not c["exp_alerts"] for c in checks), f"{name} has no must-not-fire case"
        for c in checks:
            for exp in c["exp_alerts"]:
                url = exp["exp_annotations"]["runbook_url"]
                assert url.startswith(generate.RUNBOOK_URL + "#"), url
                assert "severity" in exp["exp_labels"]

    def run(name):  # one process per file: two cores, and the slowest file bounds the wait
        return name, subprocess.run([promtool, "test", "rules", name], cwd=test_dir,
                                    capture_output=True, text=True, timeout=60)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, proc in pool.map(run, files):
            assert proc.returncode == 0, f"{name}:\n{proc.stdout}{proc.stderr}"


def test_every_gate_check_and_the_target_down_alert_have_must_fire_and_must_not_fire_cases():
    cases = {}
    for name in ("gate.test.yaml", "misc.test.yaml"):
        for test in _load(f"alerts/tests/{name}")["tests"]:
            for c in test["alert_rule_test"]:
                for exp in c["exp_alerts"] or [{"exp_labels": {}}]:
                    key = (c["alertname"], exp["exp_labels"].get("check"))
                    cases.setdefault(key, set()).add(bool(c["exp_alerts"]))
    for check in GATE_CHECKS:
        fired = cases.get(("MemhealthGateCheckRed", check), set())
        assert True in fired, f"no must-fire case for {check}"
    gate_tests = _load("alerts/tests/gate.test.yaml")["tests"]
    assert len(gate_tests) == len(GATE_CHECKS)
    for test in gate_tests:  # each check's case also says when it must stay silent
        assert any(not c["exp_alerts"] for c in test["alert_rule_test"]), test["name"]
    assert cases[("MemhealthTargetDown", None)] == {True, False}


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
    # plus `up`, Prometheus' own scrape health, which the target-down alert reads
    known = _known_series() | generate.recorded_names() | {"up"}
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
            # the level names the grouping labels, less the team topology's (team, machine),
            # which every rule keeps and no name spells (kubernetes-mixin's `cluster` likewise)
            for g in grouping:
                labels = g.replace(" ", "").split(",")
                assert labels[:len(TOPOLOGY_LABELS)] == list(TOPOLOGY_LABELS), expr
                assert "_".join(labels[len(TOPOLOGY_LABELS):]) == level, expr


def test_burn_tiers_follow_the_workbook():
    tiers = {(sev, long, short, burn) for sev, long, short, burn in BURN_TIERS}
    assert tiers == {("critical", "1h", "5m", 14.4), ("critical", "6h", "30m", 6.0),
                     ("warning", "1d", "2h", 3.0), ("warning", "3d", "6h", 1.0)}
    for _, long, short, _ in BURN_TIERS:
        assert WINDOW_SECONDS[long] == 12 * WINDOW_SECONDS[short]
    for hook, budget in HOOK_LATENCY_BUDGETS_S.items():
        assert hook in HOOKS and budget in HOOK_DURATION_BUCKETS
    burns = [r for r in _alert_rules() if "BudgetBurn" in r["alert"]]
    assert {(r["alert"], r["labels"]["severity"]) for r in burns} == {
        (f"MemhealthHook{kind}BudgetBurn", sev)
        for kind in ("Error", "Latency") for sev in ("critical", "warning")}
    for rule in burns:  # both windows of every tier, plus the low-traffic guard
        assert rule["expr"].count(" and ") == 4 and ">= 3" in rule["expr"]


github_anchor = runbook.anchor


def test_github_anchor_matches_how_the_forges_slug_headings():
    assert github_anchor("MemhealthGateCheckRed") == "memhealthgatecheckred"
    assert github_anchor("Gate check ingest_freshness") == "gate-check-ingest_freshness"
    assert github_anchor("What's new? (v2)") == "whats-new-v2"


def _runbook() -> tuple[str, dict[str, str]]:
    """The runbook text and {anchor: section text} for every ## and ### heading."""
    with open(os.path.join(REPO, "alerts", "runbook.md"), encoding="utf-8") as fh:
        text = fh.read()
    sections = {}
    parts = re.split(r"^(#{2,3}) (.+)$", text, flags=re.M)
    for i in range(1, len(parts), 3):
        anchor = github_anchor(parts[i + 1])
        assert anchor not in sections, f"duplicate runbook heading {parts[i + 1]!r}"
        sections[anchor] = parts[i + 2]
    return text, sections


def test_every_alert_is_actionable_named_and_links_to_a_runbook_section_that_exists():
    text, sections = _runbook()
    assert "Do not edit" not in text  # prose a person maintains, not generator output
    rules = _alert_rules()
    names = {r["alert"] for r in rules}
    assert {"MemhealthWatchdog", "MemhealthEmbeddingDown", "MemhealthEmbeddingWedged",
            "MemhealthEmbeddingModelMissing", "MemhealthEmbeddingColdStart",
            "MemhealthHookHeartbeatMissing", "MemhealthIngestStale",
            "MemhealthExporterDown", "MemhealthGateCheckRed", "MemhealthTargetDown"} <= names
    linked = set()
    for rule in rules:
        name = rule["alert"]
        assert re.fullmatch(r"Memhealth(?:[A-Z][a-z0-9]*)+", name), name
        assert rule["labels"]["severity"] in ("critical", "warning", "info", "none"), name
        ann = rule["annotations"]
        assert ann["summary"].strip() and ann["description"].strip(), name
        base, _, anchor = ann["runbook_url"].partition("#")
        # absolute, so Alertmanager and Grafana render it as a link
        assert base == generate.RUNBOOK_URL and urlsplit(base).scheme in ("http", "https"), ann["runbook_url"]
        assert anchor in sections, f"{name}: no runbook heading with anchor #{anchor}"
        linked.add(anchor)
    for name in names:  # every alert has its own ## section saying what, how to check, how to fix
        section = sections[name.lower()]
        for part in ("What it means", "How to check", "How to fix"):
            assert part in section, (name, part)
        assert "memhealth " in section or "ollama" in section or "amtool" in section, name
    for check in GATE_CHECKS:  # and each gate check its own subsection, linked from its rule
        assert f"gate-check-{check}" in linked, check
        # causes and their fixes: prose naming a command, key or file to act on
        assert len(sections[f"gate-check-{check}"].strip()) > 60 and "`" in sections[
            f"gate-check-{check}"], check
    assert set(sections) == linked | {n.lower() for n in names}  # no orphan sections
    cold = next(r for r in rules if r["alert"] == "MemhealthEmbeddingColdStart")
    assert cold["labels"]["severity"] == "info" and cold["labels"]["state"] == "cold"
    watchdog = next(r for r in rules if r["alert"] == "MemhealthWatchdog")
    assert watchdog["expr"] == "vector(1)"


def test_one_alert_per_gate_check_with_the_checks_severity():
    assert [c.name for c in GATE_CHECK_LIST] == [name for name, _ in CHECKS]
    gate_rules = {r["labels"]["check"]: r for r in _alert_rules()
                  if r["alert"] == "MemhealthGateCheckRed"}
    assert set(gate_rules) == set(GATE_CHECKS)
    for name, rule in gate_rules.items():
        check = GATE_CHECKS[name]
        assert rule["labels"]["severity"] == check.severity
        assert rule["expr"] == (f'max by (team, machine, instance, project, check) '
                                f'(memhealth_gate_check_state{{check="{name}",status="red"}}) == 1')
        assert rule["annotations"]["runbook_url"].endswith(f"#gate-check-{name}")
        assert "FIX: run `memhealth gate`" in rule["annotations"]["description"]
    assert {c.severity for c in GATE_CHECK_LIST} == {"critical", "warning"}
    # a dedicated alert names the check it explains, and the check lists it as covering it
    for rule in _alert_rules():
        check = rule["labels"].get("check")
        if check and rule["alert"] != "MemhealthGateCheckRed":
            assert rule["alert"] in GATE_CHECKS[check].covered_by, rule["alert"]
    covering = {a for c in GATE_CHECK_LIST for a in c.covered_by}
    assert covering <= {r["alert"] for r in _alert_rules() if "check" in r["labels"]}
    # ... and fires no later than the generic alert, so it is there to mute it
    minutes = {"m": 1, "h": 60}
    for rule in _alert_rules():
        check = rule["labels"].get("check")
        if check and rule["alert"] != "MemhealthGateCheckRed":
            mine, generic = rule["for"], gate_rules[check]["for"]
            assert int(mine[:-1]) * minutes[mine[-1]] <= int(generic[:-1]) * minutes[generic[-1]]


def test_target_down_alert_watches_the_scrape_job_the_stack_uses():
    rule = next(r for r in _alert_rules() if r["alert"] == "MemhealthTargetDown")
    assert rule["expr"] == f'up{{job="{SCRAPE_JOB}"}} == 0'
    jobs = [j["job_name"] for j in _load("compose/prometheus.yml")["scrape_configs"]]
    assert jobs == [SCRAPE_JOB]


def test_thresholds_shared_with_the_gate_have_one_definition():
    import probes.checks
    import telemetry.slo

    assert probes.checks.EXPORT_MAX_LAG_S is telemetry.slo.EXPORT_MAX_LAG_S
    exporter = next(r for r in _alert_rules() if r["alert"] == "MemhealthExporterDown")
    assert f"> {telemetry.slo.EXPORT_MAX_LAG_S})\n" in exporter["expr"]
    assert defaults()["gate"]["ingest_max_age_days"] == INGEST_MAX_AGE_DAYS
    stale = next(r for r in _alert_rules() if r["alert"] == "MemhealthIngestStale")
    assert stale["expr"].endswith(f"> {int(INGEST_MAX_AGE_DAYS * 86400)}")


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
                inner = re.fullmatch(r"label_values\((\w+)(?:\{[^}]*\})?, *\w+\)", var["definition"])
                assert inner and inner.group(1) in known
    rules = {"groups": [{"name": "dashboard-expressions", "rules": [
        {"record": f"dashboard_check:expr:n{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]}]}
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_pinned_ref_id_survives_the_layout_and_the_others_fill_in_around_it():
    from telemetry.artifacts.dashboards.layout import Layout, target

    layout = Layout()
    layout.add("t", "timeseries", [target("a"), target("b", ref="A"), target("c")], "d")
    assert [t["refId"] for t in layout.panels[0]["targets"]] == ["B", "A", "C"]
    with pytest.raises(ValueError, match="pinned twice"):
        layout.add("u", "timeseries", [target("a", ref="A"), target("b", ref="A")], "d")


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
    # the dead man's switch outside serve, and serve's own record of it for the dashboard
    ("deadman,watchdog", {"alertname": "MemhealthWatchdog", "severity": "none",
                          "component": "meta"}),
    ("serve-down", {"alertname": "MemhealthTargetDown", "severity": "critical",
                    "component": "serve", "job": "memhealth", "instance": "127.0.0.1:9464"}),
    # a project serve --all cannot read: its own budget is what is lost, so it goes outside too
    ("serve-down", {"alertname": "MemhealthProjectNotServed", "severity": "warning",
                    "component": "serve", "instance": "127.0.0.1:9464", "project": "app"}),
    ("page", {"alertname": "MemhealthGateCheckRed", "severity": "critical",
              "check": "index_integrity", "component": "store"}),
    ("ticket", {"alertname": "MemhealthGateCheckRed", "severity": "warning",
                "check": "render_novelty", "component": "memory"}),
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
    expected = {"critical": "page", "warning": "ticket", "info": "null"}
    # the two alerts about serve itself or the path to it never end inside serve alone
    outside = {"MemhealthWatchdog": "deadman,watchdog", "MemhealthTargetDown": "serve-down",
               "MemhealthProjectNotServed": "serve-down"}
    seen = set()
    for rule in _alert_rules():
        labels = {"alertname": rule["alert"], **rule["labels"]}
        proc = subprocess.run(
            [amtool, "config", "routes", "test", f"--config.file={AM_CONFIGS[0]}",
             *[f"{k}={v}" for k, v in labels.items()]], capture_output=True, text=True, timeout=30)
        want = outside.get(rule["alert"]) or expected[rule["labels"]["severity"]]
        assert proc.stdout.strip() == want, (rule["alert"], proc.stdout)
        seen.add(rule["alert"])
    assert set(outside) <= seen


def test_a_project_not_served_reaches_the_receiver_a_dead_serve_reaches_with_its_fix():
    """MemhealthProjectNotServed is routed as MemhealthTargetDown is (outside serve, whose
    /alerts would decide it by the lost project's own budget), in both shipped configs, and
    its annotations carry a FIX an operator can run."""
    amtool = require_binary("amtool")
    rules = {rule["alert"]: rule for rule in _alert_rules()}
    lost, down = rules["MemhealthProjectNotServed"], rules["MemhealthTargetDown"]
    for path in AM_CONFIGS:
        got = {}
        for rule in (lost, down):
            labels = {"alertname": rule["alert"], **rule["labels"], "instance": "127.0.0.1:9464",
                      "project": "app"}
            proc = subprocess.run([amtool, "config", "routes", "test", f"--config.file={path}",
                                   *[f"{k}={v}" for k, v in labels.items()]],
                                  capture_output=True, text=True, timeout=30)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            got[rule["alert"]] = proc.stdout.strip()
        assert got == {"MemhealthProjectNotServed": "serve-down", "MemhealthTargetDown": "serve-down"}, (path, got)
    # written out, as the operator reads it where the alert lands (a healthchecks check's log)
    assert lost["annotations"]["description"].endswith(
        "FIX: run the command serve prints for it: `curl -s http://{{ $labels.instance }}/healthz` shows it "
        "under not_served.{{ $labels.project }} (or projects.{{ $labels.project }}.fix); it names the "
        "project's directory, which no label carries.")
    assert lost["annotations"]["runbook_url"].endswith("#memhealthprojectnotserved")


def test_alertmanager_configs_send_to_serve_and_inhibit_as_designed():
    local, composed = (_load(os.path.relpath(p, REPO)) for p in AM_CONFIGS)

    def urls(config):
        return {r["name"]: [c["url"] for c in r.get("webhook_configs", [])]
                for r in config["receivers"]}

    assert urls(local) == {"page": ["http://127.0.0.1:9464/alerts"],
                           "ticket": ["http://127.0.0.1:9464/alerts"],
                           "watchdog": ["http://127.0.0.1:9464/alerts"],
                           "deadman": [WATCHDOG_URL], "serve-down": [SERVE_DOWN_URL],
                           "null": []}
    # the dead man's switch and the target-down receiver are outside serve
    for outside in (WATCHDOG_URL, SERVE_DOWN_URL):
        assert outside.startswith("https://") and ":9464" not in outside
    assert urls(composed)["page"] == ["http://memhealth:9464/alerts"]
    # the two differ only in the webhook address
    assert json.dumps(local).replace("127.0.0.1", "memhealth") == json.dumps(composed)
    inhibit = {tuple(r["source_matchers"]): r for r in local["inhibit_rules"]}
    assert inhibit[('alertname="MemhealthEmbeddingColdStart"',)]["target_matchers"] == [
        'slo="hook-latency"']
    # scoped: a page mutes only the ticket of the same alert (and the same gate check)
    crit = inhibit[('severity="critical"',)]
    assert crit["equal"] == ["team", "machine", "instance", "project", "alertname", "check"]
    dedicated = inhibit[('alertname!="MemhealthGateCheckRed"', 'check=~".+"')]
    assert dedicated["target_matchers"] == ['alertname="MemhealthGateCheckRed"']
    assert dedicated["equal"] == ["team", "machine", "instance", "project", "check"]


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
            if not source.startswith((".", "/")):  # a named volume: declared at the top level
                assert source in compose.get("volumes", {}), f"{name}: volume {source} undeclared"
                continue
            path = os.path.normpath(os.path.join(compose_dir, source))
            assert os.path.exists(path), f"{name} mounts {source}, missing in the repo"
            mounted.add(os.path.relpath(path, REPO))
        if "build" in svc:
            context = os.path.join(compose_dir, svc["build"]["context"])
            assert os.path.exists(os.path.join(context, svc["build"]["dockerfile"]))
    assert {"dashboards", "alerts"} <= mounted  # mounted as they are, not copied
    for path in ("compose/otel-collector.yaml", "compose/tempo.yaml"):
        assert isinstance(_load(path), dict)


def test_compose_says_v2_and_runs_memhealth_as_a_non_root_user():
    with open(os.path.join(REPO, "compose", "docker-compose.yml"), encoding="utf-8") as fh:
        header = fh.read().split("\nname:", 1)[0]
    assert "Compose v2" in header and "v1" in header  # v1 rejects the top-level `name:`
    with open(os.path.join(REPO, "compose", "Dockerfile"), encoding="utf-8") as fh:
        lines = [line.split() for line in fh if line.strip() and not line.startswith("#")]
    users = [words[1] for words in lines if words[0] == "USER"]
    last_from = max(i for i, words in enumerate(lines) if words[0] == "FROM")
    assert users and lines.index(["USER", users[-1]]) > last_from
    assert users[-1].split(":")[0] not in ("0", "root")
    memhealth = _load("compose/docker-compose.yml")["services"]["memhealth"]
    default_uid = memhealth["user"].split(":-", 1)[1].split("}", 1)[0]
    assert memhealth["user"].startswith("${MEMHEALTH_UID:-") and default_uid == users[-1].split(":")[0]


def test_compose_collector_limits_memory_and_sends_metrics_to_prometheus_otlp():
    collector = _load("compose/otel-collector.yaml")
    pipelines = collector["service"]["pipelines"]
    assert set(pipelines) == {"traces", "metrics"}
    for name, pipeline in pipelines.items():
        assert pipeline["processors"][0] == "memory_limiter", name  # first, as the Collector asks
        for part in ("receivers", "processors", "exporters"):
            for ref in pipeline[part]:
                assert ref in collector[part], f"{name} uses undefined {part[:-1]} {ref}"
        assert "debug" not in pipeline["exporters"], name  # somewhere real
    limiter = collector["processors"]["memory_limiter"]
    assert 0 < limiter["spike_limit_mib"] < limiter["limit_mib"]
    (exporter,) = pipelines["metrics"]["exporters"]
    endpoint = collector["exporters"][exporter]["metrics_endpoint"]
    assert endpoint == "http://prometheus:9090/api/v1/otlp/v1/metrics"
    compose = _load("compose/docker-compose.yml")["services"]
    flags = [a for a in compose["prometheus"]["command"] if a.startswith("--enable-feature=")]
    assert "otlp-write-receiver" in flags[0] and "exemplar-storage" in flags[0]
    # Prometheus scrapes serve; its OTLP export carries traces only, no double count
    assert compose["memhealth"]["environment"]["MEMHEALTH_TELEMETRY_OTLP_METRICS"] == "false"


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
    n_rules = 0  # promtool counts the rules of every rule file the config names
    for name in sorted(os.listdir(os.path.join(REPO, "alerts"))):
        if name.endswith(".rules.yaml") and f"/etc/memhealth/alerts/{name}" in text:
            with open(os.path.join(REPO, "alerts", name), encoding="utf-8") as fh:
                n_rules += sum(len(g["rules"]) for g in yaml.safe_load(fh)["groups"])
    assert n_rules > 0 and f"SUCCESS: {n_rules} rules found" in proc.stdout, proc.stdout
