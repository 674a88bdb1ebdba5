"""The capture queue: session boundaries in, candidates out, one worker at a time.

    record_boundary(conn, "sess-1", "/home/u/.claude/projects/x/sess-1.jsonl")   # SessionEnd
    report = run_pending(conn, capture_cfg)          # the detached worker, SessionStart, ingest

Guarantees, and what gives them:

- never lost: SessionEnd writes a `capture_work` row (session, transcript, byte range) before
  anything else; the row stays `pending` until the transcript's capture watermark passes
  its end offset, so a worker killed midway, or a machine put to sleep, leaves it for the
  next SessionStart or `memhealth ingest`.
- never twice at once: a worker holds the `capture` lease (pid, random token, expiry) and
  renews it inside every batch transaction; a batch whose lease was lost (expired and
  taken) rolls back. A lease whose pid is gone (or a zombie) is free at once.
- never duplicated: each batch inserts its candidates and advances the per-transcript
  watermark (`watermarks`, source "capture") in one transaction, so a killed batch leaves
  nothing; the unique index on (transcript, line, normalized statement) is the second
  guard. A statement already known in any state (pending, confirmed, rejected, merged) is
  not proposed again.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.outbox.decisions import insert_degradation
from memory_core.outbox.heartbeat import pid_alive
from memory_core.outbox.rollups import bump, set_gauge
from memory_core.store.meta import set_meta
from memory_core.store.tx import write

LEASE = "capture"
SOURCE = "capture"  # the watermarks row per transcript
META_PENDING = "capture.pending"  # read by the gate's capture_queue check
MAX_LINE_BYTES = 64 * 1024 * 1024  # a longer line (a pasted screenshot) is skipped whole
# memory_core.records.extract.KINDS, spelled here so SessionStart and SessionEnd (which only queue
# and check the lease) do not import the extraction patterns
KINDS = ("decision", "dead_end", "correction")


class LeaseLost(Exception):
    """Another worker took the lease (ours lapsed): stop without committing."""


# -- leases -----------------------------------------------------------------------------------

def lease_holder(conn, name: str = LEASE, now_ns: int | None = None) -> int | None:
    """The pid holding a live lease on `name`, or None when it is free."""
    now_ns = now_ns or time.time_ns()
    row = conn.execute("SELECT pid, expires_ns FROM leases WHERE name = ?", (name,)).fetchone()
    if row is None or row[1] <= now_ns or not pid_alive(row[0]):
        return None
    return row[0]


def acquire(conn, ttl_s: float, name: str = LEASE) -> str | None:
    """Take the lease for this process; its token, or None when a live holder has it."""
    token = os.urandom(8).hex()  # not `secrets`: it loads OpenSSL (~8 ms) on the hook path
    now_ns = time.time_ns()
    with write(conn):
        row = conn.execute("SELECT pid, expires_ns FROM leases WHERE name = ?", (name,)).fetchone()
        if row is not None and row[0] != os.getpid() and row[1] > now_ns and pid_alive(row[0]):
            return None
        conn.execute("INSERT INTO leases(name, pid, token, expires_ns) VALUES (?,?,?,?) "
                     "ON CONFLICT(name) DO UPDATE SET pid = excluded.pid, token = excluded.token, "
                     "expires_ns = excluded.expires_ns",
                     (name, os.getpid(), token, now_ns + int(ttl_s * 1e9)))
    return token


def renew(conn, token: str, ttl_s: float, name: str = LEASE) -> None:
    """Extend the lease; call inside the batch's write transaction. Raises LeaseLost."""
    cur = conn.execute("UPDATE leases SET expires_ns = ? WHERE name = ? AND token = ?",
                       (time.time_ns() + int(ttl_s * 1e9), name, token))
    if cur.rowcount != 1:
        raise LeaseLost(f"the {name} lease was taken by another worker")


def release(conn, token: str, name: str = LEASE) -> None:
    with write(conn):
        conn.execute("DELETE FROM leases WHERE name = ? AND token = ?", (name, token))


# -- boundaries -------------------------------------------------------------------------------

def _mark(conn, transcript: str) -> tuple[int, dict]:
    row = conn.execute("SELECT offset, state FROM watermarks WHERE source = ? AND path = ?",
                       (SOURCE, transcript)).fetchone()
    if row is None:
        return 0, {}
    try:
        state = json.loads(row[1]) if row[1] else {}
    except ValueError:
        state = {}
    return int(row[0] or 0), state if isinstance(state, dict) else {}


