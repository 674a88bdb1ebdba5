"""Reads of capture_candidates (written by memory_core.records.queue and triage): what the
console's Memory and Triage pages list and the session cost counts. Also the pending count of
an external capture pipeline's `capture_queue`, when one keeps that table.

    confirmed(conn)              # the confirmed records, newest decision first
    states_by_session(conn, lo_ns, hi_ns)   # [(session_id, state, n)]
"""

from __future__ import annotations

from memory_core.store.db import sqlite3


def confirmed(conn, limit: int = 100) -> list[tuple]:
    """[(id, kind, title, statement, transcript, line, session_id, ts, role, record_path,
    decided_ns)] of confirmed candidates, newest decision first."""
    return conn.execute(
        "SELECT id, kind, title, statement, transcript, line, session_id, ts, role, record_path, decided_ns "
        "FROM capture_candidates WHERE state = 'confirmed' ORDER BY decided_ns DESC LIMIT ?", (limit,)).fetchall()


def merge_targets(conn) -> list[tuple[int, str, str]]:
    """[(id, title, state)] of pending and confirmed candidates: what another may merge into."""
    return conn.execute("SELECT id, title, state FROM capture_candidates WHERE state IN ('pending', 'confirmed') "
                        "ORDER BY id").fetchall()


def recently_decided(conn, limit: int = 30) -> list[tuple]:
    """[(id, kind, title, state, merged_into, record_path, decided_ns)], newest decision first."""
    return conn.execute(
        "SELECT id, kind, title, state, merged_into, record_path, decided_ns FROM capture_candidates "
        "WHERE state != 'pending' ORDER BY decided_ns DESC LIMIT ?", (limit,)).fetchall()


def states_by_session(conn, lo_ns: int, hi_ns: int) -> list[tuple[str, str, int]]:
    """[(session_id, state, n)] of candidates created in [lo, hi)."""
    return conn.execute(
        "SELECT session_id, state, count(*) FROM capture_candidates WHERE created_ns >= ? AND "
        "created_ns < ? GROUP BY session_id, state", (lo_ns, hi_ns)).fetchall()


def external_queue_pending(conn) -> int:
    """Pending rows of an external pipeline's `capture_queue` table (the caller checks it
    exists); every row when the queue has no status column."""
    try:
        return conn.execute("SELECT count(*) FROM capture_queue WHERE status = 'pending'").fetchone()[0]
    except sqlite3.OperationalError:  # an older queue without a status column
        return conn.execute("SELECT count(*) FROM capture_queue").fetchone()[0]
