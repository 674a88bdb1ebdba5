"""The vector table on a real SQLite file with sqlite-vec: width, guard, KNN, coverage."""

from __future__ import annotations

import math
import random
import sqlite3 as stdlib_sqlite3
import time

import pytest

from memory_core.errors import DimensionMismatch
from memory_core.index import vectors
from memory_core.index.embed import OllamaClient, forget_process_state
from memory_core.store import db
from tests.support.ollama_standin import OllamaStandin, vector

DIM = 8


def add_chunk(conn, content: str, title: str = "", path: str = "notes.md") -> int:
    cur = conn.execute(
        "INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
        "created_ns) VALUES ('docs', ?, 1, 2, 'heading', ?, ?, ?, ?)",
        (path, title, content, str(hash((path, content))), time.time_ns()))
    return cur.lastrowid


@pytest.fixture
def conn(tmp_path):
    connection = db.connect(tmp_path / "memory.db")
    if not vectors.vec_ready(connection):
        pytest.skip("sqlite-vec cannot load in this interpreter")
    yield connection
    connection.close()


def test_ensure_creates_the_table_once_and_records_its_width(conn):
    assert vectors.ensure_vec_table(conn, DIM)
    assert vectors.ensure_vec_table(conn, DIM)
    assert vectors.table_dim(conn) == DIM
    assert conn.execute("SELECT value FROM meta WHERE key = 'vec_dim'").fetchone() == ("8",)


def test_a_table_of_another_width_is_never_silently_recreated(conn):
    vectors.ensure_vec_table(conn, DIM)
    cid = add_chunk(conn, "kept")
    vectors.store(conn, [(cid, vector("kept", DIM))])
    with pytest.raises(DimensionMismatch, match="memhealth embed --rebuild") as info:
        vectors.ensure_vec_table(conn, 16)
    assert info.value.fix == "memhealth embed --rebuild"
    assert vectors.coverage(conn) == (1, 1)


def test_wrong_width_vectors_are_refused_and_the_store_never_holds_another_width(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"chunk {i}") for i in range(4)]
    stored, refused = vectors.store(conn, [
        (ids[0], vector("a", DIM)), (ids[1], vector("b", DIM + 1)),
        (ids[2], [float("nan")] * DIM), (ids[3], vector("d", DIM - 1))])
    assert (stored, refused) == (1, 3)
    widths = {w for (w,) in conn.execute("SELECT vec_length(embedding) FROM chunks_vec")}
    assert widths == {DIM}


def test_a_vector_for_a_deleted_chunk_is_not_stored(conn):
    vectors.ensure_vec_table(conn, DIM)
    cid = add_chunk(conn, "gone soon")
    conn.execute("DELETE FROM chunks WHERE id = ?", (cid,))
    assert vectors.store(conn, [(cid, vector("x", DIM))]) == (0, 0)


def test_knn_returns_the_identical_vector_first(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"text {i}") for i in range(20)]
    vectors.store(conn, [(i, vector(f"text {i}", DIM)) for i in ids])
    hits = vectors.knn(conn, vector(f"text {ids[7]}", DIM), 5)
    assert len(hits) == 5
    assert hits[0][0] == ids[7] and hits[0][1] == pytest.approx(0.0, abs=1e-6)
    assert [d for _, d in hits] == sorted(d for _, d in hits)
    assert vectors.knn(conn, vector("x", DIM + 1), 5) == []


def test_coverage_missing_and_storing_again_replace_rather_than_duplicate(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"c{i}") for i in range(5)]
    vectors.store(conn, [(ids[1], vector("1", DIM)), (ids[3], vector("3", DIM))])
    vectors.store(conn, [(ids[1], vector("1 again", DIM))])
    assert vectors.coverage(conn) == (2, 5)
    assert vectors.missing(conn, 10) == [ids[0], ids[2], ids[4]]
    assert vectors.missing(conn, 1, after=ids[0]) == [ids[2]]


def test_deleting_chunks_with_the_helper_removes_their_vectors_and_prune_catches_the_rest(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"c{i}") for i in range(4)]
    vectors.store(conn, [(i, vector(str(i), DIM)) for i in ids])
    with db.write(conn):
        conn.execute("DELETE FROM chunks WHERE id IN (?, ?)", ids[:2])
        assert vectors.delete_for_chunks(conn, ids[:2]) == 2
    conn.execute("DELETE FROM chunks WHERE id = ?", (ids[2],))  # as a process without sqlite-vec would
    assert vectors.prune_orphans(conn) == 1
    assert vectors.coverage(conn) == (1, 1)


