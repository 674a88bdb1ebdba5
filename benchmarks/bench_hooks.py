"""Hook wall time as a ratio to the interpreter floor `python -c "import sqlite3, json"`.

Figures: the stop hook (heartbeat rows only), the prompt hook on a non-intent prompt
(target ≤ 2.0×; the reference design's prompt hook is 7.7×), and the prompt hook with intent
and BM25 retrieval on a 20k-chunk store (all docs, and nine tenths transcript turns).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from common import floor, memhealth_cmd, row, seed_chunks, summary, time_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

def _project(tmp: str, chunks: int, transcripts: bool = False) -> str:
    root = os.path.join(tmp, f"p{chunks}{'t' if transcripts else ''}")
    os.makedirs(root)
    subprocess.run(memhealth_cmd() + ["init", "--project", root], check=True, capture_output=True)
    if chunks:
        from memory_core.store.db import connect, write

        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        seed_chunks(conn, chunks)
        if transcripts:  # a store as sessions grow it: nine chunks in ten are transcript turns
            with write(conn):
                # seed_chunks ends chunk i with "token{i}": those ending in 9 stay docs
                conn.execute("UPDATE chunks SET source = 'transcript' WHERE source = 'docs' AND content NOT LIKE '%9'")
        conn.close()
    return root


def _stdin(root: str, event: str, **fields) -> bytes:
    return json.dumps({"session_id": "bench", "cwd": root, "hook_event_name": event,
                       "transcript_path": os.path.join(root, "t.jsonl"), **fields}).encode()


def bench(quick: bool = False) -> list[dict]:
    repeat = 9 if quick else 25
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        small = _project(tmp, 0)
        big = _project(tmp, 20_000)
        sessions = _project(tmp, 20_000, transcripts=True)
        cmd = memhealth_cmd()
        cases = [
            ("hook stop (heartbeat rows only)", small, "stop", {}),
            ("hook prompt, non-intent", small, "prompt", {"prompt": "thanks, that looks right"}),
            # every indexed word here is in most chunks: the IDF pre-check stops before retrieval
            ("hook prompt, intent, only common words, 20k chunks", big, "prompt",
             {"prompt": "should we rebuild the snapshot compactor replay for tenant quota alerts?"}),
            # token1234/token5678 are rare: BM25 retrieval and the relevance gate run
            ("hook prompt, intent + BM25 retrieval, 20k chunks", big, "prompt",
             {"prompt": "should we rebuild the snapshot compactor for token1234 and token5678?"}),
            # rarity is counted over the curated sources only: the 2k doc chunks among 18k turns
            # (token1239 and token5679 stay in doc chunks)
            ("hook prompt, intent, only common words, 20k chunks, 90% transcripts", sessions, "prompt",
             {"prompt": "should we rebuild the snapshot compactor replay for tenant quota alerts?"}),
            ("hook prompt, intent + BM25 retrieval, 20k chunks, 90% transcripts", sessions, "prompt",
             {"prompt": "should we rebuild the snapshot compactor for token1239 and token5679?"}),
        ]
        base = summary(floor(repeat))
        out.append(row("floor: python -c 'import sqlite3, json'", base["median"] * 1000, "ms",
                       note=f"min {base['min'] * 1000:.1f} max {base['max'] * 1000:.1f}"))
        targets = {"hook prompt, non-intent": "<= 2.0x"}
        for name, root, event, fields in cases:
            s = summary(time_cmd(cmd + ["hook", event], stdin=_stdin(root, event, **fields), cwd=root,
                                 repeat=repeat))
            out.append(row(name, s["median"] / base["median"], "x floor", targets.get(name, ""),
                           note=f"median {s['median'] * 1000:.1f} ms (min {s['min'] * 1000:.1f}, "
                                f"max {s['max'] * 1000:.1f})"))
    return out
