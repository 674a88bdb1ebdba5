"""The detached capture worker: what SessionEnd hands off so the hook stays inside 1.5 s.

    python -m memhealth.capture_worker /path/to/project     # spawned, never run inline by a hook

SessionEnd records the boundary (memory_core.records.queue.record_boundary) and spawns this
worker in its own session (start_new_session: Claude Code killing the hook's process group
does not reach it) with stdin, stdout and stderr on /dev/null. The worker writes its own
heartbeat row (hook label "capture"), captures every pending boundary under the store's
lease, then runs the ingest the hook used to run inline. Whatever it does not finish
(killed, machine asleep) is picked up by the next SessionStart, which spawns a worker the
same way when boundaries are pending and no live worker holds the lease, or by
`memhealth ingest`.
"""

from __future__ import annotations

import os
import sys
import time

HOOK = "capture"


def spawn(root: str) -> int:
    """Start a detached worker for the project at `root`; its pid."""
    import subprocess

    devnull = subprocess.DEVNULL
    proc = subprocess.Popen([sys.executable, "-m", "memhealth.capture_worker", os.path.abspath(root)],
                            stdin=devnull, stdout=devnull, stderr=devnull, cwd=root,
                            start_new_session=True, close_fds=True)
    return proc.pid


def boundary(ctx) -> int | None:
    """SessionEnd: queue the session's transcript bytes, then hand off to a worker.
    Returns the worker's pid (None when capture is off and nothing was spawned)."""
    from memory_core.records.queue import record_boundary

    path = ctx.payload.get("transcript_path")
    if ctx.cfg["capture"]["enabled"] and isinstance(path, str) and path:
        work = record_boundary(ctx.conn, ctx.session_id, path)
        ctx.root.set("memhealth.capture.work_id", work or 0)
    # the worker also runs the deferred ingest, so it is spawned even with nothing to capture
    pid = spawn(ctx.project.root)
    ctx.root.set("memhealth.capture.worker_pid", pid)
    return pid


def defer(project, cfg, payload: dict, session_id: str | None) -> str:
    """SessionEnd whose store was locked: keep the boundary beside the store and spawn the
    worker anyway (it waits its own busy timeout, then queues and captures it; a later
    SessionStart or `memhealth ingest` does if it cannot). The clause for stderr."""
    from memory_core.records.queue import defer_boundary

    path = payload.get("transcript_path")
    kept = bool(cfg["capture"]["enabled"] and isinstance(path, str) and path
                and defer_boundary(project.state_dir, session_id, path))
    try:
        spawn(project.root)
    except OSError as exc:
        return f"the session's capture is {'deferred' if kept else 'NOT deferred'}; no worker: {exc}"
    return "the session's capture is deferred to the capture worker" if kept else "the capture worker was started"


def resume(ctx) -> int | None:
    """SessionStart: spawn a worker when boundaries wait and no live worker holds the lease
    (never capture inline: SessionStart carries the gate). The worker's pid, or None."""
    from memory_core.records.queue import boundaries_waiting, lease_holder, work_pending

    if not ctx.cfg["capture"]["enabled"] or not (work_pending(ctx.conn)
                                                 or boundaries_waiting(ctx.project.state_dir)):
        return None
    if lease_holder(ctx.conn) is not None:
        return None
    pid = spawn(ctx.project.root)
    ctx.root.set("memhealth.capture.resumed_pid", pid)
    return pid


def run(root: str) -> int:
    """The worker body: heartbeat, capture under the lease, ingest; 0 ok, 1 error."""
    from memhealth.config import load
    from memhealth.project import Project
    from memory_core.errors import MemoryCoreError
    from memory_core.ingest import run_ingest
    from memory_core.outbox import heartbeat, journal, spill
    from memory_core.outbox.spans import Trace
    from memory_core.records.queue import absorb_boundaries, run_pending, settings
    from memory_core.store.db import connect

    project = Project(root)
    cfg = load(project.state_dir)
    trace = Trace()
    started_ns = time.time_ns()
    # as a hook does: the journal line first (a worker killed while it waits is still a kill),
    # and a store it cannot write gets the failure spilled, never nothing
    journal.started(project.state_dir, HOOK, trace.trace_id, started_ns)
    try:
        conn = connect(project.db_path, busy_timeout_s=max(cfg["hooks"]["busy_timeout_s"], 5.0))
        hb = heartbeat.start(conn, HOOK, None, trace.trace_id, started_ns)
    except MemoryCoreError as exc:
        spill.append(project.spill_path, {"kind": "heartbeat", "hook": HOOK, "session_id": None, "pid": os.getpid(),
                                          "trace_id": trace.trace_id, "started_ns": started_ns,
                                          "ended_ns": time.time_ns(), "outcome": "error",
                                          "reason": getattr(exc, "reason", "store"), "detail": str(exc)[:500]})
        return 1
    root_span = trace.span(f"memhealth.hook {HOOK}")
    root_span.set("memhealth.hook", HOOK)
    outcome, reason, detail = "ok", None, None
    try:
        if cfg["capture"]["enabled"]:
            absorb_boundaries(conn, project.state_dir)  # what a locked SessionEnd left beside the store
            report = run_pending(conn, settings(cfg), trace=trace)
            detail = report.line()
            root_span.update({"memhealth.capture.stopped": report.stopped or "",
                              "memhealth.capture.pending_work": report.pending_work})
        ingest = run_ingest(conn, project.root, cfg, trace=trace)
        root_span.set("memhealth.ingest.chunks_added", ingest.chunks_added)
        if ingest.errors:
            outcome, reason = "error", "ingest"
            # the files first: the gate shows the first 160 characters, and its fix says
            # "the detail names it"
            from memory_core.ingest.store import failures_since

            failed = failures_since(conn, started_ns)
            named = "; ".join(f"{p or '?'} ({r}: {(d or '')[:80]})" for p, r, d in failed)
            detail = (f"ingest: {ingest.errors} file(s) failed" + (f": {named}" if named else "")
                      + (f"; {detail}" if detail else ""))
    except Exception as exc:  # recorded on the heartbeat; the queue row stays for next time
        outcome, reason, detail = "error", getattr(exc, "reason", "exception"), f"{type(exc).__name__}: {exc}"
        root_span.fail(detail, reason)
    root_span.end()
    heartbeat.finish(conn, hb, HOOK, started_ns, outcome, reason, detail, trace=trace)
    journal.ended(project.state_dir, trace.trace_id)
    conn.close()
    return 0 if outcome == "ok" else 1


def main(argv: list[str]) -> None:
    code = 1
    try:
        code = run(argv[0] if argv else os.getcwd())
    except BaseException:  # no stderr to speak to (it is /dev/null); the heartbeat says killed
        code = 1
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
