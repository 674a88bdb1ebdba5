"""Reads of context_blocks (written by memory_core.outbox.costs): the characters each hook
put in Claude's context, by block kind.

    blocks_between(conn, lo_ns, hi_ns)   # [(hook, session_id, trace_id, kind, chars)]
"""

from __future__ import annotations


def blocks_between(conn, lo_ns: int, hi_ns: int) -> list[tuple]:
    return conn.execute(
        "SELECT hook, session_id, trace_id, kind, chars FROM context_blocks WHERE ts_ns >= ? AND "
        "ts_ns < ?", (lo_ns, hi_ns)).fetchall()


def chars_between(conn, lo_ns: int, hi_ns: int) -> list[tuple[int, int]]:
    """[(ts_ns, chars)] of the blocks emitted in [lo, hi)."""
    return conn.execute("SELECT ts_ns, chars FROM context_blocks WHERE ts_ns >= ? AND ts_ns < ?",
                        (lo_ns, hi_ns)).fetchall()
