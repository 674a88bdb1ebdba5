"""Vectors: exact float32 vectors in `chunk_vectors`, a binary-quantized sqlite-vec index in
`chunks_vec`; KNN is a coarse Hamming scan of the index, then exact cosine rescoring.

    if ensure_vec_table(conn, dim=768):          # False: sqlite-vec cannot load here
        stored, refused = store(conn, [(chunk_id, vector), ...])
        knn(conn, query_vector, k=30)            # [(chunk_id, cosine distance), ...]
        coverage(conn)                           # (chunks with a vector, chunks)

Layout (both tables keyed by `chunks.id`, written and deleted in one transaction):
- `chunk_vectors(chunk_id INTEGER PRIMARY KEY, embedding BLOB)`: float32 little-endian, the
  format sqlite-vec's scalar functions read. A point lookup here is a B-tree seek; in a vec0
  table it costs ~0.22 ms, too slow to rescore a few hundred candidates.
- `chunks_vec`, vec0 `(part integer partition key, embedding bit[dim])`: one sign bit per
  dimension (48 bytes at 384 dims, 1/32 of the floats), sharded `chunk_id % 64` (meta
  `vec_shards`). vec0's per-partition top-k costs grow with k times the rows it scans, so
  many partitions with a small k each are cheaper than few with a large k (1M random bit
  vectors, 2,048 candidates: 8 shards 717 ms, 64 shards 92 ms).

knn: below EXACT_BELOW vectors, an exact scan of `chunk_vectors` (`vec_distance_cosine`,
~1.2 µs per 384-dim vector). Above, each shard's nearest by Hamming distance, reranked by
exact cosine distance (the distances returned are exact). Candidates in all: k x 8, at
least 1,024, and at least one per 1,000 vectors: with a fixed number, recall falls as the
store grows, because more vectors crowd each neighbourhood (240 candidates for k=30, synthetic
clustered vectors: recall@10 0.99 at 100k, 0.82 at 1M). So the candidate rescoring grows with
the store, like the Hamming scan: the quantized path is linear, at about 1/25 of the exact
scan's cost (1M x 384). The floor of 1,024 is a sentence model's: its vectors share a large
mean direction, so their sign bits say less about who is near whom, and 256 candidates found
0.89-0.90 of the true top 10 at 10k and 100k real chunks, 1,024 0.97-0.98
(benchmarks/bench_vector_recall_real.py; docs/internals/evaluation.md).

The index is created here, not in a migration: the width comes from config and the
extension may be missing. `chunk_vectors` is a plain table, created by migration 6 with
`vector_counts`, whose triggers keep its row count on write: `vector_count` (the gate's
vector checks, knn's exact-or-quantized choice) reads one row instead of counting the store.
Writers upsert (`ON CONFLICT DO UPDATE`): an INSERT OR REPLACE would delete without firing
the delete trigger and the count would drift. The width is recorded in meta `vec_dim`; a
table of another width is never silently recreated (that would drop every vector):
DimensionMismatch says to run `memhealth embed --rebuild`.

Older stores have only `chunks_vec` as vec0 `float[dim]` ("legacy"). Such a store keeps
answering (exact vec0 KNN), and `ensure_vec_table` upgrades it in one transaction, without
re-embedding, on the first ingest that embeds or `memhealth embed`. A width that is not a
multiple of 8 cannot be bit-quantized by sqlite-vec and keeps the legacy layout. A bit
index of 8 partitions (stores written before 64) keeps answering with its 8 and is
re-partitioned from `chunk_vectors` by `ensure_vec_table` in the same way.

Deleting chunks: no trigger removes their vectors, because a trigger touching a vec0 table
would make every chunk delete fail in a process that cannot load sqlite-vec. Ingest calls
`delete_for_chunks(conn, ids)` in the same transaction as the chunk delete; `prune_orphans`
(run by `memhealth embed`) removes any vector whose chunk is gone, from both tables.

Everything degrades to False / empty / (0, total) when `db.load_vec(conn)` is False.
"""

from __future__ import annotations

import math
import re
import struct
import time
from collections.abc import Callable, Iterable

from memory_core.errors import DimensionMismatch, MemoryCoreError
from memory_core.store import db
from memory_core.store.db import sqlite3, write
from memory_core.store.meta import get_meta, set_meta

