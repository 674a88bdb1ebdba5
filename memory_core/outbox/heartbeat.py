"""Heartbeat rows: one per hook invocation, "started" before any work and completed after,
so "did it stop firing?" is a query and a hook killed by its timeout shows as `killed`.

    hb = start(conn, "prompt", session_id="s1")        # before any work
    ...
    finish(conn, hb, "prompt", started_ns, outcome="ok", trace=trace)   # one transaction

Writers raise StoreError subclasses (memory_core.store.tx); a caller that cannot write the store
spills the row instead (memory_core.outbox.spill).
"""

from __future__ import annotations

import os
import time

from memory_core.outbox.decisions import insert_decision
from memory_core.outbox.rollups import bump, keep_exemplar, observe, set_gauge
from memory_core.outbox.spans import Trace
from memory_core.store.tx import write


def start(conn, hook: str, session_id: str | None = None, trace_id: str | None = None,
                    started_ns: int | None = None, event_ref: str | None = None) -> int:
    """Write the "started" row before any work; return its id. Raises StoreError.
    `event_ref`: the id Claude Code gave the event (tool_use_id, prompt_id), which the
    transcript witness (probes.witness) matches its tool calls and prompts against."""
    started_ns = started_ns or time.time_ns()
    with write(conn):
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns, event_ref) "
            "VALUES (?,?,?,?,?,?)",
            (hook, session_id, os.getpid(), trace_id, started_ns, event_ref))
        return cur.lastrowid


def complete_row(conn, hb_id, hook, started_ns, ended_ns, outcome, reason, detail) -> None:
    conn.execute(
        "UPDATE heartbeats SET ended_ns = ?, outcome = ?, reason = ?, detail = ? WHERE id = ?",
        (ended_ns, outcome, reason, (detail or "")[:500] or None, hb_id))
    bump(conn, "memhealth_hook_invocations_total", {"hook": hook, "outcome": outcome})
    duration_s = max(ended_ns - started_ns, 0) / 1e9
    observe(conn, "memhealth_hook_duration_seconds", duration_s, {"hook": hook})
    # the OpenMetrics exemplar: a slow bucket links to its trace
    keep_exemplar(conn, "memhealth_hook_duration_seconds", duration_s, {"hook": hook}, hb_id, ended_ns)
    if outcome == "ok":
        set_gauge(conn, "memhealth_hook_last_success_timestamp_seconds", ended_ns / 1e9, {"hook": hook})


def finish(conn, hb_id: int, hook: str, started_ns: int, outcome: str = "ok",
                     reason: str | None = None, detail: str | None = None,
                     trace: Trace | None = None, decisions: list | None = None,
                     ended_ns: int | None = None, extra=None) -> None:
    """Complete the heartbeat and write the invocation's spans and decisions, atomically;
    `extra(conn)`, when given, writes more rows in the same transaction."""
    ended_ns = ended_ns or time.time_ns()
    with write(conn):
        complete_row(conn, hb_id, hook, started_ns, ended_ns, outcome, reason, detail)
        for decision in decisions or ():
            insert_decision(conn, decision)
        if extra is not None:
            extra(conn)
        if trace is not None:
            trace.write(conn)


def record_invocation(conn, hook: str, started_ns: int, outcome: str, reason=None, detail=None,
                      session_id=None, trace: Trace | None = None, decisions=None) -> int:
    """Insert a complete heartbeat in one transaction (used when no start row could be kept)."""
    ended_ns = time.time_ns()
    with write(conn):
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) VALUES (?,?,?,?,?)",
            (hook, session_id, os.getpid(), trace.trace_id if trace else None, started_ns))
        complete_row(conn, cur.lastrowid, hook, started_ns, ended_ns, outcome, reason, detail)
        for decision in decisions or ():
            insert_decision(conn, decision)
        if trace is not None:
            trace.write(conn)
        return cur.lastrowid


FUTURE_SLACK_NS = 60 * 10**9  # timestamps this far ahead of now are clock skew, not jitter


def pid_alive(pid: int | None) -> bool:
    """True when `pid` runs and is not a zombie (a killed child nobody reaped yet)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rindex(b")") + 2:][:1] != b"Z"
    except (OSError, ValueError):
        return True  # no /proc here: kill(0) said it exists


def reap_killed(conn, killed_after_s: float, now_ns: int | None = None, min_age_s: float = 0.0) -> int:
    """Mark started-but-never-completed heartbeats as killed; return how many.

    A row is killed when its process is gone (and the row is older than `min_age_s`), or
    when it is older than `killed_after_s` whatever its pid says (pids are reused)."""
    now_ns = now_ns or time.time_ns()
    rows = conn.execute(
        "SELECT id, hook, pid, started_ns FROM heartbeats WHERE outcome IS NULL").fetchall()
    # a row dated in the future (the clock was set back since) has no usable age: its
    # process decides alone, so a skewed clock never keeps a killed hook open forever
    dead = [(i, hook) for i, hook, pid, started in rows
            if (now_ns - started) > killed_after_s * 1e9
            or (((now_ns - started) > min_age_s * 1e9 or started > now_ns + FUTURE_SLACK_NS)
                and not pid_alive(pid))]
    if not dead:
        return 0
    with write(conn):
        for hb_id, hook in dead:
            cur = conn.execute(
                "UPDATE heartbeats SET outcome = 'killed', reason = 'killed', "
                "detail = 'started, never completed (timeout or kill)' WHERE id = ? AND outcome IS NULL",
                (hb_id,))
            if cur.rowcount:
                bump(conn, "memhealth_hook_invocations_total", {"hook": hook, "outcome": "killed"})
    return len(dead)
