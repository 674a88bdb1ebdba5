"""The span outbox with no exporter stays bounded: by age
([telemetry].retention_days) and rows ([telemetry].outbox_max_rows), pruned by the gate (each
session start, each `memhealth gate`) and not by the per-prompt hooks, every dropped span
counted; the telemetry check is silent unless an exporter is configured and failing."""

from __future__ import annotations

import json
import time

from memory_core.outbox import spans
from memory_core.store.db import write
from tests.conftest import payload, rows, run_cli, run_hook
from tests.support.gate_fix_helpers import check, set_config
from tests.support.gate_helpers import open_store

DAY_NS = int(86400e9)


def _spans(project, n: int, end_ns: int) -> None:
    """n spans recorded through the outbox's own Trace, as hooks record them, ending at end_ns."""
    conn = open_store(project)
    trace = spans.Trace()
    for i in range(n):
        span = trace.span(f"memhealth.hook prompt {i}")
        span.end()
        span.start_ns = span.end_ns = end_ns
    with write(conn):
        trace.write(conn)
    conn.close()


def _count(project) -> int:
    return rows(project, "SELECT count(*) FROM spans")[0][0]


def _dropped(project) -> dict:
    return {json.loads(labels)["reason"]: value for labels, value in rows(
        project, "SELECT labels, value FROM rollups WHERE metric = 'memhealth_outbox_dropped_spans_total'")}


def test_the_gate_keeps_at_most_outbox_max_rows_spans_and_counts_the_rest(project):
    set_config(project, "telemetry", "outbox_max_rows", 150)
    _spans(project, 400, time.time_ns())
    assert _count(project) == 400
    # a prompt hook does not prune: the cost stays off the per-prompt path
    assert run_hook("prompt", payload("UserPromptSubmit", project, prompt="hello"), str(project)).returncode == 0
    assert _count(project) > 400
    before = _count(project)
    proc = run_cli("gate", "--project", str(project))
    assert proc.returncode == 1 and "telemetry_pipeline" not in proc.stdout  # only ingest is RED
    kept = _count(project)
    assert 100 < kept <= 150 + 20  # the bound, plus the gate's own spans written after pruning
    assert _dropped(project)["max_rows"] == before - 150
    newest = rows(project, "SELECT max(id) FROM spans")[0][0]
    assert rows(project, "SELECT min(id) FROM spans")[0][0] > newest - 150 - 20


def test_the_gate_drops_spans_older_than_retention_days(project):
    set_config(project, "telemetry", "retention_days", 2)
    _spans(project, 30, time.time_ns() - 5 * DAY_NS)
    _spans(project, 10, time.time_ns())
    run_cli("gate", "--project", str(project))
    assert rows(project, "SELECT count(*) FROM spans WHERE end_ns < ?", (time.time_ns() - 2 * DAY_NS,)) == [(0,)]
    assert _count(project) >= 10
    assert _dropped(project)["retention"] == 30


def test_session_start_prunes_too(project):
    set_config(project, "telemetry", "outbox_max_rows", 100)
    _spans(project, 300, time.time_ns())
    run = run_hook("session-start", payload("SessionStart", project, source="startup"), str(project))
    assert run.returncode == 0
    assert _count(project) <= 100 + 30


def test_pruning_with_nothing_to_drop_writes_nothing(project):
    _spans(project, 5, time.time_ns())
    conn = open_store(project)
    before = conn.total_changes
    assert spans.prune_spans(conn, 14.0, 1000) == {"retention": 0, "max_rows": 0}
    assert conn.total_changes == before
    assert spans.prune_spans(conn, 14.0, 2) == {"retention": 0, "max_rows": 3}
    assert conn.execute("SELECT count(*) FROM spans").fetchone() == (2,)
    conn.close()


def test_the_bounds_are_validated_config_keys(project):
    set_config(project, "telemetry", "outbox_max_rows", 5)
    proc = run_cli("gate", "--project", str(project))
    assert proc.returncode == 2 and "[telemetry].outbox_max_rows" in proc.stderr and "100..10000000" in proc.stderr
    set_config(project, "telemetry", "outbox_max_rows", "many")
    proc = run_cli("gate", "--project", str(project))
    assert proc.returncode == 2 and "expected an integer" in proc.stderr


def test_without_an_exporter_the_telemetry_check_is_green_and_says_the_bound(project):
    _spans(project, 50, time.time_ns() - 3 * 3600 * 10**9)
    result = check(project, "telemetry_pipeline")
    assert result["status"] == "green"
    assert result["detail"] == "no exporter configured: the span outbox is kept locally, bounded to 14 d / 20000 spans"


def test_a_huge_outbox_is_pruned_over_a_few_runs_not_in_one_long_lock(project):
    conn = open_store(project)
    now = time.time_ns()
    with write(conn):
        conn.executemany("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES (?,?,?,?,?)",
                         [("a" * 32, f"{i:016x}", "s", now, now) for i in range(60_100)])
    assert spans.prune_spans(conn, 14.0, 100, now_ns=now) == {"retention": 0, "max_rows": 50_000}
    assert spans.prune_spans(conn, 14.0, 100, now_ns=now) == {"retention": 0, "max_rows": 10_000}
    assert spans.prune_spans(conn, 14.0, 100, now_ns=now) == {"retention": 0, "max_rows": 0}
    assert conn.execute("SELECT count(*) FROM spans").fetchone() == (100,)
    conn.close()