def test_rebuild_recreates_the_table_at_the_new_width(conn):
    vectors.ensure_vec_table(conn, DIM)
    cid = add_chunk(conn, "c")
    vectors.store(conn, [(cid, vector("c", DIM))])
    assert vectors.rebuild(conn, 16)
    assert vectors.table_dim(conn) == 16
    assert vectors.coverage(conn) == (0, 1)
    assert vectors.ensure_vec_table(conn, 16)


def test_backfill_embeds_every_missing_chunk_through_the_standin(conn):
    forget_process_state()
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"body {i}", title=f"t{i}") for i in range(25)]
    progress = []
    with OllamaStandin(mode="instant", dim=DIM) as ollama:
        client = OllamaClient(ollama.url, "nomic-embed-text", DIM)
        result = vectors.backfill(conn, client, batch_size=10,
                                  on_progress=lambda done, total: progress.append((done, total)))
    assert (result.stored, result.refused, result.remaining, result.error) == (25, 0, 0, None)
    assert progress == [(10, 25), (20, 25), (25, 25)]
    [(nearest, _)] = vectors.knn(conn, vector(vectors.embed_text("t3", "body 3"), DIM), 1)
    assert nearest == ids[3]


def test_backfill_stops_at_the_first_embedding_error_and_stores_nothing_wrong(conn):
    forget_process_state()
    vectors.ensure_vec_table(conn, DIM)
    for i in range(5):
        add_chunk(conn, f"body {i}")
    with OllamaStandin(mode="wrong_width", dim=DIM) as ollama:
        result = vectors.backfill(conn, OllamaClient(ollama.url, "nomic-embed-text", DIM), batch_size=2)
        assert len(ollama.bodies("/api/embed")) == 1
    assert result.error.reason == "dimension_mismatch"
    assert (result.stored, result.remaining) == (0, 5)


def test_everything_degrades_when_sqlite_vec_cannot_load(tmp_path, conn):
    vectors.ensure_vec_table(conn, DIM)
    cid = add_chunk(conn, "c")
    vectors.store(conn, [(cid, vector("c", DIM))])
    plain = stdlib_sqlite3.connect(tmp_path / "memory.db", isolation_level=None)
    if hasattr(plain, "enable_load_extension"):
        pytest.skip("this interpreter's sqlite3 can load extensions")
    try:
        assert not vectors.ensure_vec_table(plain, DIM)
        assert vectors.store(plain, [(cid, vector("c", DIM))]) == (0, 0)
        assert vectors.knn(plain, vector("c", DIM), 3) == []
        assert vectors.coverage(plain) == (0, 1)
        assert vectors.missing(plain, 10) == []
        assert vectors.delete_for_chunks(plain, [cid]) == 0
    finally:
        plain.close()


# -- the quantized layout: exact table + binary index ------------------------------------------

QDIM = 128  # bit quantization keeps less at low widths (64 dims: recall 0.88 here); models use 384+


def unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def clustered(n: int, queries: int, dim: int = QDIM, seed: int = 3) -> tuple[list, list]:
    """Deterministic clustered unit vectors: a shared mean (embeddings are anisotropic), 8
    topics x 4 leaves, and per-vector noise of random weight. About 125 vectors share a
    leaf, so the 10 nearest are told apart by noise alone: Hamming order by itself finds
    under a third of them (uniform random vectors would be harder than any real model's
    output, a single tight cluster trivially easy)."""
    rnd = random.Random(seed)

    def direction() -> list[float]:
        return unit([rnd.gauss(0, 1) for _ in range(dim)])

    mean = direction()
    topics = [direction() for _ in range(8)]
    leaves = [[direction() for _ in range(4)] for _ in range(8)]

    def point() -> list[float]:
        t, s, w = rnd.randrange(8), rnd.randrange(4), rnd.uniform(0.6, 1.0)
        return unit([m + a + 0.7 * b + w * c
                     for m, a, b, c in zip(mean, topics[t], leaves[t][s], direction(), strict=True)])

    return [point() for _ in range(n)], [point() for _ in range(queries)]


def fill(conn, corpus: list[list[float]]) -> list[int]:
    with db.write(conn):
        ids = [add_chunk(conn, f"v{i}") for i in range(len(corpus))]
        assert vectors.store(conn, list(zip(ids, corpus, strict=True))) == (len(corpus), 0)
    return ids


