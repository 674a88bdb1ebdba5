"""16 concurrent hook processes: lost heartbeat rows, lock errors, and p50/p99 wall time as
ratios to the interpreter floor measured in the same run (docs/internals/benchmarks.md)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time

from common import floor, memhealth_cmd, pct, row, summary

WORKERS = 16


def bench(quick: bool = False) -> list[dict]:
    per_worker = 10 if quick else 40
    base = summary(floor(9 if quick else 15))["median"]
    cmd = memhealth_cmd()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "proj")
        os.makedirs(root)
        subprocess.run(cmd + ["init", "--project", root], check=True, capture_output=True)
        samples: list[float] = []
        lock = threading.Lock()

        def worker(n: int) -> None:
            for i in range(per_worker):
                event = ("prompt", "pre-tool", "post-tool", "stop")[i % 4]
                body = {"session_id": f"s{n}", "cwd": root, "hook_event_name": event,
                        "prompt": f"worker {n} turn {i}: should we keep this approach?"}
                t0 = time.perf_counter()
                subprocess.run(cmd + ["hook", event], input=json.dumps(body).encode(), cwd=root,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                with lock:
                    samples.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        wall = time.perf_counter() - t0

        from memory_core.store.db import connect

        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        rows = conn.execute("SELECT count(*) FROM heartbeats WHERE hook != 'gate'").fetchone()[0]
        locked = conn.execute("SELECT count(*) FROM heartbeats WHERE reason = 'db_locked'").fetchone()[0]
        spilled = os.path.exists(os.path.join(root, ".memhealth", "spill.ndjson"))
        conn.close()
    total = WORKERS * per_worker
    return [
        row(f"{WORKERS} concurrent hooks: heartbeat rows lost", total - rows, "rows", "0",
            note=f"{total} invocations in {wall:.1f} s; spill file {'present' if spilled else 'absent'}"),
        row(f"{WORKERS} concurrent hooks: lock errors", locked, "rows", "0"),
        row(f"{WORKERS} concurrent hooks: p50", pct(samples, 50) / base, "x floor",
            note=f"{pct(samples, 50) * 1000:.1f} ms on 2 cores shared by 16 processes"),
        row(f"{WORKERS} concurrent hooks: p99", pct(samples, 99) / base, "x floor",
            note=f"{pct(samples, 99) * 1000:.1f} ms"),
    ]
