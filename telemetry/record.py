"""Record what a process did as rows in the store: heartbeats, spans, decisions, rollups.

Standard library only (and the stdlib-only metric catalog): short-lived hooks import this
on every invocation, and the memory core imports it, so it imports nothing of ours above it. Nothing here
touches the network; `telemetry.export` ships the outbox later.

    hb = heartbeat_start(conn, "prompt", session_id="s1")        # before any work
    trace = Trace()
    with trace.span("memhealth.hook prompt", **{"session.id": "s1"}) as root:
        ...
    heartbeat_finish(conn, hb, outcome="ok", trace=trace)        # one transaction

When the database cannot be written (locked past busy_timeout, read-only, corrupt), the
same rows go to `.memhealth/spill.ndjson` and are drained into the store by the next
process that can write it: a failure is recorded, never lost.
"""

from __future__ import annotations

import json
import os
import time

from telemetry.catalog import CATALOG, HOOK_DURATION_BUCKETS

INF = float("inf")


# -- write transactions ------------------------------------------------------------------
# This module sits below the memory core (which imports it), so it cannot import the
# store's error classes. It classifies driver errors itself; memory_core.db registers a
# wrapper so that callers of either layer see the same StoreError subclasses.

class RecordError(Exception):
    """A row could not be written; `reason` is the failure family."""

    def __init__(self, message: str, reason: str = "store"):
        super().__init__(message)
        self.reason = reason


