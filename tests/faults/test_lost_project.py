"""D15: `serve --all` never hides a lost project from Prometheus. A registered project whose
store is deleted, whose store is corrupt, or whose directory is gone keeps a series
(`memhealth_project_up` 0, `memhealth_project_state` its reason) on a real `serve --all`
scrape; real `promtool test rules`, fed the scraped samples, fires MemhealthProjectNotServed
for each; the FIX /healthz prints, run as printed in a shell, brings the series back to 1 (or
ends it, for a project taken off the registry) and the alert resolves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REPO, payload, require_binary, run_hook
from tests.faults.helpers import db_path, wait_for
from tests.telemetry.test_serve_all import ServeAll, _env, _init

INSTANCE = "127.0.0.1:9464"  # the label Prometheus would give the target; promtool takes it as given
SUMMARY = "Project {} is registered but not served by 127.0.0.1:9464"
# written out as an operator reads it, never read back from the rule under test
DESCRIPTION = (
    "memhealth serve --all could not read this registered project's store for 10 minutes: its "
    "directory or store is gone, unreadable or corrupt, or its config does not load "
    "(memhealth_project_state says which). Its hooks, gate and alerts are unwatched while it "
    "lasts. FIX: run the command serve prints for it: `curl -s http://{i}/healthz` shows it under "
    "not_served.{p} (or projects.{p}.fix); it names the project's directory, which no label carries.")


def project_series(app: ServeAll) -> tuple[dict[str, float], dict[str, str]]:
    """({project: memhealth_project_up}, {project: the state whose series is 1}) on /metrics."""
    up, state = {}, {}
    for family in text_string_to_metric_families(app.get("/metrics").decode()):
        for sample in family.samples:
            if sample.name == "memhealth_project_up":
                up[sample.labels["project"]] = sample.value
            elif sample.name == "memhealth_project_state" and sample.value == 1:
                assert sample.labels["project"] not in state, sample  # one state at a time
                state[sample.labels["project"]] = sample.labels["state"]
    return up, state


def promtool_alerts(tmp_path, timeline: dict[str, list[float | None]], checks: list[tuple[str, list[str]]]):
    """Run real `promtool test rules` on the shipped rules: each project's memhealth_project_up
    takes the scraped values in `timeline` (one per 5-minute stretch; None = no series), and at
    each (eval_time, projects) exactly those projects' alerts must be firing."""
    promtool = require_binary("promtool")
    series = []
    for name, values in timeline.items():
        minutes, previous = [], None
        for v in values:  # one sample a minute; a series that leaves a scrape goes stale there
            for _ in range(5):
                minutes.append("_" if v is None and previous is None else "stale" if v is None else f"{v:g}")
                previous = v
        text = " ".join(minutes)
        series.append({"series": f'memhealth_project_up{{instance="{INSTANCE}",project="{name}"}}',
                       "values": text})
    url = "http://127.0.0.1:9464/runbook#memhealthprojectnotserved"
    tests = [{"interval": "1m", "input_series": series, "alert_rule_test": [
        {"eval_time": at, "alertname": "MemhealthProjectNotServed", "exp_alerts": [
            {"exp_labels": {"severity": "warning", "component": "serve", "instance": INSTANCE, "project": p},
             "exp_annotations": {"summary": SUMMARY.format(p), "description": DESCRIPTION.format(i=INSTANCE, p=p), "runbook_url": url}}
            for p in sorted(projects)]} for at, projects in checks]}]
    path = tmp_path / "lost.test.yaml"
    path.write_text(yaml.safe_dump({"rule_files": [os.path.join(REPO, "alerts", "memhealth.rules.yaml")],
                                    "evaluation_interval": "1m", "tests": tests}))
    proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def follow(fix: str, env: dict) -> None:
    """Run a FIX line exactly as printed, in a shell, with this checkout's memhealth on PATH."""
    shell_env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}
    proc = subprocess.run(["sh", "-c", fix], capture_output=True, text=True, timeout=300, env=shell_env)
    assert proc.returncode == 0, (fix, proc.stdout, proc.stderr)


