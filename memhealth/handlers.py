"""One function per hook event: what the event does, given a HookContext.

Each returns the context text to emit (or None). Each writes what it decided through the
context (decision rows, spans, problems); the runner in `memhealth.hooks` owns heartbeats,
output and error handling.
"""

from __future__ import annotations

try:  # the builtin module: hashlib would load OpenSSL, ~2 ms on every prompt
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

# memory_core.delivery.intent (its patterns, ~1.6 M instructions to import) is imported by
# the prompt handlers only: the tool and stop hooks never classify a prompt

OPERATOR_NOTES_SHOWN = "gate.operator_notes_shown"  # the NOTE set the person was last shown


def failure_of(exc: BaseException, stage: str) -> str:
    """What an invocation's problem is called: the store's failure family when the store
    failed (db_locked, whose FIX finds the lock's holder, however far the hook had got), else
    the stage that failed."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str) and reason:
        return reason
    import sqlite3  # loaded already: every hook opens the store

    if isinstance(exc, sqlite3.Error):
        from memory_core.store.tx import failure_reason

        family = failure_reason(exc)
        return stage if family == "store" else family
    return stage


def session_start(ctx) -> str | None:
    """Print the health verdict first (memory-path RED and NOTE lines under it), then what
    memory holds. Notes for the operator (optional integrations, telemetry) go to the person
    as `systemMessage`, never into Claude's context. With [gate].mode = "off" (ablation) the
    gate is skipped entirely. Operator NOTEs are shown when they change, not every session."""
    import time

    from memory_core.delivery.render import session_render

    try:  # capture a previous session's worker did not finish: spawned, never inline
        from memhealth import capture_worker

        capture_worker.resume(ctx)
    except Exception as exc:
        ctx.problem("capture", f"{type(exc).__name__}: {exc}")
    try:
        autostart_serve(ctx)
    except Exception as exc:  # noqa: BLE001 - the gate still names a dead transport
        ctx.problem("transport", f"{type(exc).__name__}: {exc}")
    source = ctx.payload.get("source")
    body = session_render(ctx.conn, source if isinstance(source, str) else None)
    pinned, cued = session_start_cues(ctx)
    # pinned items before the summary: the 10,000-character cap clips the end, never a pinned
    # item; novelty still compares the summary alone (the pinned block is the same by design)

    def compose(head: list[str]) -> str:
        parts = [ctx.part("verdict", "\n".join(line for line in head if line)), ctx.part("pinned", pinned),
                 ctx.part("cue", cued), ctx.part("summary", body)]
        return "\n".join(p for p in parts if p)

    if ctx.cfg["gate"]["mode"] != "on":
        return compose([])
    from probes import gate, heartbeats, novelty
    from probes.evidence import Evidence

    now_ns = time.time_ns()
    try:
        # never hold the session for the full warm-up of a cold model: the hook's own budget
        deadline = min(gate.hook_deadline(ctx.project.root, "session-start", ctx.started_ns),
                       time.monotonic() + ctx.cfg["gate"]["hook_budget_s"])
        ev = Evidence(ctx.project.root, ctx.conn, ctx.cfg, now=now_ns / 1e9, session_id=ctx.session_id,
                      deadline=deadline)
        verdict = gate.run(ev, trace=ctx.trace)
        head = verdict.context_lines()
        # the same optional-integration NOTEs at every session start would teach the person
        # to skip the message: notes are repeated only when which checks carry one changes
        # (`memhealth gate` always prints them); operator REDs are always shown
        from memory_core.store.db import write
        from memory_core.store.meta import get_meta, set_meta

        notes_key = verdict.operator_notes_key()
        told = get_meta(ctx.conn, OPERATOR_NOTES_SHOWN) == notes_key
        operator = verdict.operator_lines(quiet_notes=told)
        if not told:
            with write(ctx.conn):
                set_meta(ctx.conn, OPERATOR_NOTES_SHOWN, notes_key)
        if operator:
            ctx.notice = "\n".join([*([ctx.notice] if ctx.notice else []),
                                    "memhealth (for you; Claude does not see this):",
                                    *(line.strip() for line in operator)])
        # what the next gate compares: this render beside its inputs, and this transcript's size
        novelty.record_render(ctx.conn, ctx.session_id, body, novelty.inputs_signature(ctx.conn), now_ns)
        transcript = ctx.payload.get("transcript_path")
        heartbeats.remember_session(ctx.conn, ctx.session_id,
                                    transcript if isinstance(transcript, str) else None, now_ns)
    except Exception as exc:  # the gate must never cost the session its context
        ctx.problem(failure_of(exc, "gate"), f"{type(exc).__name__}: {exc}")  # db_locked, not "gate"
        head = [f"MEMORY-HEALTH: the gate failed ({type(exc).__name__}: {exc}); run `memhealth gate`"]
    return compose(head)


# -- the HTTP hook transport: SessionStart starts serve when the person asked for that --------
AUTOSTART_WAIT_S = 5.0


def autostart_serve(ctx) -> str | None:
    """With the HTTP transport wired and [serve] hook_autostart on, start `memhealth serve`
    (detached) when nothing answers where the settings point, before the gate looks; returns
    what happened (recorded as a span attribute), or None when there was nothing to do. The
    gate's hook_transport check then says whether it answers."""
    if not ctx.cfg["serve"]["hook_autostart"]:
        return None
    import os
    import time

    from probes.transport import http_wiring, ping

    base = os.path.join(ctx.project.root, ".claude")
    wired = http_wiring([os.path.join(base, "settings.json"), os.path.join(base, "settings.local.json")])
    if not wired:
        return None
    hook = wired[0]
    state, _detail = ping(hook.base, hook.authorization, timeout_s=0.5)
    if state != "unreachable":
        return None  # it answers (or something else holds the port: the gate says which)
    from memhealth.hook_server import start_detached

    t0 = time.monotonic()
    pid, state, detail = start_detached(ctx.project, hook.listen, wait_s=AUTOSTART_WAIT_S)
    said = f"started pid {pid}: {state}" + ("" if state == "ok" else f" ({detail})")
    ctx.root.update({"memhealth.transport.autostart": said,
                     "memhealth.transport.autostart_ms": round((time.monotonic() - t0) * 1000, 1)})
    if state == "ok":
        ctx.notice = (ctx.notice + "\n" if ctx.notice else "") + \
            f"memhealth: started `memhealth serve` for the HTTP hooks (pid {pid}, {hook.base})"
    return said


