"""The numbers appendix: what the store says happened over the last N days.

    data = build_report(conn, days=7)      # plain dict, JSON-ready
    print(render_text(data))

Sections: hook invocations and failures per day (by hook and failure family), killed
hooks, the injection window (prompts, intent-bearing, injections, cascade outcome counts,
retrieval latency median/p90), gate verdict history, degradations, alert decisions and the
telemetry pipeline. Standard library only; reads indexed time ranges of the raw tables
(a report is a one-off, unlike a scrape).
"""

from __future__ import annotations

import json
import time

from memory_core.index import reads as index_reads
from memory_core.outbox import (
    alert_log,
    cost_reads,
    decision_reads,
    delivery_reads,
    gate_log,
    heartbeat_reads,
    span_reads,
    witness_log,
)
from memory_core.store.meta import meta_with_prefix
from memory_core.store.reads import has_table
from telemetry.catalog import INJECTION_OUTCOMES

DAY_NS = 86400 * 10 ** 9


def _pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n*q/100), at least 1
    return ordered[int(min(rank, len(ordered))) - 1]


def build_report(conn, days: float = 7.0, *, now_ns: int | None = None,
                 killed_after_s: float | None = 900.0) -> dict:
    """Every section of the appendix for the window [now - days, now]."""
    now_ns = now_ns or time.time_ns()
    since = now_ns - int(days * DAY_NS)
    if killed_after_s is not None:
        # drain, then reap (best effort: a locked store still gets reported; open rows show
        # as running)
        from memory_core.outbox.journal import settle
        from telemetry.collector import store_dir

        state_dir = store_dir(conn)
        if state_dir:
            settle(conn, state_dir, killed_after_s, now_ns=now_ns)
    return {
        "window": {"days": days, "since_ns": since, "until_ns": now_ns,
                   "since": time.strftime("%Y-%m-%d %H:%M", time.gmtime(since / 1e9)),
                   "until": time.strftime("%Y-%m-%d %H:%M", time.gmtime(now_ns / 1e9))},
        "invocations": _invocations(conn, since),
        "failures": _failures(conn, since),
        "killed": _killed(conn, since),
        "injection": _injection(conn, since),
        "gate": _gate(conn, since),
        "degradations": _degradations(conn, since),
        "alerts": _alerts(conn, since),
        "telemetry": _telemetry(conn),
        "cues": _cues(conn, since),
        "witness": _witness(conn, since),
        # -- what memory costs a session (telemetry/session_cost.py)
        "session_cost": _session_cost(conn, since, now_ns),
    }


def _witness(conn, since: int) -> list[dict]:
    """What the transcripts showed that no heartbeat recorded (probes.witness), by day,
    event, kind and failure."""
    if not has_table(conn, "witness_findings"):
        return []
    return [{"day": d, "event": e, "kind": k, "count": n, "exit_code": x, "stderr": err or "",
             "sessions": sessions}
            for d, e, k, x, err, n, sessions in witness_log.findings_by_day(conn, since)]


def _session_cost(conn, since: int, until: int) -> dict:
    from telemetry import session_cost

    return session_cost.build(conn, since, until + 1)


def _invocations(conn, since: int) -> dict:
    per_day: dict[tuple, dict] = {}
    totals: dict[str, dict] = {}
    for day, hook, outcome, n in heartbeat_reads.outcomes_by_day(conn, since):
        row = per_day.setdefault((day, hook), {"day": day, "hook": hook, "total": 0, "ok": 0,
                                               "error": 0, "killed": 0, "running": 0})
        row[outcome] = row.get(outcome, 0) + n
        row["total"] += n
        tot = totals.setdefault(hook, {"hook": hook, "total": 0, "ok": 0, "error": 0, "killed": 0,
                                       "running": 0})
        tot[outcome] = tot.get(outcome, 0) + n
        tot["total"] += n
    for tot in totals.values():
        done = tot["total"] - tot["running"]
        tot["success_ratio"] = round(tot["ok"] / done, 4) if done else None
    return {"per_day": list(per_day.values()), "by_hook": sorted(totals.values(), key=lambda r: r["hook"])}


