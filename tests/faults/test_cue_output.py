"""A cue is delivered when its text was written to Claude Code, not when its row committed.

A pre-tool hook killed after the cue step committed but before its stdout was written (here:
stdout is a pipe nobody reads, already full, so the write blocks) must not leave the cue
deduped: the next touch of the same path delivers it."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess

from tests.conftest import clean_env, memhealth_cmd, payload, rows, run_hook
from tests.faults.helpers import wait_for
from tests.memory_core.items.test_cues import mem, wal_project  # noqa: F401  (the fixture)


def _touch(project) -> dict:
    return payload("PreToolUse", project, session_id="s1", tool_name="Read",
                   tool_input={"file_path": str(project / "src" / "storage" / "wal.py")})


def test_a_pre_tool_hook_killed_before_its_output_leaves_the_cue_to_the_next_touch(wal_project):  # noqa: F811
    project = wal_project
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, os.O_NONBLOCK)
    try:  # fill the pipe: the hook's write of its context blocks
        while True:
            os.write(write_end, b"x" * 65536)
    except BlockingIOError:
        pass
    fcntl.fcntl(write_end, fcntl.F_SETFL, 0)
    proc = subprocess.Popen(memhealth_cmd() + ["hook", "pre-tool"], stdin=subprocess.PIPE, stdout=write_end,
                            stderr=subprocess.PIPE, cwd=str(project), env=clean_env())
    os.close(write_end)
    proc.stdin.write(json.dumps(_touch(project)).encode())
    proc.stdin.close()
    try:
        wait_for(lambda: rows(project, "SELECT count(*) FROM cue_deliveries")[0][0] > 0, timeout=20,
                 what="the cue step's commit")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        os.close(read_end)
    run = run_hook("pre-tool", _touch(project), cwd=str(project))
    assert run.returncode == 0 and run.stdout, run.stderr
    assert "wal-checkpoint-stall" in run.context()  # delivered now, not deduped
    # and once it was written, the next touch is deduped as before
    again = run_hook("pre-tool", _touch(project), cwd=str(project))
    assert again.returncode == 0 and b"wal-checkpoint-stall" not in again.stdout
    reasons = [r for (r,) in rows(project, "SELECT reason FROM cue_audit WHERE outcome = 'skipped' ORDER BY id")]
    assert "deduped" in reasons
