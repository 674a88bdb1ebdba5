"""The outbox: what a process did, as rows beside the memory it touched — spans, injection
decisions, degradations, and the metric rollups the collector serves.

Hooks record here and never touch the network (an OTLP export from a short-lived process
stalls ~6.5 s at exit while the collector is down); `telemetry.export` ships the rows later.

    trace = Trace()
    with trace.span("memhealth.hook prompt", **{"session.id": "s1"}) as root:
        ...
    with write(conn):
        trace.write(conn)
        insert_decision(conn, {"hook": "prompt", "outcome": "no_intent", ...})

Standard library only (plus the stdlib-only metric catalog): the hook path imports this.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.errors import StoreError
from memory_core.tx import write
from telemetry.catalog import CATALOG, HOOK_DURATION_BUCKETS

INF = float("inf")


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
            with write(self.conn):
                self.trace.write(self.conn)
        except (StoreError, self.conn.Error):  # a locked or broken store already failed the command, or will
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
