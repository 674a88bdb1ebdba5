"""A first ingest of a 20,000-chunk corpus with the real embedding model: text first, vectors
after. What the text phase costs (every source's text indexed, the inventory among it), what
the vector phase embeds per second within the rest of the budget, and that the next run
continues the vectors.

The model is all-MiniLM-L6-v2 in numpy behind the Ollama-compatible server on loopback
(tests/support/model_server.py, its vector cache off: every text is a forward pass). The
corpus is synthetic and seeded: 5,000 markdown files of four ~90-word sections (20,000
chunks) and the 13 memory files of the real-corpus httpx project. The budget is the
default [ingest].budget_s (55 s); --quick uses 1,000 files and 15 s.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for path in (HERE, REPO):
    if path not in sys.path:
        sys.path.insert(0, path)

from common import WORDS, row  # noqa: E402

OLD_NS = 1_600_000_000_000_000_000


def make_corpus(root: str, files: int, seed: int = 20) -> None:
    rng = random.Random(seed)
    for i in range(files):
        folder = os.path.join(root, "docs", f"d{i % 100:02d}")
        os.makedirs(folder, exist_ok=True)
        sections = []
        for s in range(4):
            body = " ".join(rng.choice(WORDS) for _ in range(90))
            sections.append(f"## Section {s} of document {i}\n\n{body}.\n")
        path = os.path.join(folder, f"doc{i:05d}.md")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(sections))
        os.utime(path, ns=(OLD_NS, OLD_NS))
    shutil.copytree(os.path.join(REPO, "tests", "fixtures", "realcorpus", "httpx", "memory"),
                    os.path.join(root, "memory"))


def config(url: str, budget_s: float):
    from memhealth.config import defaults
    from tests.support import minilm

    cfg = defaults()
    cfg["ingest"].update(docs=["docs"], memory=["memory"], ledgers=[], transcripts=[], git=False,
                         budget_s=budget_s)
    cfg["embedding"].update(url=url, model=minilm.MODEL_NAME, dim=minilm.DIM, num_ctx=minilm.MAX_TOKENS)
    return cfg


def phases(trace) -> tuple[float, float]:
    """(text phase s, vector phase s) from the run's spans."""
    spans = {s.name: s for s in trace.spans}
    root, vec = spans["ingest"], spans.get("ingest vectors")
    if vec is None:
        return (root.end_ns - root.start_ns) / 1e9, 0.0
    return (vec.start_ns - root.start_ns) / 1e9, (vec.end_ns - vec.start_ns) / 1e9


def bench(quick: bool) -> list[dict]:
    from memory_core.index import vectors
    from memory_core.index.embed import forget_process_state
    from memory_core.ingest import run_ingest
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect, vec_unavailable_reason

    files, budget = (1000, 15.0) if quick else (5000, 55.0)
    name = f"first ingest of {files * 4:,} chunks, real model"
    try:
        from tests.support import minilm
        from tests.support.model_server import ModelServer

        model = minilm.MiniLM.load()
    except Exception as exc:  # noqa: BLE001 - the model is optional: say why it was skipped
        return [row(f"{name}: text phase", float("nan"), "s", "", f"skipped: {exc}")]
    if vec_unavailable_reason():
        return [row(f"{name}: text phase", float("nan"), "s", "", f"skipped: {vec_unavailable_reason()}")]

    tmp = tempfile.mkdtemp(prefix="memhealth-bench-textfirst-")
    rows = []
    try:
        make_corpus(tmp, files)
        # the floor, in the same run: the model's own forward pass over corpus-like texts, no
        # HTTP, no store; the vector phase is reported as a ratio to it
        rng = random.Random(1)
        sample = [" ".join(rng.choice(WORDS) for _ in range(90)) for _ in range(16)]
        t0 = time.perf_counter()
        model.embed(sample)
        floor = len(sample) / (time.perf_counter() - t0)
        forget_process_state()
        with ModelServer(model=model, cache=False) as server:
            conn = connect(os.path.join(tmp, "memory.db"))
            try:
                trace = Trace()
                first = run_ingest(conn, tmp, config(server.url, budget), trace=trace)
                text_s, vec_s = phases(trace)
                memory_files = len([f for f in os.listdir(os.path.join(tmp, "memory")) if f.endswith(".md")])
                indexed = conn.execute("SELECT count(DISTINCT path) FROM chunks WHERE source = 'memory'").fetchone()[0]
                with_vector, total = vectors.coverage(conn)
                rate = first.vectors_embedded / vec_s if vec_s else float("nan")
                rows.append(row(f"{name}: text phase", text_s, "s", f"< {budget:g} (the budget)",
                                f"{first.chunks_added} chunks, {indexed}/{memory_files} memory files "
                                f"indexed in run 1, budget exhausted: {first.budget_exhausted}"))
                load = os.getloadavg()[0]
                rows.append(row(f"{name}: model forward pass alone (floor)", floor, "embeds/s", "",
                                f"{len(sample)} texts of 90 words in one batch, same run, no HTTP"))
                rows.append(row(f"{name}: vector phase", rate, "embeds/s", f"ratio to floor {rate / floor:.2f}",
                                f"load average {load:.1f} on {os.cpu_count()} CPUs; "
                                f"{first.vectors_embedded} embedded in {vec_s:.1f} s of run 1 "
                                f"(batch {config(server.url, budget)['embedding']['batch_size']}), "
                                f"{with_vector}/{total} have a vector, backfill {first.vectors_backfill}"))
                left = total - with_vector
                rows.append(row(f"{name}: runs to embed everything", 1 + (left / (rate * budget) if rate else 0),
                                "runs", "", f"at {rate:.0f} embeds/s and a {budget:g} s budget per run; "
                                f"`memhealth embed` (no budget) needs ~{left / rate if rate else 0:.0f} s more"))
                t0 = time.perf_counter()
                second = run_ingest(conn, tmp, config(server.url, min(budget, 10.0)))
                again_s = time.perf_counter() - t0
                rows.append(row(f"{name}: run 2 continues the vectors", second.vectors_embedded, "embedded", "> 0",
                                f"in {again_s:.1f} s (budget {min(budget, 10.0):g} s), "
                                f"{second.files_changed} files re-read, {second.vectors_pending} still pending"))
            finally:
                conn.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    import json

    print(json.dumps(bench(quick="--quick" in sys.argv), indent=2))