def ids_in(conn, sql: str) -> set[int]:
    return {r[0] for r in conn.execute(sql)}


def create_legacy(conn, dim: int) -> None:
    """The layout stores written before the quantized index have: one vec0 float table."""
    conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{dim}] "
                 f"distance_metric=cosine)")
    conn.execute("INSERT INTO meta(key, value) VALUES ('vec_dim', ?)", (str(dim),))


def test_the_quantized_path_finds_95_percent_of_the_exact_ten_nearest_on_clustered_vectors(conn, monkeypatch):
    # the floor a sentence model needs (1,024) is a quarter of this store: at 256 the
    # candidates are a real subset and the rescoring has work to do
    monkeypatch.setattr(vectors, "MIN_CANDIDATES", 256)
    corpus, queries = clustered(4000, 40)
    vectors.ensure_vec_table(conn, QDIM)
    fill(conn, corpus)
    assert vectors.layout(conn) == "binary" and vectors.vector_count(conn) == 4000
    fast_found = hamming_found = 0
    for q in queries:
        exact = vectors.knn(conn, q, 10, exact=True)
        fast = vectors.knn(conn, q, 10, exact=False)
        hamming = ids_in(conn, "SELECT rowid FROM chunks_vec WHERE embedding MATCH "
                               f"vec_quantize_binary(x'{vectors.pack(q).hex()}') AND k = 10")
        truth = {cid for cid, _ in exact}
        fast_found += len(truth & {cid for cid, _ in fast})
        hamming_found += len(truth & hamming)
        # rescoring reads the exact vectors: a chunk both paths return has the same distance
        exact_d = dict(exact)
        assert all(d == pytest.approx(exact_d[cid], abs=1e-6) for cid, d in fast if cid in exact_d)
        assert [d for _, d in fast] == sorted(d for _, d in fast)
    assert vectors.candidates_per_shard(10, 4000) * vectors.SHARDS < 4000 / 10  # a real subset
    assert fast_found / 400 >= 0.95
    assert hamming_found / 400 < 0.5  # not trivially easy: the rescoring does the work


def test_knn_scans_exactly_below_the_threshold_and_quantizes_above(conn, monkeypatch):
    monkeypatch.setattr(vectors, "MIN_CANDIDATES", 256)  # a subset of 4,000, so the two paths can differ
    corpus, queries = clustered(4000, 40)
    vectors.ensure_vec_table(conn, QDIM)
    fill(conn, corpus)
    differ = next(q for q in queries
                  if vectors.knn(conn, q, 10, exact=True) != vectors.knn(conn, q, 10, exact=False))
    monkeypatch.setattr(vectors, "EXACT_BELOW", 4001)
    assert vectors.knn(conn, differ, 10) == vectors.knn(conn, differ, 10, exact=True)
    monkeypatch.setattr(vectors, "EXACT_BELOW", 4000)
    assert vectors.knn(conn, differ, 10) == vectors.knn(conn, differ, 10, exact=False)


def test_the_dimension_guard_covers_the_exact_table_and_the_index(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"chunk {i}") for i in range(4)]
    assert vectors.store(conn, [(ids[0], vector("a", DIM)), (ids[1], vector("b", DIM + 8)),
                                (ids[2], [float("inf")] * DIM), (ids[3], [])]) == (1, 3)
    assert conn.execute("SELECT DISTINCT length(embedding), vec_length(embedding) "
                        "FROM chunk_vectors").fetchall() == [(4 * DIM, DIM)]
    assert ids_in(conn, "SELECT vec_length(embedding) FROM chunks_vec") == {DIM}
    assert ids_in(conn, "SELECT rowid FROM chunks_vec") == ids_in(conn, "SELECT chunk_id FROM chunk_vectors")
    for exact in (True, False, None):
        assert vectors.knn(conn, vector("a", DIM + 8), 3, exact=exact) == []
        assert vectors.knn(conn, vector("a", DIM), 3, exact=exact)[0][0] == ids[0]
    with pytest.raises(DimensionMismatch, match="memhealth embed --rebuild"):
        vectors.ensure_vec_table(conn, DIM + 8)


