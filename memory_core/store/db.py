"""Open the per-project store: driver choice, pragmas, migrations (transactions: memory_core.store.tx).

    conn = connect(path)                 # WAL, busy_timeout, migrated to the latest schema
    with write(conn):                    # BEGIN IMMEDIATE ... COMMIT
        conn.execute("INSERT ...")

Driver: pyenv and python.org CPython builds often lack `enable_load_extension`, so
sqlite-vec cannot load through the stdlib module. pysqlite3-binary ships SQLite 3.51 with
extension loading and imports faster than the stdlib module; the stdlib module is the
fallback (vectors then work only if that build can load extensions).
"""

from __future__ import annotations

import os

try:  # pragma: no cover - which branch runs depends on the platform
    from pysqlite3 import dbapi2 as sqlite3

    DRIVER = "pysqlite3"
except ImportError:  # pragma: no cover
    import sqlite3  # type: ignore[no-redef]

    DRIVER = "sqlite3"

from memory_core.errors import StoreError, StoreLink, StoreNotFile, StoreShmDeleted
from memory_core.store.tx import classify, write  # noqa: F401  (write: the store's one transaction helper)

DEFAULT_BUSY_TIMEOUT_S = 5.0


def connect(path, *, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S, create: bool = True,
            migrate: bool = True):
    """Open (and create/migrate) the store at `path`; raise a StoreError subclass on failure."""
    path = os.fspath(path)
    refuse_links(path)
    if not create and not os.path.exists(path):
        err = StoreError(f"no database at {path}")
        err.reason = "db_missing"
        err.fix = ("`memhealth init` creates the store (put a backup of .memhealth/memory.db back first if "
                   "you have one); `memhealth ingest` refills it from your files")
        raise err
    new = not os.path.exists(path)
    if not new and os.path.exists(path + "-wal") and not os.path.exists(path + "-shm"):
        # a WAL without its index: a crash left it (SQLite rebuilds the index), or the -shm
        # was deleted under a live connection; only the second is a holder's open file
        shm_deleted(path)
    if not new and os.path.exists(path + "-shm") and not os.path.exists(path + "-wal"):
        # a WAL index without its WAL: the last connection to close removes both, so the -wal
        # was deleted under a live one. A connection opened now succeeds and its first write
        # fails "disk I/O error"; name the holder and the command that puts the file back
        err = wal_deleted(path)
        if err is not None:
            raise err
    old_umask = os.umask(0o077) if new else None  # state is readable by its owner only
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        if migrate:
            from memory_core.store.schema import ensure_schema

            if ensure_schema(conn) == 0:  # born here: give it an identity (a reset is noticed)
                from memory_core.store.identity import born

                born(conn, path)
    except sqlite3.Error as exc:
        err = classify(exc)
        if err.reason == "db_io":
            err = wal_deleted(path) or err
        raise err from exc
    finally:
        if old_umask is not None:
            os.umask(old_umask)
    return conn


STORE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def refuse_links(path: str) -> None:
    """Raise StoreLink when the database or one of its side files is a symbolic link, and
    StoreNotFile when the database is not a regular file. SQLite follows a link to the
    database (a hook would write into whatever store it names) and opens -wal and -shm by
    name; a state file is never a link, so nothing is followed, even inside the project."""
    import stat

    name = os.path.basename(path)
    where = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))), name)
    for suffix in STORE_SUFFIXES:
        try:
            st = os.lstat(path + suffix)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            from memory_core.store.repair import unlink_command  # a failure path: off the hook path

            try:
                target = os.readlink(path + suffix)
            except OSError:
                target = "?"
            dangling = "" if os.path.exists(path + suffix) else ", which does not exist"
            err = StoreLink(f"{name}{suffix} is a symbolic link to {target}{dangling}: the store never "
                            "follows a link (it would read and write another file, another project's "
                            "store among them)")
            err.fix = (f"remove the link (its target is not touched): `{unlink_command(where + suffix)}`"
                       + ("; then `memhealth init` creates this project's own store" if not suffix else ""))
            err.path = path + suffix
            raise err
        if not stat.S_ISREG(st.st_mode):
            # a -wal or -shm that is a directory or a FIFO is no WAL: SQLite fails to open it
            # ("unable to open", "disk I/O error"), which would name the wrong cause
            from memory_core.store.repair import aside_command

            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            err = StoreNotFile(f"{name}{suffix} is {kind}, not a " + ("database file" if not suffix else "SQLite side file"))
            err.fix = (f"move it aside: `{aside_command(where + suffix)}`"
                       + ("; then `memhealth init` creates the store and `memhealth ingest` refills it "
                          "from your files" if not suffix else "; SQLite creates its own on the next open"))
            err.path = path + suffix
            raise err