TABLE = "chunks_vec"          # vec0: the bit index (legacy stores: the float vectors)
EXACT_TABLE = "chunk_vectors"  # plain table: the float32 vectors knn rescores with
REBUILD_FIX = "run `memhealth embed --rebuild` to re-embed every chunk at the new width"
EMBED_TEXT_CHARS = 24000  # the client's first overflow head: longer text would be cut anyway
SHARDS = 64          # partitions of the bit index; see the module docstring (candidates)
OLD_SHARDS = 8       # stores whose meta has no vec_shards were written with 8
OVERSAMPLE = 8       # coarse candidates per wanted neighbour
MIN_CANDIDATES = 1024  # chosen on real vectors' tuned queries: the smallest floor with recall@10 >= 0.95
MIN_PER_SHARD = 4    # a floor on each partition's share: the nearest are not spread evenly
CANDIDATE_SHARE = 1000  # and at least one candidate per this many vectors (recall holds as N grows)
EXACT_BELOW = 4096   # vectors; exact answers while the scan is cheap (~5 ms at 384 dims)
_VEC0_MAX_K = 4096   # vec0 refuses a larger k
_WIDTH = re.compile(r"\b(float|bit)\[(\d+)\]", re.IGNORECASE)
_EXACT_DDL = (f"CREATE TABLE IF NOT EXISTS {EXACT_TABLE} "
              "(chunk_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
COUNTS = "vector_counts"  # migration 6: chunk_vectors' row count, kept by its triggers
# an upsert, never INSERT OR REPLACE (see the module docstring: the kept count)
_UPSERT = (f"INSERT INTO {EXACT_TABLE}(chunk_id, embedding) SELECT ?, ? "
           f"WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?) "
           f"ON CONFLICT(chunk_id) DO UPDATE SET embedding = excluded.embedding")


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


class _Snapshot:
    """One read transaction around a multi-statement read, so an upgrade committed by
    another process between our layout check and the KNN cannot split them."""

    __slots__ = ("conn", "opened")

    def __init__(self, conn):
        self.conn = conn
        self.opened = False

    def __enter__(self):
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN")
            self.opened = True

    def __exit__(self, *exc):
        if self.opened:
            self.conn.execute("COMMIT")  # read-only: commit and rollback are the same
        return False


def vec_ready(conn) -> bool:
    """Whether sqlite-vec is loaded into `conn` (loading it if needed)."""
    return db.load_vec(conn)


def _table_sql(conn) -> str | None:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
    return None if row is None else (row[0] or "")


def layout(conn) -> str | None:
    """The store's vector layout: "binary" (bit index + exact table), "legacy" (one vec0
    float table, as stores written before the index have), or None (no vector table)."""
    sql = _table_sql(conn)
    if sql is None:
        return None
    match = _WIDTH.search(sql)
    return "binary" if match and match.group(1).lower() == "bit" else "legacy"


def table_dim(conn) -> int | None:
    """The width of the existing vector tables, or None when there are none."""
    sql = _table_sql(conn)
    if sql is None:
        return None
    match = _WIDTH.search(sql)
    if match:
        return int(match.group(2))
    dim = get_meta(conn, "vec_dim")
    return int(dim) if dim else None


def has_table(conn) -> bool:
    """Whether a vector table exists (readable here or not)."""
    return _table_sql(conn) is not None


def _has_exact_table(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                        (EXACT_TABLE,)).fetchone() is not None


def _mismatch(existing: int, dim: int) -> DimensionMismatch:
    err = DimensionMismatch(
        f"the vector table holds {existing}-dim vectors but [embedding].dim is {dim}; "
        f"{REBUILD_FIX}")
    err.fix = "memhealth embed --rebuild"
    err.stored_dim, err.config_dim = existing, dim
    return err


def _settled(conn, dim: int) -> bool:
    """Whether the tables at width `dim` are already in the layout `_create` would make."""
    kind = layout(conn)
    if kind == "binary":
        return _has_exact_table(conn) and shard_count(conn) == SHARDS
    return kind == "legacy" and dim % 8 != 0


def ensure_vec_table(conn, dim: int) -> bool:
    """Create the vector tables at width `dim` if missing, upgrading a legacy store in place;
    False when sqlite-vec cannot load.

    Raises DimensionMismatch (with `.fix`) when the tables exist at another width."""
    if not vec_ready(conn):
        return False
    existing = table_dim(conn)
    if existing is not None and existing != dim:
        raise _mismatch(existing, dim)
    if existing == dim and _settled(conn, dim):
        return True
    with _tx(conn):
        # re-read under the write lock: another process may have created or upgraded them
        existing = table_dim(conn)
        if existing is None:
            _create(conn, dim)
        elif existing != dim:
            raise _mismatch(existing, dim)
        elif layout(conn) == "legacy":
            if dim % 8 == 0:
                _upgrade(conn, dim)
        elif not _has_exact_table(conn):
            conn.execute(_EXACT_DDL)  # an index without its exact table: backfill refills it
        elif shard_count(conn) != SHARDS:
            _fill_index(conn, dim)  # an index of 8 partitions (before 64): re-partitioned
    return True


def _create(conn, dim: int) -> None:
    dim = int(dim)
    if dim % 8:
        # sqlite-vec bit vectors need a multiple of 8 dimensions (every common embedding
        # width is one); anything else keeps the exact vec0 table.
        # cosine: Ollama's vectors are unit length already, but a model that does not
        # normalise still ranks correctly.
        conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{dim}] "
                     f"distance_metric=cosine)")
    else:
        conn.execute(_EXACT_DDL)
        _fill_index(conn, dim)
    set_meta(conn, "vec_dim", dim)