def record_boundary(conn, session_id: str | None, transcript: str, now_ns: int | None = None) -> int | None:
    """Queue the bytes a session wrote for capture; the work row id, or None when there is
    nothing new (or no transcript file). Cheap: one stat, one read, one insert."""
    path = os.path.abspath(transcript)
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    start, _state = _mark(conn, path)
    if size <= start:
        return None
    with write(conn):
        cur = conn.execute(
            "INSERT INTO capture_work(session_id, transcript, start_offset, end_offset, created_ns) "
            "VALUES (?,?,?,?,?)", (session_id, path, start, size, now_ns or time.time_ns()))
        set_gauge(conn, "memhealth_capture_queue_depth", _work_pending(conn), {"queue": "work"})
        return cur.lastrowid


def defer_boundary(state_dir: str, session_id: str | None, transcript: str) -> bool:
    """Keep a session boundary the store could not take (a held lock) in BOUNDARIES_NAME
    beside it, for the next worker; True when the line was written."""
    from memory_core.outbox.spill import write_line
    from memory_core.store.layout import BOUNDARIES_NAME

    line = json.dumps({"session_id": session_id, "transcript": os.path.abspath(transcript),
                       "ts_ns": time.time_ns()}) + "\n"
    try:
        write_line(os.path.join(state_dir, BOUNDARIES_NAME), line.encode("utf-8"))
        return True
    except OSError:
        return False


def boundaries_waiting(state_dir: str) -> bool:
    from memory_core.store.layout import BOUNDARIES_NAME

    path = os.path.join(state_dir, BOUNDARIES_NAME)
    return os.path.exists(path) and not os.path.islink(path)


def absorb_boundaries(conn, state_dir: str) -> int:
    """Queue the boundaries a SessionEnd deferred (claimed by rename, so two workers never
    queue one twice; put back when the store refuses them). Returns how many were queued."""
    from memory_core.outbox.spill import write_line
    from memory_core.store.layout import BOUNDARIES_NAME

    path = os.path.join(state_dir, BOUNDARIES_NAME)
    if not boundaries_waiting(state_dir):
        return 0
    claimed = f"{path}.{os.getpid()}.absorbing"
    try:
        os.replace(path, claimed)
        fd = os.open(claimed, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
    except OSError:
        return 0
    queued = 0
    try:
        for line in data.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("transcript"), str):
                sid = rec.get("session_id") if isinstance(rec.get("session_id"), str) else None
                queued += record_boundary(conn, sid, rec["transcript"], rec.get("ts_ns")) is not None
    except Exception:
        try:
            write_line(path, data if data.endswith(b"\n") else data + b"\n")
        except OSError:
            pass
        raise
    finally:
        try:
            os.unlink(claimed)
        except OSError:
            pass
    return queued


def _work_pending(conn) -> int:
    return conn.execute("SELECT count(*) FROM capture_work WHERE status = 'pending'").fetchone()[0]


def work_pending(conn) -> int:
    """Session boundaries not captured yet."""
    return _work_pending(conn)


def pending_candidates(conn) -> int:
    return conn.execute("SELECT count(*) FROM capture_candidates WHERE state = 'pending'").fetchone()[0]


def refresh_depth(conn) -> None:
    """Meta `capture.pending` (the gate) and the queue gauges; inside a write transaction."""
    pending = pending_candidates(conn)
    set_meta(conn, META_PENDING, pending)
    set_gauge(conn, "memhealth_capture_queue_depth", pending, {"queue": "triage"})
    set_gauge(conn, "memhealth_capture_queue_depth", _work_pending(conn), {"queue": "work"})


# -- the worker -------------------------------------------------------------------------------

