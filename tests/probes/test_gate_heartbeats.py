"""The heartbeat check against real hook subprocesses: idle is not dead, a hook that stopped
firing across a session boundary is RED, a killed hook is RED, a failed hook is RED."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import REPO, clean_env, payload, rows, run_cli, run_hook


def _prompt_line(text: str) -> str:
    return json.dumps({"type": "user", "sessionId": "x", "uuid": os.urandom(4).hex(),
                       "message": {"role": "user", "content": text}}) + "\n"


def _session_start(project, sid: str, transcript) -> str:
    run = run_hook("session-start", payload("SessionStart", project, session_id=sid,
                                            transcript_path=str(transcript), source="startup"), project)
    assert run.returncode == 0, run.stderr
    return run.context()


def _heartbeat_line(context: str) -> str:
    return next((line for line in context.splitlines() if "hook_heartbeats" in line), "")


def test_an_idle_project_with_no_sessions_is_green(project):
    proc = run_cli("gate", "--json", "--project", str(project))
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "hook_heartbeats")
    assert check["status"] == "green" and "idle" in check["detail"]


def test_a_prompt_hook_that_left_no_rows_while_the_transcript_grew_is_red(project, tmp_path):
    transcript = tmp_path / "s-one.jsonl"
    transcript.write_text(json.dumps({"type": "summary", "summary": "start"}) + "\n")
    _session_start(project, "s-one", transcript)
    with open(transcript, "a") as fh:  # Claude Code wrote two prompts; the prompt hook never ran
        fh.write(_prompt_line("why does the WAL checkpoint stall?"))
        fh.write(_prompt_line("<local-command-stdout>ok</local-command-stdout>"))
        fh.write(_prompt_line("fix it"))
    context = _session_start(project, "s-two", tmp_path / "s-two.jsonl")
    line = _heartbeat_line(context)
    assert line.startswith("  RED hook_heartbeats: prompt hook left no rows in session s-one")
    assert "gained 2 prompt(s)" in line and "FIX:" in line


def test_prompts_the_prompt_hook_saw_keep_the_boundary_green(project, tmp_path):
    transcript = tmp_path / "s-one.jsonl"
    transcript.write_text("")
    _session_start(project, "s-one", transcript)
    for text in ("why does the WAL checkpoint stall?", "fix it"):
        with open(transcript, "a") as fh:
            fh.write(_prompt_line(text))
        run_hook("prompt", payload("UserPromptSubmit", project, session_id="s-one", prompt=text), project)
    context = _session_start(project, "s-two", tmp_path / "s-two.jsonl")
    assert context.startswith("MEMORY-HEALTH: ")
    assert _heartbeat_line(context) == ""  # green checks print no line
    proc = run_cli("gate", "--json", "--project", str(project))
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "hook_heartbeats")
    assert check["status"] == "green"
    # both prompts the transcript gained were seen by the prompt hook: 2 session starts + 2
    assert check["detail"].startswith("7 hooks wired; 4 runs in ")
    assert check["detail"].endswith("latest all ok")
    assert rows(project, "SELECT count(*) FROM heartbeats WHERE hook = 'prompt' AND outcome = 'ok'") == [(2,)]


def test_a_hook_killed_mid_run_is_reported_as_killed_and_red(project):
    script = ("import sys, time; from memory_core.store.db import connect; from memory_core.outbox import heartbeat\n"
              "conn = connect(sys.argv[1])\n"
              "heartbeat.start(conn, 'prompt', 's1', started_ns=time.time_ns() - 5_000_000_000)\n"
              "print('started', flush=True); time.sleep(60)\n")
    db = os.path.join(str(project), ".memhealth", "memory.db")
    proc = subprocess.Popen([sys.executable, "-c", script, db], cwd=REPO, stdout=subprocess.PIPE,
                            env=clean_env(PYTHONPATH=REPO))
    try:
        assert proc.stdout.readline().strip() == b"started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    result = run_cli("gate", "--project", str(project))
    assert result.returncode == 1
    assert "  RED hook_heartbeats: prompt: last run (5 s ago) was killed (started, never completed)" in result.stdout
    assert rows(project, "SELECT outcome FROM heartbeats WHERE hook = 'prompt'") == [("killed",)]


def test_a_hook_whose_last_run_failed_is_red_with_its_reason(project):
    run_hook("prompt", b"{not json", project, env=clean_env(CLAUDE_PROJECT_DIR=str(project)))
    result = run_cli("gate", "--project", str(project))
    line = _heartbeat_line(result.stdout)
    assert "prompt: last run" in line and "failed: malformed_json" in line


def test_rows_the_database_could_not_take_are_red(project):
    spill = os.path.join(str(project), ".memhealth", "spill.ndjson")
    with open(spill, "w") as fh:
        fh.write(json.dumps({"kind": "heartbeat", "hook": "prompt", "started_ns": time.time_ns(),
                             "ended_ns": time.time_ns(), "outcome": "error", "reason": "db_locked"}) + "\n")
    db = os.path.join(str(project), ".memhealth", "memory.db")
    from memory_core.store.db import sqlite3  # the same library: POSIX locks are per process

    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the store stays locked: the spill cannot drain
    try:
        from probes import heartbeats
        from tests.support.gate_helpers import evidence, open_store

        conn = open_store(project)
        conn.execute("PRAGMA busy_timeout = 50")
        r = heartbeats.hook_heartbeats(evidence(project, conn, now=time.time()))
        conn.close()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert r.status == "red" and "1 row(s) in spill.ndjson" in r.detail


def test_hooks_wired_to_a_missing_interpreter_are_red_and_named(project, tmp_path):
    """A deleted or moved virtualenv: every hook exits 127 before memhealth runs, so no
    heartbeat is ever written and the rows alone look idle. The gate reads the commands."""
    settings = project / ".claude" / "settings.local.json"
    text = settings.read_text()
    launcher = json.loads(text)["hooks"]["Stop"][0]["hooks"][0]["command"].rsplit(" hook ", 1)[0]
    gone = str(tmp_path / "gone-venv" / "bin" / "memhealth")
    settings.write_text(text.replace(launcher, gone))
    proc = run_cli("gate", "--json", "--project", str(project))
    assert proc.returncode == 1, proc.stdout
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "hook_heartbeats")
    assert check["status"] == "red" and gone in check["detail"], check
    assert "memhealth init" in check["fix"]
    settings.write_text(text)  # put back: the same project is green again
    check = next(c for c in json.loads(run_cli("gate", "--json", "--project", str(project)).stdout)["checks"]
                 if c["name"] == "hook_heartbeats")
    assert check["status"] == "green", check