def _upgrade(conn, dim: int) -> None:
    """Legacy -> binary, inside the caller's write transaction: copy the float vectors of
    live chunks out of the vec0 table, recreate it as the bit index, and fill that."""
    # Staged through a TEMP table: writing to the main file while vec0's scan is open
    # resets the scan's overflow-page cache, so each 1.5 KB read walks its chunk's page
    # chain from the start (100k vectors: 14 s direct, 2.7 s staged, measured).
    conn.execute("DROP TABLE IF EXISTS temp.vec_upgrade")
    conn.execute("CREATE TEMP TABLE vec_upgrade(chunk_id INTEGER PRIMARY KEY, embedding BLOB)")
    conn.execute(f"INSERT INTO temp.vec_upgrade SELECT rowid, embedding FROM main.{TABLE}")
    conn.execute(_EXACT_DDL)
    conn.execute(f"INSERT INTO {EXACT_TABLE}(chunk_id, embedding) SELECT chunk_id, embedding "
                 f"FROM temp.vec_upgrade WHERE chunk_id IN (SELECT id FROM chunks) "
                 f"ON CONFLICT(chunk_id) DO UPDATE SET embedding = excluded.embedding")
    conn.execute("DROP TABLE temp.vec_upgrade")
    _fill_index(conn, dim)


def _fill_index(conn, dim: int) -> None:
    """(Re)create the bit index at SHARDS partitions from the exact vectors."""
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING vec0(part integer partition key, "
                 f"embedding bit[{int(dim)}])")
    conn.execute(f"INSERT INTO {TABLE}(rowid, part, embedding) SELECT chunk_id, "
                 f"chunk_id % {SHARDS}, vec_quantize_binary(embedding) FROM {EXACT_TABLE}")
    set_meta(conn, "vec_shards", SHARDS)


def shard_count(conn) -> int:
    """How many partitions the store's bit index has (meta `vec_shards`; older stores: 8)."""
    value = get_meta(conn, "vec_shards")
    return int(value) if value and value.isdigit() else OLD_SHARDS


def rebuild(conn, dim: int) -> bool:
    """Drop every vector and recreate the tables at width `dim` (`memhealth embed --rebuild`)."""
    if not vec_ready(conn):
        return False
    with _tx(conn):
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        if _has_exact_table(conn):
            # emptied, not dropped: dropping would take migration 6's count triggers with it
            conn.execute(f"DELETE FROM {EXACT_TABLE}")
        _create(conn, dim)
    return True


def _ready(conn) -> int | None:
    """The tables' width when vectors can be read and written here, else None."""
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
        legacy = layout(conn) == "legacy"
        shards = shard_count(conn)
        for chunk_id, vector in pairs:
            if len(vector) != dim or not all(math.isfinite(x) for x in vector):
                refused += 1
                continue
            blob = pack(vector)
            if legacy:
                # vec0 has no upsert: replace by delete + insert
                conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (chunk_id,))
                cur = conn.execute(
                    f"INSERT INTO {TABLE}(rowid, embedding) SELECT ?, ? "
                    f"WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ?)",
                    (chunk_id, blob, chunk_id))
            else:
                cur = conn.execute(_UPSERT, (chunk_id, blob, chunk_id))
                if cur.rowcount > 0:
                    conn.execute(f"DELETE FROM {TABLE} WHERE rowid = ?", (chunk_id,))
                    conn.execute(f"INSERT INTO {TABLE}(rowid, part, embedding) "
                                 f"VALUES (?, ?, vec_quantize_binary(?))",
                                 (chunk_id, chunk_id % shards, blob))
            stored += max(cur.rowcount, 0)
    return stored, refused


