"""The capture worker is a hook of its own for the gate: a killed worker is RED, a worker
that meets a lock held past its busy timeout leaves a recorded failure (never nothing), and a
FIFO where a docs file should be is refused at once instead of hanging the worker or
`memhealth ingest --budget-s 2`."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from memory_core.store.db import sqlite3
from tests.conftest import clean_env, rows, run_cli
from tests.faults.helpers import check, db_path, gate, heartbeats, lock_held


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    return proc.pid


def test_a_killed_capture_worker_is_red(project):
    conn = sqlite3.connect(db_path(project), isolation_level=None)
    conn.execute("INSERT INTO heartbeats(hook, pid, trace_id, started_ns) VALUES ('capture', ?, 'w1', ?)",
                 (_dead_pid(), time.time_ns() - 10**9))
    conn.close()
    verdict = gate(project)
    hb = check(verdict, "hook_heartbeats")
    assert ("capture", "killed", "killed") in [h[:3] for h in heartbeats(project)]
    assert verdict["exit"] == 1 and hb["status"] == "red" and "capture: last run" in hb["detail"], hb


def test_a_worker_meeting_a_held_lock_leaves_a_recorded_failure(project):
    worker = [sys.executable, "-m", "memhealth.capture_worker", str(project)]
    with lock_held(project):
        done = subprocess.run(worker, cwd=str(project), env=clean_env(), timeout=60, capture_output=True)
    assert done.returncode == 1
    verdict = gate(project)
    assert ("capture", "error", "db_locked") in [h[:3] for h in heartbeats(project)], heartbeats(project)
    hb = check(verdict, "hook_heartbeats")
    assert hb["status"] == "red" and "capture: last run" in hb["detail"] and "db_locked" in hb["detail"], hb


def test_a_fifo_in_place_of_a_docs_file_is_refused_at_once(project):
    (project / "docs").mkdir()
    (project / "docs" / "a.md").write_text("# a\n\nthe retry budget lives in the client\n")
    os.mkfifo(project / "docs" / "x.md")
    # a FIFO nobody writes to: an ingest that opened it would block until run_cli's timeout
    out = run_cli("ingest", "--budget-s", "2", cwd=str(project), timeout=30)
    assert out.returncode == 1, out.stdout + out.stderr
    logged = rows(project, "SELECT path, reason FROM ingest_log WHERE outcome = 'error'")
    assert ("docs/x.md", "not_regular") in logged, logged
    assert rows(project, "SELECT count(*) FROM chunks WHERE path = 'docs/a.md'")[0][0] > 0


def test_a_worker_that_fails_a_file_names_it_with_a_fix_that_clears_it(project):
    """The fault campaign's FIFO run: the worker's RED said "ingest: 1 file(s) failed" with
    "fix what the reason names", and the reason named nothing. It names the file and why."""
    from tests.faults.helpers import follow_fix

    (project / "docs").mkdir()
    os.mkfifo(project / "docs" / "x.md")
    worker = [sys.executable, "-m", "memhealth.capture_worker", str(project)]
    assert subprocess.run(worker, cwd=str(project), env=clean_env(), timeout=60, capture_output=True).returncode == 1
    hb = check(gate(project), "hook_heartbeats")
    assert hb["status"] == "red" and "capture: last run" in hb["detail"], hb
    assert "docs/x.md" in hb["detail"] and "not a regular file" in hb["detail"], hb
    assert "fix what the reason names" not in hb["fix"], hb
    os.unlink(project / "docs" / "x.md")  # the file the detail names, removed as the fix says
    follow_fix(hb["fix"].split(";")[0], project)
    assert check(gate(project), "hook_heartbeats")["status"] != "red"
