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
import sys

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


def test_a_deleted_wal_under_a_plain_reader_is_named_not_a_disk_io_error(project):
    """The fault campaign's run: a process that only reads keeps the WAL open; with the -wal
    deleted, a hook's connect succeeded and its first write failed "disk I/O error" (db_io),
    and every gate check raised OperationalError. Connect now sees the WAL index without its
    WAL and names the holder with the fix that puts it back; followed as printed (and the
    holder then exiting on its own), no row is lost."""
    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
            f"c = sqlite3.connect({db_path(project)!r}, isolation_level=None)\n"
            "c.execute('SELECT count(*) FROM heartbeats').fetchall()\nprint('open', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"open"
        for i in range(2):
            assert run_hook("prompt", payload("prompt", project, prompt=f"before {i}"), cwd=str(project)).returncode == 0
        assert os.path.getsize(db_path(project) + "-wal") > 0
        os.unlink(db_path(project) + "-wal")
        run = run_hook("stop", payload("stop", project), cwd=str(project))
        assert run.returncode == 0 and b"wal was deleted" in run.stderr.lower() and b"recorded in" in run.stderr, run.stderr
        verdict = gate(project)
        red = verdict["checks"][0]
        assert verdict["exit"] == 1 and red["status"] == "red" and "check raised" not in json.dumps(verdict), verdict
        assert f"process {holder.pid}" in red["detail"] and "-wal was deleted" in red["detail"], red
        cmd = re.search(r"`(cp /proc/\d+/fd/\d+ \S+-wal)`", red["fix"])
        assert cmd, red
        subprocess.run(cmd.group(1), shell=True, check=True)  # the FIX, as printed
        gate(project)  # drains the spilled stop row beside the holder
    finally:
        holder.stdin.close()  # the holder exits on its own, as a finished process does
        holder.wait(10)
    verdict = gate(project)
    hooks = [h[:3] for h in heartbeats(project)]
    assert hooks[:2] == [("prompt", "ok", None)] * 2, hooks
    assert ("stop", "error", "wal_deleted") in hooks, hooks
    assert len(rows(project, "SELECT id FROM decisions")) == 2
