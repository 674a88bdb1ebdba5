"""The vector table on a real SQLite file with sqlite-vec: width, guard, KNN, coverage."""

from __future__ import annotations

import sqlite3 as stdlib_sqlite3
import time

import pytest

from memory_core import db, vectors
from memory_core.embed import OllamaClient, forget_process_state
from memory_core.errors import DimensionMismatch
from tests.ollama_standin import OllamaStandin, vector

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
