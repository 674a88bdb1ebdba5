"""Helpers for the gate tests: a real project (set up by the library `memhealth init` uses),
its config, an open store, and Evidence at an injected time."""

from __future__ import annotations

import os

from memhealth.config import load
from memhealth.installer import init_project
from memory_core.store.db import connect
from probes.evidence import Evidence

DAY = 86400.0
T0 = 1_800_000_000.0


def make_project(root) -> str:
    root = str(root)
    os.makedirs(root, exist_ok=True)
    init_project(root, launch="/usr/bin/env memhealth", templates=False)  # tests write their own
    return root


def evidence(root, conn, now: float = T0, cfg=None, **kw) -> Evidence:
    cfg = cfg or load(os.path.join(str(root), ".memhealth"), environ={})
    return Evidence(str(root), conn, cfg, now=now, **kw)


def open_store(root):
    return connect(os.path.join(str(root), ".memhealth", "memory.db"))


def add_watermark(conn, source: str, path: str, at: float, size: int = 100) -> None:
    conn.execute("INSERT OR REPLACE INTO watermarks(source, path, mtime_ns, size, updated_ns) "
                 "VALUES (?, ?, ?, ?, ?)", (source, path, int(at * 1e9), size, int(at * 1e9)))


def add_chunk(conn, n: int, content: str = "the wal checkpoint stalls under load") -> None:
    for i in range(n):
        conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                     "VALUES ('docs', ?, ?, ?, 0)", (f"doc{i}.md", f"{content} {i}", f"h{hash(content)}-{i}"))


def add_heartbeat(conn, hook: str, at: float, outcome: str | None = "ok", session_id: str = "s1",
                  reason: str | None = None, pid: int | None = None) -> None:
    conn.execute("INSERT INTO heartbeats(hook, session_id, pid, started_ns, ended_ns, outcome, reason) "
                 "VALUES (?,?,?,?,?,?,?)",
                 (hook, session_id, pid, int(at * 1e9), int((at + 0.01) * 1e9) if outcome else None,
                  outcome, reason))
