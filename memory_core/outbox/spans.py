"""Spans: what a process did, as rows beside the memory it touched, with the outbox's bound.

The outbox package holds what hooks record for export: spans (here), decisions and
degradations (`decisions`), metric rollups (`rollups`), heartbeats, the journal and the spill.
Hooks record here and never touch the network (an OTLP export from a short-lived process
stalls ~6.5 s at exit while the collector is down); `telemetry.export` ships the rows later.

    trace = Trace()
    with trace.span("memhealth.hook prompt", **{"session.id": "s1"}) as root:
        ...
    with write(conn):
        trace.write(conn)

Standard library only: the hook path imports this.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.errors import StoreError
from memory_core.outbox.rollups import bump
from memory_core.store.tx import write


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


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


def db_span(trace: Trace | None, operation: str, collection: str, **attrs) -> Span | _NoSpan:
    """A database client span as the OTel DB conventions shape it: kind CLIENT, named
    `{db.operation.name} {db.collection.name}`, with db.system.name sqlite. A no-op span
    when there is no trace, so a call site needs no branch.

        with db_span(trace, "SELECT", "chunks_fts") as span:
            rows = conn.execute("SELECT ... FROM chunks_fts ...").fetchall()
    """
    if trace is None:
        return _NO_SPAN
    return trace.span(f"{operation} {collection}", kind="client", **{
        "db.system.name": "sqlite", "db.operation.name": operation,
        "db.collection.name": collection, **attrs})


class _NoSpan:
    """What db_span hands out without a trace: every Span method, doing nothing."""

    def set(self, key, value):
        return self

    def update(self, attrs):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_SPAN = _NoSpan()


class command_trace:
    """The spans of one CLI command, written to the outbox when the block ends, error or not;
    telemetry never fails the command.

        with command_trace(conn, "memhealth ingest", **{"memhealth.ingest.sources": "docs"}) as trace:
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
            with write(self.conn):
                self.trace.write(self.conn)
        except (StoreError, self.conn.Error):  # a locked or broken store already failed the command, or will
            pass
        return False


# -- bounds ----------------------------------------------------------------------------------

DEFAULT_MAX_ROWS = 20_000
EXPORT_WATERMARK_KEY = "export.spans.last_id"  # the exporter's acknowledged high-water mark
_PRUNE_BATCH = 5000
_PRUNE_MAX_ROWS = 50_000  # per call: a first prune of a huge outbox spreads over a few gate runs


def prune_spans(conn, max_age_days: float, max_rows: int, now_ns: int | None = None) -> dict:
    """Bound the span outbox: drop rows older than `max_age_days` and all but the newest
    `max_rows`; return {"retention": n, "max_rows": n}: per bound, the dropped rows the
    exporter never acknowledged (with no exporter, every dropped row).

    Cheap when there is nothing to do (three index lookups, no write). Deletes are rowid
    ranges from the oldest id: spans are only ever appended. The newest row is always kept
    (ids are rowids; an emptied table would hand out ids below the exporter's watermark).
    Rows the exporter never acknowledged are counted in memhealth_outbox_dropped_spans_total.
    One call deletes at most ~50,000 rows by the row bound and walks by age for at most 0.5 s
    (~50 ms and a short write lock, on the session-start path); the rest goes next time."""
    now_ns = now_ns or time.time_ns()
    cutoff = now_ns - int(max_age_days * 86400e9)
    first = conn.execute("SELECT id, end_ns FROM spans ORDER BY id LIMIT 1").fetchone()
    if first is None:
        return {"retention": 0, "max_rows": 0}
    (newest,) = conn.execute("SELECT max(id) FROM spans").fetchone()
    # ids only grow and deletes take the front, so max - min + 1 bounds the row count
    # without a full count(*) scan; gaps only make it keep fewer rows than allowed
    row_bound = newest - max(int(max_rows), 1)
    if first[1] >= cutoff and first[0] > row_bound:
        return {"retention": 0, "max_rows": 0}
    from memory_core.store.meta import get_meta

    try:
        exported = int(get_meta(conn, EXPORT_WATERMARK_KEY) or 0)
    except ValueError:
        exported = 0
    dropped = {"retention": 0, "max_rows": 0}
    with write(conn):
        if first[0] <= row_bound:
            row_bound = min(row_bound, first[0] + _PRUNE_MAX_ROWS - 1)
            (n_new,) = conn.execute("SELECT count(*) FROM spans WHERE id <= ? AND id > ?",
                                    (row_bound, exported)).fetchone()
            conn.execute("DELETE FROM spans WHERE id <= ?", (row_bound,))
            dropped["max_rows"] = n_new
        deadline = time.monotonic() + 0.5  # a bounded walk; what is left goes next time
        while time.monotonic() < deadline:
            rows = conn.execute("SELECT id, end_ns FROM spans WHERE id < ? ORDER BY id LIMIT ?",
                                (newest, _PRUNE_BATCH)).fetchall()
            old = []
            for row_id, end_ns in rows:
                if end_ns >= cutoff:
                    break
                old.append(row_id)
            if old:
                conn.execute("DELETE FROM spans WHERE id BETWEEN ? AND ?", (old[0], old[-1]))
                dropped["retention"] += sum(1 for i in old if i > exported)
            if len(old) < _PRUNE_BATCH:
                break
        for reason, n in dropped.items():
            if n:
                bump(conn, "memhealth_outbox_dropped_spans_total", {"reason": reason}, n)
    return dropped
