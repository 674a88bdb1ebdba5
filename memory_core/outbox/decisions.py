"""Injection decisions and degradations: one row per prompt decided (injected or not) and one
per degraded component, each with its counter bumped in the same transaction.

    with write(conn):
        insert_decision(conn, {"hook": "prompt", "outcome": "no_intent", ...})

Standard library only: the hook path imports this.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.outbox.rollups import bump, observe

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