def shm_deleted(path: str) -> None:
    """Raise StoreShmDeleted when a process holds `<path>-shm` open after it was deleted."""
    holders = wal_holders(path, "-shm")
    if not holders:
        return
    from memory_core.store.repair import kill_command

    pid = holders[0][0]
    err = StoreShmDeleted(f"{os.path.basename(path)}-shm was deleted while process {pid} had the database "
                          "open: a new connection would keep a second WAL index beside that process's, "
                          "and rows written through one are lost when the other checkpoints; nothing "
                          "opens the store until it exits")
    err.fix = (f"stop process {pid} (`{kill_command(pid)}`; for `memhealth serve`, stop it and start it "
               "again): its rows are checkpointed as it exits, and the next hook drains what was spilled "
               "meanwhile")
    err.pid = pid
    raise err


def wal_holders(path: str, suffix: str = "-wal") -> list[tuple[int, int]]:
    """(pid, fd) of processes holding `<path><suffix>` open after it was deleted (Linux
    /proc; only processes this user may inspect). Called only when a file is already
    missing (a failure path, or a WAL without its index): it scans /proc."""
    target = os.path.abspath(path) + f"{suffix} (deleted)"
    found = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") == target:
                    found.append((int(pid), int(fd)))
            except OSError:
                continue
    return found


def wal_deleted(path: str) -> StoreError | None:
    """The StoreWalDeleted for a disk I/O error whose cause is a -wal file deleted while
    another process has the database open (SQLite then refuses new connections), with the
    command that puts it back from that process; None when that is not the cause."""
    from memory_core.errors import StoreWalDeleted
    from memory_core.store.repair import wal_restore_command

    holders = wal_holders(path)
    if not holders:
        return None
    pid, fd = holders[0]
    err = StoreWalDeleted(f"{os.path.basename(path)}-wal was deleted while process {pid} had the database "
                          f"open: rows committed since the last checkpoint live only in that process's "
                          f"open file")
    err.fix = (f"put it back before process {pid} exits: `{wal_restore_command(pid, fd, path + '-wal')}` (nothing "
               f"is lost); if it has exited, stop every process holding the database (`fuser {path}*`), "
               "move the -wal/-shm aside and accept the loss")
    err.pid, err.fd = pid, fd
    return err


def load_vec(conn) -> bool:
    """Load sqlite-vec into `conn` if it is not there yet; False (never raises) when this
    interpreter cannot. Asks the connection itself rather than caching by id(conn): a new
    connection can reuse a closed one's id."""
    try:
        conn.execute("SELECT vec_version()")
        return True
    except Exception:
        pass
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
        return True
    except Exception:  # AttributeError (no enable_load_extension), ImportError, load failure
        return False


def vec_unavailable_reason() -> str:
    """One line saying why sqlite-vec cannot load here, or '' when it can."""
    try:
        import sqlite_vec  # noqa: F401
    except ImportError:
        return "the sqlite-vec package is not installed in this interpreter"
    conn = sqlite3.connect(":memory:")
    try:
        if not hasattr(conn, "enable_load_extension"):
            return f"{DRIVER} was built without enable_load_extension"
        return "" if load_vec(conn) else "sqlite-vec failed to load"
    finally:
        conn.close()
