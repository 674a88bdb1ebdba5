"""What memory costs a session: the context it put in front of Claude, the wall time its
hooks added, the tool calls they delayed, and the capture and triage it left behind.

    cost = build(conn, since_ns, until_ns)     # the `session_cost` section of `memhealth report`
    cost["totals"]["context_chars"], cost["by_event"], cost["sessions"][0]["hook_ms"]

Sources, all rows the hooks already write: `context_blocks` (characters emitted, by block
kind; migration 8), `heartbeats` (wall time per invocation, measured inside the hook: the
process start of a command hook, ~30-60 ms, is outside it and shows in benchmarks/
bench_session.py), `capture_candidates` (proposed from the session's transcript) and their
triage state. Tokens are estimated (memory_core.outbox.costs.CHARS_PER_TOKEN); characters are
exact. A tool call is "delayed" by the PreToolUse hooks that ran before it; PostToolUse runs
after the tool, before its result reaches Claude, so both count as wall time added per call.
"""

from __future__ import annotations

from memory_core.outbox import cost_reads, heartbeat_reads
from memory_core.outbox.costs import CHARS_PER_TOKEN, KINDS, estimate_tokens
from memory_core.records import reads as record_reads

MAX_SESSIONS = 20  # sessions listed one by one (newest first); totals cover the whole window
TOOL_HOOKS = ("pre-tool", "post-tool")


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def _has(conn, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _blank() -> dict:
    return {"context_chars": 0, "context_tokens_est": 0, "blocks": 0,
            "by_kind": {k: 0 for k in KINDS}, "hook_invocations": 0, "hook_ms": 0.0,
            "tool_calls": 0, "tool_hook_ms": 0.0, "captured": 0, "triaged": 0}


def build(conn, since_ns: int, until_ns: int) -> dict:
    """The session cost of [since_ns, until_ns): totals, per event, per block kind, and the
    newest sessions one by one."""
    sessions: dict[str | None, dict] = {}
    totals = _blank()
    kinds = {k: {"kind": k, "blocks": 0, "chars": 0, "tokens_est": 0} for k in KINDS}
    events: dict[str, dict] = {}
    durations: dict[str, list[float]] = {}

    def session(sid) -> dict:
        if sid not in sessions:
            sessions[sid] = {"session_id": sid, "first_ns": None, **_blank()}
        return sessions[sid]

    for hook, sid, started, ended in heartbeat_reads.session_hook_runs(conn, since_ns, until_ns):
        ms = max(0, ended - started) / 1e6
        s = session(sid)
        s["first_ns"] = started if s["first_ns"] is None else min(s["first_ns"], started)
        for target in (s, totals):
            target["hook_invocations"] += 1
            target["hook_ms"] += ms
            if hook in TOOL_HOOKS:
                target["tool_hook_ms"] += ms
                if hook == "pre-tool":
                    target["tool_calls"] += 1
        ev = events.setdefault(hook, {"hook": hook, "invocations": 0, "wall_ms": 0.0, "context_chars": 0,
                                      "context_tokens_est": 0, "with_context": 0})
        ev["invocations"] += 1
        ev["wall_ms"] += ms
        durations.setdefault(hook, []).append(ms)

    if _has(conn, "context_blocks"):
        with_context: dict[str, set] = {}
        for hook, sid, trace, kind, chars in cost_reads.blocks_between(conn, since_ns, until_ns):
            tokens = estimate_tokens(chars)
            s = session(sid)
            for target in (s, totals):
                target["context_chars"] += chars
                target["context_tokens_est"] += tokens
                target["blocks"] += 1
                target["by_kind"][kind] = target["by_kind"].get(kind, 0) + chars
            k = kinds.setdefault(kind, {"kind": kind, "blocks": 0, "chars": 0, "tokens_est": 0})
            k["blocks"] += 1
            k["chars"] += chars
            k["tokens_est"] += tokens
            ev = events.setdefault(hook, {"hook": hook, "invocations": 0, "wall_ms": 0.0, "context_chars": 0,
                                          "context_tokens_est": 0, "with_context": 0})
            ev["context_chars"] += chars
            ev["context_tokens_est"] += tokens
            with_context.setdefault(hook, set()).add(trace)
        for hook, traces in with_context.items():
            events[hook]["with_context"] = len(traces)

    if _has(conn, "capture_candidates"):
        for sid, state, n in record_reads.states_by_session(conn, since_ns, until_ns):
            s = sessions.get(sid)
            for target in ((s, totals) if s is not None else (totals,)):
                target["captured"] += n
                if state != "pending":
                    target["triaged"] += n

    by_event = []
    for hook, ev in sorted(events.items()):
        n = ev["invocations"]
        ms = durations.get(hook, [])
        by_event.append({**ev, "wall_ms": round(ev["wall_ms"], 3),
                         "ms_per_invocation": round(ev["wall_ms"] / n, 3) if n else None,
                         "p50_ms": _round(_pct(ms, 50)), "p99_ms": _round(_pct(ms, 99)),
                         "chars_per_invocation": round(ev["context_chars"] / n, 1) if n else None})
    listed = sorted((s for s in sessions.values() if s["session_id"] is not None),
                    key=lambda s: -(s["first_ns"] or 0))
    for s in [*listed, totals]:
        s["hook_ms"] = round(s["hook_ms"], 3)
        s["tool_hook_ms"] = round(s["tool_hook_ms"], 3)
        s["ms_per_tool_call"] = round(s["tool_hook_ms"] / s["tool_calls"], 3) if s["tool_calls"] else None
    count = len(listed)
    per_session = None
    if count:
        per_session = {key: _round(_pct([s[key] for s in listed], 50)) for key in
                       ("context_chars", "context_tokens_est", "hook_ms", "tool_calls", "tool_hook_ms")}
    return {"chars_per_token": CHARS_PER_TOKEN, "sessions_in_window": count, "totals": totals,
            "median_per_session": per_session, "by_event": by_event,
            "by_kind": [kinds[k] for k in kinds if kinds[k]["blocks"] or k in KINDS],
            "sessions": listed[:MAX_SESSIONS]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


def render(cost: dict, table, when) -> list[str]:
    """The text section (`table` and `when` are the report's own helpers)."""
    t = cost["totals"]
    per_call = "-" if t["ms_per_tool_call"] is None else f"{t['ms_per_tool_call']:.2f} ms"
    out = ["What memory cost (per session; tokens estimated at "
           f"{cost['chars_per_token']:g} characters each)",
           f"  {cost['sessions_in_window']} session(s): {t['context_chars']:,} characters "
           f"(~{t['context_tokens_est']:,} tokens) put into Claude's context in {t['blocks']} block(s); "
           f"hooks added {t['hook_ms'] / 1000:.2f} s over {t['hook_invocations']} invocation(s); "
           f"{t['tool_calls']} tool call(s) delayed, {per_call} of hook time per call (inside the hook; a "
           f"command hook's process start comes on top); {t['captured']} candidate(s) captured, "
           f"{t['triaged']} triaged"]
    out += table(["kind", "blocks", "chars", "~tokens"],
                 [[k["kind"], k["blocks"], k["chars"], k["tokens_est"]] for k in cost["by_kind"] if k["blocks"]])
    out += ["", "  per event"]
    out += table(["hook", "runs", "with context", "chars", "~tokens", "ms total", "p50 ms", "p99 ms"],
                 [[e["hook"], e["invocations"], e["with_context"], e["context_chars"], e["context_tokens_est"],
                   e["wall_ms"], e["p50_ms"], e["p99_ms"]] for e in cost["by_event"]])
    out += ["", "  newest sessions"]
    out += table(["session", "started", "chars", "~tokens", "hook ms", "tool calls", "ms/call", "captured",
                  "triaged"],
                 [[(s["session_id"] or "-")[:16], when(s["first_ns"]), s["context_chars"], s["context_tokens_est"],
                   s["hook_ms"], s["tool_calls"], s["ms_per_tool_call"], s["captured"], s["triaged"]]
                  for s in cost["sessions"]])
    return out