def _failures(conn, since: int) -> dict:
    per_day = [{"day": d, "hook": h, "family": r or "unknown", "count": n}
               for d, h, r, n in heartbeat_reads.failures_by_day(conn, since)]
    by_family: dict[str, int] = {}
    for row in per_day:
        by_family[row["family"]] = by_family.get(row["family"], 0) + row["count"]
    return {"per_day": per_day,
            "by_family": [{"family": f, "count": n}
                          for f, n in sorted(by_family.items(), key=lambda kv: (-kv[1], kv[0]))]}


def _killed(conn, since: int) -> list[dict]:
    return [{"hook": h, "count": n, "last_started_ns": last}
            for h, n, last in heartbeat_reads.killed_since(conn, since)]


def _injection(conn, since: int) -> dict:
    outcomes = {o: 0 for o in INJECTION_OUTCOMES}
    prompts = intent = 0
    latencies: list[float] = []
    per_day: dict[str, dict] = {}
    for day, outcome, has_intent, ms in decision_reads.prompt_decisions_by_day(conn, since):
        prompts += 1
        intent += 1 if has_intent else 0
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if ms is not None:
            latencies.append(float(ms))
        row = per_day.setdefault(day, {"day": day, "prompts": 0, "intent": 0, "injected": 0})
        row["prompts"] += 1
        row["intent"] += 1 if has_intent else 0
        row["injected"] += 1 if outcome == "injected" else 0
    injected = outcomes.get("injected", 0)
    return {
        "prompts": prompts,
        "intent_bearing": intent,
        "injections": injected,
        "injection_rate": round(injected / prompts, 4) if prompts else None,
        "outcomes": outcomes,
        "retrieval_ms": {"n": len(latencies), "median": _pct(latencies, 50), "p90": _pct(latencies, 90)},
        "per_day": [per_day[d] for d in sorted(per_day)],
    }


def _cues(conn, since: int) -> dict:
    """Cue evaluations by outcome, deliveries, and what compaction cost: per session, files
    read again after a compaction boundary and the bytes re-read (PostToolUse Read)."""
    if not has_table(conn, "cue_audit"):
        return {"evaluations": 0, "outcomes": {}, "rereads": {"files": 0, "same_content": 0, "bytes": 0},
                "sessions": []}
    outcomes = delivery_reads.outcomes_since(conn, since)
    sessions = [{"session_id": sid, "compactions": epochs, "rereads": n, "same_content": same, "bytes": b}
                for sid, epochs, n, same, b in delivery_reads.rereads_by_session(conn, since, 20)]
    files, same, size = delivery_reads.reread_totals(conn, since)
    history = {"transcripts": 0, "files": 0, "bytes": 0, "same_content": 0}
    for state in index_reads.transcript_reread_states(conn):
        try:
            cost = json.loads(state).get("rereads") or {}
        except (ValueError, AttributeError):
            continue
        history["transcripts"] += 1
        history["files"] += int(cost.get("files", 0))
        history["bytes"] += int(cost.get("bytes", 0))
        history["same_content"] += int(cost.get("same", 0))
    return {"evaluations": sum(outcomes.values()), "outcomes": outcomes,
            "rereads": {"files": files, "same_content": same, "bytes": size}, "sessions": sessions,
            "transcripts": history}


def _gate(conn, since: int) -> dict:
    per_day: dict[str, dict] = {}
    for day, verdict, n in gate_log.verdicts_by_day(conn, since):
        row = per_day.setdefault(day, {"day": day, "green": 0, "red": 0})
        row[verdict] = row.get(verdict, 0) + n
    recent = []
    for run_id, ts, total, green, red, verdict in gate_log.recent_runs(conn, 10, since):
        reds = [name for _rid, name in gate_log.red_checks_of(conn, [run_id])]
        recent.append({"ts_ns": ts, "verdict": verdict, "green": green, "total": total, "red": red,
                       "red_checks": reds})
    red_checks: dict[str, int] = {}
    for name, n in gate_log.red_counts_since(conn, since):
        red_checks[name] = n
    return {"per_day": [per_day[d] for d in sorted(per_day)], "recent": recent, "red_checks": red_checks,
            "acks": _acks(conn)}


