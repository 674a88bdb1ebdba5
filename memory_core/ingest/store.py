"""Chunk rows and ingest_log rows: the only writes the ingesters make besides watermarks.

Every stored string goes through memory_core.text.clean (NUL breaks FTS5; lone surrogates
cannot be encoded). Callers hold the write transaction; `log` opens its own.
"""

from __future__ import annotations

import json
import re
import time

from memory_core.ingest.chunking import Piece, content_hash
from memory_core.store.db import write
from memory_core.text import clean

# ANSI CSI/OSC sequences (colours in command output): clean() would leave "[31m" glued to
# the next word, and FTS would index "31mred" instead of "red".
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?)")


def tidy(text: str) -> str:
    """clean() plus ANSI escape removal: the hygiene every stored string gets."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return clean(text)


_INSERT = ("INSERT OR IGNORE INTO chunks(source, path, line_start, line_end, kind, title, content, "
           "content_hash, signal_weight, attrs, created_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?)")


def insert(conn, source: str, path: str, pieces: list[Piece], weight: float,
           now_ns: int) -> list[tuple[int, str | None, str]]:
    """Insert `pieces`; return (chunk id, title, content) for each row actually inserted.

    OR IGNORE: the dedup index (source, path, content_hash, line_start) turns a re-read of
    the same record into a no-op instead of a duplicate or an aborted batch."""
    path = clean(path)
    added: list[tuple[int, str | None, str]] = []
    execute = conn.execute
    for p in pieces:
        content = tidy(p.content)
        if not content.strip():
            continue
        title = tidy(p.title) if p.title else None
        attrs = clean(json.dumps(p.attrs, ensure_ascii=False, separators=(",", ":"), default=str)) \
            if p.attrs else None
        cur = execute(_INSERT, (source, path, p.line_start, p.line_end,
                                clean(p.kind) if p.kind else None, title, content,
                                content_hash(content), weight, attrs, now_ns))
        if cur.rowcount == 1:
            added.append((cur.lastrowid, title, content))
    return added


def delete_file(conn, source: str, path: str) -> int:
    """Delete a file's chunks (and their vectors, when the vector table exists); return how many.

    Vectors go in the same transaction: chunk ids can be reused once the highest rows are
    deleted (no AUTOINCREMENT), and a stale vector would then describe a different chunk."""
    ids = [row[0] for row in conn.execute(
        "SELECT id FROM chunks WHERE source = ? AND path = ?", (source, clean(path)))]
    if not ids:
        return 0
    from memory_core.ingest.vectorize import drop_vectors

    drop_vectors(conn, ids)
    conn.execute("DELETE FROM chunks WHERE source = ? AND path = ?", (source, clean(path)))
    return len(ids)


def log(conn, source: str, path: str | None, outcome: str, reason: str | None = None,
        detail: str | dict | None = None, chunks: int = 0) -> None:
    """One ingest_log row (outcome ok | error | budget), in its own transaction."""
    if isinstance(detail, dict):
        detail = json.dumps(detail, ensure_ascii=False, separators=(",", ":"), default=str)
    with write(conn):
        conn.execute(
            "INSERT INTO ingest_log(ts_ns, source, path, outcome, reason, detail, chunks) "
            "VALUES (?,?,?,?,?,?,?)",
            (time.time_ns(), source, clean(path) if path else None, outcome, reason,
             clean(detail)[:2000] if detail else None, chunks))


def failures_since(conn, since_ns: int, limit: int = 3) -> list[tuple[str | None, str | None, str | None]]:
    """(path, reason, detail) of the ingest_log errors written since `since_ns`, oldest first:
    what a run that failed files names in its heartbeat."""
    return conn.execute("SELECT path, reason, detail FROM ingest_log WHERE outcome = 'error' AND ts_ns >= ? "
                        "ORDER BY id LIMIT ?", (since_ns, limit)).fetchall()
