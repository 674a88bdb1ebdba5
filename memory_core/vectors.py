"""The vector table: `chunks_vec`, a sqlite-vec vec0 table whose rowid is `chunks.id`.

    if ensure_vec_table(conn, dim=768):          # False: sqlite-vec cannot load here
        stored, refused = store(conn, [(chunk_id, vector), ...])
        knn(conn, query_vector, k=30)            # [(chunk_id, cosine distance), ...]
        coverage(conn)                           # (chunks with a vector, chunks)

The table is created here, not in a migration: its width comes from config and the
extension may be missing. The width is recorded in meta `vec_dim`; a table of another
width is never silently recreated (that would drop every vector): DimensionMismatch says
to run `memhealth embed --rebuild`.

Deleting chunks: no trigger removes their vectors, because a trigger touching a vec0 table
would make every chunk delete fail in a process that cannot load sqlite-vec. Ingest calls
`delete_for_chunks(conn, ids)` in the same transaction as the chunk delete; `prune_orphans`
(run by `memhealth embed`) removes any vector whose chunk is gone.

Everything degrades to False / empty / (0, total) when `db.load_vec(conn)` is False.
"""

from __future__ import annotations

import math
import re
import struct
import time
from collections.abc import Callable, Iterable

from memory_core import db
from memory_core.db import write
from memory_core.errors import DimensionMismatch, MemoryCoreError

TABLE = "chunks_vec"
REBUILD_FIX = "run `memhealth embed --rebuild` to re-embed every chunk at the new width"
EMBED_TEXT_CHARS = 24000  # the client's first overflow head: longer text would be cut anyway
_WIDTH = re.compile(r"float\[(\d+)\]", re.IGNORECASE)


def pack(vector: list[float]) -> bytes:
    """A vector as sqlite-vec's float32 blob."""
    return struct.pack(f"{len(vector)}f", *vector)


def embed_text(title: str | None, content: str) -> str:
    """The text a chunk is embedded from (ingest and backfill must agree on it)."""
    text = f"{title}\n{content}" if title else content
    return text[:EMBED_TEXT_CHARS]


def _tx(conn):
    """Join the caller's transaction, or open a BEGIN IMMEDIATE one."""
    return _Joined() if conn.in_transaction else write(conn)


class _Joined:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def vec_ready(conn) -> bool:
    """Whether sqlite-vec is loaded into `conn` (loading it if needed)."""
    return db.load_vec(conn)


def table_dim(conn) -> int | None:
    """The width of the existing `chunks_vec` table, or None when there is none."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
    if row is None:
        return None
    match = _WIDTH.search(row[0] or "")
    if match:
        return int(match.group(1))
    meta = conn.execute("SELECT value FROM meta WHERE key = 'vec_dim'").fetchone()
    return int(meta[0]) if meta else None


def has_table(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is not None


def ensure_vec_table(conn, dim: int) -> bool:
    """Create `chunks_vec` at width `dim` if missing; False when sqlite-vec cannot load.

    Raises DimensionMismatch (with `.fix`) when the table exists at another width."""
    if not vec_ready(conn):
        return False
    existing = table_dim(conn)
    if existing == dim:
        return True
    if existing is not None:
        err = DimensionMismatch(
            f"the vector table holds {existing}-dim vectors but [embedding].dim is {dim}; "
            f"{REBUILD_FIX}")
        err.fix = "memhealth embed --rebuild"
        err.stored_dim, err.config_dim = existing, dim
        raise err
    with _tx(conn):
        if table_dim(conn) is None:  # another process may have created it meanwhile
            _create(conn, dim)
    return True


def _create(conn, dim: int) -> None:
    # cosine: Ollama's vectors are unit length already, but a model that does not
    # normalise still ranks correctly.
    conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{int(dim)}] "
                 f"distance_metric=cosine)")
    conn.execute("INSERT INTO meta(key, value) VALUES ('vec_dim', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(int(dim)),))


def rebuild(conn, dim: int) -> bool:
    """Drop every vector and recreate `chunks_vec` at width `dim` (`memhealth embed --rebuild`)."""
    if not vec_ready(conn):
        return False
    with _tx(conn):
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        _create(conn, dim)
    return True


def _ready(conn) -> int | None:
    """The table's width when vectors can be read and written here, else None."""
    if not vec_ready(conn):
        return None
    return table_dim(conn)


def store(conn, pairs: Iterable[tuple[int, list[float]]]) -> tuple[int, int]:
    """Store (chunk_id, vector) pairs; return (stored, refused).

    The dimension guard: a vector of another width, or with a non-finite value, is refused
    and counted, never written. A vector whose chunk no longer exists is skipped. Without
    a table (or sqlite-vec) nothing is stored and nothing is refused."""
    dim = _ready(conn)
    if dim is None:
        return 0, 0
    stored = refused = 0
    with _tx(conn):
        for chunk_id, vector in pairs:
            if len(vector) != dim or not all(math.isfinite(x) for x in vector):
                refused += 1
                continue
            # vec0 has no upsert: replace by delete + insert
            conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (chunk_id,))
            cur = conn.execute(
                f"INSERT INTO {TABLE}(rowid, embedding) SELECT ?, ? "
                f"WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?)",
                (chunk_id, pack(vector), chunk_id))
            stored += max(cur.rowcount, 0)
    return stored, refused


