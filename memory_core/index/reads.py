"""Reads that check the index against the rows it indexes: full-text parity with `chunks`,
the chunk counts kept on write, and FTS5's own integrity check. The gate's index_integrity
check (probes.checks) asks these; the index's writers are memory_core.index.fts/docfreq and
the ingest store.

    full_parity(conn)          # (chunk rows, full-text rows)
    tail_parity(conn, 10_000)  # the same over the newest ids only: bounded
"""

from __future__ import annotations

# the FIX that rebuilds the full-text index from its content table, as sqlite3 runs it
FTS_REBUILD_SQL = "INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')"
FTS_DOCSIZE = "chunks_fts_docsize"  # FTS5's per-row table: one row per indexed chunk


def full_parity(conn) -> tuple[int, int]:
    (rows,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    (indexed,) = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()
    return rows, indexed


def tail_parity(conn, tail: int) -> tuple[int, int]:
    """(chunk rows, full-text rows) among the newest `tail` chunk ids."""
    (top,) = conn.execute("SELECT ifnull(max(id), 0) FROM chunks").fetchone()
    floor = top - tail
    (rows,) = conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (floor,)).fetchone()
    (indexed,) = conn.execute("SELECT count(*) FROM chunks_fts_docsize WHERE id > ?", (floor,)).fetchone()
    return rows, indexed


def rows_by_source(conn) -> dict[str, int]:
    """Chunk rows per source, counted (O(size))."""
    return dict(conn.execute("SELECT source, count(*) FROM chunks GROUP BY source"))


def kept_counts(conn) -> dict[str, int]:
    """The non-zero per-source counts kept on write (chunk_counts)."""
    return {s: n for s, n in conn.execute("SELECT source, n FROM chunk_counts WHERE n != 0")}


def fts_integrity_check(conn) -> None:
    """FTS5's integrity-check against the external content table (rank 1). Raises
    sqlite3.Error on corruption; written as an INSERT, so a read-only store refuses it."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
