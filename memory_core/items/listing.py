"""What `memhealth cues`, `forget`, the console and the MCP server read about memory items.

    list_cues(conn, root, cfg)        # every item that can fire, its cues and their state
    audit_rows(conn, session_id)      # the newest cue audit rows
    find_item(conn, "wal-stall")      # (id, name, path) by id, name or memory file path
"""

from __future__ import annotations

import json
import os
import re
import time


def project_files(root: str, limit: int = 200_000) -> list[str]:
    """Project-relative files, skipping hidden and dependency directories (for staleness)."""
    from memory_core.store.layout import SKIP_DIRS

    out: list[str] = []
    stack = [root]
    while stack and len(out) < limit:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in SKIP_DIRS:
                        stack.append(entry.path)
                elif entry.is_file():
                    out.append(os.path.relpath(entry.path, root).replace(os.sep, "/"))
            except OSError:
                continue
    return out


def list_cues(conn, root: str, cfg: dict, now_ns: int | None = None) -> list[dict]:
    """Every item that can fire (pinned, or with a trigger), with its cues and their state:
    active | expired | inactive: why | stale: no file matches its paths any more."""
    from memory_core.delivery.cue_semantic import semantic_inactive_reason
    from memory_core.delivery.cues import STOP_INACTIVE

    now_ns = now_ns or time.time_ns()
    cues_of: dict[int, list[tuple]] = {}
    for item_id, trigger, pattern, compiled in conn.execute(
            "SELECT item_id, trigger, pattern, compiled FROM cues ORDER BY id"):
        cues_of.setdefault(item_id, []).append((trigger, pattern, compiled))
    files = None
    last = {item_id: (ts, n) for item_id, ts, n in conn.execute(
        "SELECT item_id, max(ts_ns), count(*) FROM cue_audit WHERE outcome = 'fired' AND item_id IS NOT NULL "
        "GROUP BY item_id")}
    out = []
    for (item_id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns, errors) in conn.execute(
            "SELECT id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns, errors "
            "FROM memory_items ORDER BY id"):
        triggers = cues_of.get(item_id, [])
        if not pinned and not triggers and not errors:
            continue  # a plain memory file: nothing can fire, nothing is wrong
        expired = expires_ns is not None and expires_ns <= now_ns
        rows = []
        if pinned:
            rows.append({"trigger": "pinned", "pattern": "session start", "state": "expired" if expired else "active"})
        for trigger, pattern, compiled in triggers:
            state = "expired" if expired else "active"
            if not expired and trigger == "semantic":
                why = semantic_inactive_reason(cfg, compiled)
                state = f"inactive: {why}" if why else "active"
            elif not expired and trigger == "event" and pattern == "stop":
                state = f"inactive: {STOP_INACTIVE}"
            elif not expired and trigger == "path":
                if files is None:
                    files = project_files(root)
                rx = re.compile(compiled)
                if not any(rx.match(f) for f in files):
                    state = "stale: no file matches its paths any more"
            rows.append({"trigger": "event" if trigger == "event" else trigger, "pattern": pattern, "state": state})
        fired = last.get(item_id)
        out.append({"id": item_id, "name": name, "kind": kind, "scope": scope, "path": path, "line": line,
                    "pinned": bool(pinned), "expires_ns": expires_ns, "recorded_ns": recorded_ns,
                    "errors": json.loads(errors) if errors else [], "cues": rows,
                    "fired": fired[1] if fired else 0, "last_fired_ns": fired[0] if fired else None})
    return out


def audit_rows(conn, session_id: str | None = None, limit: int = 100) -> list[dict]:
    """The newest audit rows (newest last), optionally for one session."""
    sql = ("SELECT a.ts_ns, a.session_id, a.event, a.trigger, a.item_id, m.name, a.outcome, a.reason, a.epoch, "
           "a.detail FROM cue_audit a LEFT JOIN memory_items m ON m.id = a.item_id")
    params: list = []
    if session_id:
        sql += " WHERE a.session_id = ?"
        params.append(session_id)
    sql += " ORDER BY a.id DESC LIMIT ?"
    params.append(limit)
    keys = ("ts_ns", "session_id", "event", "trigger", "item_id", "item", "outcome", "reason", "epoch", "detail")
    return [dict(zip(keys, row, strict=True)) for row in reversed(conn.execute(sql, params).fetchall())]


def find_item(conn, ident: str) -> tuple[int, str, str] | None:
    """(id, name, path) of the item named by an id, a name or a memory file path."""
    row = None
    if ident.isdigit():
        row = conn.execute("SELECT id, name, path FROM memory_items WHERE id = ?", (int(ident),)).fetchone()
    if row is None:
        row = conn.execute("SELECT id, name, path FROM memory_items WHERE name = ? OR path = ? ORDER BY id LIMIT 1",
                           (ident, ident.replace(os.sep, "/"))).fetchone()
    return tuple(row) if row else None
