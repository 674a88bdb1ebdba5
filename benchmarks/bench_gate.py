"""The gate's cost as a ratio to the interpreter floor `python -c "import sqlite3, json"`.

Figures (target ≤ 5× each; the reference design measured 7.3× for its gate and 8.0× for its
session-start hook): `memhealth gate` and the session-start hook including the gate, both on
a 2,000-chunk store with full vector coverage and a warm embedding stand-in (the real HTTP
server from tests/support/ollama_standin.py), plus `memhealth gate` with embeddings off (BM25-only:
no httpx import at all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from common import floor, memhealth_cmd, row, seed_chunks, summary, time_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

CHUNKS = 2000
DIM = 8


def _project(tmp: str) -> str:
    """A project set up by `memhealth init`, ingested (watermarks), embedded (vectors)."""
    from memory_core.store.db import connect, load_vec, write

    root = os.path.join(tmp, "proj")
    os.makedirs(root)
    subprocess.run(memhealth_cmd() + ["init", "--project", root], check=True, capture_output=True)
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    now = time.time_ns()
    seed_chunks(conn, CHUNKS)
    with write(conn):
        conn.executemany("INSERT INTO watermarks(source, path, mtime_ns, size, updated_ns) VALUES "
                         "('docs', ?, ?, 100, ?)", [(f"docs/f{i}.md", now, now) for i in range(CHUNKS // 10)])
    if load_vec(conn):
        conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{DIM}])")
        with write(conn):
            conn.executemany("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)",
                             [(i, json.dumps([0.1] * DIM)) for (i,) in conn.execute("SELECT id FROM chunks")])
    conn.close()
    return root


def _env(url: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
    if url:
        env.update(MEMHEALTH_EMBEDDING_URL=url, MEMHEALTH_EMBEDDING_DIM=str(DIM))
    return env


def bench(quick: bool = False) -> list[dict]:
    from tests.support.ollama_standin import OllamaStandin

    repeat = 9 if quick else 21
    out = []
    cmd = memhealth_cmd()
    with tempfile.TemporaryDirectory() as tmp, OllamaStandin("instant", dim=DIM) as ollama:
        root = _project(tmp)
        stdin = json.dumps({"session_id": "bench", "cwd": root, "hook_event_name": "SessionStart",
                            "source": "startup", "transcript_path": os.path.join(root, "t.jsonl")}).encode()
        base = summary(floor(repeat))
        out.append(row("floor: python -c 'import sqlite3, json'", base["median"] * 1000, "ms",
                       note=f"min {base['min'] * 1000:.1f} max {base['max'] * 1000:.1f}"))
        cases = [
            ("memhealth gate, warm embedding stand-in", cmd + ["gate"], b"", ollama.url, "<= 5.0x"),
            ("hook session-start incl. gate, warm stand-in", cmd + ["hook", "session-start"], stdin,
             ollama.url, "<= 5.0x"),
            ("memhealth gate, embeddings off (BM25-only)", cmd + ["gate"], b"", None, ""),
        ]
        for name, argv, data, url, target in cases:
            s = summary(time_cmd(argv, stdin=data, env=_env(url), cwd=root, repeat=repeat))
            out.append(row(name, s["median"] / base["median"], "x floor", target,
                           note=f"median {s['median'] * 1000:.1f} ms (min {s['min'] * 1000:.1f}, "
                                f"max {s['max'] * 1000:.1f}); {CHUNKS} chunks"))
    return out


if __name__ == "__main__":
    for r in bench(quick="--quick" in sys.argv):
        print(f"{r['name']:<50} {r['value']:8.2f} {r['unit']:<8} {r['target']:<8} {r['note']}")