def prompt(ctx) -> str | None:
    """Run the injection cascade, cheapest gate first; every prompt writes a decision row."""
    from memory_core.delivery.intent import MAX_SCAN_CHARS, classify, system_turn
    from memory_core.text import clean

    raw = ctx.payload.get("prompt")
    if not isinstance(raw, str):
        ctx.problem("missing_field", "UserPromptSubmit payload has no string 'prompt'")
        raw = ""
    text = clean(raw)
    capture = ctx.cfg["injection"]["capture_content"]
    decision = {
        "hook": ctx.event,
        "session_id": ctx.session_id,
        "prompt_id": ctx.payload.get("prompt_id") if isinstance(ctx.payload.get("prompt_id"), str) else None,
        "trace_id": ctx.trace.trace_id,
        "prompt_hash": _blake2b(text.encode("utf-8"), digest_size=8).hexdigest(),
        "prompt_len": len(text),
    }
    ctx.root.update({"memhealth.prompt.hash": decision["prompt_hash"],
                     "memhealth.prompt.length": len(text)})
    if capture:
        ctx.root.set("memhealth.prompt.text", text[:2000])

    with ctx.trace.span("inject.system_turn") as span:
        marker = system_turn(text)
        span.set("memhealth.system_turn", marker or "")
    if marker:
        ctx.decisions.append({**decision, "outcome": "system_turn", "detail": {"marker": marker}})
        return None

    with ctx.trace.span("inject.intent") as span:
        intent, phrase = classify(text)
        span.update({"memhealth.intent": intent or "", "memhealth.intent.match": phrase or ""})
    if intent is None:
        ctx.decisions.append({**decision, "outcome": "no_intent",
                              "detail": {"veto": phrase} if phrase else {}})
        return None

    from memory_core.delivery import inject

    result = inject.decide(ctx.conn, text[:MAX_SCAN_CHARS], intent, ctx.cfg, ctx.session_id, ctx.trace,
                           root=ctx.project.root)
    ctx.decisions.append({**decision, "outcome": result.outcome, "intent": intent,
                          "retrieval_ms": result.retrieval_ms, "detail": result.detail})
    for reason, detail in result.problems:
        ctx.problem(reason, detail)
    return result.text


