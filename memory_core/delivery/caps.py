"""Per-session caps: how many blocks of each kind one session is told, and never the same
item twice (the `deliveries` table, one row per (session, key)).

    chosen = caps.apply(conn, offered, session_id, cfg["injection"])
"""

from __future__ import annotations

import time

from memory_core.store.db import write

MAX_ITEMS = 2                      # blocks in one prompt's injection


def apply(conn, offered, session_id, icfg):
    """Keep at most MAX_ITEMS items not yet delivered this session and under their block's
    cap; record the deliveries. No session id disables caps (as in the reference design)."""
    caps = {"dnr": icfg["dnr_cap"], "dead_end": icfg["dead_end_cap"], "thread": icfg["thread_cap"]}
    if session_id is None:
        return offered[:MAX_ITEMS]
    chosen = []
    now = time.time_ns()
    with write(conn):
        counts = dict(conn.execute(
            "SELECT key, count FROM deliveries WHERE session_id = ?", (session_id,)).fetchall())
        for arith, row, block, evidence in offered:
            if len(chosen) >= MAX_ITEMS:
                break
            # a component from the code counts against the DO-NOT-REBUILD cap
            chunk_key, cap = (f"code:{row.id}", "dnr") if block == "code" else (f"chunk:{row[0]}", block)
            if counts.get(chunk_key, 0) >= 1 or counts.get(cap, 0) >= caps[cap]:
                continue
            for key in (chunk_key, cap):
                counts[key] = counts.get(key, 0) + 1
                conn.execute(
                    "INSERT INTO deliveries(session_id, key, count, first_ns, last_ns) VALUES (?,?,1,?,?) "
                    "ON CONFLICT(session_id, key) DO UPDATE SET count = count + 1, last_ns = excluded.last_ns",
                    (session_id, key, now, now))
            chosen.append((arith, row, block, evidence))
    return chosen
