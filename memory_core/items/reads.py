"""Reads of the compiled memory items and their cues (written by memory_core.items.compile at
ingest): what the gate's cue_delivery check, the console and `remember`/`forget` ask.

    pinned_live_at(conn, ts_ns)   # pinned items that existed and had not expired then
    item_at(conn, "memory/x.md")  # (id, name, kind, pinned) | None
"""

from __future__ import annotations


def pinned_live_at(conn, ts_ns: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM memory_items WHERE pinned = 1 AND updated_ns <= ? "
        "AND (expires_ns IS NULL OR expires_ns > ?)", (ts_ns, ts_ns)).fetchone()[0]


def changed_after(conn, ts_ns: int) -> int:
    return conn.execute("SELECT count(*) FROM memory_items WHERE updated_ns > ?", (ts_ns,)).fetchone()[0]


def pinned_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM memory_items WHERE pinned = 1").fetchone()[0]


def cue_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM cues").fetchone()[0]


def item_at(conn, path: str):
    """(id, name, kind, pinned) of the item compiled from `path`, or None."""
    return conn.execute("SELECT id, name, kind, pinned FROM memory_items WHERE path = ?", (path,)).fetchone()


def cues_of(conn, item_id: int) -> list[tuple[str, str]]:
    """[(trigger, pattern)] of one item, in order."""
    return conn.execute("SELECT trigger, pattern FROM cues WHERE item_id = ? ORDER BY id", (item_id,)).fetchall()


def item_exists(conn, item_id: int) -> bool:
    return conn.execute("SELECT count(*) FROM memory_items WHERE id = ?", (item_id,)).fetchone()[0] > 0


def listing(conn, limit: int) -> list[tuple]:
    """[(id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns)] pinned first,
    then newest recorded, at most `limit`."""
    return conn.execute("SELECT id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns FROM memory_items "
                        "ORDER BY pinned DESC, recorded_ns DESC LIMIT ?", (limit,)).fetchall()
