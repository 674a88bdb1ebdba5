"""Clock skew: rows a hook wrote while the clock ran a year ahead must not make
ingest_freshness RED "365 d behind" forever, and a future-dated hook that was killed is
still reaped; the skew is its own finding, with its fix. A hook's latest run is the row
written last, so no clock, behind or ahead, turns a failure into "latest ok"."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from memory_core.store.db import sqlite3
from tests.conftest import payload, run_cli, run_hook
from tests.faults.helpers import check, db_path, gate, heartbeats

YEAR_NS = 365 * 86400 * 10**9


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    return proc.pid


def test_future_dated_heartbeats_are_clamped_reaped_and_reported(project):
    (project / "README.md").write_text("# notes\n\nthe retry budget lives in the client\n")
    assert run_cli("ingest", cwd=str(project)).returncode == 0
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    # what hooks leave while the clock runs a year ahead: a completed prompt, a killed stop
    future = time.time_ns() + YEAR_NS
    conn = sqlite3.connect(db_path(project), isolation_level=None)
    conn.execute("INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns, ended_ns, outcome) "
                 "VALUES ('prompt', 'skewed', 1, 'f1', ?, ?, 'ok')", (future, future + 10**7))
    conn.execute("INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) "
                 "VALUES ('stop', 'skewed', ?, 'f2', ?)", (_dead_pid(), future))
    conn.close()

    verdict = gate(project)
    fresh = check(verdict, "ingest_freshness")
    assert fresh["status"] == "green", fresh
    assert ("stop", "killed", "killed") in [h[:3] for h in heartbeats(project)]
    hb = check(verdict, "hook_heartbeats")
    # the killed stop is its latest run, whatever its clock said: RED, with the skew beside it
    assert hb["status"] == "red" and "stop: last run" in hb["detail"] and "killed" in hb["detail"]
    assert "clock skew: 2 heartbeat(s)" in hb["detail"] and "timedatectl" in hb["detail"]
    assert verdict["exit"] == 1, json.dumps(verdict)[:2000]


SKEWS = {"-10 min": -600 * 10**9, "-3 d": -3 * 86400 * 10**9, "-1 y": -YEAR_NS, "+1 h": 3600 * 10**9,
         "+1 y": YEAR_NS}


def _fresh(tmp_path, name):
    root = tmp_path / name.replace(" ", "")
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    assert run_hook("prompt", payload("prompt", root, prompt="thanks"), cwd=str(root)).returncode == 0
    return root


def test_a_failing_hook_written_under_a_skewed_clock_is_still_the_latest_run(tmp_path):
    """The latest run is the one written last, whatever its clock said."""
    for name, offset in SKEWS.items():
        root = _fresh(tmp_path, name)
        at = time.time_ns() + offset
        conn = sqlite3.connect(db_path(root), isolation_level=None)
        conn.execute("INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns, ended_ns, outcome, "
                     "reason, detail) VALUES ('prompt', 'skewed', 1, 't1', ?, ?, 'error', 'exception', "
                     "'RuntimeError: boom')", (at, at + 10**7))
        conn.close()
        verdict = gate(root)
        hb = check(verdict, "hook_heartbeats")
        assert verdict["exit"] == 1 and hb["status"] == "red", (name, hb)
        assert "prompt: last run" in hb["detail"] and "failed: exception" in hb["detail"], (name, hb)
        # its next good run clears it, as the FIX says
        assert run_hook("prompt", payload("prompt", root, prompt="thanks"), cwd=str(root)).returncode == 0
        assert check(gate(root), "hook_heartbeats")["status"] != "red", name


def test_a_hook_killed_under_a_clock_running_ahead_is_red_not_only_a_skew_note(tmp_path):
    for name in ("+1 h", "+1 y"):
        root = _fresh(tmp_path, name)
        conn = sqlite3.connect(db_path(root), isolation_level=None)
        conn.execute("INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) "
                     "VALUES ('prompt', 'skewed', ?, 't2', ?)", (_dead_pid(), time.time_ns() + SKEWS[name]))
        conn.close()
        verdict = gate(root)
        hb = check(verdict, "hook_heartbeats")
        assert verdict["exit"] == 1 and hb["status"] == "red", (name, hb)
        assert "prompt: last run" in hb["detail"] and "killed" in hb["detail"], (name, hb)
        assert "clock skew" in hb["detail"] and "in the future" in hb["detail"], (name, hb)
