"""The store's key/value `meta` table: watermarks, markers and small state, one API.

    set_meta(conn, "export.spans.last_id", 42)      # inside a write transaction
    get_meta(conn, "export.spans.last_id")          # '42', or None when unset
"""

from __future__ import annotations

# Keys more than one layer reads (the rest belong to the module that writes them).
TRANSCRIPT_DIR = "last_transcript_dir"  # the directory a hook saw Claude Code's transcript in
# how far ingest's vector phase got (JSON: state done | budget | degraded, ts_ns, embedded,
# with_vector, chunks, detail); written by memory_core.ingest.vectorize, read by the gate
VECTORS_BACKFILL = "vectors.backfill"


def get_meta(conn, key: str, default: str | None = None) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None or row[0] is None else row[0]


def set_meta(conn, key: str, value) -> None:
    """Insert or replace (call inside a write transaction); values are stored as text."""
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, str(value)))


def init_meta(conn, key: str, value) -> str:
    """Set `key` only if it is unset; return the value it holds afterwards."""
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))
    return get_meta(conn, key)


def meta_with_prefix(conn, prefix: str) -> dict[str, str]:
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE ? ESCAPE '\\'", (like,)).fetchall())
