"""`/metrics` scrape time with 1M heartbeat rows vs 1k rows (target: within 1.5x).

The scrape reads rollups and small tables, never the raw heartbeat table, so its cost must
not grow with history. Both stores are generated with SQL (a recursive CTE) together with
rollups consistent with the rows, then scraped over HTTP from an in-process `Serve`.

    python benchmarks/run.py scrape [--quick]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from common import row  # noqa: E402

from telemetry.catalog import HOOK_DURATION_BUCKETS, HOOKS  # noqa: E402


def _le_case() -> str:
    """SQL CASE mapping a duration in seconds (column d) to its rollup "le" label."""
    arms = " ".join(f"WHEN d <= {b!r} THEN '{float(b)!r}'" for b in HOOK_DURATION_BUCKETS)
    return f"CASE {arms} ELSE '+Inf' END"


def populate(db_path: str, n_rows: int) -> None:
    """`n_rows` completed heartbeats over 30 days, a few open ones, and matching rollups."""
    from memory_core.store.db import connect, write

    conn = connect(db_path)
    now = time.time_ns()
    span_ns = 30 * 86400 * 10 ** 9
    hooks_sql = ", ".join(f"'{h}'" for h in HOOKS)
    with write(conn):
        conn.execute(f"""
            WITH RECURSIVE cnt(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM cnt WHERE i + 1 < {n_rows}),
            hooks(k, name) AS (SELECT key, value FROM json_each('[{hooks_sql.replace("'", '"')}]'))
            INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns, ended_ns, outcome, reason)
            SELECT (SELECT name FROM hooks WHERE k = i % {len(HOOKS)}), 's' || (i / 50), 1,
                   printf('%032x', i), {now - span_ns} + i * ({span_ns} / {n_rows}),
                   {now - span_ns} + i * ({span_ns} / {n_rows}) + 1000000 * (1 + i % 400),
                   CASE WHEN i % 97 = 0 THEN 'error' WHEN i % 991 = 0 THEN 'killed' ELSE 'ok' END,
                   CASE WHEN i % 97 = 0 THEN 'db_locked' END
            FROM cnt""")
        # a few hooks still running (this process is alive, so they are not reaped)
        conn.executemany("INSERT INTO heartbeats(hook, pid, started_ns) VALUES (?, ?, ?)",
                         [("prompt", os.getpid(), now)] * 5)
        conn.execute("""
            INSERT INTO rollups(metric, labels, value)
            SELECT 'memhealth_hook_invocations_total', json_object('hook', hook, 'outcome', outcome), count(*)
            FROM heartbeats WHERE outcome IS NOT NULL GROUP BY hook, outcome""")
        durations = ("SELECT hook, (ended_ns - started_ns) / 1e9 AS d FROM heartbeats "
                     "WHERE outcome IN ('ok', 'error')")
        conn.execute(f"""
            INSERT INTO rollups(metric, labels, value)
            SELECT 'memhealth_hook_duration_seconds_bucket', json_object('hook', hook, 'le', le), count(*)
            FROM (SELECT hook, {_le_case()} AS le FROM ({durations})) GROUP BY hook, le""")
        conn.execute(f"""
            INSERT INTO rollups(metric, labels, value)
            SELECT 'memhealth_hook_duration_seconds_sum', json_object('hook', hook), sum(d)
            FROM ({durations}) GROUP BY hook""")
        conn.execute(f"""
            INSERT INTO rollups(metric, labels, value)
            SELECT 'memhealth_hook_duration_seconds_count', json_object('hook', hook), count(*)
            FROM ({durations}) GROUP BY hook""")
        conn.execute("""
            INSERT INTO rollups(metric, labels, value)
            SELECT 'memhealth_hook_last_success_timestamp_seconds', json_object('hook', hook), max(ended_ns) / 1e9
            FROM heartbeats WHERE outcome = 'ok' GROUP BY hook""")
    conn.close()


def scrape_times(db_dir: str, repeat: int) -> list[float]:
    from memhealth.config import defaults
    from memhealth.project import Project
    from telemetry.serve import Serve

    project = Project(db_dir)
    app = Serve(project, defaults(), port=0, probe=None, export=False).start()
    url = f"http://127.0.0.1:{app.port}/metrics"
    try:
        samples = []
        for i in range(repeat + 3):
            t0 = time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as resp:
                resp.read()
            if i >= 3:  # warm-up: page cache, first-import costs
                samples.append(time.perf_counter() - t0)
        return samples
    finally:
        app.stop()


def bench(quick: bool) -> list[dict]:
    repeat = 15 if quick else 60
    out = []
    with tempfile.TemporaryDirectory(prefix="memhealth-bench-scrape-") as tmp:
        medians = {}
        for label, n in (("1k", 1_000), ("1M", 1_000_000)):
            root = os.path.join(tmp, label)
            os.makedirs(os.path.join(root, ".memhealth"))
            t0 = time.perf_counter()
            populate(os.path.join(root, ".memhealth", "memory.db"), n)
            gen = time.perf_counter() - t0
            samples = scrape_times(root, repeat)
            medians[label] = statistics.median(samples)
            out.append(row(f"scrape /metrics, {label} heartbeat rows", medians[label] * 1000, "ms",
                           note=f"median of {repeat}; rows generated in {gen:.1f}s"))
        ratio = medians["1M"] / medians["1k"]
        out.append(row("scrape 1M rows / 1k rows", ratio, "x", target="<= 1.5",
                       note="PASS" if ratio <= 1.5 else "FAIL: the scrape grows with raw rows"))
    return out


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv):
        print(r)