def knn(conn, vector: list[float], k: int) -> list[tuple[int, float]]:
    """The `k` nearest chunks as (chunk_id, cosine distance), nearest first; [] when the
    table is missing, sqlite-vec cannot load, or the vector has the wrong width."""
    dim = _ready(conn)
    if dim is None or len(vector) != dim or k <= 0:
        return []
    rows = conn.execute(
        f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (pack(vector), int(k))).fetchall()
    return [(int(r), float(d)) for r, d in rows]


def coverage(conn) -> tuple[int, int]:
    """(chunks that have a vector, all chunks)."""
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    if _ready(conn) is None:
        return 0, total
    with_vector = conn.execute(
        f"SELECT count(*) FROM chunks WHERE id IN (SELECT rowid FROM {TABLE})").fetchone()[0]
    return with_vector, total


def missing(conn, limit: int, after: int = 0) -> list[int]:
    """Up to `limit` ids of chunks without a vector, ascending, greater than `after`;
    every chunk when no vector table exists yet."""
    if _ready(conn) is None:
        if not has_table(conn):
            return [r[0] for r in conn.execute(
                "SELECT id FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (after, limit))]
        return []  # a table we cannot read: nothing can be backfilled here
    return [r[0] for r in conn.execute(
        f"SELECT id FROM chunks WHERE id > ? AND id NOT IN (SELECT rowid FROM {TABLE}) "
        f"ORDER BY id LIMIT ?", (after, limit))]


def delete_for_chunks(conn, ids: Iterable[int]) -> int:
    """Delete the vectors of these chunk ids; call it in the transaction that deletes the
    chunks. Returns how many were deleted (0 when sqlite-vec cannot load)."""
    ids = list(ids)
    if not ids or _ready(conn) is None:
        return 0
    deleted = 0
    with _tx(conn):
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            cur = conn.execute(f"DELETE FROM {TABLE} WHERE rowid IN ({','.join('?' * len(part))})", part)
            deleted += max(cur.rowcount, 0)
    return deleted


def prune_orphans(conn) -> int:
    """Delete vectors whose chunk is gone (deleted by a process without sqlite-vec)."""
    if _ready(conn) is None:
        return 0
    orphans = [r[0] for r in conn.execute(
        f"SELECT rowid FROM {TABLE} WHERE rowid NOT IN (SELECT id FROM chunks)")]
    return delete_for_chunks(conn, orphans)


class Backfill:
    """What one backfill run did: `stored`, `refused`, `remaining`, `error` (or None)."""

    __slots__ = ("stored", "refused", "remaining", "error", "seconds")

    def __init__(self):
        self.stored = 0
        self.refused = 0
        self.remaining = 0
        self.error = None
        self.seconds = 0.0


def backfill(conn, client, batch_size: int = 64, limit: int | None = None,
             budget_s: float | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> Backfill:
    """Embed chunks that have no vector, `batch_size` at a time, and store them.

    `client` is anything with `.embed(texts) -> vectors` (memory_core.embed.OllamaClient).
    Stops on the first embedding error (kept in `.error`; the circuit breaker would skip
    the rest anyway), after `limit` chunks, or when `budget_s` runs out. `on_progress`
    gets (done, total_missing) after each batch."""
    result = Backfill()
    t0 = time.monotonic()
    _with, total = coverage(conn)
    todo = total - _with
    if limit is not None:
        todo = min(todo, limit)
    after = 0
    while result.stored + result.refused < todo:
        if budget_s is not None and time.monotonic() - t0 > budget_s:
            break
        ids = missing(conn, min(batch_size, todo - result.stored - result.refused), after)
        if not ids:
            break
        after = ids[-1]  # always moves forward: a refused chunk is not retried in this run
        marks = ",".join("?" * len(ids))
        rows = conn.execute(f"SELECT id, title, content FROM chunks WHERE id IN ({marks}) ORDER BY id",
                            ids).fetchall()
        try:
            vectors = client.embed([embed_text(title, content) for _id, title, content in rows])
        except MemoryCoreError as exc:  # EmbedError: kept, not raised, so progress is reported
            result.error = exc
            break
        stored, refused = store(conn, [(row[0], vec) for row, vec in zip(rows, vectors, strict=True)])
        result.stored += stored
        result.refused += refused
        if on_progress is not None:
            on_progress(result.stored + result.refused, todo)
    with_vector, total = coverage(conn)
    result.remaining = total - with_vector
    result.seconds = time.monotonic() - t0
    return result

