"""The scale series: the same figures on stores of 10k, 100k and 1M chunks, and how each grows.

Each store is a project set up by `memhealth init` and seeded with deterministic synthetic
doc chunks (common.seed_chunks, bulk mode: one executemany, FTS built once). Per size:

- BM25 search p50/p99 in process, apart for 20 queries with rare tokens and 20 of common
  words only (every chunk matches: FTS5 scores each one, so that figure is linear by nature;
  the prompt hook drops such words before it searches). The vector half of the series
  (KNN, hybrid, recall, the hooks with an embedding server, the store with vectors) is
  benchmarks/scale_vectors.py, whose rows this report includes after these;
- the intent prompt hook (BM25 retrieval) and the SessionStart hook (it runs the gate), as
  ratios to the interpreter floor measured in the same run;
- `memhealth gate --json`: wall time, and the slowest check from its own duration_ms;
- the prompt hook, SessionStart and the gate again in instructions (valgrind's callgrind; a
  ratio to the floor's), the growth figure a busy machine cannot move;
- ingest of a fixed 300-file (900-chunk) slice into the store, and its no-op re-ingest;
- the store's size on disk (bytes per chunk) and a `/metrics` scrape of it.

The last rows are the growth ratios largest/smallest. A store 100x larger whose hook or gate
figure grows by more than a small constant means something on that path scans the store.
`--quick` runs 10k and 100k only; the full run adds 1M (~2 GB under /tmp for BM25, then 3.2 GB
for the vector store, each deleted after; ~20 minutes in all). `--no-vectors` skips the vector half.

    python benchmarks/run.py scale [--quick]
    python benchmarks/bench_scale.py [--quick] [--no-vectors]
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

from common import compile_packages, floor, memhealth_cmd, pct, row, seed_chunks, summary, time_cmd  # noqa: E402

QUICK_SIZES = (10_000, 100_000)
FULL_SIZES = (10_000, 100_000, 1_000_000)
SLICE_FILES = 300
PROMPT = "should we rebuild the snapshot compactor for token1239 and token5679?"
COMMON_WORDS = "should we rebuild the snapshot compactor replay for tenant quota alerts"


def _label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def _env() -> dict:
    # BM25-only: no embedding server, no exporters, nothing inherited from the caller's session
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}


def _project(tmp: str, n: int) -> tuple[str, float]:
    from memory_core.store.db import connect

    root = os.path.join(tmp, f"p{_label(n)}")
    os.makedirs(root)
    subprocess.run(memhealth_cmd() + ["init", "--project", root], check=True, capture_output=True,
                   env=_env())
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        t0 = time.perf_counter()
        seed_chunks(conn, n, bulk=True)
        seconds = time.perf_counter() - t0
        # no ANALYZE: memhealth never runs it, so the planner sees what a real store shows it
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return root, seconds


def _store_bytes(root: str) -> int:
    folder = os.path.join(root, ".memhealth")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if f.startswith("memory.db"))


def _queries(n: int) -> list[str]:
    # the first 20 name only words rare in the store ("stalls" and "why" are in no chunk)
    rare = [f"why does it stall on token{(i * 7919) % n} and token{(i * 104729) % n}"
            for i in range(20)]
    common = [" ".join(COMMON_WORDS.split()[i % 5:i % 5 + 7]) for i in range(20)]
    return rare + common


def _search_ms(root: str, n: int, rounds: int) -> tuple[list[float], list[float]]:
    """Milliseconds per search: (queries naming rare tokens, queries of common words only)."""
    from memhealth.config import defaults
    from memory_core.index.search import search
    from memory_core.store.db import connect

    cfg = defaults()
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        queries = _queries(n)
        for q in queries[:5]:  # warm the page cache
            search(conn, q, cfg, k=10, use_vectors=False)
        rare, common = [], []
        for _ in range(rounds):
            for i, q in enumerate(queries):
                t0 = time.perf_counter()
                search(conn, q, cfg, k=10, use_vectors=False)
                (rare if i < 20 else common).append((time.perf_counter() - t0) * 1000)
        return rare, common
    finally:
        conn.close()


def _gate(root: str, repeat: int) -> tuple[list[float], dict[str, list[float]]]:
    """Wall seconds of `memhealth gate --json`, and each check's duration_ms per run."""
    walls, per_check = [], {}
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        proc = subprocess.run(memhealth_cmd() + ["gate", "--json"], cwd=root, env=_env(),
                              capture_output=True, timeout=300)
        wall = time.perf_counter() - t0
        if i == 0:
            continue  # warm-up
        walls.append(wall)
        for check in json.loads(proc.stdout)["checks"]:
            per_check.setdefault(check["name"], []).append(check["duration_ms"])
    return walls, per_check


