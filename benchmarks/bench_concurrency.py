"""Concurrent hook processes under scrape load: lost heartbeat rows, lock errors, per hook
event p50/p99/max wall time as ratios to the floor measured under the same load, and where
the slowest runs' time went (docs/internals/benchmarks.md, "Under load, the tail").

8 workers run hooks back to back (prompt, pre-tool, post-tool, stop in turn) while a real
`memhealth serve` is scraped every second and a ninth thread runs the floor
(`python -c "import sqlite3, json"`) back to back: the loaded floor sees the same CPU and
disk contention as the hooks, so a ratio to it is what the hooks add, not what the box
does. Each hook runs with MEMHEALTH_PHASES, so it appends where its time went: the wait
for the write lock (BEGIN IMMEDIATE), its commits, the WAL checkpoints SQLite ran inside
them, the spill and journal drains; the process start and imports (spawn to `main`) and
the exit (its last line to the reaped process) come from the timestamps around it.

`--quick`: 8 x 100 hooks; full: 8 x 1,250 (the issue's run). MEMHEALTH_BENCH_HOOKS=N
overrides the per-worker count.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import threading
import time

from common import FLOOR_CMD, memhealth_cmd, pct, row, scrape_every_second, start_serve

WORKERS = 8
EVENTS = ("prompt", "pre-tool", "post-tool", "stop")
PHASES = ("start+imports", "lock wait", "commit", "checkpoint", "drains", "other work", "exit")


def _timed(cmd: list[str], data: bytes, cwd: str | None, env: dict | None, limit_s: float = 60.0):
    """(spawn wall ns, reaped wall ns, pid) of one run: a blocking wait with a watchdog, as
    common.time_cmd does (subprocess's timeout= polls and rounds short runs up)."""
    spawn_ns = time.time_ns()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    watchdog = threading.Timer(limit_s, proc.kill)
    watchdog.start()
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    proc.wait()
    watchdog.cancel()
    return spawn_ns, time.time_ns(), proc.pid


def breakdown(run: dict, line: dict | None) -> dict[str, float]:
    """Seconds per phase of one hook run, from its spawn/reap times and its phase line."""
    total = (run["exit_ns"] - run["spawn_ns"]) / 1e9
    if line is None:
        return {"total": total, **{p: 0.0 for p in PHASES}, "unprofiled": total}
    start = max(line["main_ns"] - run["spawn_ns"], 0) / 1e9
    exit_ = max(run["exit_ns"] - line["end_ns"], 0) / 1e9
    body = max(line["end_ns"] - line["main_ns"], 0) / 1e9
    lock = line["lock_wait_ns"] / 1e9
    ckpt = line["checkpoint_ns"] / 1e9
    commit = line["commit_ns"] / 1e9 - ckpt
    drains = line["drain_ns"] / 1e9
    other = max(body - lock - commit - ckpt - drains, 0.0)  # drains' own writes are in lock/commit
    return {"total": total, "start+imports": start, "lock wait": lock, "commit": commit,
            "checkpoint": ckpt, "drains": drains, "other work": other, "exit": exit_,
            "checkpoints": line["checkpoints"]}


def _mean_phases(parts: list[dict]) -> dict[str, float]:
    return {p: statistics.fmean(x[p] for x in parts) if parts else 0.0 for p in PHASES}


def _say_phases(mean: dict[str, float]) -> str:
    total = sum(mean.values()) or 1.0
    top = sorted(PHASES, key=lambda p: -mean[p])
    return ", ".join(f"{p} {mean[p] * 1000:.0f} ms ({mean[p] / total:.0%})" for p in top if mean[p] >= 0.0005)


def bench(quick: bool = False) -> list[dict]:
    per_worker = int(os.environ.get("MEMHEALTH_BENCH_HOOKS") or (100 if quick else 1250))
    cmd = memhealth_cmd()
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "proj")
        os.makedirs(root)
        subprocess.run(cmd + ["init", "--project", root], check=True, capture_output=True)
        phases_path = os.path.join(tmp, "phases.ndjson")
        env = {**os.environ, "MEMHEALTH_PHASES": phases_path}
        serve, url = start_serve(cmd, root)
        stop = threading.Event()
        scrapes = {"ok": 0, "failed": 0, "seconds": []}

        loaded_floor: list[float] = []

        def floor_runner() -> None:
            while not stop.is_set():
                spawn_ns, exit_ns, _ = _timed(FLOOR_CMD, b"", None, None)
                loaded_floor.append((exit_ns - spawn_ns) / 1e9)

        runs: list[dict] = []
        lock = threading.Lock()

        def worker(n: int) -> None:
            for i in range(per_worker):
                event = EVENTS[i % len(EVENTS)]
                body = {"session_id": f"s{n}", "cwd": root, "hook_event_name": event,
                        "prompt": f"worker {n} turn {i}: should we keep this approach?",
                        "tool_name": "Read", "tool_input": {"file_path": os.path.join(root, f"f{i % 7}.py")},
                        "tool_use_id": f"toolu_{n}_{i}"}
                spawn_ns, exit_ns, pid = _timed(cmd + ["hook", event], json.dumps(body).encode(), root, env)
                with lock:
                    runs.append({"event": event, "turn": i, "spawn_ns": spawn_ns, "exit_ns": exit_ns, "pid": pid})

        helpers = [threading.Thread(target=scrape_every_second, args=(url, stop, scrapes), daemon=True), threading.Thread(target=floor_runner, daemon=True)]
        for t in helpers:
            t.start()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(3600)
        wall = time.perf_counter() - t0
        stop.set()
        for t in helpers:
            t.join(30)
        serve.terminate()
        serve.communicate(timeout=30)

        lines: dict[tuple[int, str], list[dict]] = {}
        with open(phases_path) as fh:
            for text in fh:
                line = json.loads(text)
                lines.setdefault((line["pid"], line["event"]), []).append(line)
        for r in runs:  # pids are reused over 10,000 runs: match by pid and time window
            cands = lines.get((r["pid"], r["event"]), [])
            r["line"] = next((c for c in cands if r["spawn_ns"] <= c["main_ns"] <= c["end_ns"] <= r["exit_ns"]), None)
            r["parts"] = breakdown(r, r["line"])

        from memory_core.store.db import connect

        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        recorded = conn.execute("SELECT count(*) FROM heartbeats WHERE hook != 'gate'").fetchone()[0]
        locked = conn.execute("SELECT count(*) FROM heartbeats WHERE reason = 'db_locked'").fetchone()[0]
        spilled = os.path.exists(os.path.join(root, ".memhealth", "spill.ndjson"))
        conn.close()

    total = len(runs)
    base = statistics.median(loaded_floor)
    floor99 = pct(loaded_floor, 99)
    out = [
        row(f"{WORKERS} processes x {per_worker} hooks, scraped 1/s: heartbeat rows lost", total - recorded, "rows",
            "0", note=f"{recorded} of {total} recorded in {wall:.0f} s; spill file {'present' if spilled else 'absent'}"),
        row("  lock errors", locked, "rows", "0"),
        row("  scrapes failed", scrapes["failed"], "scrapes", "0",
            note=f"{scrapes['ok']} ok; p99 {pct(scrapes['seconds'], 99) * 1000:.0f} ms"),
        row("  loaded floor: p99 / p50", floor99 / base, "x",
            note=f"{len(loaded_floor)} floor runs beside the hooks: p50 {base * 1000:.0f} ms, "
                 f"p99 {floor99 * 1000:.0f} ms, max {max(loaded_floor) * 1000:.0f} ms"),
    ]
    for event in EVENTS:
        s = [r["parts"]["total"] for r in runs if r["event"] == event]
        over = sum(1 for x in s if x > 0.5)
        out.append(row(f"  {event}: p50 / p99 / max", pct(s, 99) / base, "x loaded floor (p99)",
                       note=f"p50 {pct(s, 50) / base:.2f}x, p99 {pct(s, 99) / base:.2f}x, max {max(s) / base:.1f}x "
                            f"the loaded floor's p50 ({pct(s, 50) * 1000:.0f} / {pct(s, 99) * 1000:.0f} / "
                            f"{max(s) * 1000:.0f} ms); p99 {pct(s, 99) / floor99:.2f}x the floor's p99; "
                            f"{over} of {len(s)} over 0.5 s"))
    everything = sorted(runs, key=lambda r: r["parts"]["total"])
    cut = pct([r["parts"]["total"] for r in runs], 99)
    tail_runs = [r for r in everything if r["parts"]["total"] >= cut]
    tail = [r["parts"] for r in tail_runs]
    tail_events = ", ".join(f"{e} {sum(1 for r in tail_runs if r['event'] == e)}" for e in EVENTS)
    tail_first = sum(1 for r in tail_runs if r["turn"] < len(EVENTS))
    middle = [r["parts"] for r in everything[len(everything) // 4: 3 * len(everything) // 4]]
    unprofiled = sum(1 for r in runs if r["line"] is None)
    ckpt_runs = [r["parts"] for r in runs if r["parts"].get("checkpoints")]
    slow = [r["parts"] for r in runs if r["parts"]["total"] > 0.5]
    out += [
        row("  where the time goes: the middle half", statistics.fmean(p["total"] for p in middle) / base,
            "x loaded floor", note=_say_phases(_mean_phases(middle))),
        row("  where the time goes: the slowest 1 %", statistics.fmean(p["total"] for p in tail) / base,
            "x loaded floor", note=_say_phases(_mean_phases(tail)) + f"; {len(tail)} runs >= {cut * 1000:.0f} ms ({tail_events}; {tail_first} in their "
                 f"session's first {len(EVENTS)} turns)"),
        row("  runs over 0.5 s", len(slow), "runs",
            note=(_say_phases(_mean_phases(slow)) if slow else "none")
            + f"; {sum(1 for p in slow if p.get('checkpoints'))} of them checkpointed"),
        row("  runs that ran a WAL checkpoint", len(ckpt_runs), "runs",
            note=(f"mean {statistics.fmean(p['checkpoint'] for p in ckpt_runs) * 1000:.0f} ms in the checkpoint; "
                  f"{sum(1 for p in ckpt_runs if p['total'] >= cut)} in the slowest 1 %") if ckpt_runs else "none"),
        row("  runs without a phase line", unprofiled, "runs", "0"),
    ]
    return out