def session_start_cues(ctx) -> tuple[str | None, str | None]:
    """Deliver every pinned item (and `on: session-start` / `on: compact` cues) within the
    pinned budget, naming what does not fit; a clear or compact source starts a new epoch.
    Returns (pinned block, cued block). A failure here costs them, never the verdict."""
    from memory_core.delivery import cues

    source = ctx.payload.get("source")
    source = source if isinstance(source, str) and source else "startup"
    ev = cues.Evaluation(ctx.conn, ctx.session_id, ctx.trace, ctx.cfg["injection"]["mode"], "session-start")
    try:
        if source in ("clear", "compact"):
            ev.rearm()  # even when no PreCompact hook ran before this start
        pinned = ev.pinned()
        for m in pinned:  # the gate's cue_delivery check finds compaction starts by this
            m.pattern = f"pinned at {source}"
        events = ev.match_event("session-start") + (ev.match_event("compact") if source == "compact" else [])
        why = (f"re-delivered after compaction: all {len(pinned)} pinned items" if source == "compact"
               else f"pinned at session start ({source}): {len(pinned)} items")
        text = ev.deliver(pinned, why, dedup=False, budget=cues.PINNED_BUDGET_CHARS, overflow="pinned")
        if not pinned:
            ev.skip("pinned", "no_match", f"pinned at {source}")
        more = ev.deliver(events, f"cued by the {source} session start", dedup=False,
                          budget=cues.CUE_BUDGET_CHARS) if events else None
        ev.write(extra=lambda conn: cues.retain(conn, ev.now_ns))
    except Exception as exc:  # noqa: BLE001 - the verdict must still print
        ctx.problem(failure_of(exc, "cues"), f"{type(exc).__name__}: {exc}")
        return None, None
    return text or None, more or None


def _tool(ctx) -> str:
    tool = ctx.payload.get("tool_name")
    return tool if isinstance(tool, str) else ""


def pre_tool(ctx) -> str | None:
    """Deliver path and symbol cues on the first touch, before the tool acts."""
    from memory_core.delivery import cues

    tool = _tool(ctx)
    cwd = ctx.payload.get("cwd")
    place = cues.Place(ctx.project.root, cwd if isinstance(cwd, str) else None)
    ev = cues.Evaluation(ctx.conn, ctx.session_id, ctx.trace, ctx.cfg["injection"]["mode"], "pre-tool")
    # the files touched matter to path cues, and to symbol cues through the code index
    # (a symbol cue fires on the file that defines its symbol)
    files, dirs, text = cues.tool_touches(tool, ctx.payload.get("tool_input"), place,
                                          paths=ev.has("path") or ev.has("symbol"))
    matches = ev.match_paths(files, dirs) + ev.match_symbols(text)
    out = None
    touched = ", ".join((files + [d + "/" for d in dirs])[:3])
    if matches:
        out = ev.deliver(matches, f"first touch by {tool or 'a tool'}" + (f" of {touched}" if touched else ""))
    else:
        ev.skip("path" if files or dirs else "symbol", "no_match", f"{tool} {touched}".strip())
    ev.write()
    return out


