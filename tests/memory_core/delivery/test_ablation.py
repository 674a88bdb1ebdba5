"""The ablation protocol: `memhealth ablation start|status|stop`, the hooks switching arms on
schedule, and `memhealth report --ablation`, through the real CLI and real hook processes.

Time travel: a day passing is simulated by moving the stored schedule and every row the
hooks wrote one day into the past, together, so what happened stays on the day it happened.
"""

from __future__ import annotations

import json
import sqlite3

from memory_core.delivery.ablation import ABLATION_KEY, DAY_NS
from memory_core.store.db import connect
from tests.conftest import payload, rows, run_cli, run_hook
from tests.memory_core.delivery.test_inject import COMPACTOR, seed

BUILD = "build a snapshot compactor"


def pass_a_day(project) -> None:
    conn = sqlite3.connect(project / ".memhealth" / "memory.db", timeout=10)
    try:
        with conn:
            sched = json.loads(conn.execute("SELECT value FROM meta WHERE key = ?", (ABLATION_KEY,)).fetchone()[0])
            for key in ("start_ns", "end_ns", "registered_ns"):
                sched[key] -= DAY_NS
            for day in sched["days"]:
                day["start_ns"] -= DAY_NS
                day["end_ns"] -= DAY_NS
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(sched), ABLATION_KEY))
            conn.execute("UPDATE decisions SET ts_ns = ts_ns - ?", (DAY_NS,))
            conn.execute("UPDATE gate_runs SET ts_ns = ts_ns - ?", (DAY_NS,))
            conn.execute("UPDATE heartbeats SET started_ns = started_ns - ?, ended_ns = ended_ns - ?",
                         (DAY_NS, DAY_NS))
    finally:
        conn.close()


def test_start_status_stop_and_usage_errors(project):
    p = str(project)
    assert run_cli("ablation", "status", "--project", p).stdout.startswith("memhealth ablation: none registered")
    for bad in (["start", "injection-off"], ["start", "injection-off", "--days", "1"],
                ["start", "injection-off", "--days", "0"], ["start", "gate-on", "--days", "4"],
                ["start", "gate-off", "--days", "4", "--start", "2020-01-01"],
                ["stop", "gate-off"]):
        proc = run_cli("ablation", *bad, "--project", p)
        assert proc.returncode == 2, (bad, proc.stdout, proc.stderr)
    started = run_cli("ablation", "start", "gate-off", "--days", "5", "--project", p)
    assert started.returncode == 0, started.stderr
    assert [line.split()[5] for line in started.stdout.splitlines() if line.strip().startswith("day")] == \
        ["ablated", "baseline", "ablated", "baseline", "ablated"], started.stdout
    assert "ablated <- now" in started.stdout and "now: ablated ([gate].mode = off)" in started.stdout
    again = run_cli("ablation", "start", "injection-off", "--days", "3", "--project", p)
    assert again.returncode == 1 and "ablation stop` first" in again.stderr
    status = json.loads(run_cli("ablation", "status", "--json", "--project", p).stdout)["schedule"]
    assert status["arm"] == "gate-off" and status["now"] == "ablated" and status["active"] is True
    assert run_cli("ablation", "stop", "--project", p).returncode == 0
    status = json.loads(run_cli("ablation", "status", "--json", "--project", p).stdout)["schedule"]
    assert status["now"] is None and status["active"] is False and status["stopped_ns"]
    assert run_cli("ablation", "stop", "--project", p).returncode == 1  # nothing running
    # a new schedule may start; the stopped one is kept for the record
    later = run_cli("ablation", "start", "injection-off", "--days", "2", "--first", "baseline",
                    "--start", "2099-01-01", "--project", p)
    assert later.returncode == 0 and "now: not started yet" in later.stdout, later.stdout
    assert rows(project, "SELECT count(*) FROM meta WHERE key LIKE 'ablation.history.%'") == [(1,)]


