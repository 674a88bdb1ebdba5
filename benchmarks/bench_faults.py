"""The load run of the fault matrix: 10,000 hooks from 8 concurrent processes while a real
`memhealth serve` is scraped every second (its collector drains and reaps on every scrape).

Figures: rows recorded and lost (heartbeats, and decisions against prompt heartbeats, after
the gate's drain), lock errors, killed rows, scrape failures, and per hook p50/p99 wall time
as ratios to the interpreter floor measured in the same run, with the share of runs over
0.5 s. `--quick` runs 800 hooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time

from common import floor, memhealth_cmd, pct, row, scrape_every_second, start_serve, summary

WORKERS = 8
EVENTS = ("prompt", "pre-tool", "post-tool", "stop")


def bench(quick: bool = False) -> list[dict]:
    total = 800 if quick else 10_000
    per_worker = total // WORKERS
    base = summary(floor(9 if quick else 15))["median"]
    cmd = memhealth_cmd()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "proj")
        os.makedirs(root)
        subprocess.run(cmd + ["init", "--project", root], check=True, capture_output=True)
        serve, url = start_serve(cmd, root)
        stop = threading.Event()
        scrapes = {"ok": 0, "failed": 0, "seconds": []}

        samples: dict[str, list[float]] = {e: [] for e in EVENTS}
        nonzero = [0]
        lock = threading.Lock()

        def worker(n: int) -> None:
            for i in range(per_worker):
                event = EVENTS[i % len(EVENTS)]
                body = {"session_id": f"s{n}", "cwd": root, "hook_event_name": event,
                        "prompt": f"worker {n} turn {i}: should we keep this approach?"}
                t0 = time.perf_counter()
                proc = subprocess.run(cmd + ["hook", event], input=json.dumps(body).encode(), cwd=root,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                took = time.perf_counter() - t0
                with lock:
                    samples[event].append(took)
                    nonzero[0] += proc.returncode != 0

        scrape_thread = threading.Thread(target=scrape_every_second, args=(url, stop, scrapes), daemon=True)
        scrape_thread.start()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(3600)
        wall = time.perf_counter() - t0
        stop.set()
        scrape_thread.join(15)
        serve.terminate()
        serve.communicate(timeout=30)

        # the first gate after the run drains whatever is still spilled or journaled
        subprocess.run(cmd + ["gate"], cwd=root, capture_output=True)
        from memory_core.store.db import connect

        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        recorded = q("SELECT count(*) FROM heartbeats WHERE hook != 'gate'")
        ok = q("SELECT count(*) FROM heartbeats WHERE hook != 'gate' AND outcome = 'ok'")
        locked = q("SELECT count(*) FROM heartbeats WHERE reason = 'db_locked'")
        killed = q("SELECT count(*) FROM heartbeats WHERE outcome = 'killed'")
        prompts = q("SELECT count(*) FROM heartbeats WHERE hook = 'prompt'")
        decisions = q("SELECT count(*) FROM decisions")
        conn.close()
    done = sum(len(v) for v in samples.values())
    out = [
        row(f"{done} hooks x {WORKERS} processes, scraped 1/s: heartbeat rows lost", done - recorded, "rows", "0",
            note=f"{recorded} recorded ({ok} ok) in {wall:.0f} s; {nonzero[0]} non-zero exits"),
        row("  prompts without a decision row", prompts - decisions, "rows", "0",
            note=f"{prompts} prompt heartbeats, {decisions} decisions"),
        row("  lock errors", locked, "rows", "0", note=f"{killed} killed"),
        row("  scrapes failed", scrapes["failed"], "scrapes", "0",
            note=f"{scrapes['ok']} ok; p99 {pct(scrapes['seconds'], 99) * 1000:.0f} ms"),
    ]
    for event in EVENTS:
        s = samples[event]
        over = sum(1 for x in s if x > 0.5) / max(len(s), 1)
        out.append(row(f"  {event}: p50 / p99", pct(s, 50) / base, "x floor",
                       note=f"p99 {pct(s, 99) / base:.1f}x; {pct(s, 50) * 1000:.0f} / {pct(s, 99) * 1000:.0f} ms; "
                            f"{over:.1%} over 0.5 s (floor {base * 1000:.0f} ms)"))
    return out