def vector_count(conn) -> int | None:
    """Vectors in the store, without loading the extension and without counting: the kept
    count of `chunk_vectors` (migration 6) in the binary layout. A legacy store (one vec0 float
    table) is counted from vec0's rowid shadow table, or with sqlite-vec loaded when it has
    none. None when there is no vector table or it cannot be read here."""
    kind = layout(conn)
    if kind is None:
        return None
    if kind == "binary":
        kept = _kept_count(conn)
        if kept is not None:
            return kept
    return _counted(conn)


def _kept_count(conn) -> int | None:
    try:
        row = conn.execute(f"SELECT n FROM {COUNTS} WHERE name = ?", (EXACT_TABLE,)).fetchone()
    except sqlite3.Error:  # a store opened without migrating (connect(migrate=False))
        return None
    return None if row is None else int(row[0])


def _counted(conn) -> int | None:
    """The index's rows, counted: O(vectors), for stores without a kept count and the
    gate's once-a-day check of the kept one."""
    for table in (f"{TABLE}_rowids", TABLE):
        try:
            return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        except sqlite3.Error:
            continue
    return None


_LEGACY_KNN = (f"SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ? "
               f"ORDER BY distance")
_EXACT_KNN = (f"SELECT chunk_id, vec_distance_cosine(embedding, ?) AS d FROM {EXACT_TABLE} "
              f"ORDER BY d, chunk_id LIMIT ?")
_FAST_KNN: dict[int, str] = {}


def _fast_knn(shards: int) -> str:
    """The quantized query for an index of `shards` partitions. ?1 query vector, ?2 candidates
    per shard, ?3 k. The IN list drives rowid seeks into the exact table, so only the
    candidates' float vectors are read."""
    sql = _FAST_KNN.get(shards)
    if sql is None:
        sql = _FAST_KNN[shards] = (
            f"SELECT chunk_id, vec_distance_cosine(embedding, ?1) AS d FROM {EXACT_TABLE} "
            f"WHERE chunk_id IN ("
            + " UNION ALL ".join(f"SELECT rowid FROM {TABLE} WHERE embedding MATCH "
                                 f"vec_quantize_binary(?1) AND k = ?2 AND part = {p}"
                                 for p in range(shards))
            + ") ORDER BY d, chunk_id LIMIT ?3")
    return sql