def _acks(conn) -> list[dict]:
    """Past-event findings the operator acknowledged (`memhealth gate --ack CHECK`): meta
    rows gate.ack.<check> = {"ack_ns", "detail"}, whatever the window (an ack stays in force)."""
    out = []
    for key, raw in sorted(meta_with_prefix(conn, "gate.ack.").items()):
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append({"check": key[len("gate.ack."):], "ack_ns": int(value.get("ack_ns") or 0),
                        "detail": str(value.get("detail") or "")})
    return out


def _degradations(conn, since: int) -> list[dict]:
    return [{"component": c, "reason": r, "count": n, "last_ns": last}
            for c, r, n, last in decision_reads.degradations_since(conn, since)]


def _alerts(conn, since: int) -> list[dict]:
    if not has_table(conn, "alert_decisions"):
        return []
    return [{"route": r, "decision": d, "count": n}
            for r, d, n in alert_log.counts_since(conn, since)]


def _telemetry(conn) -> dict:
    meta = meta_with_prefix(conn, "export.")
    last_id = int(meta.get("export.spans.last_id") or 0)
    backlog = span_reads.backlog(conn, last_id)
    last_ok = int(meta.get("export.last_success_ns") or 0)
    return {"outbox_backlog": backlog, "last_export_success_ns": last_ok or None,
            "last_export_error": meta.get("export.last_error") or None}


# -- text rendering ------------------------------------------------------------------------

