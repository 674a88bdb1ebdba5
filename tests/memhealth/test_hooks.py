"""Hooks run as real subprocesses with JSON on stdin: they always exit 0, fast, and every
invocation leaves a heartbeat naming what went wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import REPO, clean_env, memhealth_cmd, payload, rows, run_hook

HOOK_EVENTS = ["session-start", "prompt", "pre-tool", "post-tool", "pre-compact", "stop", "session-end"]


def last_heartbeat(project):
    # the gate leaves its own heartbeat inside session-start; this asks about the hook's
    return rows(project, "SELECT hook, outcome, reason, detail, ended_ns IS NOT NULL FROM heartbeats "
                         "WHERE hook != 'gate' ORDER BY id DESC LIMIT 1")[0]


@pytest.mark.parametrize("event", HOOK_EVENTS)
def test_every_event_exits_zero_and_records_an_ok_heartbeat(project, event):
    extra = {"prompt": "hello there"} if event == "prompt" else {}
    run = run_hook(event, payload(event, project, **extra), cwd=str(project))
    assert run.returncode == 0
    assert run.stderr == b""
    hook, outcome, reason, _detail, completed = last_heartbeat(project)
    assert (hook, outcome, reason, completed) == (event, "ok", None, 1)


_REAL = sorted(f[:-5] for f in os.listdir(os.path.join(REPO, "tests", "fixtures", "payloads"))
               if f.endswith(".json"))
_HOOK_OF = {"session_start": "session-start", "user_prompt_submit": "prompt", "pre_tool_use": "pre-tool",
            "post_tool_use": "post-tool", "pre_compact": "pre-compact", "stop": "stop", "session_end": "session-end"}


@pytest.mark.parametrize("name", _REAL)
def test_every_payload_the_real_cli_sent_is_handled_as_ok(project, tmp_path, name):
    """tests/fixtures/payloads: the exact shapes CLI 2.1.332 sent (PostToolUse for Read has a
    `tool_response` object, Stop has `last_assistant_message`, ...), captured by tests/e2e."""
    from tests.support.payloads import real_payload

    event = next(hook for prefix, hook in _HOOK_OF.items() if name.startswith(prefix))
    body = real_payload(name, project, home=tmp_path / "home")
    run = run_hook(event, body, cwd=str(project))
    assert (run.returncode, run.stderr) == (0, b"")
    assert last_heartbeat(project)[:3] == (event, "ok", None)
    assert rows(project, "SELECT session_id FROM heartbeats WHERE hook = ?", (event,)) == [(body["session_id"],)]
    if event in ("session-start", "prompt", "pre-tool", "post-tool") and run.stdout:
        assert json.loads(run.stdout)["hookSpecificOutput"]["hookEventName"] == body["hook_event_name"]


@pytest.mark.parametrize("stdin, reason", [
    (b"", "empty_stdin"),
    (b"   \n", "empty_stdin"),
    (b'{"prompt": "unterminated', "malformed_json"),
    (b"[1, 2, 3]", "not_object"),
    (b'"just a string"', "not_object"),
    (b"\xff\xfe{not json", "malformed_json"),
])
def test_unusable_stdin_is_recorded_as_an_error_with_its_cause(project, stdin, reason):
    run = run_hook("prompt", stdin, cwd=str(project))
    assert run.returncode == 0
    assert run.stdout == b""
    assert len(run.stderr.splitlines()) <= 1 and b"Traceback" not in run.stderr
    hook, outcome, got_reason, detail, completed = last_heartbeat(project)
    # the input's own fault, not "stdin_timeout": stdin was read to its EOF, not to the deadline
    assert (hook, outcome, got_reason, completed) == ("prompt", "error", reason, 1)
    assert detail


def test_invalid_utf8_in_the_prompt_is_replaced_recorded_and_still_decided(project):
    body = json.dumps(payload("prompt", project, prompt="PLACEHOLDER")).encode()
    body = body.replace(b"PLACEHOLDER", b"caf\xe9 \xff\xfe should we pivot")
    run = run_hook("prompt", body, cwd=str(project))
    assert run.returncode == 0
    assert last_heartbeat(project)[:3] == ("prompt", "error", "invalid_utf8")
    # the prompt still got its decision row: the denominator stays complete
    assert rows(project, "SELECT outcome, intent FROM decisions") == [("below_relevance", "decision")]


@pytest.mark.parametrize("prompt", [
    "nul \x00 in the middle \x00\x00",
    "bell \x07 escape \x1b[31m red \x1b[0m and DEL \x7f",
    'unbalanced "quotes and \'apostrophes and "" AND OR NOT NEAR( * ^',
    "\ud800 lone surrogate",
    "emoji 🧠 and 中文 and عربى",
])
def test_hostile_prompts_are_cleaned_and_decided_without_error(project, prompt):
    run = run_hook("prompt", payload("prompt", project, prompt=prompt), cwd=str(project))
    assert run.returncode == 0
    assert last_heartbeat(project)[:3] == ("prompt", "ok", None)
    assert len(rows(project, "SELECT id FROM decisions")) == 1


def test_a_two_megabyte_prompt_is_decided_whole(project):
    """Its wall time is benchmarks/bench_long_input.py's (a ratio to a short prompt's floor)."""
    prompt = ("should we rebuild the ingest pipeline " * 60000)[: 2 * 1024 * 1024]
    run = run_hook("prompt", payload("prompt", project, prompt=prompt), cwd=str(project))
    assert run.returncode == 0
    assert last_heartbeat(project)[:3] == ("prompt", "ok", None)
    (length,) = rows(project, "SELECT prompt_len FROM decisions")[0]
    assert length == len(prompt)


def test_a_closed_stdout_pipe_is_absorbed_and_recorded(project):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read what the hook prints
    try:
        run = run_hook("session-start", payload("session-start", project, source="startup"),
                       cwd=str(project), stdout=write_end)
    finally:
        os.close(write_end)
    assert run.returncode == 0
    assert b"Traceback" not in run.stderr
    hook, outcome, reason, _detail, _ = last_heartbeat(project)
    assert (hook, outcome, reason) == ("session-start", "error", "stdout_closed")


def test_a_directory_without_memhealth_is_a_silent_no_op(tmp_path):
    run = run_hook("prompt", payload("prompt", tmp_path, prompt="should we build it"), cwd=str(tmp_path))
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert os.listdir(tmp_path) == []


def test_the_project_is_found_from_the_payload_cwd_not_the_process_cwd(project, tmp_path):
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    run = run_hook("stop", payload("stop", sub), cwd=str(tmp_path))
    assert run.returncode == 0
    assert last_heartbeat(project)[:2] == ("stop", "ok")


def _spilled(project):
    path = project / ".memhealth" / "spill.ndjson"
    if not path.exists():
        return []
    return [rec for rec in map(json.loads, path.read_text().splitlines()) if rec["kind"] == "heartbeat"]


def corrupt_store(project) -> None:
    db = project / ".memhealth" / "memory.db"
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    db.write_bytes(b"this is not a database, " * 500)


def test_a_corrupt_database_is_recorded_in_the_spill_file(project):
    corrupt_store(project)
    run = run_hook("prompt", payload("prompt", project, prompt="hi"), cwd=str(project))
    assert run.returncode == 0
    assert len(run.stderr.splitlines()) == 1 and b"Traceback" not in run.stderr
    (spilled,) = _spilled(project)
    assert spilled["hook"] == "prompt" and spilled["outcome"] == "error"
    assert spilled["reason"] == "db_corrupt"


def test_a_read_only_database_is_recorded_and_drained_later(project):
    db = project / ".memhealth" / "memory.db"
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
            pytest.skip("root ignores file modes and chattr is unavailable on this filesystem")
        undo = ["chattr", "-i", str(db)]
    else:
        os.chmod(db, 0o444)
        undo = None
    try:
        run = run_hook("prompt", payload("prompt", project, prompt="hi"), cwd=str(project))
    finally:
        if undo:
            subprocess.run(undo, check=True)
        os.chmod(db, 0o600)
    assert run.returncode == 0
    (spilled,) = _spilled(project)
    assert spilled["reason"] == "db_readonly"
    # the next invocation that can write the store drains the spill: nothing is lost
    run_hook("stop", payload("stop", project), cwd=str(project))
    assert _spilled(project) == []
    assert ("prompt", "error", "db_readonly") in rows(project, "SELECT hook, outcome, reason FROM heartbeats")


def test_a_database_locked_past_the_busy_timeout_is_recorded_not_waited_on(project):
    db = str(project / ".memhealth" / "memory.db")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({db!r}, isolation_level=None)\n"
         "c.execute('BEGIN EXCLUSIVE')\n"
         "print('locked', flush=True)\n"
         "sys.stdin.read()\n"],  # holds the lock until the test closes its stdin
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        run = run_hook("prompt", payload("prompt", project, prompt="should we pivot"), cwd=str(project),
                       env=clean_env(MEMHEALTH_HOOKS_BUSY_TIMEOUT_S="0.5"))
        # the hook came back while the lock was still held: it gave up on the lock after its
        # busy timeout (a hook that waited for it would only end at run_hook's timeout)
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait(5)
    assert run.returncode == 0
    (spilled,) = _spilled(project)
    assert spilled["reason"] == "db_locked"


def test_sixteen_concurrent_hook_processes_lose_no_heartbeat_and_never_lock_out(project):
    per_worker, workers = 50, 16
    failures = []

    def worker(n):
        for i in range(per_worker):
            event = ("prompt", "pre-tool", "post-tool", "stop")[i % 4]
            extra = {"prompt": f"worker {n} prompt {i}"} if event == "prompt" else {}
            run = run_hook(event, payload(event, project, session_id=f"s{n}", **extra), cwd=str(project),
                           timeout=60)
            if run.returncode != 0 or run.stderr:
                failures.append((n, i, run.returncode, run.stderr[:200]))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert failures == []
    assert _spilled(project) == []
    counts = dict(rows(project, "SELECT outcome, count(*) FROM heartbeats GROUP BY outcome"))
    assert counts == {"ok": per_worker * workers}
    assert rows(project, "SELECT count(*) FROM heartbeats WHERE detail LIKE '%locked%'") == [(0,)]
    (prompts,) = rows(project, "SELECT count(*) FROM decisions")[0]
    assert prompts == workers * (per_worker // 4 + (1 if per_worker % 4 else 0))


def test_a_hook_killed_mid_work_is_counted_as_killed(project):
    """Deterministic: the session-start hook is held inside its work by an embedding server
    that takes the request and never answers; it is killed once the server has the request
    (so its started row is written and its completion cannot be)."""
    from memory_core.outbox.heartbeat import reap_killed
    from memory_core.store.db import connect
    from tests.support.ollama_standin import OllamaStandin

    with OllamaStandin("hung", dim=8, hang_s=120) as ollama:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_DIM="8",
                        MEMHEALTH_EMBEDDING_TIMEOUT_S="60")
        proc = subprocess.Popen(memhealth_cmd() + ["hook", "session-start"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=str(project), env=env)
        try:
            proc.stdin.write(json.dumps(payload("SessionStart", project, source="startup")).encode())
            proc.stdin.close()
            deadline = time.monotonic() + 30
            while "/api/embed" not in ollama.paths() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "/api/embed" in ollama.paths(), "the hook never reached its embedding probe"
            assert proc.poll() is None  # still waiting on the server
        finally:
            proc.kill()  # SIGKILL: no handler runs, nothing more is written
            proc.wait(10)
    db = str(project / ".memhealth" / "memory.db")
    conn = connect(db)
    # the hook's own row and the gate's (it runs inside session start) were both cut off
    assert reap_killed(conn, killed_after_s=900) == 2
    outcomes = conn.execute("SELECT hook, outcome FROM heartbeats WHERE pid = ? ORDER BY hook",
                            (proc.pid,)).fetchall()
    assert outcomes == [("gate", "killed"), ("session-start", "killed")]
    (value,) = conn.execute(
        "SELECT value FROM rollups WHERE metric = 'memhealth_hook_invocations_total' "
        "AND labels = ?", ('{"hook":"session-start","outcome":"killed"}',)).fetchone()
    conn.close()
    assert value == 1


def test_context_output_is_hook_specific_json_and_never_over_ten_thousand_characters(project):
    run = run_hook("session-start", payload("session-start", project, source="startup"), cwd=str(project))
    body = json.loads(run.stdout)
    assert body["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert 0 < len(run.context()) <= 10_000


def test_a_corrupt_store_is_a_red_verdict_at_session_start_and_in_the_gate(project):
    from tests.conftest import run_cli

    corrupt_store(project)
    run = run_hook("session-start", payload("session-start", project, source="startup"), cwd=str(project))
    assert run.returncode == 0
    lines = run.context().splitlines()
    assert lines[0] == "MEMORY-HEALTH: 0/1 GREEN (1 RED)"
    assert lines[1].startswith("  RED store: database is corrupt") and "FIX: move .memhealth/memory.db aside" in lines[1]
    gate = run_cli("gate", "--project", str(project))
    assert gate.returncode == 1 and gate.stdout.splitlines()[0] == "MEMORY-HEALTH: 0/1 GREEN (1 RED)"
