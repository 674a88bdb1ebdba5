"""Hostile stdin and a closed stdout: each hook exits 0 within its timeout, records the
failure with its reason, and the gate names it; a prompt still gets its decision row."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import payload, rows, run_hook
from tests.faults.helpers import TIMEOUTS, check, gate, heartbeats


@pytest.mark.parametrize("name, stdin, reason", [
    ("binary", os.urandom(4096).replace(b"{", b"("), "malformed_json"),
    ("deeply nested", b"[" * 200_000 + b"]" * 200_000, "malformed_json"),
    ("an array", b"[1, 2, 3]", "not_object"),
    ("empty", b"", "empty_stdin"),
])
def test_hostile_stdin_is_recorded_with_its_reason_and_named_by_the_gate(project, name, stdin, reason):
    run = run_hook("prompt", stdin, cwd=str(project))
    assert run.returncode == 0 and run.seconds < TIMEOUTS["prompt"] and run.stdout == b""
    assert len(run.stderr.splitlines()) == 1 and b"Traceback" not in run.stderr
    assert heartbeats(project, "prompt")[-1][:3] == ("prompt", "error", reason)
    assert rows(project, "SELECT outcome FROM decisions") == [("error",)]  # the denominator holds
    hb = check(gate(project), "hook_heartbeats")
    assert "prompt: last run" in hb["detail"] and reason in hb["detail"]


def test_a_20_mb_prompt_is_cut_decided_and_recorded(project):
    body = json.dumps(payload("prompt", project, prompt="x " * (10 * 1024 * 1024))).encode()
    run = run_hook("prompt", body, cwd=str(project))
    assert run.returncode == 0 and run.seconds < TIMEOUTS["prompt"]
    assert len(heartbeats(project, "prompt")) == 1
    assert len(rows(project, "SELECT id FROM decisions")) == 1


def test_a_closed_stdout_is_recorded_and_named(project):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = run_hook("session-start", payload("SessionStart", project, source="startup"), cwd=str(project),
                       stdout=write_end)
    finally:
        os.close(write_end)
    assert run.returncode == 0 and run.seconds < TIMEOUTS["session-start"]
    assert heartbeats(project, "session-start")[-1][:3] == ("session-start", "error", "stdout_closed")
    hb = check(gate(project), "hook_heartbeats")
    assert "session-start: last run" in hb["detail"] and "stdout_closed" in hb["detail"]
