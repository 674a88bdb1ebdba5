"""Reads of the span outbox (written by memory_core.outbox.spans): what the exporter ships,
how far behind it is, and a root span's attributes.

    backlog(conn, after_id)           # spans not yet exported
    batch(conn, after_id, limit)      # rows in SPAN_COLUMNS order, oldest first
"""

from __future__ import annotations

SPAN_COLUMNS = ("id, trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, "
                "status_code, status_message, attributes, events")


def newest_id(conn) -> int | None:
    """The newest span's id, or None when the outbox is empty."""
    return conn.execute("SELECT max(id) FROM spans").fetchone()[0]


def backlog(conn, after_id: int) -> int:
    """Spans whose id is above `after_id` (the exporter's watermark)."""
    return conn.execute("SELECT count(*) FROM spans WHERE id > ?", (after_id,)).fetchone()[0]


def waiting(conn, after_id: int) -> tuple[int, int | None]:
    """(spans above `after_id`, the oldest one's end_ns)."""
    return conn.execute("SELECT count(*), min(end_ns) FROM spans WHERE id > ?", (after_id,)).fetchone()


def batch(conn, after_id: int, limit: int) -> list[tuple]:
    """Up to `limit` spans above `after_id`, oldest first, columns as SPAN_COLUMNS."""
    return conn.execute(f"SELECT {SPAN_COLUMNS} FROM spans WHERE id > ? ORDER BY id LIMIT ?",
                        (after_id, limit)).fetchall()


def root_attributes(conn, trace_ids: list[str]) -> list[tuple[str, str]]:
    """[(trace_id, attributes JSON)] of these traces' root spans (still in the outbox)."""
    if not trace_ids:
        return []
    marks = ",".join("?" * len(trace_ids))
    return conn.execute(
        f"SELECT trace_id, attributes FROM spans WHERE parent_span_id IS NULL AND trace_id IN ({marks})",
        list(trace_ids)).fetchall()