def _ingest(root: str, quick: bool) -> tuple[float, int, float]:
    """(chunks/s of a fresh 300-file slice, chunks added, median no-op re-ingest seconds)."""
    from bench_ingest import config, make_corpus

    from memory_core.ingest import run_ingest
    from memory_core.store.db import connect

    make_corpus(root, SLICE_FILES)
    cfg = config()
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        t0 = time.perf_counter()
        report = run_ingest(conn, root, cfg)
        seconds = time.perf_counter() - t0
        noop = []
        for _ in range(3 if quick else 5):
            t0 = time.perf_counter()
            again = run_ingest(conn, root, cfg)
            noop.append(time.perf_counter() - t0)
            assert again.files_changed == 0 and again.chunks_added == 0, "the re-ingest was not a no-op"
    finally:
        conn.close()
    return report.chunks_added / seconds, report.chunks_added, statistics.median(noop)


def _scrape_ms(root: str, repeat: int) -> float:
    from bench_scrape import scrape_times

    return statistics.median(scrape_times(root, repeat)) * 1000


def _hooks(root: str, base: float, repeat: int) -> dict[str, float]:
    cmd = memhealth_cmd()
    common = {"session_id": "bench", "cwd": root, "transcript_path": os.path.join(root, "t.jsonl")}
    cases = {
        "prompt": {**common, "hook_event_name": "UserPromptSubmit",
                   "prompt": PROMPT},
        "session-start": {**common, "hook_event_name": "SessionStart", "source": "startup"},
    }
    out = {}
    # the first prompt counts its common words once (memory_core.index.docfreq keeps them); the
    # median below is every prompt after it
    first = time_cmd(cmd + ["hook", "prompt"], stdin=json.dumps(cases["prompt"]).encode(), env=_env(),
                     cwd=root, repeat=1, warmup=0)
    out["prompt-first"] = summary(first)["median"] / base
    for hook, payload in cases.items():
        s = summary(time_cmd(cmd + ["hook", hook], stdin=json.dumps(payload).encode(), env=_env(),
                             cwd=root, repeat=repeat))
        out[hook] = s["median"] / base
    return out