def test_injection_off_alternates_days_and_the_report_compares_the_arms(project):
    conn = connect(project / ".memhealth" / "memory.db")
    seed(conn, extra=[COMPACTOR])
    conn.close()
    (project / "src").mkdir(exist_ok=True)  # where the entry says it lives (STALE-CLAIM otherwise)
    (project / "src" / "compactor.py").write_text("def fold(): ...\n", encoding="utf-8")
    p = str(project)
    assert run_cli("ablation", "start", "injection-off", "--days", "4", "--project", p).returncode == 0

    # day 1, ablated: the cascade decides as ever, prints nothing, records would-have-fired
    ablated = run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-day1"), cwd=p)
    assert ablated.returncode == 0 and ablated.stdout == b"", ablated.stdout
    assert rows(project, "SELECT outcome FROM decisions") == [("suppressed_ablation",)]
    spans = rows(project, "SELECT attributes FROM spans WHERE parent_span_id IS NULL AND name LIKE '%prompt'")
    assert json.loads(spans[-1][0])["memhealth.ablation.arm"] == "injection-off:ablated"

    pass_a_day(project)  # day 2, baseline: the same re-proposal gets the block
    baseline = run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-day2"), cwd=p)
    assert 'DO-NOT-REBUILD? "snapshot compactor"' in baseline.context()
    status = json.loads(run_cli("ablation", "status", "--json", "--project", p).stdout)["schedule"]
    assert status["now"] == "baseline"

    pass_a_day(project)  # day 3, ablated again
    run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-day3"), cwd=p)
    run_hook("prompt", payload("prompt", project, prompt="what time is it", session_id="s-day3"), cwd=p)
    assert [r[0] for r in rows(project, "SELECT outcome FROM decisions ORDER BY id")] == \
        ["suppressed_ablation", "injected", "suppressed_ablation", "no_intent"]

    report = run_cli("report", "--ablation", "--json", "--project", p)
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    base, abl = data["arms"]["baseline"], data["arms"]["ablated"]
    assert (base["days"], abl["days"]) == (1, 2)
    assert (base["prompts"], abl["prompts"]) == (1, 3)
    assert base["outcomes"] == {"injected": 1}
    assert abl["outcomes"] == {"suppressed_ablation": 2, "no_intent": 1}
    assert base["blocks"]["dnr"] == {"fired": 1, "would_have_fired": 0}
    assert abl["blocks"]["dnr"] == {"fired": 0, "would_have_fired": 2}
    assert (base["sessions"], abl["sessions"]) == (1, 2)
    text = run_cli("report", "--ablation", "--project", p).stdout
    assert "DO-NOT-REBUILD would have fired" in text and "not randomized" in text
    assert "small samples: prompts per arm baseline 1, ablated 3" in text

    # after the schedule ends the configured mode is back, with no stop needed
    pass_a_day(project)
    pass_a_day(project)
    after = run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-after"), cwd=p)
    assert 'DO-NOT-REBUILD? "snapshot compactor"' in after.context()
    assert json.loads(run_cli("ablation", "status", "--json", "--project", p).stdout)["schedule"]["now"] is None


def test_gate_off_skips_the_session_start_gate_on_ablated_days_only(project):
    p = str(project)
    assert run_cli("ablation", "start", "gate-off", "--days", "2", "--project", p).returncode == 0
    off = run_hook("session-start", payload("session-start", project, session_id="g1"), cwd=p)
    assert off.returncode == 0
    assert rows(project, "SELECT count(*) FROM gate_runs") == [(0,)]
    assert rows(project, "SELECT hook, outcome FROM heartbeats WHERE hook = 'session-start'") == \
        [("session-start", "ok")]  # telemetry stays on
    pass_a_day(project)
    on = run_hook("session-start", payload("session-start", project, session_id="g2"), cwd=p)
    assert on.returncode == 0 and "MEMORY-HEALTH" in on.context()
    assert rows(project, "SELECT count(*) FROM gate_runs") == [(1,)]
    data = json.loads(run_cli("report", "--ablation", "--json", "--project", p).stdout)
    assert data["arms"]["ablated"]["gate"]["runs"] == 0 and data["arms"]["baseline"]["gate"]["runs"] == 1
    assert any("gate-off" in c for c in data["caveats"])


def test_a_hook_failure_is_timed_to_the_first_red_verdict_after_it(project):
    p = str(project)
    assert run_cli("ablation", "start", "gate-off", "--days", "2", "--project", p).returncode == 0
    bad = run_hook("prompt", b"{not json", cwd=p)  # a failed invocation on the ablated day
    assert bad.returncode == 0
    conn = sqlite3.connect(project / ".memhealth" / "memory.db", timeout=10)
    with conn:  # a RED run three hours later, as `memhealth gate` would record it
        ts = conn.execute("SELECT started_ns FROM heartbeats WHERE outcome = 'error'").fetchone()[0]
        conn.execute("INSERT INTO gate_runs(ts_ns, total, green, red, verdict) VALUES (?, 10, 9, 1, 'red')",
                     (ts + 3 * 3600 * 10 ** 9,))
    conn.close()
    pass_a_day(project)
    detect = json.loads(run_cli("report", "--ablation", "--json", "--project", p).stdout)["arms"]["ablated"]["detect"]
    assert detect["failures"] == 1 and detect["episodes"] == 1 and detect["undetected"] == 0
    assert abs(detect["median_hours"] - 3.0) < 1e-6


def test_an_unreadable_schedule_costs_the_hook_nothing_but_a_recorded_problem(project):
    conn = sqlite3.connect(project / ".memhealth" / "memory.db", timeout=10)
    with conn:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (ABLATION_KEY, "{broken"))
    conn.close()
    run = run_hook("prompt", payload("prompt", project, prompt="what time is it"), cwd=str(project))
    assert run.returncode == 0
    assert rows(project, "SELECT outcome, reason FROM heartbeats WHERE hook = 'prompt'") == [("error", "ablation")]
    assert rows(project, "SELECT outcome FROM decisions") == [("no_intent",)]
