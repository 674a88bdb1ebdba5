"""Killed before the heartbeat: a hook SIGKILLed while blocked on a locked database or on a
stdin that never closes leaves a `killed` row once the gate drains the journal, and the
gate says so; a stdin that never closes is recorded, not waited on."""

from __future__ import annotations

import json
import signal

from tests.conftest import payload, run_cli, run_hook
from tests.faults.helpers import (
    TIMEOUTS,
    check,
    finish,
    gate,
    heartbeats,
    journal_has,
    lock_held,
    start_hook,
    wait_for,
)


def _kill(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)  # reaped: its pid is gone, as when Claude Code kills it


def test_killed_while_blocked_on_a_locked_database(project):
    body = json.dumps(payload("prompt", project, prompt="hello")).encode()
    with lock_held(project):
        proc = start_hook("prompt", body, str(project))
        wait_for(lambda: journal_has(project, "prompt"), what="the journal's started line")
        _kill(proc)
    assert heartbeats(project) == []  # nothing reached the database
    verdict = gate(project)
    ((hook, outcome, reason, detail),) = heartbeats(project)
    assert (hook, outcome, reason) == ("prompt", "killed", "killed")
    assert "killed before its heartbeat reached the database" in detail
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and hb["status"] == "red"
    assert "prompt: last run" in hb["detail"] and "was killed before its heartbeat" in hb["detail"]
    assert "fuser .memhealth/memory.db" in hb["fix"]


def test_killed_while_stdin_never_closes(project):
    proc = start_hook("stop", b'{"session_id": "s1", "cwd": ', str(project), close_stdin=False)
    wait_for(lambda: journal_has(project, "stop"), what="the journal's started line")
    _kill(proc)
    verdict = gate(project)
    assert [h[:3] for h in heartbeats(project)] == [("stop", "killed", "killed")]
    assert check(verdict, "hook_heartbeats")["status"] == "red"


def test_a_stdin_that_never_closes_is_recorded_not_waited_on(project):
    body = json.dumps(payload("stop", project)).encode()
    proc = start_hook("stop", body[:20], str(project), close_stdin=False)
    rc, out, err, seconds = finish(proc, TIMEOUTS["stop"])
    proc.stdin.close()
    assert rc == 0 and seconds < TIMEOUTS["stop"] and out == b""
    assert len(err.splitlines()) == 1 and b"stdin_timeout" in err
    ((hook, outcome, reason, detail),) = heartbeats(project)
    assert (hook, outcome, reason) == ("stop", "error", "stdin_timeout")
    assert "20 bytes read" in detail
    hb = check(gate(project), "hook_heartbeats")
    assert "stop: last run" in hb["detail"] and "stdin_timeout" in hb["detail"]
    assert "stdin was never closed" in hb["fix"]


def test_a_whole_payload_on_a_stdin_left_open_is_still_used(project):
    body = json.dumps(payload("prompt", project, prompt="thanks")).encode()
    proc = start_hook("prompt", body, str(project), close_stdin=False)
    rc, _out, _err, seconds = finish(proc, TIMEOUTS["prompt"])
    proc.stdin.close()
    assert rc == 0 and seconds < TIMEOUTS["prompt"]
    assert [h[:3] for h in heartbeats(project)] == [("prompt", "error", "stdin_timeout")]
    from tests.conftest import rows

    assert rows(project, "SELECT outcome, session_id FROM decisions") == [("no_intent", "sess-1")]


def test_killed_on_a_lock_then_report_drains_and_counts_it(project):
    body = json.dumps(payload("prompt", project, prompt="hello")).encode()
    with lock_held(project):
        proc = start_hook("prompt", body, str(project))
        wait_for(lambda: journal_has(project, "prompt"), what="the journal's started line")
        _kill(proc)
    out = run_cli("report", "--json", cwd=str(project))
    assert out.returncode == 0, out.stderr
    killed = json.loads(out.stdout)["killed"]
    assert [(k["hook"], k["count"]) for k in killed] == [("prompt", 1)]
    assert [h[:3] for h in heartbeats(project)] == [("prompt", "killed", "killed")]


def test_a_drainer_killed_mid_drain_leaves_its_claim_to_the_next_drain(project):
    """The journal is claimed by rename before it is read; a drainer that dies holding the
    claim must not take the lines with it."""
    import subprocess
    import sys
    import time

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)
    state = project / ".memhealth"
    line = json.dumps({"hook": "stop", "pid": dead.pid, "trace_id": "t-orphan", "started_ns": time.time_ns()})
    (state / f"journal.ndjson.{dead.pid}.draining").write_text(line + "\n")
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0  # a fresh journal
    gate(project)
    assert ("stop", "killed", "killed") in [h[:3] for h in heartbeats(project)]
    assert not list(state.glob("journal.ndjson.*.draining"))


def test_a_hook_run_from_another_projects_cwd_leaves_no_false_killed_row(project, tmp_path):
    """The started line goes to the project of the hook's cwd before stdin is read; when the
    payload names another project the line is cancelled there, never reaped as killed."""
    other = tmp_path / "other"
    other.mkdir()
    assert run_cli("init", "--project", str(other)).returncode == 0
    run = run_hook("stop", payload("stop", other), cwd=str(project))
    assert run.returncode == 0 and run.stderr == b""
    gate(project)
    gate(other)
    assert heartbeats(project) == []
    assert [h[:2] for h in heartbeats(other)] == [("stop", "ok")]


def test_a_journal_past_its_size_is_drained_by_a_hook(project):
    """Without a gate or serve running, a hook drains the journal once it passes 256 KiB."""
    import time

    # a pid no process has: an exited child's pid can be handed out again on a busy box
    with open("/proc/sys/kernel/pid_max") as fh:
        gone = int(fh.read()) - 1
    from memory_core.outbox.heartbeat import pid_alive

    assert not pid_alive(gone)
    now = time.time_ns()
    lines = [json.dumps({"hook": "stop", "pid": gone, "trace_id": f"old{i}", "started_ns": now - i})
             for i in range(3000)]
    journal = project / ".memhealth" / "journal.ndjson"
    journal.write_text("\n".join(lines) + "\n")
    assert journal.stat().st_size > 256 * 1024
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    # the draining hook's own line is settled by its end line: nothing is left
    assert not journal.exists()
    from tests.conftest import rows

    assert rows(project, "SELECT count(*) FROM heartbeats WHERE outcome = 'killed'") == [(3000,)]


def test_a_symlink_planted_as_the_spill_never_blocks_reaping(project):
    import os

    from tests.faults.helpers import follow_fix

    os.symlink("/nonexistent", project / ".memhealth" / "spill.ndjson")
    proc = start_hook("stop", b'{"session_id": "s1", "cwd": ', str(project), close_stdin=False)
    wait_for(lambda: journal_has(project, "stop"), what="the journal's started line")
    _kill(proc)
    verdict = gate(project)
    assert [h[:3] for h in heartbeats(project)] == [("stop", "killed", "killed")]
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and hb["status"] == "red"
    assert "stop: last run" in hb["detail"] and "spill.ndjson is a symbolic link" in hb["detail"], hb
    follow_fix(hb["fix"].split(" | ")[-1], project)  # the link's fix, as printed
    assert not os.path.lexists(project / ".memhealth" / "spill.ndjson")
    assert "symbolic link" not in check(gate(project), "hook_heartbeats")["detail"]
