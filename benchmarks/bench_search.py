"""Search latency at 10k and 100k chunks: BM25 alone, vectors alone (quantized fast path
and exact scan), and hybrid; plus the fast path's recall against the exact scan.

    python benchmarks/run.py search            # 10k and 100k
    python benchmarks/run.py search --quick    # 10k only

The corpus is synthetic and deterministic (seeded Zipf-distributed words; clustered unit
vectors), built in a temporary directory through the real store. Query vectors are
precomputed, so the vector and hybrid figures exclude the embedding call: they measure
what the store does (FTS5 + sqlite-vec KNN + fusion). Target: hybrid p50 under 20 ms at
100k chunks.

Vectors are clustered, not uniform: uniform random vectors in 384 dimensions have no near
neighbours (every pair is about orthogonal), which no embedding model produces and which
makes any quantized index look broken (recall@10 0.52 with 100 candidates, measured). Here
a vector is a shared mean direction (real embeddings are anisotropic; it sets random-pair
cosine near 0.3) plus a 32 x 8 x 8 topic tree plus per-chunk noise of random weight, which
puts the query's nearest neighbour near cosine 0.84 and its 10th near 0.81, many leaves
apart only by noise.
"""

from __future__ import annotations

import array
import hashlib
import math
import os
import random
import sys
import tempfile
import time
from contextlib import contextmanager

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import pct, row  # noqa: E402

DIM = 384          # all-minilm / small snowflake width; 768-dim models double the KNN cost
VOCAB = 20000
WORDS_PER_CHUNK = 60
QUERIES = 50
K = 10
TREE = ((32, 1.0), (8, 0.7), (8, 0.5))  # (branches, weight) per level of the topic tree
MEAN_WEIGHT = 1.0
NOISE = (0.6, 1.0)


def _words(rnd: random.Random) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    seen: dict[str, None] = {}
    while len(seen) < VOCAB:
        seen["".join(rnd.choice(syllables) for _ in range(rnd.randint(2, 4)))] = None
    return list(seen)


def _unit(values) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _noise(key: str) -> list[float]:
    return _unit(array.array("h", hashlib.shake_256(key.encode()).digest(2 * DIM)))


class _Clustered:
    """Deterministic clustered unit vectors (see the module docstring)."""

    def __init__(self, seed: int):
        self.rnd = random.Random(seed)
        self.seed = seed
        self.leaves: dict[tuple[int, ...], list[float]] = {}

    def _leaf(self, path: tuple[int, ...]) -> list[float]:
        if path not in self.leaves:
            acc = [MEAN_WEIGHT * v for v in _noise(f"{self.seed}/mean")]
            for depth, (_branches, weight) in enumerate(TREE):
                direction = _noise(f"{self.seed}/{path[:depth + 1]}")
                acc = [a + weight * d for a, d in zip(acc, direction, strict=True)]
            self.leaves[path] = acc
        return self.leaves[path]

    def __call__(self, key: str) -> list[float]:
        center = self._leaf(tuple(self.rnd.randrange(b) for b, _w in TREE))
        weight = self.rnd.uniform(*NOISE)
        return _unit([c + weight * n for c, n in zip(center, _noise(f"{self.seed}/{key}"), strict=True)])


def build(path: str, n: int, seed: int = 7) -> tuple[list[str], list[list[float]]]:
    """A store of `n` synthetic chunks with vectors; returns (queries, query vectors)."""
    from memory_core.index import vectors
    from memory_core.store import db

    rnd = random.Random(seed)
    vector = _Clustered(seed)
    words = _words(rnd)
    cum = list(_cumulative(len(words)))
    sources = [("docs", 10), ("memory", 40), ("ledger", 30), ("git", 15), ("transcript", 10)]
    conn = db.connect(path)
    assert vectors.ensure_vec_table(conn, DIM), "sqlite-vec must load for this benchmark"
    with db.write(conn):
        for i in range(1, n + 1):
            body = " ".join(rnd.choices(words, cum_weights=cum, k=WORDS_PER_CHUNK))
            source, weight = sources[i % len(sources)]
            conn.execute(
                "INSERT INTO chunks(id, source, path, line_start, line_end, title, content, "
                "content_hash, signal_weight, created_ns) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (i, source, f"{source}/f{i // 50}.md", (i % 50) * 10 + 1, (i % 50) * 10 + 9,
                 body[:30], body, str(i), weight, i))
        vectors.store(conn, ((i, vector(f"chunk {i}")) for i in range(1, n + 1)))
    # queries: 2-4 mid-frequency words (rank 200..5000), the kind that have some but not all hits
    queries = [" ".join(rnd.sample(words[200:5000], rnd.randint(2, 4))) for _ in range(QUERIES)]
    conn.close()
    return queries, [vector(f"query {q}") for q in queries]


