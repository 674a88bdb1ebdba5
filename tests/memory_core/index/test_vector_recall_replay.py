"""The vector-recall benchmark's numpy replay of the quantized KNN
(benchmarks/bench_vector_recall_real.py) agrees with the shipped path on a real store, so its
candidate-count and centring figures say something about memory_core/index/vectors.py."""

from __future__ import annotations

import os
import sys

import pytest

from memory_core.index import vectors
from memory_core.store import db
from tests.conftest import REPO

np = pytest.importorskip("numpy")
sys.path.insert(0, os.path.join(REPO, "benchmarks"))  # the repository's benchmarks/
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


def test_the_benchmark_queries_split_into_a_tuned_and_a_held_out_part_that_share_no_prompt():
    from bench_vector_recall_real import queries

    got = queries()
    parts = {part for _text, part in got}
    tuned = [t for t, part in got if part == "tuned"]
    held = [t for t, part in got if part == "held-out"]
    assert parts == {"tuned", "held-out"} and len(tuned) + len(held) == len(got)
    assert len({t for t, _ in got}) == len(got) and not set(tuned) & set(held)
    assert len(tuned) >= 80 and len(held) >= 200
    # the split is the fixtures' own: every httpx prompt and tuned cue is tuned, every other
    # prompt held out unless an httpx one says the same
    import json

    fixtures = os.path.join(REPO, "tests", "fixtures")
    rows = []
    for rel in ("realcorpus/prompts.jsonl", "realcorpus/prompts-meaning.jsonl", "semantic-cues/pairs.jsonl"):
        with open(os.path.join(fixtures, rel), encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    first = {r["prompt"] for r in rows if r.get("project") == "httpx" or r.get("split") == "tuned"}
    assert set(tuned) == first and set(held) == {r["prompt"] for r in rows} - first


def _swept(tuned: dict[int, float], p50: dict[int, float], exact_p50: float = 100.0) -> dict:
    from bench_vector_recall_real import FLOORS

    return {"exact_p50": exact_p50, **{f: {"tuned": tuned[f], "held-out": 0.0, "p50": p50[f]} for f in FLOORS}}


def test_the_candidate_floor_is_chosen_on_the_tuned_queries_by_the_written_rule():
    from bench_vector_recall_real import choose_floor

    cheap = {256: 5.0, 512: 6.0, 1024: 8.0, 2048: 12.0, 4096: 30.0}
    small = _swept({256: 0.90, 512: 0.96, 1024: 0.98, 2048: 0.99, 4096: 1.0}, cheap)
    large = _swept({256: 0.86, 512: 0.91, 1024: 0.95, 2048: 0.97, 4096: 0.99}, cheap)
    # the smallest floor that reaches the target at every size, not the best one
    assert choose_floor({10_000: small, 100_000: large})[0] == 1024
    # the held-out recall has no say
    for f in large:
        if isinstance(f, int):
            large[f]["held-out"] = 1.0
    assert choose_floor({10_000: small, 100_000: large})[0] == 1024
    # a floor over the cost cap at the largest size is not taken, whatever its recall
    slow = _swept({256: 0.86, 512: 0.90, 1024: 0.93, 2048: 0.97, 4096: 0.99},
                  {256: 5.0, 512: 6.0, 1024: 8.0, 2048: 26.0, 4096: 30.0})
    floor, why = choose_floor({10_000: small, 100_000: slow})
    assert floor == 1024 and "best tuned recall" in why
