"""`memhealth hook EVENT`: the Claude Code hook protocol around the event handlers.

Contract (docs/concepts/hooks.md): append a "started" line to the project's start journal before
anything can block (memory_core.outbox.journal), read the hook JSON from stdin within a deadline,
find the project from `cwd`, write a heartbeat row marked started before any work, run the
event's handler, emit context as `hookSpecificOutput.additionalContext` (never over 10,000
characters, harness tags neutralized), complete the heartbeat (ok | error + reason,
duration) with the prompt's decision row, and exit 0 whatever happened: a memory tool must
never block or erase a prompt. stderr gets at most one line, never a traceback.

Import budget: this module and what it imports run on every prompt. No argparse, tomllib,
typing, dataclasses, httpx, prometheus_client or opentelemetry here; handlers import heavy
modules only on the branch that needs them.
"""

from __future__ import annotations

import json
import os
import sys
import time

from memhealth.errors import ConfigError, MemhealthError, ProjectNotFound
from memory_core.errors import MemoryCoreError

# CLI event name -> Claude Code hook_event_name
EVENTS = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "pre-tool": "PreToolUse",
    "post-tool": "PostToolUse",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
# Events whose JSON output may carry hookSpecificOutput.additionalContext.
CONTEXT_EVENTS = frozenset({"session-start", "prompt", "pre-tool", "post-tool"})
MAX_CONTEXT_CHARS = 10_000  # Claude Code's cap on injected text (Claude Code's hooks documentation)
MAX_STDIN_BYTES = 16 * 1024 * 1024  # a prompt beyond this is cut, not read forever
STDIN_DEADLINE_S = 2.0  # Claude Code closes stdin right after the payload; every timeout is >= 5 s


class HookContext:
    """What a handler gets: the parsed payload, project, config, store, trace, outputs."""

    __slots__ = ("event", "payload", "project", "cfg", "conn", "trace", "root", "decisions",
                 "session_id", "started_ns", "problems", "notice", "parts", "transport")

    def __init__(self, event, payload, project, cfg, conn, trace, root, session_id, started_ns,
                 transport: str = "command"):
        self.event = event
        self.payload = payload
        self.project = project
        self.cfg = cfg
        self.conn = conn
        self.trace = trace
        self.root = root
        self.decisions: list[dict] = []
        self.session_id = session_id
        self.started_ns = started_ns
        self.problems: list[tuple[str, str]] = []  # (reason, detail): recorded, not raised
        self.notice: str | None = None  # for the person (systemMessage), never the model
        self.parts: list[tuple[str, str]] = []  # (kind, text) in emission order: the session cost
        self.transport = transport  # "command" (a process per event) or "http" (memhealth serve)

    def problem(self, reason: str, detail: str) -> None:
        """Note a degradation that makes the invocation an error without stopping it."""
        self.problems.append((reason, detail))

    def part(self, kind: str, text: str | None) -> str | None:
        """Tag a block of the output with its kind (memory_core.outbox.costs.KINDS), in the
        order it is emitted; returns `text`, so a handler tags where it composes."""
        if text:
            self.parts.append((kind, text))
        return text


class Invalid(MemhealthError):
    """The hook input could not be used; `reason` is the failure family."""

    def __init__(self, reason: str, message: str, fatal: bool = True):
        super().__init__(message)
        self.reason = reason
        self.fatal = fatal  # False: recorded, and the handler still runs on what was read


def read_stdin(deadline_s: float | None = None) -> tuple[bytes, bool]:
    """Read stdin to EOF, at most MAX_STDIN_BYTES, within `deadline_s`; return (bytes,
    timed_out). Claude Code writes the payload and closes the pipe at once: a stdin still
    open after the deadline is recorded as a fault, never waited on until the hook's
    timeout kills it."""
    import select

    deadline = time.monotonic() + (STDIN_DEADLINE_S if deadline_s is None else deadline_s)
    chunks: list[bytes] = []
    total = 0
    while total < MAX_STDIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        try:
            ready, _, _ = select.select([0], [], [], left)
        except (OSError, ValueError):  # no stdin at all (closed fd 0)
            break
        if not ready:
            return b"".join(chunks), True
        try:
            data = os.read(0, min(1 << 20, MAX_STDIN_BYTES - total))
        except BlockingIOError:
            continue
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
        total += len(data)
    return b"".join(chunks), False


