"""Directory sources (docs, memory files): list, stat, re-read only what changed, replace.

    files, complete = discover(run, root, ["README.md", "docs", "*.md"], (".md",))
    sync_files(run, "docs", files, complete, parse, weight=10, report=rep)

A changed file's chunks are replaced in one transaction (delete by (source, path), insert,
save its watermark), so a reader never sees half a file and a crash never advances a
watermark past chunks that were not written. A file that vanished loses its chunks, but
only when the listing was complete: a listing cut short by the budget proves nothing.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable

from memory_core.ingest import store, watermark
from memory_core.ingest.base import BudgetExhausted, Run, SourceReport
from memory_core.ingest.chunking import Piece, content_hash
from memory_core.store.db import write
from memory_core.store.layout import SKIP_DIRS

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_LISTED = 500_000
BATCH_FILES = 200
BATCH_CHUNKS = 2000


class FileFailed(Exception):
    """A file could not be ingested this run; `reason` is the failure family."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def relpath(root: str, path: str) -> str:
    """Project-relative when inside the project, absolute otherwise."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, root)
    return absolute if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


LINK_OUTSIDE = "link_outside"  # the ingest_log reason of a file refused for where its link leads


def escapes(root: str, path: str) -> str | None:
    """Where `path` really leads when it is written inside the project but a symbolic link
    (of the file or of a directory above it) takes it outside; None otherwise. A link that
    stays inside the project is fine, and a path configured outside the project is the
    user's explicit choice, not a link to refuse."""
    written = os.path.abspath(path)
    base = os.path.abspath(root)
    if os.path.commonpath([written, base]) != base:
        return None
    real, real_base = os.path.realpath(written), os.path.realpath(base)
    return None if os.path.commonpath([real, real_base]) == real_base else real


def discover(run: Run, root: str, entries: list[str], suffixes: tuple[str, ...],
             max_depth: int = 32) -> tuple[dict[str, tuple[str, os.stat_result]], bool]:
    """Files named by `entries` (files, directories walked for `suffixes`, or globs).

    Returns ({relpath: (abspath, stat)}, complete). Listing stops (complete=False) past the
    run's deadline or MAX_LISTED entries, so a mistaken `docs = ["/"]` cannot hang a run."""
    found: dict[str, tuple[str, os.stat_result]] = {}
    visited = 0
    complete = True

    def add(path: str, st: os.stat_result) -> None:
        found.setdefault(relpath(root, path), (path, st))

    def walk(top: str, depth: int) -> None:
        nonlocal visited, complete
        stack = [(top, depth)]
        while stack:
            current, level = stack.pop()
            try:
                with os.scandir(current) as it:
                    entries_here = sorted(it, key=lambda e: e.name)
            except OSError:
                continue  # an unreadable subdirectory is not the whole source failing
            for entry in entries_here:
                visited += 1
                if visited > MAX_LISTED or (visited % 2048 == 0 and run.clock() > run.deadline):
                    complete = False
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if (level < max_depth and not entry.name.startswith(".")
                                and entry.name not in SKIP_DIRS):
                            stack.append((entry.path, level + 1))
                    elif entry.name.endswith(suffixes):
                        st = entry.stat()
                        if not _isdir(st):
                            add(entry.path, st)
                except OSError:
                    continue  # broken symlink, vanished file

    for entry in entries:
        if not entry:
            continue
        pattern = os.path.join(root, os.path.expanduser(entry))
        paths = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(entry) else [pattern]
        for path in paths:
            try:
                st = os.stat(path)
            except OSError:
                continue  # a configured path that does not exist (yet) is not an error
            if _isdir(st):
                walk(path, 0)
            elif not glob.has_magic(entry) or path.endswith(suffixes):
                add(path, st)
            if not complete:
                return found, False
    return found, complete


def _isdir(st: os.stat_result) -> bool:
    import stat

    return stat.S_ISDIR(st.st_mode)


