"""`memhealth report`: the numbers appendix agrees with what the hooks and the gate recorded."""

from __future__ import annotations

import json
import time

# The same SQLite library as the code under test: two libraries in one process release
# each other's POSIX locks on close, and a WAL database can then read as malformed.
from memory_core.store.db import sqlite3
from tests.conftest import clean_env, payload, rows, run_hook


def drive(project):
    for event, fields in [("session-start", {"source": "startup"}),
                          ("prompt", {"prompt": "hello there"}),
                          ("prompt", {"prompt": "let's build the retry queue for the exporter"}),
                          ("stop", {})]:
        assert run_hook(event, payload(event, project, **fields), cwd=str(project)).returncode == 0
    run_hook("pre-tool", b"{broken", cwd=str(project), env=clean_env(CLAUDE_PROJECT_DIR=str(project)))
    db = sqlite3.connect(str(project / ".memhealth" / "memory.db"))
    with db:
        db.execute("INSERT INTO heartbeats(hook, pid, started_ns) VALUES ('post-tool', 999999999, ?)",
                   (time.time_ns() - 5 * 10 ** 9,))
        db.execute("INSERT INTO heartbeats(hook, started_ns, ended_ns, outcome) VALUES ('stop', ?, ?, 'ok')",
                   (time.time_ns() - 20 * 86400 * 10 ** 9, time.time_ns() - 20 * 86400 * 10 ** 9))
        db.execute("INSERT INTO degradations(ts_ns, component, reason) VALUES (?, 'embed', 'unreachable')",
                   (time.time_ns(),))
    db.close()


def report(cli, project, *args):
    proc = cli("report", "--project", project, *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_report_counts_invocations_failures_killed_hooks_and_the_injection_window(project, cli):
    drive(project)
    gate = cli("gate", "--project", project)
    assert gate.stdout.startswith("MEMORY-HEALTH:")
    data = json.loads(report(cli, project, "--json", "--days", "7"))
    by_hook = {r["hook"]: r for r in data["invocations"]["by_hook"]}
    assert by_hook["prompt"]["ok"] == 2 and by_hook["prompt"]["total"] == 2
    assert by_hook["pre-tool"]["error"] == 1
    assert by_hook["stop"]["total"] == 1  # the 20-day-old row is outside the window
    assert by_hook["post-tool"]["killed"] == 1
    assert data["killed"] == [{"hook": "post-tool", "count": 1, "last_started_ns": data["killed"][0]["last_started_ns"]}]
    families = {r["family"]: r["count"] for r in data["failures"]["by_family"]}
    assert families["malformed_json"] == 1 and families["killed"] == 1
    assert all(r["day"] for r in data["failures"]["per_day"])
    inj = data["injection"]
    decided = rows(project, "SELECT outcome, count(*) FROM decisions WHERE hook = 'prompt' GROUP BY outcome")
    assert inj["prompts"] == 2 == sum(n for _o, n in decided)
    assert {o: n for o, n in decided}.items() <= inj["outcomes"].items()
    assert inj["intent_bearing"] == 1
    latencies = [ms for (ms,) in rows(project, "SELECT retrieval_ms FROM decisions WHERE retrieval_ms IS NOT NULL")]
    assert inj["retrieval_ms"]["n"] == len(latencies)
    gate_days = data["gate"]["per_day"]
    (runs,) = rows(project, "SELECT count(*) FROM gate_runs")[0]
    assert runs >= 1  # session-start's gate and `memhealth gate`
    assert sum(d["green"] + d["red"] for d in gate_days) == runs == len(data["gate"]["recent"])
    assert data["gate"]["recent"][0]["verdict"] in ("green", "red")
    assert data["degradations"][0]["component"] == "embed"
    assert data["telemetry"]["outbox_backlog"] == rows(project, "SELECT count(*) FROM spans")[0][0]


def test_a_wider_window_includes_older_days(project, cli):
    drive(project)
    data = json.loads(report(cli, project, "--json", "--days", "30"))
    by_hook = {r["hook"]: r for r in data["invocations"]["by_hook"]}
    assert by_hook["stop"]["total"] == 2
    assert len({r["day"] for r in data["invocations"]["per_day"]}) == 2


def test_the_text_report_has_every_section_as_a_table(project, cli):
    drive(project)
    text = report(cli, project)
    for heading in ("Hook invocations by hook", "Hook invocations per day", "Failures per day by hook and family",
                    "Failures by family", "Killed hooks", "Injection window", "Gate verdicts per day",
                    "Recent gate runs", "Degradations", "Alert decisions", "Telemetry pipeline"):
        assert heading in text
    assert "malformed_json" in text and "retrieval latency" in text


def test_a_non_positive_window_is_a_usage_error(project, cli):
    proc = cli("report", "--project", project, "--days", "0")
    assert proc.returncode == 2 and "--days" in proc.stderr