def test_deletes_and_pruning_leave_no_orphans_in_any_vector_table(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"c{i}") for i in range(12)]
    vectors.store(conn, [(i, vector(str(i), DIM)) for i in ids])
    with db.write(conn):
        conn.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * 4)})", ids[:4])
        assert vectors.delete_for_chunks(conn, ids[:4]) == 4
    conn.execute("DELETE FROM chunks WHERE id IN (?, ?)", ids[4:6])  # a process without sqlite-vec
    conn.execute("DELETE FROM chunk_vectors WHERE chunk_id = ?", (ids[6],))  # an index entry alone
    assert vectors.prune_orphans(conn) == 3
    live = set(ids[6:])
    assert ids_in(conn, "SELECT id FROM chunks") == live
    assert ids_in(conn, "SELECT chunk_id FROM chunk_vectors") == live - {ids[6]}
    assert ids_in(conn, "SELECT rowid FROM chunks_vec") == live - {ids[6]}
    assert ids_in(conn, "SELECT rowid FROM chunks_vec_rowids") == live - {ids[6]}
    assert vectors.coverage(conn) == (5, 6) and vectors.missing(conn, 10) == [ids[6]]
    assert vectors.prune_orphans(conn) == 0


def test_rebuild_drops_the_exact_vectors_too(conn):
    vectors.ensure_vec_table(conn, DIM)
    cid = add_chunk(conn, "c")
    vectors.store(conn, [(cid, vector("c", DIM))])
    assert vectors.rebuild(conn, 16)
    assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone() == (0,)
    assert vectors.layout(conn) == "binary" and vectors.table_dim(conn) == 16


def test_an_old_float_only_store_keeps_answering_and_is_upgraded_in_place(conn):
    create_legacy(conn, DIM)
    ids = [add_chunk(conn, f"old {i}") for i in range(30)]
    assert vectors.store(conn, [(i, vector(f"old {i}", DIM)) for i in ids[:25]]) == (25, 0)
    conn.execute("DELETE FROM chunks WHERE id = ?", (ids[0],))  # leaves an orphan vector
    query = vector(f"old {ids[3]}", DIM)
    before = vectors.knn(conn, query, 5)
    assert vectors.layout(conn) == "legacy" and before[0][0] == ids[3]
    assert vectors.coverage(conn) == (24, 29) and vectors.missing(conn, 2) == ids[25:27]
    blobs = dict(conn.execute("SELECT rowid, embedding FROM chunks_vec WHERE rowid != ?", (ids[0],)))

    assert vectors.ensure_vec_table(conn, DIM)  # what ingest and `memhealth embed` call first
    assert vectors.layout(conn) == "binary"
    assert "bit[8]" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()[0]
    assert dict(conn.execute("SELECT chunk_id, embedding FROM chunk_vectors")) == blobs
    assert ids_in(conn, "SELECT rowid FROM chunks_vec") == set(blobs)  # the orphan is gone
    after = vectors.knn(conn, query, 5)
    assert [c for c, _ in after] == [c for c, _ in before]
    assert [d for _, d in after] == pytest.approx([d for _, d in before], abs=1e-6)
    assert vectors.knn(conn, query, 5, exact=False) == after
    assert vectors.coverage(conn) == (24, 29) and vectors.missing(conn, 2) == ids[25:27]
    assert vectors.store(conn, [(ids[25], vector("new", DIM))]) == (1, 0)
    assert vectors.coverage(conn) == (25, 29)


def test_an_old_store_at_another_width_is_refused_not_upgraded(conn):
    create_legacy(conn, DIM)
    cid = add_chunk(conn, "kept")
    vectors.store(conn, [(cid, vector("kept", DIM))])
    with pytest.raises(DimensionMismatch, match="memhealth embed --rebuild"):
        vectors.ensure_vec_table(conn, 16)
    assert vectors.layout(conn) == "legacy" and vectors.coverage(conn) == (1, 1)


def test_a_width_that_is_not_a_multiple_of_8_keeps_the_exact_float_table(conn):
    assert vectors.ensure_vec_table(conn, 12)
    assert vectors.ensure_vec_table(conn, 12)
    assert vectors.layout(conn) == "legacy" and vectors.table_dim(conn) == 12
    ids = [add_chunk(conn, f"t{i}") for i in range(6)]
    assert vectors.store(conn, [(i, vector(f"t{i}", 12)) for i in ids]) == (6, 0)
    assert vectors.knn(conn, vector(f"t{ids[2]}", 12), 2, exact=False)[0][0] == ids[2]