def read_text(path: str, max_bytes: int = MAX_FILE_BYTES) -> tuple[str, str]:
    """(text, hash of the bytes); FileFailed with reason io | too_large | decode.

    Strict UTF-8 on purpose: a guessed decoding would store mojibake as memory. The file
    is logged and retried every run until it is fixed, and its old chunks stay meanwhile."""
    import stat

    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer forever (a hung
        # worker per SessionEnd, an ingest past its budget); a regular file ignores the flag
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise FileFailed("io", f"{type(exc).__name__}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileFailed("not_regular", "not a regular file (a FIFO, socket or device): never read")
        with os.fdopen(fd, "rb") as fh:
            fd = None
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise FileFailed("io", f"{type(exc).__name__}: {exc.strerror or exc}") from None
    finally:
        if fd is not None:
            os.close(fd)
    if len(data) > max_bytes:
        raise FileFailed("too_large", f"larger than {max_bytes} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileFailed("decode", f"not UTF-8 at byte {exc.start}: {exc.reason}") from None
    return text, content_hash(text)


Parser = Callable[[str, str], list[Piece]]


def sync_files(run: Run, source: str, files: dict[str, tuple[str, os.stat_result]],
               complete: bool, parse: Parser, weight: float, report: SourceReport) -> None:
    """Bring `source`'s chunks in line with `files`; raises BudgetExhausted past the deadline."""
    conn = run.conn
    marks = watermark.load(conn, source)
    # nothing outside the project is read through a link: refused every run (and named by
    # the gate), and what an older version indexed through it is dropped
    refused = {rel: target for rel, (path, _st) in files.items() if (target := escapes(run.root, path))}
    for rel, target in refused.items():
        del files[rel]
        if rel in marks:
            with write(conn):
                report.chunks_removed += store.delete_file(conn, source, rel)
                watermark.delete(conn, source, rel)
            del marks[rel]
        record_failure(run, source, rel, LINK_OUTSIDE,
                       f"{rel} is a symbolic link to {target}, outside the project: never read", report)
    report.files_seen = len(files)
    if complete:
        gone = [p for p in marks if p not in files]
        if gone:
            with write(conn):
                for path in gone:
                    report.chunks_removed += store.delete_file(conn, source, path)
                    watermark.delete(conn, source, path)
    changed = [(rel, path, st) for rel, (path, st) in files.items()
               if not watermark.unchanged(marks.get(rel), st)]
    batch: list[tuple[str, os.stat_result, list[Piece] | None, dict]] = []
    pending_chunks = 0
    try:
        for done, (rel, path, st) in enumerate(changed):
            run.check()
            run.tick(source, done, len(changed))
            read_ns = time.time_ns()
            mark = marks.get(rel)
            try:
                text, digest = read_text(path)
                same = mark is not None and mark.state.get("hash") == digest
                pieces = None if same else parse(text, rel)
            except FileFailed as exc:
                record_failure(run, source, rel, exc.reason, str(exc), report)
                continue
            except Exception as exc:  # a parser bug must cost one file, not the whole run
                record_failure(run, source, rel, "parse", f"{type(exc).__name__}: {exc}", report)
                continue
            state = {"hash": digest}
            if watermark.is_racy(st, read_ns):
                state["racy"] = True
            batch.append((rel, st, pieces, state))
            if pieces is not None:
                # only a real change counts as progress: re-hashing a racy but identical
                # file must not use up the one unit a tiny budget guarantees
                run.worked = True
            pending_chunks += len(pieces or ())
            if len(batch) >= BATCH_FILES or pending_chunks >= BATCH_CHUNKS:
                _flush(run, source, batch, weight, report)
                batch, pending_chunks = [], 0
    finally:
        if batch:
            _flush(run, source, batch, weight, report)
    run.tick(source, len(changed), len(changed))
    high, at_boundary = watermark.boundary({rel: st.st_mtime_ns for rel, (_, st) in files.items()})
    report.summary = {"high_mtime_ns": high, "at_boundary": at_boundary, "complete": complete}


def _flush(run: Run, source: str, batch, weight: float, report: SourceReport) -> None:
    added_all: list[tuple[int, str | None, str]] = []
    with write(run.conn):
        for rel, st, pieces, state in batch:
            if pieces is not None:
                report.chunks_removed += store.delete_file(run.conn, source, rel)
                added = store.insert(run.conn, source, rel, pieces, weight, run.now_ns)
                report.chunks_added += len(added)
                report.files_changed += 1
                added_all.extend(added)
            watermark.save(run.conn, source, rel, st.st_mtime_ns, st.st_size, None, state)


def record_failure(run: Run, source: str, path: str, reason: str, detail: str, report: SourceReport) -> None:
    report.errors += 1
    run.worked = True  # a failing file still counts as work done: the budget must move on
    store.log(run.conn, source, path, "error", reason, detail)


__all__ = ["LINK_OUTSIDE", "BudgetExhausted", "FileFailed", "discover", "escapes", "read_text", "record_failure", "relpath",
           "sync_files"]