class CaptureReport:
    """What one run did: work rows finished, candidates added by kind, why it stopped."""

    def __init__(self):
        self.items_done = 0
        self.items_failed = 0
        self.bytes_read = 0
        self.lines_read = 0
        self.added = {k: 0 for k in KINDS}
        self.known = 0  # statements already proposed, confirmed or rejected
        self.stopped: str | None = None  # lease_held | budget | lease_lost
        self.holder: int | None = None
        self.pending_work = 0
        self.pending_candidates = 0
        self.llm: str | None = None  # None = off; "ok"; "failed: <reason>" (patterns only after)
        self.llm_added = 0
        self.llm_dropped = 0  # proposals not grounded in the turn they named

    def to_dict(self) -> dict:
        return {"items_done": self.items_done, "items_failed": self.items_failed,
                "bytes_read": self.bytes_read, "lines_read": self.lines_read,
                "candidates_added": dict(self.added), "already_known": self.known,
                "stopped": self.stopped, "lease_holder": self.holder,
                "pending_work": self.pending_work, "pending_candidates": self.pending_candidates,
                "llm": self.llm, "llm_added": self.llm_added, "llm_dropped": self.llm_dropped}

    def line(self) -> str:
        added = sum(self.added.values())
        text = (f"capture: {self.items_done} session(s) captured, {added} candidate(s) added "
                f"({', '.join(f'{k} {v}' for k, v in self.added.items())}), "
                f"{self.pending_candidates} pending triage")
        if self.llm:
            text += f"; llm {self.llm} (+{self.llm_added}, {self.llm_dropped} ungrounded dropped)"
        if self.stopped == "lease_held":
            text = f"capture: another worker (pid {self.holder}) holds the lease; it finishes the queue"
        elif self.stopped:
            text += f"; stopped ({self.stopped}), {self.pending_work} session(s) left for the next run"
        return text


def _insert(conn, transcript: str, default_session: str | None, cands, report: CaptureReport,
            now_ns: int, origin: str = "pattern") -> None:
    for c in cands:
        if conn.execute("SELECT 1 FROM capture_candidates WHERE norm = ? LIMIT 1", (c.norm,)).fetchone():
            report.known += 1
            continue
        cur = conn.execute(
            "INSERT OR IGNORE INTO capture_candidates(kind, statement, title, norm, transcript, line, "
            "session_id, ts, role, origin, created_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (c.kind, c.statement, c.title, c.norm, transcript, c.line, c.session_id or default_session,
             c.ts, c.role, origin, now_ns))
        if cur.rowcount:
            report.added[c.kind] += 1
            if origin == "llm":
                report.llm_added += 1
            bump(conn, "memhealth_capture_candidates_total", {"kind": c.kind})


def _read_lines(fh, offset: int, limit: int) -> tuple[list[bytes], int]:
    """Complete lines from `offset`, about `limit` bytes (more when one line is longer);
    returns (lines, bytes consumed); (.., 0) when only an incomplete line remains. A line
    over MAX_LINE_BYTES is consumed as one empty line, so line numbers stay right."""
    fh.seek(offset)
    data = fh.read(limit)
    end = data.rfind(b"\n")
    if end >= 0:
        return data[:end].split(b"\n"), end + 1
    parts, consumed = [data], len(data)
    while True:
        chunk = fh.read(limit)
        if not chunk:
            return [], 0  # a write in progress: read once it is complete
        at = chunk.find(b"\n")
        if at >= 0:
            total = consumed + at + 1
            if total - 1 > MAX_LINE_BYTES:
                return [b""], total
            return [b"".join(parts) + chunk[:at]], total
        consumed += len(chunk)
        parts = parts + [chunk] if consumed <= MAX_LINE_BYTES else []


def _capture_transcript(conn, transcript: str, session_id: str | None, token: str, cfg: dict,
                        deadline: float, report: CaptureReport) -> bool:
    """Advance the transcript's watermark to its complete end; True when it got there."""
    from memory_core.records.extract import extract_turns, turns

    offset, state = _mark(conn, transcript)
    try:
        fh = open(transcript, "rb")
    except OSError:
        return False
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size < offset:  # rewritten or truncated: read again; the unique index drops repeats
            offset, state = 0, {}
        line = int(state.get("line", 1))
        while offset < size:
            if time.monotonic() > deadline:
                report.stopped = "budget"
                return False
            lines, used = _read_lines(fh, offset, cfg["batch_bytes"])
            if not used:
                break  # only an incomplete last line remains
            found = turns(lines, line, transcript, state)
            cands = extract_turns(found)
            if cfg.get("llm_model"):  # a generate call can outlast the lease: renew it first
                with write(conn):
                    renew(conn, token, cfg["lease_s"] + cfg["llm_timeout_s"])
            extra, failure = _synthesize(found, cands, cfg, deadline, report)
            now_ns = time.time_ns()
            with write(conn):
                renew(conn, token, cfg["lease_s"])
                _insert(conn, transcript, session_id, cands, report, now_ns)
                _insert(conn, transcript, session_id, extra, report, now_ns, origin="llm")
                if failure is not None:
                    insert_degradation(conn, "capture", failure.reason, str(failure))
                offset += used
                line += len(lines)
                state["line"] = line
                conn.execute(
                    "INSERT INTO watermarks(source, path, mtime_ns, size, offset, state, updated_ns) "
                    "VALUES (?,?,?,?,?,?,?) ON CONFLICT(source, path) DO UPDATE SET "
                    "mtime_ns = excluded.mtime_ns, size = excluded.size, offset = excluded.offset, "
                    "state = excluded.state, updated_ns = excluded.updated_ns",
                    (SOURCE, transcript, None, size, offset, json.dumps(state), now_ns))
                refresh_depth(conn)
            report.bytes_read += used
            report.lines_read += len(lines)
    return True