def _instructions(root: str) -> dict[str, float]:
    """The prompt hook, SessionStart and the gate in instructions (callgrind), as ratios to
    the floor's: wall time on a shared box moves more than the store's size does. Measured
    after the timed runs, so the daily scans and the first prompt's counting are behind."""
    if shutil.which("valgrind") is None:
        return {}
    from bench_instructions import instructions

    floor_i = instructions([sys.executable, "-c", "import sqlite3, json"])
    cmd = memhealth_cmd()
    common = {"session_id": "bench", "cwd": root, "transcript_path": os.path.join(root, "t.jsonl")}
    prompt = {**common, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
    start = {**common, "hook_event_name": "SessionStart", "source": "startup"}
    return {
        "prompt_i": instructions(cmd + ["hook", "prompt"], json.dumps(prompt).encode(), cwd=root) / floor_i,
        "session_start_i": instructions(cmd + ["hook", "session-start"], json.dumps(start).encode(),
                                        cwd=root) / floor_i,
        "gate_i": instructions(cmd + ["gate", "--json", "--project", root], cwd=root) / floor_i,
    }


def measure(n: int, tmp: str, base: float, quick: bool) -> dict:
    root, seed_s = _project(tmp, n)
    try:
        fig = {"n": n, "seed_chunks_per_s": n / seed_s, "bytes_per_chunk": _store_bytes(root) / n,
               "store_mb": _store_bytes(root) / 1e6}
        rare, common = _search_ms(root, n, rounds=3 if quick else 8)
        fig["search_p50_ms"], fig["search_p99_ms"] = pct(rare, 50), pct(rare, 99)
        fig["common_p50_ms"], fig["common_p99_ms"] = pct(common, 50), pct(common, 99)
        hooks = _hooks(root, base, repeat=7 if quick else 15)
        fig["prompt_x"], fig["session_start_x"] = hooks["prompt"], hooks["session-start"]
        fig["prompt_first_x"] = hooks["prompt-first"]
        fig.update(_instructions(root))
        walls, per_check = _gate(root, repeat=3 if quick else 7)
        fig["gate_ms"] = statistics.median(walls) * 1000
        fig["checks_ms"] = {k: statistics.median(v) for k, v in per_check.items()}
        fig["scrape_ms"] = _scrape_ms(root, repeat=5 if quick else 15)
        fig["ingest_chunks_per_s"], fig["ingest_chunks"], fig["noop_s"] = _ingest(root, quick)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return fig


FIGURES = [  # (key, name, unit, bounded: a figure on the hook or gate path that must not grow)
    ("search_p50_ms", "BM25 search p50, rare tokens", "ms", False),
    ("search_p99_ms", "BM25 search p99, rare tokens", "ms", False),
    ("common_p50_ms", "BM25 search p50, common words only", "ms", False),
    ("common_p99_ms", "BM25 search p99, common words only", "ms", False),
    ("prompt_x", "hook prompt, intent + BM25 retrieval", "x floor", True),
    ("prompt_first_x", "hook prompt, the first (counts its common words once)", "x floor", False),
    ("session_start_x", "hook session-start incl. gate", "x floor", True),
    ("gate_ms", "memhealth gate --json", "ms", True),
    ("prompt_i", "hook prompt, intent, in instructions", "x floor", True),
    ("session_start_i", "hook session-start, in instructions", "x floor", True),
    ("gate_i", "memhealth gate --json, in instructions", "x floor", True),
    ("ingest_chunks_per_s", f"ingest {SLICE_FILES} files into the store", "chunks/s", False),
    ("noop_s", f"no-op re-ingest of {SLICE_FILES} unchanged files", "s", False),
    ("bytes_per_chunk", "store on disk per chunk", "bytes", False),
    ("scrape_ms", "scrape /metrics", "ms", True),
    ("seed_chunks_per_s", "bulk seed (executemany, FTS built once)", "chunks/s", False),
]


def bench(quick: bool = False, vectors: bool = True) -> list[dict]:
    sizes = QUICK_SIZES if quick else FULL_SIZES
    out = []
    compile_packages()  # hook figures as an install runs them, not compiling per process
    tmp = tempfile.mkdtemp(prefix="memhealth-bench-scale-", dir="/tmp")
    try:
        base = summary(floor(9 if quick else 15))["median"]
        out.append(row("floor: python -c 'import sqlite3, json'", base * 1000, "ms"))
        figs = []
        for n in sizes:
            t0 = time.perf_counter()
            fig = measure(n, tmp, base, quick)
            figs.append(fig)
            label = _label(n)
            for key, name, unit, _ in FIGURES:
                if key in fig:  # the instruction figures need valgrind
                    out.append(row(f"{name}, {label} chunks", fig[key], unit, scale=n))
            slowest = max(fig["checks_ms"].items(), key=lambda kv: kv[1])
            out.append(row(f"gate: slowest check, {label} chunks", slowest[1], "ms", scale=n,
                           note=slowest[0], checks=fig["checks_ms"]))
            out.append(row(f"store on disk, {label} chunks", fig["store_mb"], "MB", scale=n,
                           note=f"measured in {time.perf_counter() - t0:.0f}s"))
        small, big = figs[0], figs[-1]
        span = f"{_label(big['n'])}/{_label(small['n'])}"
        for key, name, _unit, bounded in FIGURES:
            if key not in big:
                continue
            ratio = big[key] / small[key] if small[key] else float("nan")
            out.append(row(f"growth {span}: {name}", ratio, "x", "<= 2.0" if bounded else "",
                           note=("PASS" if ratio <= 2.0 else "FAIL: grows with the store")
                           if bounded else ""))
        worst = max(big["checks_ms"], key=lambda c: big["checks_ms"][c] / max(small["checks_ms"].get(c, 0), 0.01))
        out.append(row(f"growth {span}: gate check {worst} (the fastest-growing)",
                       big["checks_ms"][worst] / max(small["checks_ms"].get(worst, 0), 0.01), "x",
                       note=f"{small['checks_ms'].get(worst, 0):.2f} -> {big['checks_ms'][worst]:.2f} ms"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if vectors:
        from scale_vectors import bench as vector_half

        out.extend(vector_half(quick, base=base))
    return out


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv, vectors="--no-vectors" not in sys.argv):
        shown = f"{r['value']:.3f}" if isinstance(r["value"], float) else r["value"]
        print(f"{r['name']:<62} {shown:>12} {r['unit']:<9} {r['target']:<7} {r['note']}")
