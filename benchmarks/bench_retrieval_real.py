"""Retrieval measured on meaning: `memhealth search`'s hybrid (BM25 + vectors from the real
model, all-MiniLM-L6-v2) against BM25 alone, recall@10 and nDCG@10, on the real corpus.

    python benchmarks/run.py retrieval_real

Queries: every labeled re-proposal of tests/fixtures/realcorpus (sets 1-4), each with the
inventory entry it re-proposes as its one relevant chunk (binary relevance: nDCG@10 is
1/log2(rank + 1) for the entry at `rank`). The labels were written for the DO-NOT-REBUILD
evaluation; no retrieval parameter is tuned here, so there is nothing to hold out, and the
parts are reported as in bench_meaning. Every chunk of each project is embedded first
(`memhealth embed`, timed: the embeds-per-second figure), which takes minutes on a loaded
box. Needs the model (`make real-model`).
"""

from __future__ import annotations

import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import row  # noqa: E402

from tests.support import dnr_eval  # noqa: E402

K = 10


def _entries(conn) -> dict[str, int]:
    import json

    out = {}
    for chunk_id, attrs in conn.execute("SELECT id, attrs FROM chunks WHERE kind = 'subsystem'"):
        out[json.loads(attrs)["name"]] = chunk_id
    return out


def measure(server_url: str, tmp: str) -> dict:
    import subprocess
    import time

    from memhealth.config import load
    from memhealth.installer import launcher_argv
    from memory_core.index.embed import forget_process_state
    from memory_core.index.search import search
    from memory_core.store.db import connect
    from tests.conftest import clean_env

    scores: dict[tuple[str, str], list[tuple[float, float]]] = {}
    embedded = []  # (chunks embedded, seconds) per project: `memhealth embed`, batches of 64
    for name in dnr_eval.PROJECTS:
        root = dnr_eval.build_project(name, tmp, embedding_url=server_url)
        t0 = time.perf_counter()
        subprocess.run(launcher_argv() + ["embed", "--project", root], check=True, capture_output=True,
                       timeout=1800, env=clean_env())
        seconds = time.perf_counter() - t0
        cfg = load(os.path.join(root, ".memhealth"), environ={})
        cfg["embedding"]["timeout_s"] = 60.0  # a loaded box: this measures ranking, not latency
        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        forget_process_state()
        try:
            embedded.append((conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0], seconds))
            entries = _entries(conn)
            part = "tuned" if name in dnr_eval.TUNING else "held-out"
            for p in dnr_eval.prompts_for(name, sets=(1, 2, 3, 4)):
                if p["label"] != "reproposal":
                    continue
                [want] = [cid for n, cid in entries.items() if dnr_eval.named(p["expect"], n)]
                for leg, use_vectors in (("BM25-only", False), ("hybrid", True)):
                    result = search(conn, p["prompt"], cfg, k=K, use_vectors=use_vectors)
                    if use_vectors and result.degraded:
                        raise RuntimeError(f"vector leg degraded: {result.degraded} {result.degraded_detail}")
                    ids = [h.chunk_id for h in result.hits][:K]
                    rank = ids.index(want) + 1 if want in ids else None
                    scores.setdefault((part, leg), []).append(
                        (1.0 if rank else 0.0, 1.0 / math.log2(rank + 1) if rank else 0.0))
        finally:
            conn.close()
    return scores, embedded


def bench(quick: bool = False) -> list[dict]:
    from tests.support.minilm import MiniLM, Unavailable
    from tests.support.model_server import ModelServer

    try:
        model = MiniLM.load()
    except Unavailable as exc:
        return [row("retrieval (real model) unavailable", 0, "", note=str(exc))]
    out = []
    # no cache: every chunk is embedded, so the throughput is the model's and the server's
    with ModelServer(model, cache=False) as server, tempfile.TemporaryDirectory() as tmp:
        scores, embedded = measure(server.url, tmp)
        chunks, seconds = sum(c for c, _ in embedded), sum(s for _, s in embedded)
        out.append(row("memhealth embed with the real model: chunks per second", chunks / seconds, "chunks/s",
                       note=f"{chunks} chunks in {seconds:.1f} s over 3 projects, batches of 64, one BLAS "
                            "thread, on a shared 2-core box"))
        for (part, leg), got in sorted(scores.items()):
            n = len(got)
            out.append(row(f"re-proposal queries, {part}, {leg}: recall@{K}", sum(r for r, _ in got) / n, "share",
                           note=f"{int(sum(r for r, _ in got))} of {n} queries find their entry in the top {K}"))
            out.append(row(f"re-proposal queries, {part}, {leg}: nDCG@{K}", sum(g for _, g in got) / n, "",
                           note=f"{n} queries, one relevant chunk each"))
    return out
