"""SessionEnd hands capture to a detached worker; killed work resumes, once, at SessionStart."""

from __future__ import annotations

import json
import os
import signal
import time

from memory_core.records import queue as capture_store
from memory_core.records.extract import extract_lines
from memory_core.store.db import connect
from tests.conftest import clean_env, payload, rows, run_cli, run_hook

SUBJECTS = ("queue", "cache", "index", "ledger", "compactor", "snapshot", "cursor", "shard")


def write_transcript(path, sessions: int = 1, turns: int = 400, pad: int = 0) -> int:
    """A transcript with distinct decisions, dead ends and corrections on known lines; `pad`
    characters of ordinary assistant prose per reply make it large. Returns its size."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(turns):
            subject = f"{SUBJECTS[i % len(SUBJECTS)]} {i}"
            user = {"type": "user", "sessionId": "s-big", "uuid": f"u{i}", "timestamp": "2026-11-30T10:00:00Z",
                    "message": {"role": "user", "content": f"No, don't rename the {subject} module again."}}
            text = (f"We decided to use the bounded {subject} writer instead of the unbounded one. "
                    f"I tried prefetching for the {subject} reader and it was slower. "
                    + ("The benchmark output follows in the log. " * (pad // 42)))
            reply = {"type": "assistant", "sessionId": "s-big", "uuid": f"a{i}", "timestamp": "2026-11-30T10:00:01Z",
                     "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}
            fh.write(json.dumps(user) + "\n" + json.dumps(reply) + "\n")
    return os.path.getsize(path)


def expected(path) -> set:
    """What one uninterrupted pass finds: (line, kind, norm), first occurrence of a statement."""
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")[:-1]
    seen, out = set(), set()
    for c in extract_lines(lines, 1, str(path), {}):
        if c.norm not in seen:
            seen.add(c.norm)
            out.add((c.line, c.kind, c.norm))
    return out


def captured(project) -> set:
    return set(rows(project, "SELECT line, kind, norm FROM capture_candidates"))


def wait_for(predicate, limit_s: float = 60.0, every_s: float = 0.05):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(every_s)
    raise AssertionError(f"condition not met within {limit_s} s")


def work_status(project) -> list[str]:
    return [r[0] for r in rows(project, "SELECT status FROM capture_work ORDER BY id")]


def test_session_end_records_the_boundary_and_the_worker_captures_it(project, tmp_path):
    transcript = tmp_path / "s-big.jsonl"
    size = write_transcript(transcript, turns=20)
    run = run_hook("session-end", payload("SessionEnd", project, session_id="s-big",
                                          transcript_path=str(transcript), reason="exit"), cwd=str(project))
    assert run.returncode == 0 and run.stderr == b""
    # the boundary is durable when the hook returns, whatever the worker has done by then
    work = rows(project, "SELECT session_id, transcript, start_offset, end_offset FROM capture_work")
    assert work == [("s-big", str(transcript), 0, size)]
    wait_for(lambda: work_status(project) == ["done"])
    assert captured(project) == expected(transcript)
    assert len(captured(project)) == 60  # 20 turns x (correction, decision, dead end)
    beats = wait_for(lambda: rows(project, "SELECT outcome, detail FROM heartbeats WHERE hook = 'capture' "
                                           "AND outcome IS NOT NULL"))
    assert beats[0][0] == "ok" and "60 candidate(s) added" in beats[0][1]
    assert rows(project, "SELECT value FROM meta WHERE key = 'capture.pending'") == [("60",)]
    assert rows(project, "SELECT labels, value FROM rollups WHERE metric = 'memhealth_capture_candidates_total' "
                         "ORDER BY labels") == [('{"kind":"correction"}', 20.0), ('{"kind":"dead_end"}', 20.0),
                                                ('{"kind":"decision"}', 20.0)]


def test_a_worker_killed_midway_is_finished_by_the_next_session_start_without_duplicates(project, tmp_path):
    transcript = tmp_path / "s-big.jsonl"
    size = write_transcript(transcript, turns=3000, pad=2000)
    env = clean_env(MEMHEALTH_CAPTURE_BATCH_BYTES=32768)
    run_hook("session-end", payload("SessionEnd", project, session_id="s-big",
                                    transcript_path=str(transcript)), cwd=str(project), env=env)

    def offset() -> int:
        got = rows(project, "SELECT offset FROM watermarks WHERE source = 'capture'")
        return got[0][0] if got else 0

    pid = wait_for(lambda: (rows(project, "SELECT pid FROM leases WHERE name = 'capture'") or [[None]])[0][0],
                   every_s=0.005)
    # freeze the worker, let it run in short slices until it is part-way through, then kill it
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 60
    while offset() == 0 and time.monotonic() < deadline:
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.02)
        os.kill(pid, signal.SIGSTOP)
    midway = offset()
    os.kill(pid, signal.SIGKILL)
    assert 0 < midway < size
    partial = captured(project)
    assert 0 < len(partial) < len(expected(transcript))
    assert work_status(project) == ["pending"]

    start = run_hook("session-start", payload("SessionStart", project, session_id="s-next", source="startup"),
                     cwd=str(project), env=env)
    assert start.returncode == 0
    wait_for(lambda: work_status(project) == ["done"], limit_s=120)
    got = rows(project, "SELECT line, kind, norm FROM capture_candidates")
    assert len(got) == len(set(got))
    assert set(got) == expected(transcript)
    assert partial < set(got)
    resumed = wait_for(lambda: rows(project, "SELECT pid, outcome FROM heartbeats WHERE hook = 'capture' "
                                             "AND outcome = 'ok'"))
    assert resumed[0][0] != pid


def test_one_worker_at_a_time_and_a_dead_holder_frees_the_lease(project, tmp_path):
    from memhealth.config import load

    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript, turns=5)
    cfg = load(str(project / ".memhealth"))["capture"]
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        assert capture_store.record_boundary(conn, "s1", str(transcript)) is not None
        token = capture_store.acquire(conn, 60)  # this test process is the live holder
        held = run_cli("ingest", "--project", str(project))
        assert "holds the lease" in held.stdout
        assert rows(project, "SELECT count(*) FROM capture_candidates") == [(0,)]
        assert work_status(project) == ["pending"]
        capture_store.release(conn, token)
        # a holder whose process is gone does not block anyone, whatever its expiry says
        with conn:
            conn.execute("INSERT INTO leases(name, pid, token, expires_ns) VALUES ('capture', ?, 'x', ?)",
                         (dead_pid(), time.time_ns() + int(3600e9)))
        report = capture_store.run_pending(conn, cfg)
        assert report.stopped is None and report.items_done == 1
        assert sum(report.added.values()) == 15
        # a second run over the same boundary adds nothing
        assert capture_store.record_boundary(conn, "s1", str(transcript)) is None
        again = capture_store.run_pending(conn, cfg)
        assert sum(again.added.values()) == 0 and again.items_done == 0
    finally:
        conn.close()
    assert rows(project, "SELECT count(*), count(DISTINCT norm) FROM capture_candidates") == [(15, 15)]


def dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_rejected_statement_said_again_in_a_later_session_is_not_proposed(project, tmp_path):
    from memhealth.config import load

    cfg = load(str(project / ".memhealth"))["capture"]
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_transcript(first, turns=1)
    write_transcript(second, turns=1)
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        capture_store.record_boundary(conn, "a", str(first))
        capture_store.run_pending(conn, cfg)
        with conn:
            conn.execute("UPDATE capture_candidates SET state = 'rejected'")
        capture_store.record_boundary(conn, "b", str(second))
        report = capture_store.run_pending(conn, cfg)
    finally:
        conn.close()
    assert report.items_done == 1 and report.known == 3 and sum(report.added.values()) == 0
    assert rows(project, "SELECT DISTINCT transcript FROM capture_candidates") == [(str(first),)]


def test_workers_started_together_capture_each_statement_once(project, tmp_path):
    import subprocess
    import sys

    transcript = tmp_path / "s-big.jsonl"
    write_transcript(transcript, turns=600, pad=500)
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        capture_store.record_boundary(conn, "s-big", str(transcript))
    finally:
        conn.close()
    env = clean_env(MEMHEALTH_CAPTURE_BATCH_BYTES=16384)
    workers = [subprocess.Popen([sys.executable, "-m", "memhealth.capture_worker", str(project)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
    codes = [w.wait(120) for w in workers]
    assert codes == [0, 0, 0]
    assert work_status(project) == ["done"]
    got = rows(project, "SELECT line, kind, norm FROM capture_candidates")
    assert len(got) == len(set(got)) and set(got) == expected(transcript)
    details = [d for (d,) in rows(project, "SELECT detail FROM heartbeats WHERE hook = 'capture'")]
    assert sum("1800 candidate(s) added" in d for d in details) == 1  # one worker did the work