def post_tool(ctx) -> str | None:
    """After a Read: count re-reads across compaction boundaries, and deliver symbol cues
    found in what the file returned (first read of the file in this epoch only)."""
    if _tool(ctx) != "Read":
        return None
    from memory_core.delivery import cues

    response = ctx.payload.get("tool_response")
    file = response.get("file") if isinstance(response, dict) else None
    content = file.get("content") if isinstance(file, dict) else None
    if not isinstance(content, str):
        content = response if isinstance(response, str) else ""
    path = file.get("filePath") if isinstance(file, dict) else None
    tool_input = ctx.payload.get("tool_input")
    if not isinstance(path, str) and isinstance(tool_input, dict):
        path = tool_input.get("file_path")
    cwd = ctx.payload.get("cwd")
    rels = cues.Place(ctx.project.root, cwd if isinstance(cwd, str) else None).rel(path) \
        if isinstance(path, str) else []
    if not rels:
        return None  # outside the project: neither a cue nor a re-read of ours
    ev = cues.Evaluation(ctx.conn, ctx.session_id, ctx.trace, ctx.cfg["injection"]["mode"], "post-tool")
    from memory_core.outbox.delivery_reads import read_before

    first = not ctx.session_id or not read_before(ctx.conn, ctx.session_id, rels[0], ev.epoch)
    out = None
    if first:
        matches = ev.match_symbols(content)
        if matches:
            out = ev.deliver(matches, f"named in {rels[0]}, just read")
        else:
            ev.skip("symbol", "no_match", f"Read {rels[0]}")
    reread = {}

    def record(conn) -> None:
        reread["first"], reread["bytes"] = cues.record_read(conn, ctx.session_id, ev.epoch, rels[0],
                                                             content, ev.now_ns)

    ev.write(extra=record)
    if reread.get("bytes"):
        ctx.root.update({"memhealth.reread.path": rels[0], "memhealth.reread.bytes": reread["bytes"]})
    return out


def prompt_cues(ctx) -> str | None:
    """Symbol and `on: prompt` cues named in a prompt, beside the cascade (system turns are
    not prompts a person wrote, so they cue nothing)."""
    if ctx.decisions and ctx.decisions[-1].get("outcome") == "system_turn":
        return None
    raw = ctx.payload.get("prompt")
    if not isinstance(raw, str):
        return None
    from memory_core.delivery import cues
    from memory_core.delivery.intent import MAX_SCAN_CHARS

    raw = raw[:MAX_SCAN_CHARS]  # what the cascade read, no more
    ev = cues.Evaluation(ctx.conn, ctx.session_id, ctx.trace, ctx.cfg["injection"]["mode"], "prompt")
    matches = ev.match_symbols(raw) + ev.match_event("prompt") + ev.match_semantic(raw, ctx.cfg)
    out = ev.deliver(matches, "cued by the prompt") if matches else None
    if not matches:
        ev.skip("symbol", "no_match", None)
    ev.write()
    return out


def prompt_and_cues(ctx) -> str | None:
    """The injection cascade, then the prompt's cues appended to what it emits."""
    text = prompt(ctx)
    try:
        cued = prompt_cues(ctx)
    except Exception as exc:  # noqa: BLE001 - the cascade's output must still reach Claude
        ctx.problem(failure_of(exc, "cues"), f"{type(exc).__name__}: {exc}")
        cued = None
    return "\n\n".join(t for t in (ctx.part("recall", text), ctx.part("cue", cued)) if t) or None


def pre_compact(ctx) -> str | None:
    """A compaction boundary: what was injected before it is about to leave the context, so
    the per-session dedup and caps start again (cue-anchored delivery re-delivers after)."""
    if ctx.session_id:
        from memory_core.delivery.cues import new_epoch
        from memory_core.outbox.delivery_reads import reset_deliveries
        from memory_core.store.db import write

        with write(ctx.conn):
            reset = reset_deliveries(ctx.conn, ctx.session_id)
            epoch = new_epoch(ctx.conn, ctx.session_id)
        ctx.root.update({"memhealth.deliveries.reset": reset, "memhealth.cue.epoch": epoch})
    return None


