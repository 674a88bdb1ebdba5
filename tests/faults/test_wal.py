"""A WAL deleted under open connections: SQLite refuses new connections (disk I/O error)
while rows committed since the last checkpoint live only in the deleted file a running
process still holds. The hook records `wal_deleted` (not a generic I/O error), the gate
names the process and the command that puts the file back, and after that command
nothing committed is lost."""

from __future__ import annotations

import json
import os
import re
import subprocess

from tests.conftest import payload, rows, run_cli, run_hook
from tests.faults.helpers import TIMEOUTS, check, db_path, gate, heartbeats, wait_for
from tests.telemetry.test_serve import ServeProcess


def test_a_deleted_wal_is_named_and_its_fix_loses_nothing(project):
    app = ServeProcess(project, "--no-export")  # serve's probe keeps a connection open, as in use
    try:
        wait_for(lambda: json.loads(app.get("/healthz")[1])["probe"]["runs"] >= 1, what="serve's first probe")
        for i in range(5):
            run = run_hook("prompt", payload("prompt", project, prompt=f"thanks {i}"), cwd=str(project))
            assert run.returncode == 0 and run.stderr == b""
        assert os.path.getsize(db_path(project) + "-wal") > 0  # the rows live in the WAL
        os.unlink(db_path(project) + "-wal")

        run = run_hook("prompt", payload("prompt", project, prompt="after"), cwd=str(project))
        assert run.returncode == 0 and run.seconds < TIMEOUTS["prompt"]
        assert b"wal was deleted" in run.stderr.lower() and b"recorded in" in run.stderr
        out = run_cli("gate", cwd=str(project))
        assert out.returncode == 1 and "wal was deleted while process" in out.stdout.lower()
        cmd = re.search(r"`(cp /proc/\d+/fd/\d+ \S+-wal)`", out.stdout)
        assert cmd, out.stdout
        subprocess.run(cmd.group(1), shell=True, check=True)  # the FIX, as printed
        verdict = gate(project)
    finally:
        app.kill()
    prompts = [h[:3] for h in heartbeats(project, "prompt")]
    assert prompts[:5] == [("prompt", "ok", None)] * 5  # nothing committed was lost
    assert prompts[5] == ("prompt", "error", "wal_deleted")
    assert len(rows(project, "SELECT id FROM decisions")) == 6
    assert "wal_deleted" in check(verdict, "hook_heartbeats")["detail"]


def test_a_deleted_shm_under_a_holder_is_named_and_loses_nothing(project):
    """A process holding the database keeps the deleted -shm; a new connection would build a
    second wal-index beside it, and whichever closes last checkpoints from its own view: the
    rows of the other vanish. So no connection opens while that holder lives: the hooks spill,
    the gate names the holder, and once it exits every row lands."""
    import sys

    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
            f"c = sqlite3.connect({db_path(project)!r}, isolation_level=None)\n"
            "c.execute('SELECT count(*) FROM heartbeats').fetchone()\nprint('open', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        assert holder.stdout.readline().strip() == b"open"
        for i in range(3):
            assert run_hook("prompt", payload("prompt", project, prompt=f"before {i}"), cwd=str(project)).returncode == 0
        os.unlink(db_path(project) + "-shm")
        for i in range(5):
            run = run_hook("prompt", payload("prompt", project, prompt=f"after {i}"), cwd=str(project))
            assert run.returncode == 0 and run.seconds < TIMEOUTS["prompt"]
            assert b"-shm was deleted" in run.stderr and b"recorded in" in run.stderr, run.stderr
        verdict = gate(project)
        assert verdict["exit"] == 1
        red = verdict["checks"][0]
        assert f"process {holder.pid}" in red["detail"] and "-shm was deleted" in red["detail"], red
        assert f"kill {holder.pid}" in red["fix"]
        holder.stdin.close()  # stand-in for following the fix: the holder exits
        holder.wait(10)
        assert not os.path.lexists(f"/proc/{holder.pid}")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    verdict = gate(project)
    prompts = [h[:2] for h in heartbeats(project, "prompt")]
    assert len(prompts) == 8 and prompts[:3] == [("prompt", "ok")] * 3, prompts
    assert len(rows(project, "SELECT id FROM decisions")) == 8
    assert "shm_deleted" in check(verdict, "hook_heartbeats")["detail"]
