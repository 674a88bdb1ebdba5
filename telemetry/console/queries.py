"""What the console reads from the store beyond a page's own query: recent hook runs,
decision outcome totals, cue evaluations of a set of traces, and a candidate's transcript
context (read from the transcript file, bounded)."""

from __future__ import annotations

import json
import os

from memory_core.index import reads as index_reads
from memory_core.outbox import delivery_reads, heartbeat_reads, rollup_reads
from memory_core.store.reads import has_table
from telemetry.console.html import clip, loads_detail

CONTEXT_LINES = 2  # transcript lines shown either side of a candidate
MAX_CONTEXT_SCAN = 200_000  # lines read at most to reach a candidate's line




def cue_evaluations(conn, trace_ids: list[str]) -> dict[str, list[tuple]]:
    """The cue audit rows of these hook invocations (by the trace id a decision row shares)."""
    if not trace_ids or not has_table(conn, "cue_audit"):
        return {}
    found: dict[str, list[tuple]] = {}
    for trace_id, trigger, name, outcome, reason in delivery_reads.evaluations_of(conn, trace_ids):
        found.setdefault(trace_id, []).append((trigger, name, outcome, reason))
    return found


def last_runs(conn, since_ns: int) -> list[tuple]:
    """(hook, last ok end, ok count, last failure in the window or None) per hook. Counts
    come from the invocation rollup and each "last" is one step down the (hook, started_ns)
    index, so the page costs the same with a year of heartbeats as with a day."""
    counts: dict[str, int] = {}
    for labels, value in rollup_reads.rollups_of(conn, "memhealth_hook_invocations_total"):
        lab = loads_detail(labels)
        hook = lab.get("hook")
        if hook:
            counts[hook] = counts.get(hook, 0) + (int(value) if lab.get("outcome") == "ok" else 0)
    out = []
    for hook in sorted(counts):
        bad = heartbeat_reads.last_failure_since(conn, hook, since_ns)
        out.append((hook, heartbeat_reads.last_ok_end_ns(conn, hook), counts[hook], bad))
    return out


def outcome_totals(conn) -> list[tuple[str, int]]:
    """Decisions per outcome from the counter rollup the hooks keep on write: a GROUP BY over
    100,000 rows would make the first page the slow one."""
    totals = []
    for labels, value in rollup_reads.rollups_of(conn, "memhealth_injection_decisions_total"):
        outcome = loads_detail(labels).get("outcome")
        if outcome and value:
            totals.append((str(outcome), int(value)))
    return sorted(totals, key=lambda t: -t[1])


chunk_kind = index_reads.chunk_kind


def message_text(raw: str) -> tuple[str, str]:
    """(role, text) of one transcript line, best effort."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return "", raw
    if not isinstance(obj, dict):
        return "", raw
    msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
    content = msg.get("content")
    if isinstance(content, list):
        content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text")
    return str(msg.get("role") or obj.get("type") or ""), str(content or "")


def transcript_context(path: str, line: int, around: int = CONTEXT_LINES) -> list[tuple[int, str, str]]:
    """(line number, role, text) of the transcript lines around `line` (1-based); empty when
    the file is gone. Reads at most MAX_CONTEXT_SCAN lines."""
    if not path or not line or line > MAX_CONTEXT_SCAN or not os.path.isfile(path):
        return []
    first, last = max(1, line - around), line + around
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, raw in enumerate(fh, 1):
                if n > last:
                    break
                if n >= first and raw.strip():
                    role, text = message_text(raw[:200_000])
                    if text.strip():
                        out.append((n, role, clip(text)))
    except OSError:
        return []
    return out