def _table(headers: list[str], rows: list[list]) -> list[str]:
    if not rows:
        return ["  (none)"]
    cells = [[("-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)) for v in r]
             for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "  " + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line.rstrip(), "  " + "  ".join("-" * w for w in widths)]
    for raw, r in zip(rows, cells, strict=True):
        out.append(("  " + "  ".join(
            c.rjust(w) if isinstance(v, (int, float)) or c.endswith("%") else c.ljust(w)
            for v, c, w in zip(raw, r, widths, strict=True))).rstrip())
    return out


def _when(ns: int | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ns / 1e9)) if ns else "-"


def render_text(data: dict) -> str:
    """The appendix as plain-text tables (UTC days)."""
    w = data["window"]
    out = [f"memhealth report: {w['days']:g} day(s), {w['since']} .. {w['until']} UTC", ""]
    out.append("Hook invocations by hook")
    out += _table(["hook", "total", "ok", "error", "killed", "running", "success"],
                  [[r["hook"], r["total"], r["ok"], r["error"], r["killed"], r["running"],
                    "-" if r["success_ratio"] is None else f"{r['success_ratio'] * 100:.1f}%"]
                   for r in data["invocations"]["by_hook"]])
    out += ["", "Hook invocations per day"]
    out += _table(["day", "hook", "total", "ok", "error", "killed"],
                  [[r["day"], r["hook"], r["total"], r["ok"], r["error"], r["killed"]]
                   for r in data["invocations"]["per_day"]])
    out += ["", "Failures per day by hook and family"]
    out += _table(["day", "hook", "family", "count"],
                  [[r["day"], r["hook"], r["family"], r["count"]] for r in data["failures"]["per_day"]])
    out += ["", "Failures by family"]
    out += _table(["family", "count"], [[r["family"], r["count"]] for r in data["failures"]["by_family"]])
    out += ["", "Killed hooks (started, never completed)"]
    out += _table(["hook", "count", "last started"],
                  [[r["hook"], r["count"], _when(r["last_started_ns"])] for r in data["killed"]])
    inj = data["injection"]
    lat = inj["retrieval_ms"]
    rate = "-" if inj["injection_rate"] is None else f"{inj['injection_rate'] * 100:.1f}%"
    out += ["", "Injection window",
            f"  prompts {inj['prompts']}, intent-bearing {inj['intent_bearing']}, "
            f"injections {inj['injections']} ({rate} of prompts)",
            f"  retrieval latency: n={lat['n']} median="
            + ("-" if lat["median"] is None else f"{lat['median']:.1f} ms")
            + " p90=" + ("-" if lat["p90"] is None else f"{lat['p90']:.1f} ms")]
    out += _table(["cascade outcome", "count"], [[k, v] for k, v in inj["outcomes"].items()])
    cue = data["cues"]
    rr = cue["rereads"]
    out += ["", "Cue-anchored delivery",
            f"  evaluations {cue['evaluations']}: "
            + (", ".join(f"{k} {v}" for k, v in cue["outcomes"].items()) or "none"),
            f"  compaction cost: {rr['files']} file(s) read again after a compaction boundary, "
            f"{rr['bytes']:,} bytes re-read ({rr['same_content']} unchanged since the read before it)"]
    th = cue.get("transcripts") or {}
    if th.get("transcripts"):
        out.append(f"  from ingested transcripts: {th['files']} file(s) re-read after a compaction, "
                   f"{th['bytes']:,} bytes ({th['same_content']} unchanged) in {th['transcripts']} transcript(s)")
    out += _table(["session", "boundaries", "re-reads", "unchanged", "bytes"],
                  [[(r["session_id"] or "-")[:16], r["compactions"], r["rereads"], r["same_content"], r["bytes"]]
                   for r in cue["sessions"]])
    out += ["", "Gate verdicts per day"]
    out += _table(["day", "green", "red"], [[r["day"], r["green"], r["red"]] for r in data["gate"]["per_day"]])
    out += ["", "Recent gate runs"]
    out += _table(["when", "verdict", "green/total", "red checks"],
                  [[_when(r["ts_ns"]), r["verdict"], f"{r['green']}/{r['total']}", ", ".join(r["red_checks"]) or "-"]
                   for r in data["gate"]["recent"]])
    out += ["", "Acknowledged gate findings (memhealth gate --ack CHECK: events up to then)"]
    out += _table(["check", "acknowledged", "finding"],
                  [[r["check"], _when(r["ack_ns"]), r["detail"][:100] or "-"] for r in data["gate"]["acks"]])
    out += ["", "Transcript witness: events no memhealth row recorded (failed before it ran, or not run)"]
    out += _table(["day", "event", "kind", "count", "exit", "stderr", "sessions"],
                  [[r["day"], r["event"], r["kind"], r["count"], "-" if r["exit_code"] is None else r["exit_code"],
                    r["stderr"][:60] or "-", r["sessions"]] for r in data.get("witness", [])])
    out += ["", "Degradations"]
    out += _table(["component", "reason", "count", "last"],
                  [[r["component"], r["reason"], r["count"], _when(r["last_ns"])] for r in data["degradations"]])
    out += ["", "Alert decisions"]
    out += _table(["route", "decision", "count"], [[r["route"], r["decision"], r["count"]] for r in data["alerts"]])
    if data.get("session_cost"):  # -- what memory costs a session
        from telemetry import session_cost

        out += [""] + session_cost.render(data["session_cost"], _table, _when)
    tel = data["telemetry"]
    out += ["", "Telemetry pipeline",
            f"  outbox backlog {tel['outbox_backlog']} span(s); last export {_when(tel['last_export_success_ns'])}"
            + (f"; last error: {tel['last_export_error']}" if tel["last_export_error"] else "")]
    return "\n".join(out) + "\n"


# --- the ablation protocol (memhealth ablation; Memory as Infrastructure §8) --------------------------------

ABLATION_BLOCKS = {"dnr": "DO-NOT-REBUILD", "dead_end": "DEAD-END"}
SMALL_ARM = 30  # prompts per arm under which a difference is anecdote, not evidence


def build_ablation(conn, *, now_ns: int | None = None) -> dict:
    """Compare the arms of the registered schedule (or the last one) from the store: prompt
    decisions by outcome (injected beside suppressed_ablation, the would-have-fired), the
    DO-NOT-REBUILD and DEAD-END blocks fired or would-have-fired (re-proposals of confirmed
    subsystems and dead ends), gate runs and REDs, and the time from a hook failure to the
    first RED verdict after it. Every row is put in the arm in force at its timestamp."""
    from memory_core.delivery import ablation

    now_ns = now_ns or time.time_ns()
    sched = ablation.load(conn)
    if sched is None:
        return {"schedule": None, "history": len(ablation.history(conn))}
    lo, hi = sched["start_ns"], min(ablation.until_ns(sched), now_ns)
    arms = {name: {"days": 0, "prompts": 0, "outcomes": {}, "sessions": set(),
                   "blocks": {b: {"fired": 0, "would_have_fired": 0} for b in ABLATION_BLOCKS},
                   "gate": {"runs": 0, "red": 0},
                   "detect": {"failures": 0, "episodes": 0, "undetected": 0, "hours": []},
                   "cost": {"context_chars": 0, "context_tokens_est": 0, "hook_ms": 0.0,
                            "would_inject_chars": 0}}
            for name in ("baseline", "ablated")}
    for day in sched["days"]:
        if day["start_ns"] < hi:
            arms[day["arm"]]["days"] += 1

    def arm_of(ts: int) -> dict | None:
        name = ablation.arm_at(sched, ts)
        return arms[name] if name else None

    for ts, session, outcome, detail in decision_reads.prompt_decisions_between(conn, lo, hi):
        arm = arm_of(ts)
        if arm is None:
            continue
        arm["prompts"] += 1
        arm["outcomes"][outcome] = arm["outcomes"].get(outcome, 0) + 1
        if session:
            arm["sessions"].add(session)
        if outcome not in ("injected", "suppressed_ablation") or not detail:
            continue
        try:
            items = json.loads(detail).get("items") or []
        except (ValueError, AttributeError):
            continue
        if outcome == "suppressed_ablation":  # what the injection-off arm kept out of the context
            try:
                arm["cost"]["would_inject_chars"] += int(json.loads(detail).get("would_inject_chars") or 0)
            except (ValueError, AttributeError, TypeError):
                pass
        key = "fired" if outcome == "injected" else "would_have_fired"
        for block in {item.get("block") for item in items if isinstance(item, dict)}:
            if block in ABLATION_BLOCKS:
                arm["blocks"][block][key] += 1
    reds = []
    for ts, verdict in gate_log.verdicts_since(conn, lo):
        if verdict == "red":
            reds.append(ts)
        arm = arm_of(ts) if ts < hi else None
        if arm is not None:
            arm["gate"]["runs"] += 1
            arm["gate"]["red"] += 1 if verdict == "red" else 0
    # an episode: the hook failures a RED verdict is the first to follow; its onset is the
    # earliest of them, and it belongs to the arm in force then
    episodes: dict[int | None, int] = {}
    for ts in heartbeat_reads.failure_starts(conn, lo, hi):
        arm = arm_of(ts)
        if arm is None:
            continue
        arm["detect"]["failures"] += 1
        red = next((r for r in reds if r >= ts), None)
        if red is None:
            arm["detect"]["undetected"] += 1
        elif red not in episodes or ts < episodes[red]:
            episodes[red] = ts
    for red, onset in episodes.items():
        arm = arm_of(onset)
        arm["detect"]["episodes"] += 1
        arm["detect"]["hours"].append((red - onset) / 3.6e12)
    _ablation_cost(conn, lo, hi, arm_of)
    out = {}
    for name, arm in arms.items():
        hours = arm["detect"].pop("hours")
        arm["detect"]["median_hours"] = _pct(hours, 50)
        arm["detect"]["max_hours"] = max(hours) if hours else None
        arm["sessions"] = len(arm["sessions"])
        arm["cost"]["hook_ms"] = round(arm["cost"]["hook_ms"], 3)
        out[name] = arm
    return {"schedule": {k: sched[k] for k in ("arm", "section", "start_ns", "end_ns", "stopped_ns",
                                               "registered_ns")} | {"days": len(sched["days"])},
            "until_ns": hi, "now": ablation.arm_at(sched, now_ns), "arms": out,
            "history": len(ablation.history(conn)), "caveats": _ablation_caveats(sched, out)}


def _ablation_cost(conn, lo: int, hi: int, arm_of) -> None:
    """What memory cost in each arm: context emitted (context_blocks) and hook wall time; the
    injection-off arm's saving is the difference, and its would-inject characters."""
    from memory_core.outbox.costs import estimate_tokens

    if has_table(conn, "context_blocks"):
        for ts, chars in cost_reads.chars_between(conn, lo, hi):
            arm = arm_of(ts)
            if arm is not None:
                arm["cost"]["context_chars"] += chars
                arm["cost"]["context_tokens_est"] += estimate_tokens(chars)
    for ts, ms in heartbeat_reads.session_hook_wall_ms(conn, lo, hi):
        arm = arm_of(ts)
        if arm is not None:
            arm["cost"]["hook_ms"] += max(0.0, ms)


def _ablation_caveats(sched: dict, arms: dict) -> list[str]:
    small = [f"{name} {arm['prompts']}" for name, arm in arms.items() if arm["prompts"] < SMALL_ARM]
    out = []
    if small:
        out.append(f"small samples: prompts per arm {', '.join(small)} (under {SMALL_ARM}): "
                   "a difference here is an anecdote, not a result")
    out.append("days alternate, they are not randomized: what differs between days (the task, the "
               "weekday, who works) is confounded with the arm")
    out.append("novelty: the person knows an ablation runs and may work differently on ablated days; "
               "early days also carry the memory's own growth")
    if sched["section"] == "injection":
        out.append("would-have-fired is what the cascade chose on ablated days; whether the block "
                   "would have changed what Claude did is not measured here")
    else:
        out.append("gate-off: REDs on ablated days come only from a `memhealth gate` someone ran, so "
                   "time to detect there measures when a person looked; the RED may also name another "
                   "check than the failure's")
    return out


def render_ablation(data: dict) -> str:
    """The arms side by side, then the caveats."""
    if data["schedule"] is None:
        return ("memhealth report --ablation: no ablation registered "
                "(memhealth ablation start injection-off|gate-off --days N)\n")
    s = data["schedule"]
    arms = data["arms"]
    names = ["baseline", "ablated"]
    out = [f"memhealth report --ablation: {s['arm']} ([{s['section']}].mode = off on ablated days), "
           f"{s['days']} days from {_when(s['start_ns'])} to {_when(s['end_ns'])} UTC"
           + (f", stopped {_when(s['stopped_ns'])}" if s.get("stopped_ns") else "")
           + f"; now: {data['now'] or 'over'}", ""]

    def row(label: str, fn) -> list:
        return [label] + [fn(arms[n]) for n in names]

    outcomes = sorted({o for n in names for o in arms[n]["outcomes"]})
    rows = [row("days elapsed", lambda a: a["days"]), row("sessions", lambda a: a["sessions"]),
            row("prompts", lambda a: a["prompts"])]
    rows += [row(f"  {o}", lambda a, o=o: a["outcomes"].get(o, 0)) for o in outcomes]
    for block, label in ABLATION_BLOCKS.items():
        rows.append(row(f"{label} fired", lambda a, b=block: a["blocks"][b]["fired"]))
        rows.append(row(f"{label} would have fired", lambda a, b=block: a["blocks"][b]["would_have_fired"]))
    rows += [row("gate runs", lambda a: a["gate"]["runs"]), row("gate REDs", lambda a: a["gate"]["red"]),
             row("hook failures", lambda a: a["detect"]["failures"]),
             row("  detected by a RED", lambda a: a["detect"]["episodes"]),
             row("  undetected", lambda a: a["detect"]["undetected"]),
             row("time to detect (median h)",
                 lambda a: a["detect"]["median_hours"]),
             row("time to detect (max h)",
                 lambda a: a["detect"]["max_hours"]),
             # -- what memory cost in each arm
             row("context chars emitted", lambda a: a["cost"]["context_chars"]),
             row("  ~tokens (4 chars each)", lambda a: a["cost"]["context_tokens_est"]),
             row("  per session", lambda a: round(a["cost"]["context_chars"] / a["sessions"], 1)
                 if a["sessions"] else None),
             row("recall kept out (would-inject chars)", lambda a: a["cost"]["would_inject_chars"]),
             row("hook wall time (s)", lambda a: round(a["cost"]["hook_ms"] / 1000, 3))]
    out += _table(["", *names], rows)
    out += ["", "Caveats"] + [f"  - {c}" for c in data["caveats"]]
    if data["history"]:
        out.append(f"  ({data['history']} earlier schedule(s) kept in the store, not compared here)")
    return "\n".join(out) + "\n"
