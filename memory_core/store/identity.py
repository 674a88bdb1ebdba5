"""The store's identity: a random id kept both in the database (meta `store.id`) and in a
sidecar file beside it (`.memhealth/store-id`). A database born empty where the sidecar
names another store is a store reset — a truncated file SQLite silently reopened as new, a
deleted one recreated — and the history before it is gone. The reset is recorded in meta
and the gate says it once.

    born(conn, db_path)          # memory_core.store.db.connect, when it created the schema
    pending_reset(conn)          # {"previous": {...}, "ts_ns": ...} until acknowledged
"""

from __future__ import annotations

import json
import os
import time

from memory_core.store.layout import STORE_ID_NAME
from memory_core.store.meta import get_meta, set_meta
from memory_core.store.tx import write

META_ID = "store.id"
META_RESET = "store.reset"
META_RESET_SAID = "store.reset_said"


def sidecar_path(db_path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(db_path)), STORE_ID_NAME)


def read_sidecar(db_path: str) -> dict | None:
    try:
        fd = os.open(sidecar_path(db_path), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read(4096))
        return data if isinstance(data, dict) and isinstance(data.get("id"), str) else None
    except (OSError, ValueError):
        return None


def _write_sidecar(db_path: str, record: dict) -> None:
    path = sidecar_path(db_path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # best effort: without the sidecar a later reset goes unnoticed, nothing breaks


def born(conn, db_path: str) -> None:
    """Give a database whose schema was just created its identity; record a reset when the
    sidecar names a store that existed before it. Best effort, never raises."""
    now = time.time_ns()
    record = {"id": os.urandom(8).hex(), "created_ns": now}
    previous = read_sidecar(db_path)
    try:
        with write(conn):
            if get_meta(conn, META_ID) is not None:
                return  # another process created the schema at the same moment and named it
            set_meta(conn, META_ID, json.dumps(record))
            if previous is not None:
                set_meta(conn, META_RESET, json.dumps({"previous": previous, "ts_ns": now}))
    except Exception:
        return
    _write_sidecar(db_path, record)


def adopt(conn, db_path: str) -> None:
    """A store older than identities gets one (and its sidecar), once."""
    if get_meta(conn, META_ID) is not None:
        return
    record = {"id": os.urandom(8).hex(), "created_ns": time.time_ns()}
    with write(conn):
        set_meta(conn, META_ID, json.dumps(record))
    if read_sidecar(db_path) is None:
        _write_sidecar(db_path, record)


def pending_reset(conn) -> dict | None:
    """The recorded reset the gate has not said yet, or None."""
    raw = get_meta(conn, META_RESET)
    if raw is None or get_meta(conn, META_RESET_SAID) == raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def reset_said(conn) -> None:
    with write(conn):
        set_meta(conn, META_RESET_SAID, get_meta(conn, META_RESET) or "")