# -- the search leg's k, and the kept vector count (migration 6) --------------------------------

def recall(conn, queries: list[list[float]], k: int) -> float:
    found = 0
    for q in queries:
        truth = {cid for cid, _ in vectors.knn(conn, q, k, exact=True)}
        found += len(truth & {cid for cid, _ in vectors.knn(conn, q, k, exact=False)})
    return found / (k * len(queries))


def test_the_search_legs_k_keeps_95_percent_recall_only_with_oversampling(conn, monkeypatch):
    """k=30 is what search(k=10) asks the vector leg for: >= 95 % of the exact 30 nearest.
    With the floors out of the way, the oversampling alone holds that recall, and
    oversampling 1 loses it: this corpus tells them apart."""
    corpus, queries = clustered(4000, 40)
    vectors.ensure_vec_table(conn, QDIM)
    fill(conn, corpus)
    assert recall(conn, queries, 30) >= 0.95
    for floor in ("MIN_CANDIDATES", "MIN_PER_SHARD"):
        monkeypatch.setattr(vectors, floor, 1)
    assert vectors.candidates_per_shard(30, 4000) * vectors.SHARDS < 300
    assert recall(conn, queries, 30) >= 0.95
    monkeypatch.setattr(vectors, "OVERSAMPLE", 1)
    assert recall(conn, queries, 30) < 0.8


def test_candidates_grow_with_the_store_so_recall_does_not_fall():
    """A fixed candidate count loses recall as more vectors crowd each neighbourhood (240
    for k=30: recall@10 0.99 at 100k, 0.82 at 1M, benchmarks/scale_vectors.py)."""
    # the floor (1,024) holds to about 1M vectors; past it one per CANDIDATE_SHARE
    per = [vectors.candidates_per_shard(30, n) * vectors.SHARDS for n in (10_000, 1_000_000, 10_000_000)]
    assert per == sorted(per) and per[0] >= 240
    assert per[2] >= 10_000_000 // vectors.CANDIDATE_SHARE and per[2] >= 4 * per[0]
    assert vectors.candidates_per_shard(30, 100_000_000) <= 4096  # vec0's largest k


def kept(conn) -> int:
    return conn.execute("SELECT n FROM vector_counts WHERE name = 'chunk_vectors'").fetchone()[0]


def counted(conn) -> tuple[int, int]:
    return (conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0],
            conn.execute("SELECT count(*) FROM chunks_vec_rowids").fetchone()[0])


def test_the_kept_vector_count_follows_every_write_without_counting(conn):
    vectors.ensure_vec_table(conn, DIM)
    ids = [add_chunk(conn, f"k{i}") for i in range(10)]
    assert vectors.store(conn, [(i, vector(str(i), DIM)) for i in ids]) == (10, 0)
    assert (kept(conn), vectors.vector_count(conn)) == (10, 10) and counted(conn) == (10, 10)
    # storing again replaces (an upsert): a REPLACE would add one without the delete's minus one
    assert vectors.store(conn, [(i, vector(f"again {i}", DIM)) for i in ids[:4]]) == (4, 0)
    assert kept(conn) == 10 and counted(conn) == (10, 10)
    assert conn.execute("SELECT embedding FROM chunk_vectors WHERE chunk_id = ?",
                        (ids[0],)).fetchone()[0] == vectors.pack(vector(f"again {ids[0]}", DIM))
    with db.write(conn):
        conn.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * 3)})", ids[:3])
        assert vectors.delete_for_chunks(conn, ids[:3]) == 3
    assert kept(conn) == 7 and counted(conn) == (7, 7)
    conn.execute("DELETE FROM chunks WHERE id = ?", (ids[3],))  # a process without sqlite-vec
    assert vectors.prune_orphans(conn) == 1 and kept(conn) == 6 and counted(conn) == (6, 6)
    conn.execute("UPDATE vector_counts SET n = 40")  # drifted (say, a trigger dropped by hand)
    assert vectors.count_check(conn) == (40, 6) and vectors.vector_count(conn) == 40
    assert vectors.prune_orphans(conn) == 0 and vectors.count_check(conn) == (6, 6)
    assert vectors.rebuild(conn, 16) and kept(conn) == 0 and vectors.vector_count(conn) == 0
    assert vectors.store(conn, [(ids[5], vector("w", 16))]) == (1, 0) and kept(conn) == 1