def failure_reason(exc: BaseException) -> str:
    """The failure family of a SQLite driver error: db_locked, db_corrupt, db_readonly, store."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "db_locked"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return "db_corrupt"
    if "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text:
        return "db_readonly"
    return "store"


_wrap_error = None


def set_error_wrapper(wrapper) -> None:
    """Let the store layer turn driver errors into its own exception classes."""
    global _wrap_error
    _wrap_error = wrapper


def wrap_error(exc: BaseException) -> Exception:
    if _wrap_error is not None:
        return _wrap_error(exc)
    return RecordError(f"database error: {exc}", failure_reason(exc))


class transaction:
    """`with transaction(conn):` runs the block in BEGIN IMMEDIATE, so a writer takes the lock
    up front: busy_timeout cannot rescue a deferred read-to-write upgrade (REFERENCE §11)."""

    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except self.conn.Error as exc:
            raise wrap_error(exc) from exc
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except self.conn.Error as err:
                self._rollback()
                raise wrap_error(err) from err
            return False
        self._rollback()
        if isinstance(exc, self.conn.Error):
            raise wrap_error(exc) from exc
        return False

    def _rollback(self):
        try:
            self.conn.execute("ROLLBACK")
        except self.conn.Error:
            pass


write = transaction


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def _labels(labels: dict | None) -> str:
    return json.dumps(labels or {}, sort_keys=True, separators=(",", ":"))


# -- rollups ---------------------------------------------------------------------------

def bump(conn, metric: str, labels: dict | None = None, by: float = 1.0) -> None:
    """Add `by` to a counter rollup (call inside a write transaction)."""
    conn.execute(
        "INSERT INTO rollups(metric, labels, value) VALUES (?, ?, ?) "
        "ON CONFLICT(metric, labels) DO UPDATE SET value = value + excluded.value",
        (metric, _labels(labels), by))


def set_gauge(conn, metric: str, value: float, labels: dict | None = None) -> None:
    conn.execute(
        "INSERT INTO rollups(metric, labels, value) VALUES (?, ?, ?) "
        "ON CONFLICT(metric, labels) DO UPDATE SET value = excluded.value",
        (metric, _labels(labels), value))


def observe(conn, metric: str, value: float, labels: dict | None = None) -> None:
    """Record one histogram observation: its bucket (non-cumulative), sum and count."""
    buckets = CATALOG[metric].buckets or HOOK_DURATION_BUCKETS
    le = next((b for b in buckets if value <= b), INF)
    base = dict(labels or {})
    bump(conn, metric + "_bucket", {**base, "le": "+Inf" if le == INF else repr(float(le))})
    bump(conn, metric + "_sum", base, value)
    bump(conn, metric + "_count", base)


# -- spans -----------------------------------------------------------------------------

class Span:
    """One span, recorded with its own timestamps; use as a context manager."""

    __slots__ = ("trace", "name", "span_id", "parent_span_id", "kind", "start_ns", "end_ns",
                 "attributes", "events", "status_code", "status_message")

    def __init__(self, trace, name, parent_span_id, kind, attributes):
        self.trace = trace
        self.name = name
        self.span_id = new_span_id()
        self.parent_span_id = parent_span_id
        self.kind = kind
        self.start_ns = time.time_ns()
        self.end_ns = None
        self.attributes = attributes
        self.events = []
        self.status_code = "unset"
        self.status_message = None

    def set(self, key: str, value) -> Span:
        self.attributes[key] = value
        return self

    def update(self, attrs: dict) -> Span:
        self.attributes.update(attrs)
        return self

    def event(self, name: str, **attrs) -> None:
        self.events.append({"name": name, "time_ns": time.time_ns(), "attributes": attrs})

    def fail(self, message: str, error_type: str | None = None) -> None:
        self.status_code = "error"
        self.status_message = message[:500]
        if error_type:
            self.attributes["error.type"] = error_type

    def end(self) -> None:
        if self.end_ns is None:
            self.end_ns = time.time_ns()
            stack = self.trace._stack
            if stack and stack[-1] is self:
                stack.pop()

    def __enter__(self) -> Span:
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and self.status_code != "error":
            self.fail(f"{exc_type.__name__}: {exc}", getattr(exc, "reason", exc_type.__name__))
        self.end()
        return False


class Trace:
    """The spans of one invocation, buffered in memory and written by heartbeat_finish."""

    __slots__ = ("trace_id", "spans", "_stack")

    def __init__(self, trace_id: str | None = None):
        self.trace_id = trace_id or new_trace_id()
        self.spans: list[Span] = []
        self._stack: list[Span] = []

    def span(self, name: str, kind: str = "internal", parent: Span | None = None, **attrs) -> Span:
        """Start a child of `parent` (default: the innermost open span)."""
        if parent is None and self._stack:
            parent = self._stack[-1]
        span = Span(self, name, parent.span_id if parent else None, kind, attrs)
        self.spans.append(span)
        self._stack.append(span)
        return span

    def write(self, conn) -> int:
        """Insert every span (open ones are ended now); call inside a write transaction."""
        rows = []
        for s in self.spans:
            if s.end_ns is None:
                s.end_ns = time.time_ns()
            rows.append((self.trace_id, s.span_id, s.parent_span_id, s.name, s.kind, s.start_ns,
                         s.end_ns, s.status_code, s.status_message,
                         json.dumps(s.attributes, default=str, ensure_ascii=False),
                         json.dumps(s.events, default=str, ensure_ascii=False) if s.events else None))
        conn.executemany(
            "INSERT INTO spans(trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, "
            "status_code, status_message, attributes, events) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)


class command_trace:
    """The spans of one CLI command, written to the outbox when the block ends, error or not;
    telemetry never fails the command.

        with command_trace(conn, "memhealth ingest", **{"memhealth.sources": "docs"}) as trace:
            run_ingest(conn, root, cfg, trace=trace)
    """

    __slots__ = ("conn", "trace", "name", "attrs", "root")

    def __init__(self, conn, name: str, **attrs):
        self.conn, self.name, self.attrs = conn, name, attrs
        self.trace = Trace()
        self.root = None

    def __enter__(self) -> Trace:
        self.root = self.trace.span(self.name, **self.attrs)
        return self.trace

    def __exit__(self, exc_type, exc, tb):
        if exc is not None:
            self.root.fail(f"{exc_type.__name__}: {exc}", getattr(exc, "reason", exc_type.__name__))
        self.root.end()
        try:
            with transaction(self.conn):
                self.trace.write(self.conn)
        except Exception:  # a locked or broken store already failed the command, or will
            pass
        return False


# -- decisions and degradations ------------------------------------------------------------

DECISION_FIELDS = ("ts_ns", "hook", "session_id", "prompt_id", "trace_id", "prompt_hash",
                   "prompt_len", "outcome", "intent", "retrieval_ms", "detail")


def insert_decision(conn, decision: dict) -> None:
    """Insert one injection decision row and bump its counter (inside a write transaction)."""
    row = dict(decision)
    row.setdefault("ts_ns", time.time_ns())
    detail = row.get("detail")
    if detail is not None and not isinstance(detail, str):
        row["detail"] = json.dumps(detail, default=str, ensure_ascii=False)
    conn.execute(
        f"INSERT INTO decisions({', '.join(DECISION_FIELDS)}) VALUES ({', '.join('?' * len(DECISION_FIELDS))})",
        tuple(row.get(f) for f in DECISION_FIELDS))
    bump(conn, "memhealth_injection_decisions_total", {"outcome": row["outcome"]})
    if row.get("retrieval_ms") is not None:
        observe(conn, "memhealth_retrieval_duration_seconds", row["retrieval_ms"] / 1000.0)


def insert_degradation(conn, component: str, reason: str, detail: str = "") -> None:
    conn.execute("INSERT INTO degradations(ts_ns, component, reason, detail, pid) VALUES (?,?,?,?,?)",
                 (time.time_ns(), component, reason, detail[:500], os.getpid()))
    bump(conn, "memhealth_degradations_total", {"component": component, "reason": reason})


# -- heartbeats --------------------------------------------------------------------------

def heartbeat_start(conn, hook: str, session_id: str | None = None, trace_id: str | None = None,
                    started_ns: int | None = None) -> int:
    """Write the "started" row before any work; return its id. Raises StoreError (or
    RecordError when the store layer is not loaded)."""
    started_ns = started_ns or time.time_ns()
    with write(conn):
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) VALUES (?,?,?,?,?)",
            (hook, session_id, os.getpid(), trace_id, started_ns))
        return cur.lastrowid


def _complete(conn, hb_id, hook, started_ns, ended_ns, outcome, reason, detail) -> None:
    conn.execute(
        "UPDATE heartbeats SET ended_ns = ?, outcome = ?, reason = ?, detail = ? WHERE id = ?",
        (ended_ns, outcome, reason, (detail or "")[:500] or None, hb_id))
    bump(conn, "memhealth_hook_invocations_total", {"hook": hook, "outcome": outcome})
    observe(conn, "memhealth_hook_duration_seconds", max(ended_ns - started_ns, 0) / 1e9, {"hook": hook})
    if outcome == "ok":
        set_gauge(conn, "memhealth_hook_last_success_timestamp_seconds", ended_ns / 1e9, {"hook": hook})


def heartbeat_finish(conn, hb_id: int, hook: str, started_ns: int, outcome: str = "ok",
                     reason: str | None = None, detail: str | None = None,
                     trace: Trace | None = None, decisions: list | None = None,
                     ended_ns: int | None = None) -> None:
    """Complete the heartbeat and write the invocation's spans and decisions, atomically."""
    ended_ns = ended_ns or time.time_ns()
    with write(conn):
        _complete(conn, hb_id, hook, started_ns, ended_ns, outcome, reason, detail)
        for decision in decisions or ():
            insert_decision(conn, decision)
        if trace is not None:
            trace.write(conn)


