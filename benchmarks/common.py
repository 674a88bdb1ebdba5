"""Shared measuring tools for the benchmarks: the interpreter floor, timed subprocesses,
percentiles. Every figure is a ratio to a floor measured in the same run, never an
absolute timing compared across machines."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

PYTHON = sys.executable
FLOOR_CMD = [PYTHON, "-c", "import sqlite3, json"]


def time_cmd(cmd, stdin=b"", env=None, cwd=None, repeat: int = 15, warmup: int = 2,
             limit_s: float = 120.0) -> list[float]:
    """Wall seconds of `repeat` runs of a command (after `warmup` unmeasured runs). `stdin` is
    bytes, or a function of the run's index returning them (a hook payload per run: a fresh
    session id each time, so a per-session cap never shapes what is timed).

    The wait is a blocking waitpid with a watchdog thread as the time bound: subprocess's own
    `timeout=` polls with a doubling sleep (0.5 ms ... 32 ms), which rounds a 20 ms process up
    to ~32 ms and flattened every ratio to about 1.0."""
    import threading

    samples = []
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        watchdog = threading.Timer(limit_s, proc.kill)
        watchdog.start()
        try:
            data = stdin(i) if callable(stdin) else stdin
            if data:
                proc.stdin.write(data)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()
        dt = time.perf_counter() - t0
        watchdog.cancel()
        if i >= warmup:
            samples.append(dt)
    return samples


def floor(repeat: int = 15) -> list[float]:
    return time_cmd(FLOOR_CMD, repeat=repeat)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    if not ordered:
        return float("nan")
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def summary(samples: list[float]) -> dict:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples),
            "p95": pct(samples, 95), "n": len(samples)}


def row(name: str, value: float, unit: str, target: str = "", note: str = "", **extra) -> dict:
    return {"name": name, "value": value, "unit": unit, "target": target, "note": note, **extra}


def memhealth_cmd() -> list[str]:
    """The command `memhealth init` writes into settings: hooks are timed as Claude runs them."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from memhealth.installer import launcher_argv

    return launcher_argv()


WORDS = ("ledger writer queue snapshot compactor projection replay stream sequence event "
         "append batch latency idempotency request proxy retry backup checkpoint vacuum index "
         "schema migration cursor shard tenant quota budget alert probe heartbeat gate").split()


def seed_chunks(conn, n: int, seed: int = 7, bulk: bool = False) -> None:
    """Insert `n` deterministic synthetic doc chunks (10 per file) in one transaction.

    `bulk` (the 1M-chunk scale series): the rows stream from a generator into one
    executemany with the FTS insert trigger dropped, then the index is built once with
    FTS5's 'rebuild' and the trigger restored -- the same index, several times faster than
    a trigger firing per row. Same rows, same order, for the same seed either way."""
    import random

    from memory_core.store.db import write

    rng = random.Random(seed)
    rows = ((f"docs/f{i // 10}.md", " ".join(rng.choices(WORDS, k=3)),
             " ".join(rng.choices(WORDS, k=80)) + f" token{i}", f"h{i}") for i in range(n))
    insert = ("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
              "content_hash, created_ns) VALUES ('docs', ?, 1, 20, 'heading', ?, ?, ?, 0)")
    if not bulk:
        with write(conn):
            conn.executemany(insert, list(rows))
        return
    (trigger,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                              "AND name = 'chunks_ai'").fetchone()
    with write(conn):
        conn.execute("DROP TRIGGER chunks_ai")
        conn.executemany(insert, rows)
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        conn.execute(trigger)


def compile_packages() -> None:
    """Byte-compile the packages as `pip install` does: with PYTHONDONTWRITEBYTECODE set (as
    on this project's box) a module never imported from an installed wheel would be compiled
    from source by every hook process, and a new module would look slower than it is."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = [os.path.join(root, d) for d in ("memhealth", "memory_core", "probes", "telemetry")]
    # not the sample project: it is data the demo copies, and the wheel test lists its files
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", "sample_project", *dirs], check=True,
                   capture_output=True)


def start_serve(cmd: list[str], root: str):
    """`memhealth serve` for `root` on 127.0.0.1:0 with no export: (the process, its URL)."""
    import subprocess

    proc = subprocess.Popen(cmd + ["serve", "--project", root, "--listen", "127.0.0.1:0", "--no-export"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    if "listening on" not in first:
        proc.kill()
        raise RuntimeError(f"serve did not start: {first!r}")
    return proc, first.split("listening on ", 1)[1].split()[0]


def scrape_every_second(url: str, stop, scrapes: dict) -> None:
    """GET `url`/metrics once a second until `stop` is set, as Prometheus would; counts go
    into `scrapes` ({"ok", "failed", "seconds"})."""
    import time
    import urllib.request

    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
                resp.read()
            scrapes["ok"] += 1
        except OSError:
            scrapes["failed"] += 1
        scrapes["seconds"].append(time.perf_counter() - t0)
        stop.wait(1.0)