def test_a_lost_project_reads_0_fires_its_alert_and_its_printed_fix_brings_it_back(tmp_path):
    env = _env(tmp_path / "xdg")
    roots = {name: tmp_path / name for name in ("kept", "nostore", "corrupt", "gone")}
    for root in roots.values():
        _init(root, env)
        assert run_hook("prompt", payload("prompt", root, prompt="the wal question"),
                        cwd=str(root), env=env).returncode == 0
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        before = wait_for(lambda: (lambda s: s if set(s[0]) == set(roots) else None)(project_series(app)),
                          timeout=20, what="every registered project on /metrics")
        assert before == ({n: 1.0 for n in roots}, {n: "served" for n in roots})

        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db_path(roots["nostore"]) + suffix):
                os.unlink(db_path(roots["nostore"]) + suffix)
        for suffix in ("-wal", "-shm"):  # a corrupt main file; no WAL to recover it from
            if os.path.exists(db_path(roots["corrupt"]) + suffix):
                os.unlink(db_path(roots["corrupt"]) + suffix)
        with open(db_path(roots["corrupt"]), "r+b") as fh:
            fh.write(b"this is not a database, " * 200)
        shutil.rmtree(roots["gone"])

        lost = {"kept": "served", "nostore": "no_store", "corrupt": "corrupt", "gone": "no_root"}
        up, state = wait_for(lambda: (lambda s: s if s[1] == lost else None)(project_series(app)),
                             timeout=20, what="the lost projects' states on /metrics")
        assert up == {"kept": 1.0, "nostore": 0.0, "corrupt": 0.0, "gone": 0.0}  # still there, 0

        # the alert itself, delivered to serve --all: the lost project's budget is what is lost,
        # so it is kept beside the registry, saying why, and answered 200 (a retry cannot help)
        body = json.dumps({"receiver": "ticket", "status": "firing", "alerts": [
            {"status": "firing", "labels": {"alertname": "MemhealthProjectNotServed",
                                            "severity": "warning", "project": "nostore"}}]}).encode()
        req = urllib.request.Request(app.url + "/alerts", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200 and json.loads(resp.read())["unrouted"] == 1
        with open(tmp_path / "xdg" / "memhealth" / "alerts-unrouted.ndjson", encoding="utf-8") as fh:
            kept = [json.loads(line) for line in fh]
        assert kept[-1]["alertname"] == "MemhealthProjectNotServed"
        assert kept[-1]["reason"] == "project 'nostore' is registered but not served (no_store)", kept[-1]

        health = json.loads(app.get("/healthz"))
        assert health["status"] == "degraded", health
        assert set(health["not_served"]) == {"nostore", "gone"}, health["not_served"]
        fixes = {name: line.split("; FIX: ", 1)[1] for name, line in health["not_served"].items()}
        assert health["projects"]["corrupt"]["state"] == "corrupt"
        fixes["corrupt"] = health["projects"]["corrupt"]["fix"]  # served, its store unreadable
        assert "fix" not in health["projects"]["kept"]
        for name, fix in fixes.items():
            assert str(roots[name]) in fix, fix  # the directory no label carries

        for name in ("nostore", "corrupt", "gone"):
            follow(fixes[name], env)
        after = wait_for(lambda: (lambda s: s if set(s[0]) == {"kept", "nostore", "corrupt"}
                                  and all(s[0].values()) else None)(project_series(app)),
                         timeout=30, what="the fixed projects served again")
        assert after == ({"kept": 1.0, "nostore": 1.0, "corrupt": 1.0},
                         {"kept": "served", "nostore": "served", "corrupt": "served"})
        assert json.loads(app.get("/healthz"))["status"] == "ok"
        assert os.path.exists(os.path.join(roots["corrupt"], ".memhealth", "corrupt", "memory.db"))
    finally:
        app.stop()

    # what Prometheus would have held: 20 minutes of the lost scrape, then 20 of the fixed one
    def timeline(name):
        return [before[0][name]] * 2 + [up[name]] * 4 + [after[0].get(name)] * 4
    series = {name: timeline(name) for name in roots}
    assert series["gone"][-1] is None  # unregistered: its series ends
    promtool_alerts(tmp_path, series, [
        ("9m", []),                                   # served for the first 10 minutes
        ("19m", []),                                  # lost at 10m: not for 10 minutes yet
        ("21m", ["corrupt", "gone", "nostore"]),      # lost for 10 minutes: fires, kept never
        ("29m", ["corrupt", "gone", "nostore"]),
        ("31m", []),                                  # the FIX at 30m: resolved at once
    ])