def candidates_per_shard(k: int, vectors: int = 0, shards: int = SHARDS) -> int:
    """How many Hamming-nearest vectors the fast path takes from each of `shards` partitions
    for `k` neighbours among `vectors`: k x OVERSAMPLE, at least MIN_CANDIDATES and one per
    CANDIDATE_SHARE vectors in all, at least MIN_PER_SHARD from each partition."""
    total = max(k * OVERSAMPLE, MIN_CANDIDATES, -(-vectors // CANDIDATE_SHARE))
    return max(-(-total // shards), MIN_PER_SHARD)


def knn(conn, vector: list[float], k: int, *, exact: bool | None = None) -> list[tuple[int, float]]:
    """The `k` nearest chunks as (chunk_id, cosine distance), nearest first; [] when the
    table is missing, sqlite-vec cannot load, or the vector has the wrong width.

    `exact=None` picks the exact scan below EXACT_BELOW vectors and the quantized path
    above; True or False forces one (tests, benchmarks). A legacy store is always exact."""
    dim = _ready(conn)
    if dim is None or len(vector) != dim or k <= 0:
        return []
    blob, k = pack(vector), int(k)
    with _Snapshot(conn):
        if layout(conn) == "legacy":
            rows = conn.execute(_LEGACY_KNN, (blob, k)).fetchall()
        else:
            count = vector_count(conn) or 0
            shards = shard_count(conn)
            per_shard = candidates_per_shard(k, count, shards)
            if exact is None:
                exact = count < EXACT_BELOW
            if exact or per_shard > _VEC0_MAX_K:
                rows = conn.execute(_EXACT_KNN, (blob, k)).fetchall()
            else:
                rows = conn.execute(_fast_knn(shards), (blob, per_shard, k)).fetchall()
    return [(int(r), float(d)) for r, d in rows]


def coverage(conn) -> tuple[int, int]:
    """(chunks that have a vector, all chunks)."""
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    if _ready(conn) is None:
        return 0, total
    source = (f"SELECT rowid FROM {TABLE}" if layout(conn) == "legacy"
              else f"SELECT chunk_id FROM {EXACT_TABLE}")
    with_vector = conn.execute(
        f"SELECT count(*) FROM chunks WHERE id IN ({source})").fetchone()[0]
    return with_vector, total


def missing(conn, limit: int, after: int = 0, source: str | None = None) -> list[int]:
    """Up to `limit` ids of chunks without a vector, ascending, greater than `after` (of
    one `source` when given); every chunk when no vector table exists yet."""
    where, args = ("id > ? AND source = ?", (after, source)) if source else ("id > ?", (after,))
    if _ready(conn) is None:
        if not has_table(conn):
            return [r[0] for r in conn.execute(
                f"SELECT id FROM chunks WHERE {where} ORDER BY id LIMIT ?", (*args, limit))]
        return []  # a table we cannot read: nothing can be backfilled here
    if layout(conn) == "legacy":
        return [r[0] for r in conn.execute(
            f"SELECT id FROM chunks WHERE {where} AND id NOT IN (SELECT rowid FROM {TABLE}) "
            f"ORDER BY id LIMIT ?", (*args, limit))]
    # NOT EXISTS seeks per chunk and stops at `limit`; NOT IN would read every vector first
    return [r[0] for r in conn.execute(
        f"SELECT id FROM chunks WHERE {where} AND NOT EXISTS "
        f"(SELECT 1 FROM {EXACT_TABLE} WHERE chunk_id = chunks.id) ORDER BY id LIMIT ?",
        (*args, limit))]


def delete_for_chunks(conn, ids: Iterable[int]) -> int:
    """Delete the vectors of these chunk ids from every vector table; call it in the
    transaction that deletes the chunks. Returns how many chunks lost a vector (0 when
    sqlite-vec cannot load)."""
    ids = list(ids)
    if not ids or _ready(conn) is None:
        return 0
    deleted = 0
    with _tx(conn):
        tables = [(TABLE, "rowid")]
        if layout(conn) == "binary":
            tables.append((EXACT_TABLE, "chunk_id"))
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            marks = ",".join("?" * len(part))
            counts = [max(conn.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})",
                                       part).rowcount, 0) for table, key in tables]
            deleted += max(counts)
    return deleted


def prune_orphans(conn) -> int:
    """Delete vectors whose chunk is gone (deleted by a process without sqlite-vec), and
    index entries without an exact vector, then set the kept count from a real count;
    returns how many ids were cleaned."""
    if _ready(conn) is None:
        return 0
    if layout(conn) == "legacy":
        orphans = [r[0] for r in conn.execute(
            f"SELECT rowid FROM {TABLE} WHERE rowid NOT IN (SELECT id FROM chunks)")]
        return delete_for_chunks(conn, orphans)
    orphans = {r[0] for r in conn.execute(
        f"SELECT chunk_id FROM {EXACT_TABLE} WHERE chunk_id NOT IN (SELECT id FROM chunks)")}
    orphans.update(r[0] for r in conn.execute(
        f"SELECT rowid FROM {TABLE} WHERE rowid NOT IN (SELECT chunk_id FROM {EXACT_TABLE})"))
    with _tx(conn):
        delete_for_chunks(conn, sorted(orphans))
        recount(conn)
    return len(orphans)


def recount(conn) -> int | None:
    """Set the kept count from a real count of `chunk_vectors` (O(vectors)); the repair
    `memhealth embed` runs (through prune_orphans) when the gate finds the count out of
    step. None when the store has no kept count (not migrated)."""
    if not _has_counts_table(conn):
        return None
    with _tx(conn):
        (n,) = conn.execute(f"SELECT count(*) FROM {EXACT_TABLE}").fetchone()
        conn.execute(f"INSERT INTO {COUNTS}(name, n) VALUES (?, ?) "
                     f"ON CONFLICT(name) DO UPDATE SET n = excluded.n", (EXACT_TABLE, n))
    return n


def _has_counts_table(conn) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (COUNTS,)).fetchone() is not None


def count_check(conn) -> tuple[int, int] | None:
    """(kept count, the bit index's rows counted) for the binary layout, or None (another
    layout, no kept count, no index). O(vectors) over vec0's small rowid table (~100 bytes
    a row, no extension needed): the gate runs it with its once-a-day full scans. Unequal
    means the kept count drifted or the index and the exact table are out of step; both
    are repaired by `memhealth embed` (prune_orphans, then recount)."""
    if layout(conn) != "binary":
        return None
    kept = _kept_count(conn)
    if kept is None:
        return None
    try:
        (counted,) = conn.execute(f"SELECT count(*) FROM {TABLE}_rowids").fetchone()
    except sqlite3.Error:
        return None
    return kept, counted


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

    `client` is anything with `.embed(texts) -> vectors` (memory_core.index.embed.OllamaClient).
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

