"""MEMHEALTH_PHASES: a hook appends where its time went (lock wait, commits, the WAL
checkpoint SQLite ran inside a commit, drains), for benchmarks/bench_concurrency.py. Real
hook subprocesses, a real store, a lock held by a real second connection."""

from __future__ import annotations

import json
import threading
import time

from memory_core.store.db import connect, sqlite3
from tests.conftest import clean_env, payload, rows, run_hook


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_a_profiled_hook_appends_one_line_and_an_unprofiled_one_none(project, tmp_path):
    out = tmp_path / "phases.ndjson"
    run = run_hook("stop", payload("stop", project), cwd=str(project), env=clean_env(MEMHEALTH_PHASES=out))
    assert (run.returncode, run.stderr) == (0, b"")
    (line,) = _lines(out)
    assert line["event"] == "stop" and line["writes"] >= 2  # the started row, then the completion
    assert line["main_ns"] < line["end_ns"] and line["checkpoints"] == 0
    assert 0 <= line["lock_wait_ns"] < 1e9 and line["commit_ns"] > 0
    run_hook("stop", payload("stop", project), cwd=str(project))
    assert len(_lines(out)) == 1


def test_the_wait_for_a_held_write_lock_is_counted_as_lock_wait(project, tmp_path):
    out = tmp_path / "phases.ndjson"
    holder = sqlite3.connect(str(project / ".memhealth" / "memory.db"), isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.8, holder.execute, ("COMMIT",))
    release.start()
    try:
        run = run_hook("stop", payload("stop", project), cwd=str(project), env=clean_env(MEMHEALTH_PHASES=out))
    finally:
        release.join()
        holder.close()
    assert run.returncode == 0
    (line,) = _lines(out)
    assert line["lock_wait_ns"] >= 0.4e9  # the lock was held ~0.8 s from before the hook started
    assert rows(project, "SELECT outcome FROM heartbeats WHERE hook = 'stop'") == [("ok",)]


def test_a_checkpoint_inside_the_hooks_commit_is_told_apart(project, tmp_path):
    """A WAL just under wal_autocheckpoint (1,000 pages): the hook's commit pushes it over,
    SQLite checkpoints inside that COMMIT, and the line says so."""
    out = tmp_path / "phases.ndjson"
    db = str(project / ".memhealth" / "memory.db")
    filler = sqlite3.connect(db, isolation_level=None)
    filler.execute("PRAGMA wal_autocheckpoint = 0")  # the filler must not checkpoint it away
    filler.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # an empty WAL: no hook would checkpoint
    filler.execute("CREATE TABLE scratch(b BLOB)")
    filler.execute("BEGIN IMMEDIATE")  # ~990 pages: one 3.9 KB blob per page, and the tree
    filler.executemany("INSERT INTO scratch VALUES (?)", [(b"x" * 3900,) for _ in range(985)])
    filler.execute("COMMIT")
    try:  # the filler stays open: closing the last connection would checkpoint the WAL
        run_hook("stop", payload("stop", project), cwd=str(project), env=clean_env(MEMHEALTH_PHASES=out))
    finally:
        filler.close()
    (line,) = _lines(out)
    assert line["checkpoints"] >= 1 and 0 < line["checkpoint_ns"] <= line["commit_ns"]


def test_profiled_hooks_in_parallel_with_a_reader_leave_the_store_whole(project, tmp_path):
    """The profile reads the database file's stat, never opens a store file: closing any
    descriptor of it would drop this process's POSIX locks, SQLite's among them, and other
    processes could then reset the WAL index under it (a corrupt store)."""
    out = tmp_path / "phases.ndjson"
    reader = connect(project / ".memhealth" / "memory.db")
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            reader.execute("SELECT count(*) FROM heartbeats").fetchone()
            time.sleep(0.01)

    def hooks(n: int) -> None:
        for i in range(6):
            event = ("prompt", "pre-tool", "post-tool")[i % 3]
            body = payload(event, project, prompt=f"worker {n} turn {i}") if event == "prompt" else \
                payload(event, project)
            run_hook(event, body, cwd=str(project), env=clean_env(MEMHEALTH_PHASES=out), timeout=60)

    threads = [threading.Thread(target=hooks, args=(n,)) for n in range(4)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads[:-1]:
        t.join(300)
    stop.set()
    threads[-1].join(10)
    reader.close()
    assert len(_lines(out)) == 24
    conn = connect(project / ".memhealth" / "memory.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT count(*) FROM heartbeats WHERE hook != 'gate' AND outcome = 'ok'").fetchone() == (24,)
