"""The vector-recall benchmark's numpy replay of the quantized KNN
(benchmarks/bench_vector_recall_real.py) agrees with the shipped path on a real store, so its
candidate-count and centring figures say something about memory_core/index/vectors.py."""

from __future__ import annotations

import os
import sys

import pytest

from memory_core.index import vectors
from memory_core.store import db

np = pytest.importorskip("numpy")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "benchmarks"))  # the repository's benchmarks/
from bench_vector_recall_real import replay  # noqa: E402

DIM = 64
N = 6000  # above EXACT_BELOW: the quantized path is what knn(exact=False) runs


def anisotropic(n: int, seed: int):
    """Unit vectors sharing a mean direction, as a sentence model's do (|mean| about 0.5)."""
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=DIM)
    shared /= np.linalg.norm(shared)
    topics = rng.normal(size=(24, DIM))
    x = 1.2 * shared + topics[rng.integers(0, 24, n)] * 0.35 + rng.normal(size=(n, DIM)) * 0.3
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def store(tmp_path):
    conn = db.connect(tmp_path / "memory.db")
    if not vectors.vec_ready(conn):
        pytest.skip("sqlite-vec cannot load in this interpreter")
    corpus = anisotropic(N, 3)
    assert vectors.ensure_vec_table(conn, DIM)
    with db.write(conn):
        conn.executemany("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('docs', 'd.md', 1, 2, 'section', '', ?, ?, 0)",
                         [(f"c{i}", f"h{i}") for i in range(N)])
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
        assert vectors.store(conn, ((cid, corpus[i].tolist()) for i, cid in enumerate(ids))) == (N, 0)
    yield conn, corpus, ids[0]
    conn.close()


def test_the_replay_reads_the_recall_the_shipped_quantized_path_gets(store):
    conn, corpus, first_id = store
    queries = anisotropic(60, 11)
    found = 0
    for q in queries.tolist():
        truth = {c for c, _ in vectors.knn(conn, q, 10, exact=True)}
        found += len(truth & {c for c, _ in vectors.knn(conn, q, 10, exact=False)})
    shipped = found / (10 * len(queries))
    candidates = vectors.candidates_per_shard(10, N, vectors.shard_count(conn)) * vectors.shard_count(conn)
    replayed = replay(corpus, queries, candidates, center=False, first_id=first_id)
    assert shipped < 0.99  # not trivially easy: a replay that always found everything would fail
    assert replayed == pytest.approx(shipped, abs=0.04)


def test_the_replay_finds_everything_when_every_vector_is_a_candidate(store):
    _conn, corpus, first_id = store
    queries = anisotropic(20, 12)
    assert replay(corpus, queries, N, center=False, first_id=first_id) == 1.0
    assert replay(corpus, queries, N, center=True, first_id=first_id) == 1.0
    assert replay(corpus, queries, 64, center=False, first_id=first_id) < 1.0
