"""The spill: rows a process could not write to the store (locked past busy_timeout,
read-only, corrupt) wait in `.memhealth/spill.ndjson` until a process that can write the
store drains them. A failure is recorded, never lost.

    if not append(path, {"kind": "heartbeat", ...}): ...  # False only if even this failed
    drain(conn, path)                                      # next process that can write
"""

from __future__ import annotations

import json
import os

from memory_core.errors import StoreError
from memory_core.heartbeat import complete_row
from memory_core.outbox import insert_decision
from memory_core.tx import write


def append(path: str, record: dict) -> bool:
    """Append one JSON line to the spill file (0600); False if even that fails."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def drain(conn, path: str) -> int:
    """Move spilled rows into the store; return how many. The file is renamed first, so two
    draining processes never insert the same rows twice."""
    if not os.path.exists(path):
        return 0
    claimed = f"{path}.{os.getpid()}.draining"
    try:
        os.replace(path, claimed)
    except OSError:
        return 0
    try:
        with open(claimed, "rb") as fh:
            lines = fh.read().decode("utf-8", "replace").splitlines()
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
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
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "ab") as dst:
                dst.write(data)
            os.unlink(claimed)
        except OSError:
            pass
        return 0


def _apply_spilled(conn, rec: dict) -> None:
    kind = rec.get("kind")
    if kind == "heartbeat":
        hb_id = rec.get("id")
        if hb_id is not None:
            row = conn.execute("SELECT outcome FROM heartbeats WHERE id = ?", (hb_id,)).fetchone()
            if row is not None and row[0] is None:
                complete_row(conn, hb_id, rec["hook"], rec["started_ns"], rec["ended_ns"],
                          rec["outcome"], rec.get("reason"), rec.get("detail"))
                return
            if row is not None:
                return  # already completed or reaped
        cur = conn.execute(
            "INSERT INTO heartbeats(hook, session_id, pid, trace_id, started_ns) VALUES (?,?,?,?,?)",
            (rec["hook"], rec.get("session_id"), rec.get("pid"), rec.get("trace_id"), rec["started_ns"]))
        complete_row(conn, cur.lastrowid, rec["hook"], rec["started_ns"], rec["ended_ns"],
                  rec["outcome"], rec.get("reason"), rec.get("detail"))
    elif kind == "decision":
        insert_decision(conn, rec["row"])