def record_invocation(conn, hook: str, started_ns: int, outcome: str, reason=None, detail=None,
                      session_id=None, trace: Trace | None = None, decisions=None) -> int:
    """Insert a complete heartbeat in one transaction (used when no start row could be kept)."""
    ended_ns = time.time_ns()
    with write(conn):
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) VALUES (?,?,?,?,?)",
            (hook, session_id, os.getpid(), trace.trace_id if trace else None, started_ns))
        _complete(conn, cur.lastrowid, hook, started_ns, ended_ns, outcome, reason, detail)
        for decision in decisions or ():
            insert_decision(conn, decision)
        if trace is not None:
            trace.write(conn)
        return cur.lastrowid


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_killed(conn, killed_after_s: float, now_ns: int | None = None, min_age_s: float = 0.0) -> int:
    """Mark started-but-never-completed heartbeats as killed; return how many.

    A row is killed when its process is gone (and the row is older than `min_age_s`), or
    when it is older than `killed_after_s` whatever its pid says (pids are reused)."""
    now_ns = now_ns or time.time_ns()
    rows = conn.execute(
        "SELECT id, hook, pid, started_ns FROM heartbeats WHERE outcome IS NULL").fetchall()
    dead = [(i, hook) for i, hook, pid, started in rows
            if (now_ns - started) > killed_after_s * 1e9
            or ((now_ns - started) > min_age_s * 1e9 and not _pid_alive(pid))]
    if not dead:
        return 0
    with write(conn):
        for hb_id, hook in dead:
            cur = conn.execute(
                "UPDATE heartbeats SET outcome = 'killed', reason = 'killed', "
                "detail = 'started, never completed (timeout or kill)' WHERE id = ? AND outcome IS NULL",
                (hb_id,))
            if cur.rowcount:
                bump(conn, "memhealth_hook_invocations_total", {"hook": hook, "outcome": "killed"})
    return len(dead)


# -- spill: rows that could not reach the database ------------------------------------------

def spill(path: str, record: dict) -> bool:
    """Append one JSON line to the spill file (0600); False if even that fails."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def drain_spill(conn, path: str) -> int:
    """Move spilled rows into the store; return how many. The file is renamed first, so two
    draining processes never insert the same rows twice."""
    if not os.path.exists(path):
        return 0
    claimed = f"{path}.{os.getpid()}.draining"
    try:
        os.replace(path, claimed)
    except OSError:
        return 0
    try:
        with open(claimed, "rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        with write(conn):
            for rec in records:
                _apply_spilled(conn, rec)
        os.unlink(claimed)
        return len(records)
    except Exception:  # StoreError, RecordError or a driver error: the store cannot take them
        # put them back for the next process; nothing is lost
        try:
            with open(claimed, "rb") as src:
                data = src.read()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "ab") as dst:
                dst.write(data)
            os.unlink(claimed)
        except OSError:
            pass
        return 0


def _apply_spilled(conn, rec: dict) -> None:
    kind = rec.get("kind")
    if kind == "heartbeat":
        hb_id = rec.get("id")
        if hb_id is not None:
            row = conn.execute("SELECT outcome FROM heartbeats WHERE id = ?", (hb_id,)).fetchone()
            if row is not None and row[0] is None:
                _complete(conn, hb_id, rec["hook"], rec["started_ns"], rec["ended_ns"],
                          rec["outcome"], rec.get("reason"), rec.get("detail"))
                return
            if row is not None:
                return  # already completed or reaped
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) VALUES (?,?,?,?,?)",
            (rec["hook"], rec.get("session_id"), rec.get("pid"), rec.get("trace_id"), rec["started_ns"]))
        _complete(conn, cur.lastrowid, rec["hook"], rec["started_ns"], rec["ended_ns"],
                  rec["outcome"], rec.get("reason"), rec.get("detail"))
    elif kind == "decision":
        insert_decision(conn, rec["row"])
