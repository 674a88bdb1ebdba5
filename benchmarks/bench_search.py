"""Search latency at 10k and 100k chunks: BM25 alone, vectors alone, and hybrid.

    python benchmarks/run.py search            # 10k and 100k
    python benchmarks/run.py search --quick    # 10k only

The corpus is synthetic and deterministic (seeded Zipf-distributed words, hash-seeded unit
vectors), built in a temporary directory through the real store. Query vectors are
precomputed, so the vector and hybrid figures exclude the embedding call: they measure
what the store does (FTS5 + sqlite-vec brute-force KNN + fusion). Target: hybrid p50 under
20 ms at 100k chunks.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import pct, row  # noqa: E402

DIM = 384          # all-minilm / small snowflake width; 768-dim models double the KNN cost
VOCAB = 20000
WORDS_PER_CHUNK = 60
QUERIES = 40
K = 10


def _words(rnd: random.Random) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    seen: dict[str, None] = {}
    while len(seen) < VOCAB:
        seen["".join(rnd.choice(syllables) for _ in range(rnd.randint(2, 4)))] = None
    return list(seen)


def _vector(text: str) -> list[float]:
    raw = array.array("h", hashlib.shake_256(text.encode()).digest(2 * DIM))
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


def build(path: str, n: int, seed: int = 7) -> tuple[list[str], list[list[float]]]:
    """A store of `n` synthetic chunks with vectors; returns (queries, query vectors)."""
    from memory_core import db, vectors

    rnd = random.Random(seed)
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
        vectors.store(conn, ((i, _vector(f"chunk {i}")) for i in range(1, n + 1)))
    # queries: 2-4 mid-frequency words (rank 200..5000), the kind that have some but not all hits
    queries = [" ".join(rnd.sample(words[200:5000], rnd.randint(2, 4))) for _ in range(QUERIES)]
    conn.close()
    return queries, [_vector(q) for q in queries]


def _cumulative(n: int):
    total = 0.0
    for rank in range(1, n + 1):
        total += 1.0 / rank ** 1.1
        yield total


def measure(path: str, queries: list[str], qvecs: list[list[float]]) -> dict[str, list[float]]:
    from memhealth.config import defaults
    from memory_core import db
    from memory_core.search import search

    cfg = defaults()  # url "": the embedding call is never made
    conn = db.connect(path)
    modes = {
        "bm25": lambda q, v: search(conn, q, cfg, k=K, use_vectors=False),
        "vector": lambda q, v: search(conn, "", cfg, k=K, query_vector=v, use_bm25=False),
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
                rows.append(row(f"search {mode} p50 @{label}", round(pct(samples, 50), 2), "ms",
                                target, note, chunks=n))
                rows.append(row(f"search {mode} p95 @{label}", round(pct(samples, 95), 2), "ms",
                                "", note, chunks=n))
            rows.append(row(f"search corpus build @{label}", round(built_s, 1), "s", "",
                            "chunks + FTS5 + vectors, one transaction", chunks=n))
    return rows


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv):
        print(r)
