"""The read side of what ingest writes, and of the index over it: the chunks, watermarks
(how far each source was read), ingest_log (what it refused and why), the code index's
definitions; and the checks of the index against its rows (full-text parity with `chunks`,
the chunk counts kept on write, FTS5's own integrity check). Asked by the gate, the report,
the collector, the console and `memhealth inventory`.

The writers are in memory_core/ingest (store, watermark, code) and memory_core.index
(fts, docfreq). The reads live here, as index/code is the read side of the code index,
because importing anything under memory_core/ingest loads every source with it: the gate,
the report and the collector would pay for that on import.

    watermark_summary(conn)    # [(source, newest updated_ns, files)]
    chunk_page(conn, limit, source=..., before_id=...)   # the console's keyset page
    tail_parity(conn, 10_000)  # (chunk rows, full-text rows) over the newest ids: bounded
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


# -- watermarks and the ingest log --------------------------------------------------------------

def watermark_summary(conn) -> list[tuple]:
    """[(source, newest updated_ns, files)] by source; path '*' is the per-source run marker
    every ingest writes, so a source with only that row counts 0 files."""
    return conn.execute(
        "SELECT source, max(updated_ns), sum(path != '*') FROM watermarks GROUP BY source ORDER BY source"
    ).fetchall()


def newest_by_source(conn) -> list[tuple[str, int]]:
    return conn.execute("SELECT source, max(updated_ns) FROM watermarks GROUP BY source").fetchall()


def transcript_reread_states(conn) -> list[str]:
    """The state JSON of the transcript watermarks that carry a re-read cost."""
    return [state for (state,) in conn.execute(
        "SELECT state FROM watermarks WHERE source = 'transcript' AND path != '*' "
        "AND state LIKE '%\"rereads\"%'")]


def refused_paths(conn, since_ns: int, reason: str, limit: int = 200) -> list[str]:
    """Distinct paths an ingest refused for `reason` since `since_ns`, by path."""
    return [path for (path,) in conn.execute(
        "SELECT DISTINCT path FROM ingest_log WHERE ts_ns > ? AND reason = ? ORDER BY path LIMIT ?",
        (since_ns, reason, limit))]


# -- chunks --------------------------------------------------------------------------------------

def memory_git_attrs(conn) -> list[tuple[str, str]]:
    """[(path, attrs JSON)] of memory chunks carrying git provenance, one per path."""
    return conn.execute(
        "SELECT path, attrs FROM chunks WHERE source = 'memory' AND attrs LIKE '%\"git\"%' "
        "GROUP BY path").fetchall()


def counts_by_source(conn) -> list[tuple[str, int]]:
    return conn.execute("SELECT source, count(*) FROM chunks GROUP BY source").fetchall()


def memory_counts_by_kind(conn) -> list[tuple[str, int]]:
    """[(kind or '', n)] of memory chunks, most first."""
    return conn.execute(
        "SELECT ifnull(kind, ''), count(*) FROM chunks WHERE source = 'memory' GROUP BY kind "
        "ORDER BY count(*) DESC").fetchall()


def chunk_page(conn, limit: int, source: str = "", before_id: int | None = None) -> list[tuple]:
    """[(id, source, kind, path, line_start, line_end, title, first 400 chars, signal_weight)]
    newest first, at most `limit`, optionally of one source, below an id."""
    where, args = [], []
    if source:
        where.append("source = ?")
        args.append(source)
    if before_id is not None:
        where.append("id < ?")
        args.append(before_id)
    return conn.execute(
        "SELECT id, source, kind, path, line_start, line_end, title, substr(content, 1, 400), signal_weight "
        "FROM chunks" + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()


def chunk_kind(conn, chunk_id: int) -> str | None:
    row = conn.execute("SELECT kind FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return row[0] if row else None


def resume_anchor(conn):
    """(path, line_start, title, content) of the newest memory chunk under a LATEST heading, or None."""
    return conn.execute("SELECT path, line_start, title, content FROM chunks WHERE source = 'memory' AND "
                        "title LIKE '%LATEST%' ORDER BY id DESC LIMIT 1").fetchone()


# -- the code index ------------------------------------------------------------------------------

def has_code_definitions(conn) -> bool:
    return conn.execute("SELECT 1 FROM code_defs LIMIT 1").fetchone() is not None
