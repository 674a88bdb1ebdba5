"""Ingest throughput (chunks/s, BM25-only and with an instant embedding stand-in) and the
no-op re-ingest of an unchanged 10k-file corpus (target < 1 s: stat only, nothing read).

The corpus is synthetic and deterministic (seeded), written to a temp dir: markdown files
of 3 sections each, in 100 directories. The reference design manages about 22 chunks/s
with vectors; the target here is >= 1,000 chunks/s including vectors.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for path in (HERE, REPO):
    if path not in sys.path:
        sys.path.insert(0, path)

from common import row  # noqa: E402

WORDS = ("checkpoint wal reader writer stall budget ingest watermark vector embedding "
         "gate heartbeat probe cold wedged dimension fallback session compaction hook "
         "transcript ledger decision invariant memory chunk token rare relevance").split()


OLD_NS = 1_600_000_000_000_000_000  # an unchanged corpus has old mtimes (none is "racy")


def make_corpus(root: str, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(files):
        folder = os.path.join(root, "docs", f"d{i % 100:02d}")
        os.makedirs(folder, exist_ok=True)
        sections = []
        for s in range(3):
            body = " ".join(rng.choice(WORDS) for _ in range(40))
            sections.append(f"## Section {s} of doc {i}\n\n{body}\n")
        path = os.path.join(folder, f"doc{i:05d}.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"# Document {i}\n\n" + "\n".join(sections))
        os.utime(path, ns=(OLD_NS, OLD_NS))


def config(url: str = "", dim: int = 64):
    from memhealth.config import defaults

    cfg = defaults()
    cfg["ingest"].update(docs=["docs"], memory=[], ledgers=[], transcripts=[], git=False,
                         budget_s=3600.0)
    cfg["embedding"].update(url=url, dim=dim, batch_size=64)
    return cfg


def ingest_once(root: str, cfg) -> tuple[float, object]:
    from memory_core.ingest import run_ingest
    from memory_core.store.db import connect

    db = os.path.join(root, "memory.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    conn = connect(db)
    try:
        t0 = time.perf_counter()
        report = run_ingest(conn, root, cfg)
        return time.perf_counter() - t0, report
    finally:
        conn.close()


def bench(quick: bool) -> list[dict]:
    from memory_core.ingest import run_ingest
    from memory_core.store.db import connect, vec_unavailable_reason

    rows = []
    tmp = tempfile.mkdtemp(prefix="memhealth-bench-ingest-")
    try:
        small = os.path.join(tmp, "small")
        make_corpus(small, 1000 if quick else 3000)
        seconds, report = ingest_once(small, config())
        rows.append(row("ingest throughput, BM25 only", report.chunks_added / seconds, "chunks/s",
                        ">= 1000", f"{report.chunks_added} chunks from {report.files_seen} files "
                        f"in {seconds:.2f} s"))

        standin = os.path.join(REPO, "tests", "ollama_standin.py")
        reason = vec_unavailable_reason()
        if os.path.exists(standin) and not reason:
            from memory_core.index.embed import forget_process_state
            from tests.support.ollama_standin import OllamaStandin

            forget_process_state()
            with OllamaStandin(mode="instant", dim=64) as server:
                seconds, report = ingest_once(small, config(server.url, dim=64))
            rows.append(row("ingest throughput, with vectors (instant stand-in)",
                            report.chunks_added / seconds, "chunks/s", ">= 1000",
                            f"{report.vectors_embedded} vectors, state {report.vectors_state}, "
                            f"{seconds:.2f} s; reference design ~22 chunks/s"))
        else:
            rows.append(row("ingest throughput, with vectors (instant stand-in)", float("nan"),
                            "chunks/s", ">= 1000", f"skipped: {reason or 'no tests/support/ollama_standin.py'}"))

        big = os.path.join(tmp, "big")
        make_corpus(big, 10000)
        seconds, report = ingest_once(big, config())
        conn = connect(os.path.join(big, "memory.db"))
        try:
            samples = []
            for _ in range(3 if quick else 7):
                t0 = time.perf_counter()
                again = run_ingest(conn, big, config())
                samples.append(time.perf_counter() - t0)
                assert again.files_changed == 0 and again.chunks_added == 0
        finally:
            conn.close()
        rows.append(row("no-op re-ingest, unchanged 10k-file corpus", statistics.median(samples), "s",
                        "< 1", f"median of {len(samples)}; first ingest {report.chunks_added} chunks "
                        f"in {seconds:.1f} s ({report.chunks_added / seconds:.0f} chunks/s)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    import json

    print(json.dumps(bench(quick="--quick" in sys.argv), indent=2))
