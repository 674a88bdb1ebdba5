"""The spill: rows a process could not write to the store (locked past busy_timeout,
read-only, corrupt, disk full) wait in `.memhealth/spill.ndjson` until a process that can
write the store drains them. A failure is recorded, never lost — and when it cannot be
recorded, the caller is told so, never that it was.

    where = append(path, {"kind": "heartbeat", ...})
    where.path      # the file the row went to: the spill, or the user-state fallback
    where.errors    # why a file could not take it: ["disk full (ENOSPC) at .memhealth/spill.ndjson"]
    bool(where)     # False when no file took it (the caller says so on stderr)
    drain(conn, path)                                      # next process that can write

Fallback: when `.memhealth/` refuses the line (read-only, disk full, a symlink planted
where the spill should be), the row goes to `$XDG_STATE_HOME/memhealth/spill/<hash>.ndjson`
(default `~/.local/state`), tagged with the cause, so the gate can name it ("disk full")
after the drain. Every state file is opened with O_NOFOLLOW and mode 0600.
"""

from __future__ import annotations

import errno
import json
import os

from memory_core.errors import StoreError
from memory_core.outbox.decisions import insert_decision
from memory_core.outbox.heartbeat import complete_row
from memory_core.store.tx import write

APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC

# errno -> (cause family, words the gate prints)
_CAUSES = {
    errno.ENOSPC: ("disk_full", "disk full"),
    errno.EDQUOT: ("disk_full", "disk quota exceeded"),
    errno.EFBIG: ("disk_full", "file-size limit reached"),
    errno.EROFS: ("readonly", "read-only file system"),
    errno.EACCES: ("readonly", "permission denied"),
    errno.EPERM: ("readonly", "permission denied"),
    errno.ELOOP: ("symlink", "a symlink stands where the file should be (refused)"),
    errno.ENOENT: ("missing", "the directory is gone"),
}
CAUSE_FIXES = {
    "disk_full": "free space on the disk holding .memhealth/ (`df -h .memhealth`) or raise the "
                 "file-size limit (`ulimit -f`); the next hook drains the rows",
    "readonly": "make .memhealth/ writable by the user Claude Code runs as "
                "(`chmod u+rwx .memhealth`); the next hook drains the rows",
    "symlink": "remove the symlink in .memhealth/ (state files never follow links); "
               "the next hook drains the rows",
}


def cause_of(exc: OSError) -> tuple[str, str]:
    """(family, words) for an OSError writing a state file: ("disk_full", "disk full (ENOSPC)")."""
    family, words = _CAUSES.get(exc.errno or 0, ("io", exc.strerror or "write failed"))
    name = errno.errorcode.get(exc.errno or 0, "")
    return family, f"{words} ({name})" if name else words


class Where:
    """Where an appended row went: `path` (None when nowhere) and the `errors` on the way."""

    __slots__ = ("path", "errors", "cause")

    def __init__(self, path: str | None, errors: list[str], cause: str | None):
        self.path = path
        self.errors = errors
        self.cause = cause  # the first failure's family, None when the spill itself took it

    def __bool__(self) -> bool:
        return self.path is not None

    def say(self) -> str:
        """The truthful clause for a hook's stderr line."""
        if self.path is None:
            return "NOT recorded: " + "; ".join(self.errors)
        if self.errors:
            return f"recorded in {self.path} ({'; '.join(self.errors)})"
        return f"recorded in {self.path}"


def fallback_path(path: str, environ=None) -> str:
    """The user-state file that takes a project's spill when `.memhealth/` cannot: one per
    project, named by a hash of the project's state directory."""
    try:  # the builtin module: hashlib would load OpenSSL on the hook path
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover
        from hashlib import blake2b
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(state):  # the XDG spec: a relative value is invalid and ignored
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    key = blake2b(os.path.abspath(os.path.dirname(path)).encode("utf-8", "replace"),
                  digest_size=8).hexdigest()
    return os.path.join(state, "memhealth", "spill", f"{key}.ndjson")