def parse_payload(raw: bytes) -> tuple[dict, Invalid | None]:
    """Decode (UTF-8 with replacement) and parse; return (payload, problem or None).

    A payload with a problem is still as useful as possible: invalid UTF-8 is replaced and
    parsing continues, so the prompt still gets its decision row."""
    if not raw.strip():
        return {}, Invalid("empty_stdin", "stdin was empty; expected the hook JSON object")
    problem = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        problem = Invalid("invalid_utf8", f"stdin is not valid UTF-8 (byte {exc.start}); decoded with replacement",
                          fatal=False)
    try:
        payload = json.loads(text)
    except ValueError as exc:
        return {}, Invalid("malformed_json", f"stdin is not valid JSON: {exc}")
    except RecursionError:
        return {}, Invalid("malformed_json", "stdin JSON nests too deeply")
    if not isinstance(payload, dict):
        return {}, Invalid("not_object", f"stdin JSON is a {type(payload).__name__}, expected an object")
    return payload, problem


def _str(payload: dict, key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def session_id_of(payload: dict) -> str | None:
    sid = _str(payload, "session_id")
    if sid:
        return sid[:200]
    path = _str(payload, "transcript_path")
    if path:  # the reference design's fallback: the transcript file's stem
        return os.path.splitext(os.path.basename(path))[0][:200] or None
    return None


def neutralize(text: str) -> str:
    """Break markup that could speak as the harness or a tool, and quote text that addresses
    the agent as an instruction (memhealth/neutralize.py). The single emit point applies it to
    everything a hook injects."""
    from memhealth.neutralize import neutralize as counted

    return counted(text)[0]


def write_stdout(data: bytes) -> None:
    """The command transport's output: all of `data` to fd 1 (a closed pipe raises)."""
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def emit(event: str, text: str, notice: str | None = None, out=None, found: dict | None = None) -> int:
    """Write the context JSON through `out` (default fd 1; the HTTP transport passes its
    response writer); a closed reader raises OSError to the caller. Returns the characters
    of context emitted. `notice` goes to `systemMessage`: shown to the user, not the model
    (Claude Code's hooks reference). `found`, when given, receives what was neutralized
    (memhealth/neutralize.py), {kind: count}."""
    from memhealth.neutralize import neutralize as counted
    from memory_core.text import clean, clip

    text, neutral = counted(clean(text))
    if found is not None:
        found.update(neutral)
    text = clip(text, MAX_CONTEXT_CHARS)
    body = {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}
    if notice:
        body["systemMessage"] = clip(notice, MAX_CONTEXT_CHARS)
    (out or write_stdout)((json.dumps(body, ensure_ascii=False) + "\n").encode("utf-8"))
    return len(text)


# The kind a handler's untagged output is charged to (HookContext.part tags the rest).
DEFAULT_KIND = {"session-start": "summary", "prompt": "recall", "pre-tool": "cue", "post-tool": "cue"}


def _count_neutralized(conn, found: dict[str, int], span) -> None:
    """memhealth_injection_neutralized_total{kind} and a span attribute; a locked store costs
    the count, never the hook."""
    from memory_core.outbox.rollups import bump
    from memory_core.store.tx import write

    span.set("memhealth.neutralized", ",".join(f"{k}={n}" for k, n in sorted(found.items())))
    try:
        with write(conn):
            for kind, n in found.items():
                bump(conn, "memhealth_injection_neutralized_total", {"kind": kind}, n)
    except MemoryCoreError:
        pass


def _say(line: str, limit: int = 300) -> None:
    """One line on stderr, never more; swallow a closed stderr."""
    try:
        os.write(2, (line.replace("\n", " ")[:limit] + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def _journal_start(hook: str, trace_id: str, started_ns: int) -> tuple[str, int] | None:
    """Append the "started" line to the journal of the project Claude Code runs us in (its
    cwd), before reading stdin: a hook killed while stdin stays open or the database stays
    locked still leaves a line the gate turns into a `killed` row. Returns (state dir,
    journal size) or None."""
    from memhealth.project import Project
    from memory_core.outbox import journal

    try:
        project = Project.find(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
    except (MemhealthError, OSError):
        return None
    size = journal.started(project.state_dir, hook, trace_id, started_ns)
    return None if size is None else (project.state_dir, size)


def run(event: str, raw: bytes | None = None) -> int:
    """Run one hook invocation; always returns 0."""
    started_ns = time.time_ns()
    trace_id = os.urandom(16).hex()
    try:
        journaled = _journal_start(event if event in EVENTS else "unknown", trace_id, started_ns)
        timed_out = False
        if raw is None:
            raw, timed_out = read_stdin()
        _run(event, started_ns, raw, trace_id, journaled, timed_out)
    except BaseException as exc:  # the last line of defence: never raise, never exit non-zero
        _say(f"memhealth hook {event}: internal error: {type(exc).__name__}: {exc}")
    return 0


def _error_decision(hook: str, payload: dict, session_id, trace_id: str, reason: str) -> dict:
    """The decision row of a prompt the cascade could not decide (store down, bad input, a
    bug): every prompt writes one, so the denominator stays complete."""
    prompt_id = _str(payload, "prompt_id")
    text = payload.get("prompt")
    return {"ts_ns": time.time_ns(), "hook": hook, "session_id": session_id,
            "prompt_id": prompt_id[:200] if prompt_id else None, "trace_id": trace_id,
            "prompt_len": len(text) if isinstance(text, str) else None, "outcome": "error",
            "detail": {"reason": reason}}


def serve_event(event: str, raw: bytes, project, conn, out, truncated: bool = False) -> None:
    """Run one hook event that arrived over HTTP (`memhealth serve`): the same contract by
    the same code as `memhealth hook EVENT`, on serve's open connection, with the context
    written through `out`. Never raises."""
    started_ns = time.time_ns()
    trace_id = os.urandom(16).hex()
    try:
        _run(event, started_ns, raw, trace_id, project=project, conn=conn, out=out,
             transport="http", truncated=truncated)
    except BaseException as exc:  # noqa: BLE001 - as run(): a hook never raises
        _say(f"memhealth serve: hook {event}: internal error: {type(exc).__name__}: {exc}")


def _spill(project, record: dict, decisions: list) -> str:
    """Put a heartbeat the store refused, and its decisions, in the spill (or its fallback);
    whatever neither file took goes into the journal's failure line, which is small enough
    to fit where a row did not (a full disk, a file-size limit). Returns the truthful clause
    for stderr: where the rows are, or that they are NOT recorded."""
    from memory_core.outbox import journal, spill

    where = spill.append(project.spill_path, record)
    lost = [{"kind": "decision", "row": {"ts_ns": time.time_ns(), **d}} for d in decisions]
    lost = [row for row in lost if not spill.append(project.spill_path, row)]
    if where and not lost:
        return where.say()
    rows = ([] if where else [{**record, "spill_cause": where.cause,
                              "spill_error": "; ".join(where.errors)[:300]}]) + lost
    kept = journal.failed(project.state_dir, record["trace_id"], rows)
    if not where:
        errors = "; ".join(where.errors)
        return (f"recorded as a failure in {journal.path_of(project.state_dir)} (the spill refused it: {errors})"
                if kept else where.say())
    return where.say() + ("" if kept else "; its decision NOT recorded (the spill refused it)")


def _confirm(session_id):
    def confirm(conn) -> None:
        from memory_core.delivery.cues import confirm

        confirm(conn, session_id)
    return confirm


def _run(event: str, started_ns: int, raw: bytes, trace_id: str,
         journaled: tuple[str, int] | None = None, timed_out: bool = False, *,
         project=None, conn=None, out=None, transport: str = "command",
         truncated: bool = False) -> None:
    from memhealth.config import defaults, load
    from memhealth.project import Project
    from memory_core.outbox import journal

    payload, invalid = parse_payload(raw)
    if timed_out:
        # what was read may still be a whole payload (a writer that never closed): use it
        invalid = Invalid("stdin_timeout", f"stdin stayed open {STDIN_DEADLINE_S:g} s without EOF "
                          f"({len(raw)} bytes read" + ("" if invalid is None else f"; {invalid}") + ")",
                          fatal=invalid is not None and invalid.fatal)
    if truncated and invalid is None:
        invalid = Invalid("oversized", f"the request body was cut at {MAX_STDIN_BYTES} bytes")
    if event not in EVENTS:
        invalid = Invalid("unknown_event", f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
    cwd = _str(payload, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    hook = event if event in EVENTS else "unknown"
    if project is None:  # serve passes its own project: the secret said which one
        try:
            project = Project.find(cwd)
        except (ProjectNotFound, OSError):
            project = None  # not a memhealth project: a silent no-op, by design
    if journaled is not None and (project is None or project.state_dir != journaled[0]):
        journal.ended(journaled[0], trace_id)  # the line belongs to no invocation there
        journaled = None
    if project is None:
        return
    journal_size = journaled[1] if journaled is not None else \
        journal.started(project.state_dir, hook, trace_id, started_ns)
    session_id = session_id_of(payload)

    try:
        cfg = load(project.state_dir)
        config_error = None
    except ConfigError as exc:
        cfg, config_error = defaults(), exc

    from memory_core.outbox import heartbeat, spans, spill

    trace = spans.Trace(trace_id)
    # the event's own id, so the transcript witness can match this run to its tool call or prompt
    event_ref = _str(payload, "tool_use_id" if hook in ("pre-tool", "post-tool") else "prompt_id") \
        if hook in ("pre-tool", "post-tool", "prompt") else None
    event_ref = event_ref[:200] if event_ref else None
    spill_base = {"kind": "heartbeat", "hook": hook, "session_id": session_id, "pid": os.getpid(),
                  "trace_id": trace.trace_id, "started_ns": started_ns, "event_ref": event_ref}

    # 1. the heartbeat row, before any work (the journal line already stands for it)
    hb_id = None
    from memory_core.store import tx

    profiled = tx.PHASES
    try:
        if conn is None:
            from memory_core.store.db import connect

            conn = connect(project.db_path, busy_timeout_s=cfg["hooks"]["busy_timeout_s"])
        else:  # serve's long-lived connection: this event's own lock budget, as a process has
            conn.execute(f"PRAGMA busy_timeout = {int(cfg['hooks']['busy_timeout_s'] * 1000)}")
        from memory_core.store.tx import one_lock_wait

        one_lock_wait(conn)  # a held lock costs this hook one busy_timeout, not one per write
        if profiled is not None:
            profiled["_db"] = project.db_path
        if os.path.exists(project.spill_path) or os.path.exists(spill.fallback_path(project.spill_path)):
            t0 = time.perf_counter_ns()
            spill.drain(conn, project.spill_path)
            if profiled is not None:
                profiled["drain_ns"] += time.perf_counter_ns() - t0
        hb_id = heartbeat.start(conn, hook, session_id, trace.trace_id, started_ns, event_ref)
    except (MemoryCoreError, OSError) as exc:  # StoreError and its kin are MemoryCoreErrors
        reason = getattr(exc, "reason", "store")
        problem = None
        if hook == "session-start":  # a dead store must not be silent: say so where Claude reads
            try:
                from probes.gate import store_failure

                emit(hook, store_failure(exc).text(), out=out)
            except OSError as out_exc:
                problem = f"; and stdout: {out_exc}"
        said = _spill(project, {**spill_base, "ended_ns": time.time_ns(), "outcome": "error", "reason": reason,
                                "detail": (str(exc) + (problem or ""))[:500]},
                      [_error_decision(hook, payload, session_id, trace_id, reason)] if hook == "prompt" else [])
        if hook == "session-end":  # the session's capture must not be lost to a held lock
            try:
                from memhealth import capture_worker

                said += "; " + capture_worker.defer(project, cfg, payload, session_id)
            except Exception as defer_exc:  # noqa: BLE001 - the hook still exits 0
                said += f"; the session's capture is NOT deferred ({type(defer_exc).__name__}: {defer_exc})"
        _say(f"memhealth hook {hook}: {exc} ({said})", 1000)
        return

    # 2. the work
    outcome, reason, detail = "ok", None, None
    ctx = blocks = None
    written = False  # the context reached stdout: only then do its cue deliveries count
    problem = invalid or config_error
    root = trace.span(f"memhealth.hook {hook}", kind="internal")
    root.update({"memhealth.hook": hook, "session.id": session_id or "",
                 "memhealth.hook.transport": transport})
    prompt_id = _str(payload, "prompt_id")
    if prompt_id:
        root.set("prompt.id", prompt_id[:200])
    try:
        if invalid is not None and invalid.fatal:
            raise invalid
        ctx = HookContext(hook, payload, project, cfg, conn, trace, root, session_id, started_ns,
                          transport)
        from memhealth import handlers

        text = handlers.HANDLERS[hook](ctx)
        if (text or ctx.notice) and hook in CONTEXT_EVENTS:
            found: dict[str, int] = {}
            try:
                emitted = emit(hook, text or "", ctx.notice, out, found)
                written = bool(text)
            except OSError as exc:  # BrokenPipeError and friends: the reader went away
                ctx.problem("stdout_closed", f"could not write context to {'the HTTP response' if out else 'stdout'}: "
                            f"{exc.strerror or exc}")
            else:
                if emitted:
                    from memory_core.outbox import costs

                    blocks = costs.attribute(ctx.parts or [(DEFAULT_KIND[hook], text or "")], emitted)
            if found:
                _count_neutralized(conn, found, root)
        if ctx.problems:
            reason, detail = ctx.problems[0]
            outcome = "error"
    except (MemhealthError, MemoryCoreError) as exc:
        outcome, reason, detail = "error", getattr(exc, "reason", "error"), str(exc)
    except Exception as exc:  # a bug in a handler is recorded, never raised
        outcome, reason, detail = "error", "exception", f"{type(exc).__name__}: {exc}"
    if problem is not None and outcome == "ok":
        outcome, reason, detail = "error", problem.reason, str(problem)
    if outcome != "ok":
        root.fail(detail or reason or "error", reason)
    root.end()

    # 3+4. spans, decisions, the context's cost and the completed heartbeat, in one transaction
    decisions = ctx.decisions if ctx is not None else []
    if hook == "prompt" and not decisions:
        decisions = [_error_decision(hook, payload, session_id, trace_id, reason or "error")]
    # in the same transaction: the context's cost by block kind, and (only when the context
    # was written) the cue deliveries it carried, confirmed
    confirm = _confirm(session_id) if written else None
    extra = None
    if blocks or confirm:
        def extra(c, _blocks=blocks, _confirm=confirm):
            if _blocks:
                costs.record(c, hook, session_id, trace_id, _blocks, time.time_ns())
            if _confirm:
                _confirm(c)
    try:
        heartbeat.finish(conn, hb_id, hook, started_ns, outcome, reason, detail,
                         trace=trace, decisions=decisions, extra=extra)
    except MemoryCoreError as exc:
        said = _spill(project, {**spill_base, "id": hb_id, "ended_ns": time.time_ns(),
                                "outcome": outcome if outcome != "ok" else "error",
                                "reason": reason or getattr(exc, "reason", "store"),
                                "detail": (detail or str(exc))[:500]}, decisions)
        _say(f"memhealth hook {hook}: {exc} ({said})", 1000)
        return  # no end line: if the spilled row is lost, the started line still counts it
    # the row is in the database: the started line is settled here, not by looking the row
    # up later in a store that may have been reset since (a reset is not 5 killed prompts)
    journal.ended(project.state_dir, trace_id)
    if journal_size is not None and journal_size > journal.DRAIN_AT_BYTES:
        t0 = time.perf_counter_ns()
        try:  # no gate or serve has drained it for a while: keep it small
            journal.drain(conn, project.state_dir, cfg["hooks"]["killed_after_s"])
        except (MemoryCoreError, OSError, conn.Error):
            pass
        if profiled is not None:
            profiled["drain_ns"] += time.perf_counter_ns() - t0
    if outcome != "ok":
        _say(f"memhealth hook {hook}: {reason}: {detail}")


def _write_phases(path: str, event: str, main_ns: int, phases: dict) -> None:
    """Append this run's phase profile (MEMHEALTH_PHASES) as one JSON line; never raises."""
    line = {"pid": os.getpid(), "event": event, "main_ns": main_ns, "end_ns": time.time_ns(),
            **{k: v for k, v in phases.items() if not k.startswith("_")}}
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


def main(argv: list[str]) -> None:
    """Entry point for `memhealth hook EVENT`: exits 0, skipping interpreter teardown.
    MEMHEALTH_PHASES=FILE appends where the run's time went (lock wait, commit, checkpoint,
    drains) to FILE, for the concurrency benchmark; unset, nothing is timed."""
    event = argv[0] if argv else ""
    phases_path = os.environ.get("MEMHEALTH_PHASES")
    if phases_path:
        from memory_core.store import tx

        main_ns = time.time_ns()
        phases = tx.profile()
        run(event)
        _write_phases(phases_path, event, main_ns, phases)
    else:
        run(event)
    try:
        sys.stderr.flush()
    except Exception:  # a closed or broken stderr: the hook still exits 0, as promised
        pass
    os._exit(0)
