"""The scale series' vector half: KNN and hybrid search, the hooks with an embedding server
configured, and the store with vectors, at 10k, 100k and 1M chunks.

bench_scale's report includes these rows (it calls `bench` with its floor); run alone:

    python benchmarks/scale_vectors.py [--quick] [--sizes 10000,100000]

Per size, a project set up by `memhealth init`, seeded with bench_scale's doc chunks
(common.seed_chunks, bulk), each given a 384-dim vector from bench_search's clustered
generator (a shared mean direction, a 32 x 8 x 8 topic tree, per-chunk noise: recall means
something, unlike uniform noise) through the real write path (`vectors.store`, one
transaction). Then:

- vector KNN p50/p99 at k=30 (what the search's vector leg asks for): the quantized path
  (Hamming candidates, exact cosine rescoring) and the exact scan; recall@10 and @30 of the
  quantized path against the exact scan on the same queries;
- hybrid search p50/p99 (BM25 + vectors, query vectors precomputed: the embedding call is
  not timed);
- as ratios to the interpreter floor, with an instant local embedding stand-in
  (tests/support/ollama_standin.py) configured: the intent prompt hook (one semantic cue, so the
  hook makes its embedding call), SessionStart (it runs the gate, vector checks included),
  and `memhealth search` (the process that runs the KNN: CLI and MCP tool);
- the gate's vector checks (`vector_coverage`, `index_integrity`) from its own duration_ms;
- bytes on disk per chunk with vectors, and the vector tables' share of them.

The 1M store is 3.2 GB under /tmp (deleted after each size); building it takes ~3 minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _p in (HERE, REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import floor, memhealth_cmd, pct, row, seed_chunks, summary, time_cmd  # noqa: E402

DIM = 384
K_LEG = 30         # search(k=10) asks the vector leg for k*3
QUICK_SIZES = (10_000, 100_000)
FULL_SIZES = (10_000, 100_000, 1_000_000)
SEMANTIC = "should we rebuild the snapshot compactor for the tenant quota"


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def _env(url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
    if url:
        env.update(MEMHEALTH_EMBEDDING_URL=url, MEMHEALTH_EMBEDDING_DIM=str(DIM))
    return env


def _db(root: str) -> str:
    return os.path.join(root, ".memhealth", "memory.db")


def _store_bytes(root: str) -> int:
    folder = os.path.join(root, ".memhealth")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if f.startswith("memory.db"))


def _project(tmp: str, n: int, url: str) -> tuple[str, float, list[list[float]]]:
    """(root, seconds to store the vectors, query vectors)."""
    from bench_search import _Clustered

    from memory_core.index import vectors
    from memory_core.store.db import connect, write

    root = os.path.join(tmp, f"v{_label(n)}")
    os.makedirs(root)
    subprocess.run(memhealth_cmd() + ["init", "--project", root], check=True, capture_output=True,
                   env=_env(url))
    conn = connect(_db(root))
    try:
        seed_chunks(conn, n, bulk=True)
        assert vectors.ensure_vec_table(conn, DIM), "sqlite-vec must load for this benchmark"
        make = _Clustered(7)
        ids = conn.execute("SELECT min(id), max(id) FROM chunks").fetchone()
        t0 = time.perf_counter()
        with write(conn):
            stored, refused = vectors.store(conn, ((i, make(f"chunk {i}"))
                                                   for i in range(ids[0], ids[1] + 1)))
        seconds = time.perf_counter() - t0
        assert (stored, refused) == (n, 0), (stored, refused)
        queries = [make(f"query {i}") for i in range(40)]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    memory = os.path.join(root, ".memhealth", "memory")
    os.makedirs(memory, exist_ok=True)
    with open(os.path.join(memory, "compactor.md"), "w", encoding="utf-8") as fh:
        fh.write(f"---\nname: compactor-rebuild\nsemantic: {SEMANTIC}\n---\n"
                 "The compactor was rebuilt once; read its ledger first.\n")
    subprocess.run(memhealth_cmd() + ["ingest", "memory", "--project", root], check=True,
                   capture_output=True, env=_env(url), timeout=600)
    return root, seconds, queries


def _table_bytes(root: str) -> dict[str, int]:
    """Bytes per table family (pages counted with `PRAGMA page_count` per b-tree is not
    available without dbstat; this sums the vector tables' payload instead)."""
    from memory_core.store.db import connect

    conn = connect(_db(root))
    try:
        exact = conn.execute("SELECT count(*), sum(length(embedding)) FROM chunk_vectors").fetchone()
        bits = conn.execute("SELECT count(*), sum(length(vectors)) FROM chunks_vec_vector_chunks00"
                            ).fetchone()
        return {"exact_payload": exact[1] or 0, "bit_payload": bits[1] or 0}
    finally:
        conn.close()


def _knn(root: str, queries: list[list[float]], n: int) -> dict:
    """KNN and hybrid latencies, recall of the quantized path against the exact scan."""
    from memhealth.config import defaults
    from memory_core.index import vectors
    from memory_core.index.search import search
    from memory_core.store.db import connect

    cfg = defaults()
    conn = connect(_db(root))
    text = [f"why does it stall on token{(i * 7919) % n} and token{(i * 104729) % n}"
            for i in range(len(queries))]
    # the exact scan reads every float vector: ~1.2 s a query at 1M, so fewer of them there
    exact_q = queries[:12] if n >= 1_000_000 else queries
    out: dict = {}
    try:
        for q in queries[:3]:
            vectors.knn(conn, q, K_LEG, exact=False)
        fast = []
        for q in queries * 2:
            t0 = time.perf_counter()
            vectors.knn(conn, q, K_LEG, exact=False)
            fast.append((time.perf_counter() - t0) * 1000)
        exact, found10, found30 = [], 0, 0
        for q in exact_q:
            t0 = time.perf_counter()
            truth = vectors.knn(conn, q, K_LEG, exact=True)
            exact.append((time.perf_counter() - t0) * 1000)
            got = vectors.knn(conn, q, K_LEG, exact=False)
            got10 = {c for c, _ in vectors.knn(conn, q, 10, exact=False)}
            found10 += len({c for c, _ in truth[:10]} & got10)
            found30 += len({c for c, _ in truth} & {c for c, _ in got})
        hybrid = []
        for t, q in zip(text * 2, queries * 2, strict=True):
            t0 = time.perf_counter()
            result = search(conn, t, cfg, k=10, query_vector=q)
            hybrid.append((time.perf_counter() - t0) * 1000)
            assert result.legs_answered == ["bm25", "vector"], result.legs_answered
        counts = {}
        for what, sql in (("count_vectors_ms", "SELECT count(*) FROM chunks_vec_rowids"),
                          ("count_chunks_ms", "SELECT count(*) FROM chunks"),
                          ("kept_count_ms", None)):
            samples = []
            for _ in range(5):
                t0 = time.perf_counter()
                if sql:
                    conn.execute(sql).fetchone()
                else:
                    vectors.vector_count(conn)
                samples.append((time.perf_counter() - t0) * 1000)
            counts[what] = statistics.median(samples)
        out.update(counts)
        out.update(knn_p50=pct(fast, 50), knn_p99=pct(fast, 99),
                   exact_p50=pct(exact, 50), exact_p99=pct(exact, 99),
                   hybrid_p50=pct(hybrid, 50), hybrid_p99=pct(hybrid, 99),
                   recall10=found10 / (10 * len(exact_q)), recall30=found30 / (K_LEG * len(exact_q)),
                   recall_queries=len(exact_q),
                   candidates=vectors.candidates_per_shard(K_LEG, n, vectors.shard_count(conn))
                   * vectors.shard_count(conn))
    finally:
        conn.close()
    return out


def _processes(root: str, url: str, base: float, repeat: int) -> dict:
    cmd = memhealth_cmd()
    common = {"session_id": "bench", "cwd": root, "transcript_path": os.path.join(root, "t.jsonl")}
    prompt = {**common, "hook_event_name": "UserPromptSubmit",
              "prompt": f"{SEMANTIC}? token1239 and token5679"}
    cases = {
        "prompt_x": (cmd + ["hook", "prompt"], prompt),
        "prompt_off_x": (cmd + ["hook", "prompt"], prompt),
        "session_start_x": (cmd + ["hook", "session-start"],
                            {**common, "hook_event_name": "SessionStart", "source": "startup"}),
        "search_x": (cmd + ["search", "why does the compactor stall on token1239", "--k", "10"], None),
    }
    out = {}
    for key, (argv, payload) in cases.items():
        stdin = json.dumps(payload).encode() if payload else b""
        s = summary(time_cmd(argv, stdin=stdin, env=_env(None if key == "prompt_off_x" else url),
                             cwd=root, repeat=repeat))
        out[key] = s["median"] / base
    # what the vectors add to the prompt hook, on the same store in the same run
    out["prompt_vec_delta_x"] = out["prompt_x"] - out["prompt_off_x"]
    walls, checks = [], {}
    for i in range(repeat // 2 + 1):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd + ["gate", "--json"], cwd=root, env=_env(url), capture_output=True,
                              timeout=600)
        if i == 0:
            continue  # warm-up (and the once-a-day full scans)
        walls.append(time.perf_counter() - t0)
        for check in json.loads(proc.stdout)["checks"]:
            checks.setdefault(check["name"], []).append(check["duration_ms"])
    out["gate_ms"] = statistics.median(walls) * 1000
    out["vector_coverage_ms"] = statistics.median(checks["vector_coverage"])
    out["index_integrity_ms"] = statistics.median(checks["index_integrity"])
    return out


def measure(n: int, tmp: str, base: float, url: str, quick: bool) -> dict:
    t0 = time.perf_counter()
    root, store_s, queries = _project(tmp, n, url)
    try:
        total = _store_bytes(root)
        fig = {"n": n, "store_vectors_per_s": n / store_s, "bytes_per_chunk": total / n,
               "store_mb": total / 1e6, **_table_bytes(root), "build_s": time.perf_counter() - t0}
        fig.update(_knn(root, queries, n))
        fig.update(_processes(root, url, base, repeat=7 if quick else 11))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return fig


FIGURES = [  # (key, name, unit, on the hook path: must not grow)
    ("knn_p50", f"vector KNN p50, quantized + rescored, k={K_LEG}", "ms", False),
    ("knn_p99", f"vector KNN p99, quantized + rescored, k={K_LEG}", "ms", False),
    ("exact_p50", f"vector KNN p50, exact scan, k={K_LEG}", "ms", False),
    ("recall10", "vector recall@10, quantized vs exact", "ratio", False),
    ("recall30", f"vector recall@{K_LEG}, quantized vs exact", "ratio", False),
    ("hybrid_p50", "hybrid search p50 (BM25 + vector, embedding excluded)", "ms", False),
    ("hybrid_p99", "hybrid search p99 (BM25 + vector, embedding excluded)", "ms", False),
    ("prompt_x", "hook prompt, vectors on (intent + BM25 + semantic cue)", "x floor", True),
    ("prompt_off_x", "hook prompt, same store and prompt, embeddings off", "x floor", False),
    ("prompt_vec_delta_x", "hook prompt: what vectors on adds (on - off)", "x floor", True),
    ("session_start_x", "hook session-start incl. gate, vectors on", "x floor", True),
    ("search_x", "memhealth search (embed + hybrid), stand-in server", "x floor", False),
    ("vector_coverage_ms", "gate check vector_coverage", "ms", True),
    ("index_integrity_ms", "gate check index_integrity (incl. vector parity)", "ms", True),
    ("bytes_per_chunk", "store on disk per chunk, with 384-d vectors", "bytes", False),
    ("kept_count_ms", "vector_count: the kept count (migration 6)", "ms", True),
    ("count_vectors_ms", "counting the vector index's rows (vector_count before 6)", "ms", False),
    ("count_chunks_ms", "count(*) over chunks (vector_coverage's chunk count)", "ms", False),
]


def bench(quick: bool = False, base: float | None = None, sizes=None) -> list[dict]:
    from memory_core.store.db import vec_unavailable_reason
    from tests.support.ollama_standin import OllamaStandin

    reason = vec_unavailable_reason()
    if reason:
        return [row("vector scale series", float("nan"), "", "", f"skipped: {reason}")]
    sizes = sizes or (QUICK_SIZES if quick else FULL_SIZES)
    out = []
    if base is None:
        base = summary(floor(9 if quick else 15))["median"]
        out.append(row("floor: python -c 'import sqlite3, json'", base * 1000, "ms"))
    figs = []
    tmp = tempfile.mkdtemp(prefix="memhealth-bench-scale-vec-", dir="/tmp")
    try:
        with OllamaStandin(mode="instant", dim=DIM) as server:
            for n in sizes:
                fig = measure(n, tmp, base, server.url, quick)
                figs.append(fig)
                label = _label(n)
                for key, name, unit, _ in FIGURES:
                    note = ""
                    if key.startswith("recall"):
                        note = f"{fig['recall_queries']} queries, {fig['candidates']} candidates for k={K_LEG}"
                    out.append(row(f"{name}, {label} chunks", fig[key], unit, scale=n, note=note))
                out.append(row(f"store on disk with vectors, {label} chunks", fig["store_mb"], "MB",
                               scale=n, note=f"float32 payload {fig['exact_payload'] / 1e6:.0f} MB, "
                                             f"bit index payload {fig['bit_payload'] / 1e6:.1f} MB; "
                                             f"built in {fig['build_s']:.0f}s"))
                out.append(row(f"vector store rate (vectors.store, one transaction), {label}",
                               fig["store_vectors_per_s"], "vectors/s", scale=n))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if len(figs) > 1:
        small, big = figs[0], figs[-1]
        span = f"{_label(big['n'])}/{_label(small['n'])}"
        for key, name, _unit, bounded in FIGURES:
            ratio = big[key] / small[key] if small[key] else float("nan")
            out.append(row(f"growth {span}: {name}", ratio, "x", "<= 2.0" if bounded else "",
                           note=("PASS" if ratio <= 2.0 else "FAIL: grows with the store")
                           if bounded else ""))
    return out


if __name__ == "__main__":
    sizes = None
    if "--sizes" in sys.argv:
        sizes = tuple(int(s) for s in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    for r in bench(quick="--quick" in sys.argv, sizes=sizes):
        shown = f"{r['value']:.3f}" if isinstance(r["value"], float) else r["value"]
        print(f"{r['name']:<72} {shown:>12} {r['unit']:<9} {r['target']:<7} {r['note']}", flush=True)