def stop(ctx) -> str | None:
    """`on: stop` cues are audited as inactive: a Stop hook has no context channel (its only
    lever, decision "block", would force Claude to keep going)."""
    from memory_core.delivery import cues

    ev = cues.Evaluation(ctx.conn, ctx.session_id, ctx.trace, ctx.cfg["injection"]["mode"], "stop")
    for m in ev.match_event("stop"):
        ev.skip("event", "inactive", cues.STOP_INACTIVE, m.item_id)
    ev.write()
    return None


def remember_transcript_dir(ctx) -> None:
    """Record where Claude Code keeps this project's transcripts (the real directory keeps
    case; the slug rule is unverified), for the transcripts ingester's "auto" source."""
    import os

    path = ctx.payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        return
    from memory_core.store.db import write
    from memory_core.store.meta import TRANSCRIPT_DIR, set_meta

    with write(ctx.conn):
        set_meta(ctx.conn, TRANSCRIPT_DIR, os.path.dirname(os.path.abspath(path)))


def session_end(ctx) -> str | None:
    """Record the session boundary and hand the work to a detached worker: Claude Code gives
    SessionEnd about 1.5 s (the reference design ran 60-120 s here and got killed; an inline
    ingest of a 50 MB transcript took 1.87 s). The worker (memhealth.capture_worker) captures
    decisions, dead ends and corrections and runs the ingest; what it does not finish
    resumes at the next SessionStart or `memhealth ingest`."""
    remember_transcript_dir(ctx)
    from memhealth import capture_worker

    capture_worker.boundary(ctx)
    return None


ABLATION_KEY = "ablation.schedule"  # memory_core.delivery.ablation.ABLATION_KEY (not imported: hook path)


def apply_ablation(ctx, now_ns: int | None = None) -> str | None:
    """Turn the configured mode "off" on an ablated day of a registered schedule (`memhealth
    ablation start`); return the arm in force ("ablated" | "baseline") or None. One meta
    lookup on the open connection: each stored day carries its own [start_ns, end_ns), so
    nothing here re-plans the schedule (memory_core.delivery.ablation writes it). A malformed value
    is recorded and the hook runs as configured."""
    import json
    import time

    row = ctx.conn.execute("SELECT value FROM meta WHERE key = ?", (ABLATION_KEY,)).fetchone()
    if row is None:
        return None
    now_ns = time.time_ns() if now_ns is None else now_ns
    try:
        sched = json.loads(row[0])
        from memory_core.delivery.ablation import problem  # only while a schedule is stored

        why = problem(sched)
        if why:  # a section that is no arm's would read "ablated" while nothing is off
            raise ValueError(f"{why}; `memhealth ablation stop` clears it")
        stopped = sched.get("stopped_ns")
        if now_ns >= (min(sched["end_ns"], stopped) if stopped else sched["end_ns"]):
            return None
        arm = next((d["arm"] for d in sched["days"] if d["start_ns"] <= now_ns < d["end_ns"]), None)
        if arm == "ablated":
            ctx.cfg[sched["section"]]["mode"] = "off"
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        ctx.problem("ablation", f"unreadable {ABLATION_KEY}: {type(exc).__name__}: {exc}")
        return None
    if arm is not None:  # telemetry stays on: every span of the invocation says which arm
        ctx.root.set("memhealth.ablation.arm", f"{sched.get('arm')}:{arm}")
    return arm


def _ablatable(handler):
    def run(ctx) -> str | None:
        apply_ablation(ctx)
        return handler(ctx)

    run.__doc__ = handler.__doc__
    return run


HANDLERS = {name: _ablatable(fn) for name, fn in {
    "session-start": session_start,
    "prompt": prompt_and_cues,
    "pre-tool": pre_tool,
    "post-tool": post_tool,
    "pre-compact": pre_compact,
    "stop": stop,
    "session-end": session_end,
}.items()}
