"""Append-only files (ledgers, transcripts): read from a byte offset, complete lines only.

    sync_appends(run, "ledger", files, parse_lines, weight=30, report=rep)

- Only bytes up to the last newline are consumed. A last line without one is a write in
  progress (Claude Code ends every record with "\\n"); it is read once it is complete.
- A file that shrank below its offset, was replaced (new inode), or whose first bytes no
  longer match is re-read from 0 and its old chunks are replaced (truncation, rotation,
  rewrite). Growth past the old offset alone does not hide a rewrite: the head is compared.
- A line longer than a step (a screenshot pasted with a prompt is one multi-megabyte
  base64 record) is read whole up to MAX_LINE_BYTES; beyond that it is counted malformed.
- Each step of at most STEP_BYTES is one transaction: chunks + the advanced offset. The
  budget is checked between steps, so a 500 MB transcript resumes where it stopped.
- A file that disappears keeps its chunks: Claude Code deletes transcripts after
  cleanupPeriodDays (30 by default), and outliving that is what a memory is for.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

from memory_core.errors import MemoryCoreError
from memory_core.ingest import store, watermark
from memory_core.ingest.base import BudgetExhausted, Run, SourceReport
from memory_core.ingest.chunking import Piece
from memory_core.ingest.filesource import record_failure
from memory_core.store.db import write

STEP_BYTES = 4 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 1024

# parse(lines, first_line_number, rel, state) -> (pieces, malformed, filtered); it may keep
# per-file facts in `state` (a JSON object persisted with the watermark).
LineParser = Callable[[list[bytes], int, str, dict], tuple[list[Piece], int, int]]


def _head(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def sync_appends(run: Run, source: str, files: dict[str, tuple[str, os.stat_result]],
                 parse: LineParser, weight: float, report: SourceReport) -> None:
    """Consume new complete lines of every changed file; raises BudgetExhausted."""
    marks = watermark.load(run.conn, source)
    report.files_seen = len(files)
    # "more": the last run stopped between steps (budget), so unread lines remain even
    # though the stat matches what was saved.
    changed = [(rel, path, st) for rel, (path, st) in files.items()
               if not watermark.unchanged(marks.get(rel), st) or marks[rel].state.get("more")]
    for done, (rel, path, _st) in enumerate(changed):
        run.check()
        run.tick(source, done, len(changed))
        try:
            _sync_one(run, source, rel, path, marks.get(rel), parse, weight, report)
        except OSError as exc:
            record_failure(run, source, rel, "io", f"{type(exc).__name__}: {exc.strerror or exc}", report)
        except BudgetExhausted:
            raise
        except Exception as exc:  # a parser bug must cost one file, not the whole run
            if isinstance(exc, MemoryCoreError):
                raise  # the store itself failed: no per-file retry will help this run
            record_failure(run, source, rel, "parse", f"{type(exc).__name__}: {exc}", report)
    run.tick(source, len(changed), len(changed))


def _sync_one(run: Run, source: str, rel: str, path: str, mark, parse: LineParser,
              weight: float, report: SourceReport) -> None:
    with open(path, "rb") as fh:
        # The stat saved is the one taken before reading: growth during the read then shows
        # up as a mismatch next run, never as bytes we claim to have seen.
        st = os.fstat(fh.fileno())
        offset = (mark.offset or 0) if mark else 0
        state = dict(mark.state) if mark else {}
        reset = False
        if mark is not None and offset:
            if st.st_size < offset:
                reset = True
            elif state.get("ino") not in (None, st.st_ino):
                reset = True
            elif state.get("head"):
                fh.seek(0)
                if _head(fh.read(int(state.get("head_len", HEAD_BYTES)))) != state["head"]:
                    reset = True
        if reset:
            offset, state = 0, {}
        line_no = int(state.get("line", 0))
        replace = reset
        consumed_any = False
        while True:
            if consumed_any:
                run.check()
            fh.seek(offset)
            data = fh.read(STEP_BYTES)
            if not data:
                break
            end = data.rfind(b"\n")
            malformed = filtered = 0
            if end < 0:
                if len(data) < STEP_BYTES:
                    break  # a partial last line: not consumed until it is complete
                line_end = _line_end(fh, offset + len(data))
                if line_end is None:
                    break  # a long record still being written
                new_offset = line_end
                if new_offset - offset <= MAX_LINE_BYTES:
                    # a pasted screenshot is a multi-megabyte base64 line that also holds
                    # the prompt typed with it: read the whole line rather than lose it
                    fh.seek(offset)
                    lines = [fh.read(new_offset - offset - 1)]
                else:
                    lines, malformed = [], 1
            else:
                new_offset = offset + end + 1
                lines = data[:end].split(b"\n")
            pieces: list[Piece] = []
            if lines:
                pieces, bad, filtered = parse(lines, line_no + 1, rel, state)
                malformed += bad
            line_no += len(lines) + (1 if not lines else 0)
            if offset == 0:
                head = data[:min(HEAD_BYTES, new_offset)]
                state["head"], state["head_len"] = _head(head), len(head)
            state["ino"] = st.st_ino
            state["line"] = line_no
            state["more"] = len(data) >= STEP_BYTES
            state["malformed"] = int(state.get("malformed", 0)) + malformed
            state["filtered"] = int(state.get("filtered", 0)) + filtered
            with write(run.conn):
                if replace:
                    report.chunks_removed += store.delete_file(run.conn, source, rel)
                    replace = False
                added = store.insert(run.conn, source, rel, pieces, weight, run.now_ns)
                watermark.save(run.conn, source, rel, st.st_mtime_ns, st.st_size, new_offset, state)
            if not consumed_any:
                report.files_changed += 1
            consumed_any = True
            run.worked = True
            report.chunks_added += len(added)
            report.malformed += malformed
            report.filtered += filtered
            offset = new_offset
        if consumed_any and state.get("more"):
            state["more"] = False  # the last full step ended exactly at the end of the file
            with write(run.conn):
                watermark.save(run.conn, source, rel, st.st_mtime_ns, st.st_size, offset, state)
        if not consumed_any:
            # Nothing complete to read (a partial line grew): remember the stat so the next
            # no-op run takes the fast path; the offset stays before the partial line.
            state["more"] = False
            with write(run.conn):
                if replace:
                    report.chunks_removed += store.delete_file(run.conn, source, rel)
                if reset:
                    state = {"ino": st.st_ino, "line": 0}
                watermark.save(run.conn, source, rel, st.st_mtime_ns, st.st_size, offset, state)


def _line_end(fh, pos: int) -> int | None:
    """Offset just past the next newline at or after `pos`, or None at EOF. Lines longer
    than MAX_LINE_BYTES are skipped as malformed, so memory use stays bounded."""
    fh.seek(pos)
    while True:
        data = fh.read(STEP_BYTES)
        if not data:
            return None
        nl = data.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(data)
