"""Helpers the read models share: a UTC day as SQL, and whether a table exists.

    day("started_ns")          # -> "date(started_ns / 1000000000, 'unixepoch')"
    has_table(conn, "spans")   # an older store, or a reader's ATTACHed copy, may lack one
"""

from __future__ import annotations


def day(column: str) -> str:
    """SQL for the UTC day (YYYY-MM-DD) of a nanosecond column."""
    return f"date({column} / 1000000000, 'unixepoch')"


def has_table(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (name,)).fetchone() is not None
