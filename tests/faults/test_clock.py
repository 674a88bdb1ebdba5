"""Clock skew: rows a hook wrote while the clock ran a year ahead must not make
ingest_freshness RED "365 d behind" forever, and a future-dated hook that was killed is
still reaped; the skew is its own finding, with its fix."""

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
    assert hb["status"] == "note" and "clock skew: 2 heartbeat(s)" in hb["detail"]
    assert "timedatectl" in hb["detail"]
    assert verdict["exit"] == 0, json.dumps(verdict)[:2000]
