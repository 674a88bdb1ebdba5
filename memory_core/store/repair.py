"""The shell command that clears (or, for a live holder, shows) each store failure, built once:
the gate's FIX prose quotes it, and `memhealth serve --all` prints it, run from the project's
directory, as the FIX of a project it cannot read.

    readonly_command()                     # chmod u+rwx .memhealth && chmod u+rw .memhealth/memory.db*
    lock_holders("/p/.memhealth/memory.db")  # [(pid, "python worker.py")]: who holds its write lock
    holders_command(".memhealth/memory.db")  # fuser .memhealth/memory.db

Commands name paths relative to the project's directory unless given absolute ones, so the
gate (run in the project) and serve (which prefixes `cd DIR &&`) print the same words.
"""

from __future__ import annotations

import os
import re

STATE_DIR = ".memhealth"
DB = f"{STATE_DIR}/memory.db"
# SQLite's WAL index keeps its locks on bytes 120..127 of the -shm (WRITE, CKPT, RECOVER, the
# read marks) and the rollback-journal locks on the database file itself (sqlite.org/walformat.html)
_SIDE = ("", "-shm")


def readonly_command(state_dir: str = STATE_DIR) -> str:
    """Make the state directory and the store writable by their owner; the glob covers -wal and
    -shm, which SQLite creates with the database's mode. Left unquoted for the glob: callers
    quote an absolute `state_dir` themselves."""
    return f"chmod u+rwx {state_dir} && chmod u+rw {state_dir}/memory.db*"


def holders_command(db: str = DB) -> str:
    """The command that lists the processes holding the store open (psmisc's fuser)."""
    return f"fuser {db}"


def unlink_command(path: str) -> str:
    """Remove a store file that is a symbolic link (its target is not touched)."""
    return f"rm {path}"


def aside_command(path: str) -> str:
    """Move a store file that is not a regular file aside, keeping it for a look."""
    return f"mv {path} {path}.aside"


def kill_command(pid: int) -> str:
    """End the process that holds a deleted -shm: its rows are checkpointed as it exits."""
    return f"kill {pid}"


def wal_restore_command(pid: int, fd: int, wal: str) -> str:
    """Copy a deleted -wal back from the process that still holds it open."""
    return f"cp /proc/{pid}/fd/{fd} {wal}"


def disk_command(state_dir: str = STATE_DIR) -> str:
    """What shows a disk I/O error's cause: the filesystem's space and the kernel's last words."""
    return f"df -h {state_dir} && dmesg | tail -n 20"


def lock_holders(path: str, exclude: int | None = None) -> list[tuple[int, str]]:
    """(pid, command line) of the processes holding a write lock on the store at `path` (the
    database file or its WAL index), read from /proc/locks (Linux); [] when none is visible.
    `exclude`: a pid not to name (the caller itself)."""
    inodes = set()
    for suffix in _SIDE:
        try:
            st = os.stat(path + suffix)
        except OSError:
            continue
        inodes.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    pids: list[int] = []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    for line in lines:
        # "1: POSIX  ADVISORY  WRITE 31024 fe:00:2385662 120 120" ("->" marks a waiter)
        parts = line.split()
        if len(parts) < 8 or "->" in parts or parts[3] != "WRITE":
            continue
        try:
            pid = int(parts[4])
            major, minor, ino = parts[5].split(":")
            key = (int(major, 16), int(minor, 16), int(ino))
        except ValueError:
            continue
        if key in inodes and pid != exclude and pid not in pids:
            pids.append(pid)
    return [(pid, command_line(pid)) for pid in pids]


def command_line(pid: int, limit: int = 100) -> str:
    """A process's command line on one printable line ('?' when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return "?"
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    text = re.sub(r"[^\x20-\x7e]", " ", text).strip() or "?"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def holders_text(holders: list[tuple[int, str]]) -> str:
    """'pid 123 (python worker.py)' for each holder, or what is known when none is visible."""
    if not holders:
        return "a process this user cannot see (or one that has just let go)"
    return ", ".join(f"pid {pid} ({args})" for pid, args in holders)
