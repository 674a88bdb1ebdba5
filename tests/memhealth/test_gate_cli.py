"""`memhealth gate` and the session-start hook through their real entry points."""

from __future__ import annotations

import json
import time

from probes.gate import CHECKS
from tests.conftest import clean_env, payload, rows, run_cli, run_hook
from tests.support.gate_helpers import add_watermark, open_store

N = len(CHECKS)  # other checks join the gate over time; the arithmetic here must not care


def _ingested(project) -> None:
    conn = open_store(project)
    add_watermark(conn, "docs", "README.md", time.time())
    conn.close()


def test_a_fresh_project_prints_the_verdict_then_the_red_then_notes_and_exits_1(project):
    proc = run_cli("gate", "--project", str(project))
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1
    assert lines[0] == f"MEMORY-HEALTH: {N - 1}/{N} GREEN (1 RED)"
    assert lines[1] == "  RED ingest_freshness: ingestion never ran (no watermarks)  FIX: memhealth ingest"
    assert lines[2:] and all(line.startswith("  NOTE ") for line in lines[2:])


def test_with_nothing_red_the_first_line_is_n_of_n_green_and_the_exit_is_0(project):
    _ingested(project)
    proc = run_cli("gate", cwd=str(project))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[0] == f"MEMORY-HEALTH: {N}/{N} GREEN"
    assert "RED" not in proc.stdout


def test_json_output_lists_every_check_with_status_detail_fix_and_duration(project):
    proc = run_cli("gate", "--json", "--project", str(project))
    data = json.loads(proc.stdout)
    assert set(data) == {"version", "total", "green", "red", "checks"} and data["version"] == 1
    assert (data["total"], data["green"], data["red"]) == (N, N - 1, 1)
    for check in data["checks"]:
        assert {"name", "status", "detail", "fix", "duration_ms"} <= set(check)
        assert check["status"] in ("green", "note", "red")
    embedding = next(c for c in data["checks"] if c["name"] == "embedding_path")
    assert embedding["state"] == "not_configured" and embedding["status"] == "note"


def test_no_project_is_a_usage_error_with_exit_2(tmp_path):
    proc = run_cli("gate", "--project", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "memhealth init" in proc.stderr
    assert run_cli("gate", "--bogus").returncode == 2


def test_the_gate_leaves_its_own_heartbeat_and_a_run_row(project):
    run_cli("gate", "--project", str(project))
    assert rows(project, "SELECT hook, outcome, detail FROM heartbeats") == [("gate", "ok", f"{N - 1}/{N} green")]
    assert rows(project, "SELECT total, green, red, verdict FROM gate_runs") == [(N, N - 1, 1, "red")]


def test_session_start_puts_the_verdict_line_first_in_its_context(project):
    _ingested(project)
    run = run_hook("session-start", payload("SessionStart", project, session_id="s1", source="startup"),
                   project)
    lines = run.context().splitlines()
    assert lines[0] == f"MEMORY-HEALTH: {N}/{N} GREEN"
    assert lines[-1].startswith("memhealth: memory is empty")
    assert all(line.startswith("  NOTE ") for line in lines[1:-1])
    assert rows(project, "SELECT session_id, verdict FROM gate_runs") == [("s1", "green")]
    hooks = rows(project, "SELECT hook, outcome FROM heartbeats ORDER BY id")
    assert hooks == [("session-start", "ok"), ("gate", "ok")]
    assert rows(project, "SELECT count(*) FROM novelty WHERE session_id = 's1'") == [(1,)]
    spans = [r[0] for r in rows(project, "SELECT name FROM spans")]
    assert "memhealth.hook session-start" in spans and "probe ingest_freshness" in spans


def test_with_the_gate_off_session_start_skips_it_and_still_records_its_heartbeat(project):
    run = run_hook("session-start", payload("SessionStart", project, source="startup"), project,
                   env=clean_env(MEMHEALTH_GATE_MODE="off"))
    assert "MEMORY-HEALTH" not in run.context()
    assert rows(project, "SELECT count(*) FROM gate_runs") == [(0,)]
    assert rows(project, "SELECT hook, outcome FROM heartbeats") == [("session-start", "ok")]


def test_gate_has_help_text():
    proc = run_cli("gate", "--help")
    assert proc.returncode == 0 and "--json" in proc.stdout and "exit" in proc.stdout.lower()
