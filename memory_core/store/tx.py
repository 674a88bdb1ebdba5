"""Write transactions on the store, and the failure family of a driver error.

    with write(conn):                    # BEGIN IMMEDIATE ... COMMIT
        conn.execute("INSERT ...")       # a driver error leaves as a StoreError subclass

Every writer in every layer goes through here, so the same failure raises the same
`StoreError` subclass whoever wrote the row (stdlib only: the hook path imports this).
"""

from __future__ import annotations

import os
import time

from memory_core.errors import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreIO,
    StoreLocked,
    StoreReadOnly,
)


def failure_reason(exc: BaseException) -> str:
    """The failure family of a SQLite driver error: db_locked, db_corrupt, db_readonly,
    db_full, db_io, store."""
    text = str(exc).lower()
    if "disk is full" in text or "too large" in text:
        return "db_full"
    if "disk i/o" in text:
        return "db_io"
    if "locked" in text or "busy" in text:
        return "db_locked"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "db_corrupt"
    if "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
        return "db_readonly"
    return "store"


_CLASSES = {"db_locked": (StoreLocked, "database is locked"),
            "db_corrupt": (StoreCorrupt, "database is corrupt"),
            "db_readonly": (StoreReadOnly, "database is not writable"),
            "db_full": (StoreFull, "disk full"),
            "db_io": (StoreIO, "disk I/O error")}


def _file_size_limit() -> int | None:
    """This process's file-size limit in bytes (RLIMIT_FSIZE, `ulimit -f`), None when unlimited."""
    try:
        import resource  # a builtin module, loaded on this failure path only
    except ImportError:  # pragma: no cover - not POSIX
        return None
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def classify(exc: BaseException) -> StoreError:
    """Map a driver exception to the store error a user can act on."""
    reason = failure_reason(exc)
    if reason == "db_io":
        # SQLite reports a write past RLIMIT_FSIZE (EFBIG) as a bare "disk I/O error"; with a
        # limit set, that limit is the likely cause, and `df -h` would show a healthy disk
        limit = _file_size_limit()
        if limit is not None:
            return StoreFull(f"disk full: the file-size limit (`ulimit -f`) is {limit} bytes, and a write "
                             f"past it failed ({exc})")
    cls, prefix = _CLASSES.get(reason, (StoreError, "database error"))
    return cls(f"{prefix}: {exc}")


_ONE_WAIT: set[int] = set()  # connections whose owner waits for the lock once per run


def one_lock_wait(conn) -> None:
    """After this connection's first write that waited busy_timeout and still met the lock,
    later writes fail at once (busy_timeout 0): a hook waits for a held lock once, not
    once per write, and spills the rest. For short-lived processes only (hooks)."""
    _ONE_WAIT.add(id(conn))


# -- phase profile: where a write's time goes (benchmarks/bench_concurrency.py) ---------------
# None unless a profiling caller sets it (a hook under MEMHEALTH_PHASES): then every write
# adds its BEGIN IMMEDIATE wait, its COMMIT time, and the part of that COMMIT spent in a WAL
# checkpoint SQLite ran inside it (wal_autocheckpoint: the commit that pushes the WAL past
# 1,000 pages copies it back into the database and fsyncs both before COMMIT returns).
PHASES: dict | None = None


def profile() -> dict:
    """Start the phase profile of this process's writes. The caller sets "_db" to the store's
    path once it knows it: in WAL mode only a checkpoint writes the database file itself, so
    a commit after which the file's mtime or size moved ran one."""
    global PHASES
    PHASES = {"writes": 0, "lock_wait_ns": 0, "commit_ns": 0, "checkpoints": 0, "checkpoint_ns": 0,
              "drain_ns": 0, "_db": ""}
    return PHASES


def _stamp(path: str) -> tuple[int, int]:
    """(mtime ns, size) of the database file, by stat: never by opening it, since closing
    any descriptor of a file drops every POSIX lock this process holds on it, SQLite's among
    them (https://www.sqlite.org/howtocorrupt.html, section 2.2)."""
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_size)


# -- end phase profile --------------------------------------------------------------------------


class write:
    """`with write(conn):` runs the block in BEGIN IMMEDIATE, so a writer takes the lock up
    front: busy_timeout cannot rescue a deferred read-to-write upgrade (measured: 3,949 of 4,000 writes locked with 8 writers)."""

    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        t0 = time.perf_counter_ns() if PHASES is not None else 0
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except self.conn.Error as exc:
            if PHASES is not None:
                PHASES["lock_wait_ns"] += time.perf_counter_ns() - t0
            err = classify(exc)
            if err.reason == "db_locked" and id(self.conn) in _ONE_WAIT:
                try:
                    self.conn.execute("PRAGMA busy_timeout = 0")
                except self.conn.Error:
                    pass
            raise err from exc
        if PHASES is not None:
            PHASES["lock_wait_ns"] += time.perf_counter_ns() - t0
            PHASES["writes"] += 1
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                if PHASES is None:
                    self.conn.execute("COMMIT")
                else:
                    self._profiled_commit()
            except self.conn.Error as err:
                self._rollback()
                raise classify(err) from err
            return False
        self._rollback()
        if isinstance(exc, self.conn.Error):
            raise classify(exc) from exc
        return False

    def _profiled_commit(self):
        before = _stamp(PHASES["_db"])
        t0 = time.perf_counter_ns()
        self.conn.execute("COMMIT")
        took = time.perf_counter_ns() - t0
        PHASES["commit_ns"] += took
        if _stamp(PHASES["_db"]) != before:  # the file was written: a checkpoint ran (ours, as a rule)
            PHASES["checkpoints"] += 1
            PHASES["checkpoint_ns"] += took

    def _rollback(self):
        try:
            self.conn.execute("ROLLBACK")
        except self.conn.Error:
            pass  # no transaction left to roll back (COMMIT failed after SQLite ended it)


transaction = write