def test_a_store_written_before_migration_6_gets_its_count_and_keeps_its_vectors(tmp_path):
    from memory_core.store.schema import LATEST

    path = tmp_path / "old.db"
    conn = db.connect(path)
    if not vectors.vec_ready(conn):
        pytest.skip("sqlite-vec cannot load in this interpreter")
    vectors.ensure_vec_table(conn, QDIM)
    corpus, queries = clustered(600, 5)
    ids = fill(conn, corpus)
    before = [vectors.knn(conn, q, 10) for q in queries]
    # as the store was before migration 6: the vector tables, no kept count, schema v5
    conn.execute("DROP TRIGGER chunk_vectors_count_ai")
    conn.execute("DROP TRIGGER chunk_vectors_count_ad")
    conn.execute("DROP TABLE vector_counts")
    conn.close()

    # migration 6 itself, as ensure_schema runs it on a v5 store (the later migrations alter
    # other tables, which this store already has, so its version is not rewound past them)
    from memory_core.store.schema import MIGRATIONS, _split

    raw = db.connect(path, migrate=False)
    (number, _title, sql) = next(m for m in MIGRATIONS if m[0] == 6)
    with db.write(raw):
        for statement in _split(sql):
            raw.execute(statement)
    raw.close()
    conn = db.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (LATEST,)
        assert kept(conn) == 600 and vectors.vector_count(conn) == 600 and counted(conn) == (600, 600)
        assert [vectors.knn(conn, q, 10) for q in queries] == before
        assert vectors.ensure_vec_table(conn, QDIM) and vectors.layout(conn) == "binary"
        with db.write(conn):
            conn.execute("DELETE FROM chunks WHERE id = ?", (ids[0],))
            vectors.delete_for_chunks(conn, [ids[0]])
        assert kept(conn) == 599 and counted(conn) == (599, 599)
    finally:
        conn.close()


def test_a_legacy_store_migrates_then_upgrades_with_an_exact_count(conn):
    create_legacy(conn, DIM)
    ids = [add_chunk(conn, f"old {i}") for i in range(20)]
    assert vectors.store(conn, [(i, vector(f"old {i}", DIM)) for i in ids]) == (20, 0)
    # migration 6 made chunk_vectors already; the legacy store keeps its vectors in vec0
    assert kept(conn) == 0 and vectors.vector_count(conn) == 20  # counted: legacy has no kept count
    assert vectors.ensure_vec_table(conn, DIM) and vectors.layout(conn) == "binary"
    assert kept(conn) == 20 and counted(conn) == (20, 20) and vectors.count_check(conn) == (20, 20)


def test_an_index_of_8_partitions_keeps_answering_and_is_repartitioned_in_place(conn):
    corpus, queries = clustered(4200, 10)
    vectors.ensure_vec_table(conn, QDIM)
    ids = fill(conn, corpus)
    # as stores written before 64 partitions have it: 8, and no vec_shards in meta
    conn.execute("DROP TABLE chunks_vec")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(part integer partition key, "
                 f"embedding bit[{QDIM}])")
    conn.execute("INSERT INTO chunks_vec(rowid, part, embedding) SELECT chunk_id, chunk_id % 8, "
                 "vec_quantize_binary(embedding) FROM chunk_vectors")
    conn.execute("DELETE FROM meta WHERE key = 'vec_shards'")
    assert vectors.shard_count(conn) == 8
    assert recall(conn, queries, 10) >= 0.95  # answered through the 8 partitions
    extra = add_chunk(conn, "written while 8")
    assert vectors.store(conn, [(extra, corpus[0])]) == (1, 0)
    assert conn.execute("SELECT part FROM chunks_vec WHERE rowid = ?", (extra,)).fetchone() == (extra % 8,)

    assert vectors.ensure_vec_table(conn, QDIM)  # what ingest and `memhealth embed` call first
    assert vectors.shard_count(conn) == vectors.SHARDS == 64
    parts = dict(conn.execute("SELECT rowid, part FROM chunks_vec"))
    assert parts == {i: i % 64 for i in [*ids, extra]}
    assert vectors.count_check(conn) == (4201, 4201)
    new = [vectors.knn(conn, q, 10, exact=False) for q in queries]
    exact = [vectors.knn(conn, q, 10, exact=True) for q in queries]
    assert sum(len({c for c, _ in n} & {c for c, _ in e}) for n, e in zip(new, exact, strict=True)) >= 95
