"""The start journal: a hook's "started" line, written before anything that can block.

A heartbeat row needs the database, and the database can be locked; stdin can stay open.
A hook killed while waiting on either used to leave nothing. So the first thing a hook does
is append one line here (O_APPEND, O_NOFOLLOW, 0600: a lock cannot stop it), and the
processes that reap — the gate, serve's collector, `memhealth report` — drain the journal
first: a line whose process is gone and whose heartbeat never reached the database becomes
a `killed` row.

    size = started(state_dir, "prompt", trace_id, started_ns)   # hook, before reading stdin
    ended(state_dir, trace_id)        # its heartbeat reached the database, or it moved project
    drain(conn, state_dir, killed_after_s=900)                  # before reap_killed

A line for a live process stays (its hook is still running); a line with its "end" line (the
hook writes one once its completed heartbeat is committed) is dropped unread, so a store
deleted or reset since cannot turn finished hooks into killed ones; a line whose heartbeat
is in the database is dropped too (a hook killed between its commit and its end line). Dedup is by (started_ns, hook, trace_id), which the heartbeat row
carries too, so no schema change and no lookup on the hook path.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.outbox.spill import write_line
from memory_core.store.layout import JOURNAL_NAME
from memory_core.store.tx import write

DRAIN_AT_BYTES = 256 * 1024  # a hook drains the journal itself past this (no gate or serve running)
KILLED_DETAIL = ("killed before its heartbeat reached the database (waiting on stdin or on the "
                 "database lock)")


def path_of(state_dir: str) -> str:
    return os.path.join(state_dir, JOURNAL_NAME)


def started(state_dir: str, hook: str, trace_id: str, started_ns: int) -> int | None:
    """Append the "started" line; return the journal's size after it, None when it could not
    be written (the caller carries on: the database row is the other record)."""
    line = json.dumps({"hook": hook, "pid": os.getpid(), "trace_id": trace_id,
                       "started_ns": started_ns}, separators=(",", ":")) + "\n"
    try:
        return write_line(path_of(state_dir), line.encode("utf-8"))
    except OSError:
        return None


def ended(state_dir: str, trace_id: str) -> None:
    """Cancel a started line (the invocation belongs to another project, or none)."""
    try:
        write_line(path_of(state_dir), (json.dumps({"end": trace_id}) + "\n").encode("utf-8"))
    except OSError:
        pass


def failed(state_dir: str, trace_id: str, rows: list[dict]) -> bool:
    """Keep spill rows (a heartbeat, decisions) that neither the spill nor its fallback took:
    one line, the size of the rows themselves, which the drain applies as the spill would
    have. Returns whether the line was written."""
    line = json.dumps({"fail": trace_id, "rows": rows}, default=str, ensure_ascii=False,
                      separators=(",", ":")) + "\n"
    try:
        write_line(path_of(state_dir), line.encode("utf-8"))
        return True
    except OSError:
        return False


def _alive(pid) -> bool:
    from memory_core.outbox.heartbeat import pid_alive

    return isinstance(pid, int) and pid_alive(pid)


def _claim_pid(claimed: str) -> int | None:
    try:
        return int(claimed.rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        return None


def drain(conn, state_dir: str, killed_after_s: float = 900.0, now_ns: int | None = None) -> int:
    """Turn the lines of dead invocations that never reached the database into `killed`
    rows; keep the lines of live ones. Returns the number of killed rows written. Raises
    StoreError when the store cannot be written (the lines are put back first)."""
    path = path_of(state_dir)
    if not os.path.exists(path) or os.path.islink(path):
        return 0
    now_ns = now_ns or time.time_ns()
    claimed = f"{path}.{os.getpid()}.draining"
    try:
        os.replace(path, claimed)
    except OSError:
        return 0
    data = b""
    try:
        fd = os.open(claimed, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
            # a hook that opened the file before the rename may still be writing its line
            time.sleep(0)
            data += fh.read()
    except OSError:
        return 0
    # claims left by a drainer that died mid-drain: their lines are ours now
    import glob

    for stale in glob.glob(glob.escape(path) + ".*.draining"):
        if stale == claimed or _alive(_claim_pid(stale)):
            continue
        try:
            fd = os.open(stale, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as fh:
                more = fh.read()
            os.unlink(stale)
            data += b"\n" + more
        except OSError:
            continue
    starts, ends, keep, fails = [], set(), [], []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if "end" in rec:
            ends.add(rec["end"])
        elif "fail" in rec and isinstance(rec.get("rows"), list):
            fails.append(rec)
        elif isinstance(rec.get("started_ns"), int) and isinstance(rec.get("hook"), str):
            starts.append((rec, line))
    killed = 0
    from memory_core.outbox.rollups import bump
    from memory_core.outbox.spill import _apply_spilled

    try:
        with write(conn):
            for rec in fails:  # a failure recorded here: applied as its spill rows, never a kill
                for row in rec["rows"]:
                    if isinstance(row, dict):
                        _apply_spilled(conn, row)
                ends.add(rec["fail"])
            for rec, line in starts:
                if rec.get("trace_id") in ends:
                    continue
                age_s = (now_ns - rec["started_ns"]) / 1e9
                if _alive(rec.get("pid")) and age_s < killed_after_s:
                    keep.append(line)  # still running: its own heartbeat will land
                    continue
                exists = conn.execute(
                    "SELECT 1 FROM heartbeats WHERE started_ns = ? AND hook = ? AND trace_id IS ? LIMIT 1",
                    (rec["started_ns"], rec["hook"], rec.get("trace_id"))).fetchone()
                if exists:
                    continue
                conn.execute(
                    "INSERT INTO heartbeats(hook, pid, trace_id, started_ns, outcome, reason, detail) "
                    "VALUES (?,?,?,?, 'killed', 'killed', ?)",
                    (rec["hook"], rec.get("pid"), rec.get("trace_id"), rec["started_ns"], KILLED_DETAIL))
                bump(conn, "memhealth_hook_invocations_total", {"hook": rec["hook"], "outcome": "killed"})
                killed += 1
    except Exception:
        keep = [line for _rec, line in starts] + [json.dumps({"end": t}).encode() for t in ends
                                                   if t not in {f["fail"] for f in fails}]
        keep += [json.dumps(f, default=str).encode() for f in fails]
        _put_back(path, claimed, keep)
        raise
    _put_back(path, claimed, keep)
    return killed


def _put_back(path: str, claimed: str, lines: list[bytes]) -> None:
    try:
        if lines:
            write_line(path, b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
        os.unlink(claimed)
    except OSError:
        pass


def settle(conn, state_dir: str, killed_after_s: float, now_ns: int | None = None) -> dict:
    """Drain, then reap, in that order, everywhere: spilled completions land before a row
    could be marked killed, journal lines of dead hooks become killed rows, and what is
    still open and dead is reaped. Best effort: returns what each step did or why it could
    not ({"spilled": n, "journal": n, "reaped": n, "error": "..."})."""
    from memory_core.errors import StoreError
    from memory_core.outbox import heartbeat, spill
    from memory_core.store.layout import SPILL_NAME

    out: dict = {"spilled": 0, "journal": 0, "reaped": 0}
    try:
        out["spilled"] = spill.drain(conn, os.path.join(state_dir, SPILL_NAME))
        if spill.pending_files(os.path.join(state_dir, SPILL_NAME)):
            # rows still wait (the store refused them): reaping now would mark hooks whose
            # completions are in the spill as killed
            out["error"] = "the spill could not be drained"
            return out
        out["journal"] = drain(conn, state_dir, killed_after_s, now_ns)
        out["reaped"] = heartbeat.reap_killed(conn, killed_after_s, now_ns=now_ns)
    except (StoreError, conn.Error) as exc:
        out["error"] = str(exc)
    return out