def _cumulative(n: int):
    total = 0.0
    for rank in range(1, n + 1):
        total += 1.0 / rank ** 1.1
        yield total


@contextmanager
def _exact_scan():
    """search() with knn's exact scan at any size, for the comparison row."""
    from memory_core.index import vectors

    saved = vectors.EXACT_BELOW
    vectors.EXACT_BELOW = math.inf
    try:
        yield
    finally:
        vectors.EXACT_BELOW = saved


def measure(path: str, queries: list[str], qvecs: list[list[float]]) -> dict[str, list[float]]:
    from memhealth.config import defaults
    from memory_core.index.search import search
    from memory_core.store import db

    cfg = defaults()  # url "": the embedding call is never made
    conn = db.connect(path)

    def vector_exact(q, v):
        with _exact_scan():
            return search(conn, "", cfg, k=K, query_vector=v, use_bm25=False)

    modes = {
        "bm25": lambda q, v: search(conn, q, cfg, k=K, use_vectors=False),
        "vector": lambda q, v: search(conn, "", cfg, k=K, query_vector=v, use_bm25=False),
        "vector exact": vector_exact,
        "hybrid": lambda q, v: search(conn, q, cfg, k=K, query_vector=v),
    }
    out = {}
    for mode, run in modes.items():
        for q, v in zip(queries[:3], qvecs[:3], strict=True):  # warm the page cache
            run(q, v)
        samples = []
        for q, v in zip(queries, qvecs, strict=True):
            t0 = time.perf_counter()
            result = run(q, v)
            samples.append((time.perf_counter() - t0) * 1000)
            assert mode == "bm25" or "vector" in result.legs_answered
        out[mode] = samples
    conn.close()
    return out


def recall(path: str, qvecs: list[list[float]], k: int) -> float:
    """Mean share of the exact scan's k nearest that the fast path also returns."""
    from memory_core.index import vectors
    from memory_core.store import db

    conn = db.connect(path)
    try:
        found = 0
        for v in qvecs:
            exact = {cid for cid, _d in vectors.knn(conn, v, k, exact=True)}
            fast = {cid for cid, _d in vectors.knn(conn, v, k, exact=False)}
            found += len(exact & fast)
        return found / (k * len(qvecs))
    finally:
        conn.close()


def bench(quick: bool) -> list[dict]:
    rows = []
    sizes = [10_000] if quick else [10_000, 100_000]
    with tempfile.TemporaryDirectory(prefix="memhealth-bench-search-") as tmp:
        for n in sizes:
            path = os.path.join(tmp, f"memory-{n}.db")
            t0 = time.perf_counter()
            queries, qvecs = build(path, n)
            built_s = time.perf_counter() - t0
            label = f"{n // 1000}k"
            for mode, samples in measure(path, queries, qvecs).items():
                target = "< 20 ms" if (mode == "hybrid" and n == 100_000) else ""
                note = f"{len(samples)} queries, k={K}, {DIM}-dim"
                if mode != "bm25":
                    note += ", query vectors precomputed"
                if mode in ("vector", "hybrid"):
                    note += ", quantized fast path"
                rows.append(row(f"search {mode} p50 @{label}", round(pct(samples, 50), 2), "ms",
                                target, note, chunks=n))
                rows.append(row(f"search {mode} p95 @{label}", round(pct(samples, 95), 2), "ms",
                                "", note, chunks=n))
            for at in (10, 3 * K):  # 3*K: what the search's vector leg asks knn for
                rows.append(row(f"vector recall@{at} @{label}", round(recall(path, qvecs, at), 3),
                                "ratio", ">= 0.95" if at == 10 else "",
                                "fast path vs exact scan, same queries", chunks=n))
            rows.append(row(f"search corpus build @{label}", round(built_s, 1), "s", "",
                            "chunks + FTS5 + vectors, one transaction", chunks=n))
    return rows


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv):
        print(r)
