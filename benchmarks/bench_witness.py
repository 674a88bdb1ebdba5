"""The transcript witness: what one reconciliation costs on a session-sized transcript.

Figures: reconciling 8 MB of new transcript (the per-run budget) as a ratio to a floor measured
in the same run — reading the same bytes and `json.loads` of every line, the least any reader
of the transcript does; the no-op reconciliation (nothing new) in ms; and the events judged.
The transcript is the recorded healthy session (tests/fixtures/transcripts/witness/witness-healthy)
repeated with fresh ids and large tool results, every event with its heartbeat row, so the
figure is the healthy case: every event matched.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

from common import row, summary

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

TARGET_BYTES = 8 * 1024 * 1024


def _build(root: str, conn, path: str) -> int:
    """Write the transcript and the matching heartbeats; return the number of copies."""
    from memory_core.store.db import write

    fixture = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "transcripts", "witness")
    with open(os.path.join(fixture, "witness-healthy.jsonl"), encoding="utf-8") as fh:
        template = fh.read()
    with open(os.path.join(fixture, "witness-healthy.rows.json"), encoding="utf-8") as fh:
        rows = json.load(fh)["heartbeats"]
    padding = "ledger writer queue snapshot compactor " * 200  # a tool result's bulk
    copies = size = 0
    with open(path, "w", encoding="utf-8") as out, write(conn):
        while size < TARGET_BYTES:
            copies += 1
            tag = f"c{copies:05d}"
            body = template.replace("toolu_e2e_", f"toolu_{tag}_")
            for h in rows:
                if h["event_ref"] and not h["event_ref"].startswith("toolu_"):
                    body = body.replace(h["event_ref"], f"{tag}-{h['event_ref']}")
            body = body.replace('"type": "tool_result", "content": "', f'"type": "tool_result", "content": "{padding}')
            out.write(body)
            size += len(body)
            for h in rows:
                ref = h["event_ref"]
                if ref:
                    ref = ref.replace("toolu_e2e_", f"toolu_{tag}_") if ref.startswith("toolu_") else f"{tag}-{ref}"
                conn.execute("INSERT INTO heartbeats(hook, session_id, started_ns, ended_ns, outcome, event_ref) "
                             "VALUES (?,?,?,?,?,?)", (h["hook"], h["session_id"], h["started_ns"],
                                                      h["started_ns"] + 10**7, h["outcome"], ref))
    return copies


def _floor(path: str) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                json.loads(line)
    return time.perf_counter() - t0


def bench(quick: bool = False) -> list[dict]:
    from memhealth.config import load
    from memory_core.store.db import connect, write
    from memory_core.store.meta import TRANSCRIPT_DIR, set_meta
    from probes import witness

    repeat = 3 if quick else 7
    floors, firsts, noops, judged = [], [], [], 0
    from memhealth.installer import init_project

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = os.path.join(tmp, "state")  # init registers the project there
        for i in range(repeat):
            root = os.path.join(tmp, f"p{i}")
            os.makedirs(root)
            init_project(root, launch="/usr/bin/env memhealth", templates=False)
            conn = connect(os.path.join(root, ".memhealth", "memory.db"))
            tdir = os.path.join(tmp, f"t{i}")
            os.makedirs(tdir)
            path = os.path.join(tdir, "session.jsonl")
            _build(root, conn, path)
            with write(conn):
                set_meta(conn, TRANSCRIPT_DIR, tdir)
                set_meta(conn, "store.id", json.dumps({"id": "bench", "created_ns": 0}))
            cfg = load(os.path.join(root, ".memhealth"), environ={})
            cfg["gate"]["heartbeat_max_age_days"] = 3650.0
            end = os.stat(path).st_mtime_ns + 3600 * 10**9
            floors.append(_floor(path))
            t0 = time.perf_counter()
            report = witness.reconcile(conn, root, cfg, now_ns=end, max_bytes=TARGET_BYTES + 1024 * 1024)
            firsts.append(time.perf_counter() - t0)
            assert report.judged == report.matched and report.findings == 0, report.to_dict()
            judged = report.judged
            t0 = time.perf_counter()
            assert witness.reconcile(conn, root, cfg, now_ns=end).bytes_read == 0
            noops.append(time.perf_counter() - t0)
            conn.close()
    f, r, n = summary(floors), summary(firsts), summary(noops)
    return [
        row("witness_8mb_ratio_to_parse_floor", r["median"] / f["median"], "x", "<= 3",
            f"reconcile {r['median'] * 1000:.0f} ms vs read+json.loads {f['median'] * 1000:.0f} ms; "
            f"{judged} events judged, all matched"),
        row("witness_8mb_ms", r["median"] * 1000, "ms", "", f"p95 {r['p95'] * 1000:.0f} ms over {r['n']} runs"),
        row("witness_noop_ms", n["median"] * 1000, "ms", "", "nothing new since the last reconciliation"),
    ]


if __name__ == "__main__":
    for figure in bench(quick="--quick" in sys.argv):
        print(figure)