def settings(cfg) -> dict:
    """The [capture] section with the synthesis URL resolved ([embedding].url when unset)."""
    out = dict(cfg["capture"])
    out["llm_url"] = out.get("llm_url") or cfg["embedding"]["url"]
    return out


def _synthesize(found, cands, cfg: dict, deadline: float, report: CaptureReport):
    """(extra candidates from the model, the failure to record or None). After a failure the
    run goes on with the patterns only."""
    if not cfg.get("llm_model") or not cfg.get("llm_url") or not found \
            or (report.llm or "").startswith("failed"):
        return [], None
    from memory_core.records.extract_llm import SynthesisError, synthesize

    try:
        extra, dropped = synthesize(found, cfg["llm_url"], cfg["llm_model"], deadline, cfg["llm_timeout_s"])
    except SynthesisError as exc:
        report.llm = f"failed: {exc.reason}"
        return [], exc
    report.llm = "ok"
    report.llm_dropped += dropped
    have = {(c.line, c.kind) for c in cands}  # the patterns' own wording wins
    return [c for c in extra if (c.line, c.kind) not in have], None


def _settle(conn, transcript: str, report: CaptureReport, missing: bool) -> None:
    """Mark the transcript's work rows done up to its watermark (failed when the file is gone)."""
    offset, _ = _mark(conn, transcript)
    now_ns = time.time_ns()
    with write(conn):
        if missing:
            cur = conn.execute(
                "UPDATE capture_work SET status = 'failed', done_ns = ?, attempts = attempts + 1, "
                "detail = 'transcript file is gone' WHERE transcript = ? AND status = 'pending'",
                (now_ns, transcript))
            report.items_failed += cur.rowcount
        else:
            cur = conn.execute(
                "UPDATE capture_work SET status = 'done', done_ns = ?, attempts = attempts + 1 "
                "WHERE transcript = ? AND status = 'pending' AND end_offset <= ?",
                (now_ns, transcript, offset))
            report.items_done += cur.rowcount
        refresh_depth(conn)


def run_pending(conn, cfg: dict, budget_s: float | None = None, trace=None) -> CaptureReport:
    """Capture every pending session boundary under the lease, within the budget.

    `cfg` is the [capture] config section. Never raises for one transcript; raises
    StoreError when the store itself fails."""
    report = CaptureReport()
    deadline = time.monotonic() + float(cfg["budget_s"] if budget_s is None else budget_s)
    for _attempt in range(2):  # a boundary recorded while we released gets a second look
        token = acquire(conn, cfg["lease_s"])
        if token is None:
            report.stopped, report.holder = "lease_held", lease_holder(conn)
            break
        span = trace.span("capture") if trace is not None else None
        try:
            settled = -1
            while report.stopped is None and settled != report.items_done + report.items_failed:
                # another pass only when the last one settled something (a row whose last
                # line is still being written stays pending for a later run)
                settled = report.items_done + report.items_failed
                rows = conn.execute(
                    "SELECT transcript, max(session_id) FROM capture_work WHERE status = 'pending' "
                    "GROUP BY transcript ORDER BY min(created_ns)").fetchall()
                for transcript, session_id in rows:
                    ok = _capture_transcript(conn, transcript, session_id, token, cfg, deadline, report)
                    if report.stopped:
                        break
                    _settle(conn, transcript, report, missing=not ok and not os.path.exists(transcript))
        except LeaseLost:
            report.stopped = "lease_lost"
        finally:
            try:
                release(conn, token)
            finally:
                if span is not None:
                    span.update({"memhealth.capture.items_done": report.items_done,
                                 "memhealth.capture.bytes_read": report.bytes_read,
                                 **{f"memhealth.capture.added.{k}": v for k, v in report.added.items()}})
                    span.end()
        if report.stopped or not _work_pending(conn):
            break
    report.pending_work = _work_pending(conn)
    report.pending_candidates = pending_candidates(conn)
    return report