def write_line(path: str, data: bytes) -> int:
    """Append `data` with one write (O_APPEND, O_NOFOLLOW, 0600); return the file's size after.

    A write cut short (a file-size limit, a full disk) leaves a fragment without its newline;
    the next line written after one starts with a newline of its own, so it lands whole
    instead of glued onto the fragment (both would be unreadable, the next row lost)."""
    fd = os.open(path, (APPEND_FLAGS & ~os.O_WRONLY) | os.O_RDWR, 0o600)  # read: the last byte
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = os.write(fd, data)
        if written != len(data):  # a short write is a full disk that did not say ENOSPC
            raise OSError(errno.ENOSPC, "short write")
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def append(path: str, record: dict) -> Where:
    """Append one JSON line to the spill; fall back to the user-state file, tagged with
    the cause; report truthfully where it went (never raises)."""
    errors: list[str] = []
    try:
        write_line(path, (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8"))
        return Where(path, errors, None)
    except OSError as exc:
        family, words = cause_of(exc)
        errors.append(f"{words} at {path}")
    fallback = fallback_path(path)
    tagged = {**record, "spill_cause": family, "spill_error": errors[0]}
    try:
        os.makedirs(os.path.dirname(fallback), mode=0o700, exist_ok=True)
        write_line(fallback, (json.dumps(tagged, default=str, ensure_ascii=False) + "\n").encode("utf-8"))
        return Where(fallback, errors, family)
    except OSError as exc:
        errors.append(f"{cause_of(exc)[1]} at {fallback}")
    return Where(None, errors, family)


def pending_files(path: str) -> list[str]:
    """The spill, its fallback and claimed files left by a drainer that died, that exist. A
    symbolic link standing where one should be holds no rows (nothing is written or read
    through it): it is not pending, so it cannot stop the reaping that follows a drain; the
    gate names it on its own (`planted_links`)."""
    import glob

    out = []
    for base in (path, fallback_path(path)):
        if os.path.lexists(base) and not os.path.islink(base):
            out.append(base)
        out.extend(glob.glob(glob.escape(base) + ".*.draining"))
    return out


def planted_links(path: str) -> list[str]:
    """The spill or its fallback where a symbolic link stands instead of the file."""
    return [p for p in (path, fallback_path(path)) if os.path.islink(p)]


def _pid_of_claim(claimed: str) -> int | None:
    try:
        return int(claimed.rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        return None


def drain(conn, path: str) -> int:
    """Move spilled rows (the spill, its fallback, claims of dead drainers) into the store;
    return how many. Each file is renamed first, so two draining processes never insert the
    same rows twice; a store that cannot take them gets them back, nothing is lost."""
    from memory_core.outbox.heartbeat import pid_alive

    total = 0
    for source in pending_files(path):
        if source.endswith(".draining"):
            pid = _pid_of_claim(source)
            if pid == os.getpid() or pid_alive(pid):
                continue  # another drainer is at work on it
            claimed = source
        else:
            claimed = f"{source}.{os.getpid()}.draining"
            try:
                if os.path.islink(source):  # a planted symlink is never read through
                    continue
                os.replace(source, claimed)
            except OSError:
                continue
        home = path if source.startswith(path) else fallback_path(path)
        total += _drain_claimed(conn, claimed, home)
    return total


def _drain_claimed(conn, claimed: str, home: str) -> int:
    try:
        fd = os.open(claimed, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return 0
    records = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            records.append(rec)
    try:
        with write(conn):
            for rec in records:
                _apply_spilled(conn, rec)
        os.unlink(claimed)
        return len(records)
    except (StoreError, OSError, KeyError, TypeError, ValueError):
        # the store cannot take them, or a line is not a row we know: put them back for the
        # next process (and a person to read); nothing is lost
        try:
            with open(claimed, "rb") as src:
                data = src.read()
            write_line(home, data)
            os.unlink(claimed)
        except OSError:
            pass  # the claim stays; the next drain picks it up once this pid is gone
        return 0


def _exists(conn, rec: dict) -> bool:
    """Whether this invocation's heartbeat is already stored (a drain that committed and
    died before removing its file must not insert it twice)."""
    return conn.execute(
        "SELECT 1 FROM heartbeats WHERE started_ns = ? AND hook = ? AND trace_id IS ? LIMIT 1",
        (rec["started_ns"], rec["hook"], rec.get("trace_id"))).fetchone() is not None


def _apply_spilled(conn, rec: dict) -> None:
    kind = rec.get("kind")
    if kind == "heartbeat":
        detail = rec.get("detail")
        if rec.get("spill_error"):  # the cause the gate names: why .memhealth/ refused the row
            detail = (f"spilled outside .memhealth/ ({rec.get('spill_cause')}): {rec['spill_error']}; "
                      f"{detail or ''}")
        hb_id = rec.get("id")
        if hb_id is not None:
            row = conn.execute("SELECT outcome FROM heartbeats WHERE id = ?", (hb_id,)).fetchone()
            if row is not None and row[0] is None:
                complete_row(conn, hb_id, rec["hook"], rec["started_ns"], rec["ended_ns"],
                             rec["outcome"], rec.get("reason"), detail)
                return
            if row is not None and row[0] == "killed":
                # reaped before this drain: the spilled completion is the truth (it ran)
                conn.execute("UPDATE heartbeats SET ended_ns = ?, outcome = ?, reason = ?, detail = ? "
                             "WHERE id = ?", (rec["ended_ns"], rec["outcome"], rec.get("reason"),
                                              (detail or "")[:500] or None, hb_id))
                return
            if row is not None:
                return  # already completed
        if _exists(conn, rec):
            return
        ref = rec.get("event_ref")
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns, event_ref) "
            "VALUES (?,?,?,?,?,?)",
            (rec["hook"], rec.get("session_id"), rec.get("pid"), rec.get("trace_id"), rec["started_ns"],
             ref if isinstance(ref, str) else None))
        complete_row(conn, cur.lastrowid, rec["hook"], rec["started_ns"], rec["ended_ns"],
                     rec["outcome"], rec.get("reason"), detail)
    elif kind == "decision":
        insert_decision(conn, rec["row"])
