"""Metric rollups: counters, gauges, histogram buckets and exemplars, as rows the collector
serves (`memhealth_*` names from the catalog). Call inside a write transaction:

    with write(conn):
        bump(conn, "memhealth_gate_runs_total", {"verdict": "GREEN"})
        observe(conn, "memhealth_retrieval_duration_seconds", 0.004)

Standard library only (plus the stdlib-only metric catalog): the hook path imports this.
"""

from __future__ import annotations

import json

from telemetry.catalog import CATALOG, HOOK_DURATION_BUCKETS

INF = float("inf")


def _labels(labels: dict | None) -> str:
    return json.dumps(labels or {}, sort_keys=True, separators=(",", ":"))



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


def bucket_labels(metric: str, value: float, labels: dict | None = None) -> dict:
    """The labels of the (non-cumulative) bucket rollup `value` falls in."""
    buckets = CATALOG[metric].buckets or HOOK_DURATION_BUCKETS
    le = next((b for b in buckets if value <= b), INF)
    return {**(labels or {}), "le": "+Inf" if le == INF else repr(float(le))}


def observe(conn, metric: str, value: float, labels: dict | None = None) -> None:
    """Record one histogram observation: its bucket (non-cumulative), sum and count."""
    base = dict(labels or {})
    bump(conn, metric + "_bucket", bucket_labels(metric, value, base))
    bump(conn, metric + "_sum", base, value)
    bump(conn, metric + "_count", base)


def keep_exemplar(conn, metric: str, value: float, labels: dict | None, heartbeat_id: int,
                  ts_ns: int) -> None:
    """Remember the heartbeat's trace id as the latest exemplar of the bucket `value` falls in
    (one UPSERT, inside the caller's write transaction; the trace id is read from the
    heartbeat row, so a row started without one keeps the previous exemplar)."""
    conn.execute(
        "INSERT INTO rollup_exemplars(metric, labels, trace_id, value, ts_ns) "
        "SELECT ?, ?, trace_id, ?, ? FROM heartbeats WHERE id = ? AND trace_id IS NOT NULL "
        "ON CONFLICT(metric, labels) DO UPDATE SET trace_id = excluded.trace_id, "
        "value = excluded.value, ts_ns = excluded.ts_ns",
        (metric + "_bucket", _labels(bucket_labels(metric, value, labels)), value, ts_ns,
         heartbeat_id))
