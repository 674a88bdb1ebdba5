"""The code index: every tracked source file parsed with tree-sitter, read from git's tree.

    ingest_code(run, report)    # [ingest].code globs, code_exclude, code_max_bytes

What it writes (migration 9): `code_files` one row per file with its git blob and status,
`code_defs` its definitions (path, line span, signature, doc, kind, component, rank),
`code_refs` how often each defined name occurs in each file, and meta `code.commit`, the
commit the index was read at. The read side is memory_core.index.code.

Incremental by git blob: the listing is `git ls-tree -r -l HEAD` (blob id and size per
path), so a file whose blob did not change is never read or parsed again, a path that left
the tree loses its rows, and a file that fails (a syntax error tree-sitter reports, a
grammar that will not load) is recorded with status `failed` and its error, while ingest
goes on. What is indexed is the commit, not the working tree: the index says "read from
the code at <commit>", and an edit in progress is not yet what exists.

Languages are data: each `queries/<lang>.scm` names its file extensions and grammars in a
header and captures `@definition.<kind>` and `@name` (aider's and tree-sitter's tags
convention); adding a language is adding one such file. Parsing imports `tree_sitter`
and `tree_sitter_language_pack` inside this module's functions only: the ingest package is
imported by hooks, which must stay cheap (the import budget test in tests/memhealth/test_cli.py).

Mentions (`code_refs`) rank definitions the way aider's repo map ranks tags
(memory_core.ingest.code_refs); the tree and its blobs are read through git
(memory_core.ingest.code_git).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from dataclasses import dataclass

from memory_core.index.code import META_COMMIT, META_INDEXED_NS
from memory_core.ingest.base import Run, SourceReport
from memory_core.ingest.code_git import (
    BlobReader,
    CodeUnavailable,
    Entry,
    head_commit,
    is_vendored,
    list_tree,
    matcher,
)
from memory_core.ingest.code_parse import (
    Definition,
    Language,
    detect_generated,
    extract,
    load_languages,
    name_words,
    parser_key,
    readme_definition,
)
from memory_core.ingest.code_refs import BATCH_FILES, Delta, update_refs
from memory_core.store.db import write
from memory_core.store.meta import get_meta, set_meta

META_PARSER = "code.parser"          # queries + library versions: a change re-parses every file
META_SCOPE = "code.scope"            # the config's globs and size cap the index was listed with

CALL_TIMEOUT_S = 120.0
# A run that changed at most this many files (after a complete one) looks up only the names
# it touched; more, and loading every defined name once is cheaper.
TARGETED_MAX_FILES = 200
README_NAMES = ("readme.md", "readme.rst", "readme.txt", "readme")


# ---------------------------------------------------------------------------------------------
# the source


@dataclass
class CodeStats:
    """What one run did, for the report's `code` block and the span."""

    commit: str = ""
    files: int = 0
    parsed: int = 0
    failed: int = 0
    skipped: int = 0
    removed: int = 0
    vendored: int = 0
    defs_added: int = 0
    defs_removed: int = 0
    refs_files: int = 0
    new_names: int = 0
    complete: bool = False

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def ingest_code(run: Run, report: SourceReport, parse_hook=None) -> None:
    """Bring the code index in line with HEAD; raises BudgetExhausted past the deadline.

    `parse_hook(path)` is called before each file is parsed (tests count parses with it)."""
    cfg = run.cfg["ingest"]
    patterns = list(cfg.get("code", ["**"]))
    stats = CodeStats()
    report.extra = stats.to_dict()
    if not patterns:
        report.notes.append("code indexing disabled in config ([ingest].code = [])")
        return
    timeout = min(CALL_TIMEOUT_S, max(run.remaining_s(), 10.0))
    try:
        commit = head_commit(run.root, min(timeout, 10.0))
    except CodeUnavailable as exc:
        report.notes.append(str(exc))
        return
    conn = run.conn
    stats.commit = commit
    try:
        languages = load_languages()
        key = parser_key(languages)
    except (OSError, ValueError) as exc:
        report.errors += 1
        from memory_core.ingest import store
        store.log(conn, "code", None, "error", "queries", f"{type(exc).__name__}: {exc}")
        return
    scope = hashlib.sha256(json.dumps([patterns, list(cfg.get("code_exclude", [])),
                                       int(cfg.get("code_max_bytes", 0))]).encode()).hexdigest()[:16]
    if (get_meta(conn, META_COMMIT) == commit and get_meta(conn, META_PARSER) == key
            and get_meta(conn, META_SCOPE) == scope):
        stored = conn.execute("SELECT count(*) FROM code_files").fetchone()[0]
        stats.files, stats.complete = stored, True
        report.files_seen = stored
        report.extra = stats.to_dict()
        return  # the fast path: nothing committed since the index was read
    try:
        tree = list_tree(run.root, commit, timeout)
    except subprocess.TimeoutExpired:
        _fail(run, report, "timeout", f"git ls-tree did not finish within {timeout:.0f} s")
        return
    except (CodeUnavailable, OSError) as exc:
        _fail(run, report, "git", str(exc))
        return

    include = matcher(patterns)
    exclude = matcher(list(cfg.get("code_exclude", [])))
    max_bytes = int(cfg.get("code_max_bytes", 1_048_576))
    wanted: dict[str, tuple[Entry, Language | None]] = {}
    code_dirs: set[str] = set()
    readmes: list[Entry] = []
    for mode, path, blob, size in tree:
        if mode not in ("100644", "100755"):
            if mode in ("120000", "commit"):
                stats.vendored += 1  # symlinks and submodules are not this tree's code
            continue
        if not include(path) or exclude(path):
            continue
        base = path.rsplit("/", 1)[-1]
        if base.lower() in README_NAMES:
            readmes.append(Entry(path, blob, size))
            continue
        ext = os.path.splitext(base)[1].lower()
        lang = languages.get(ext)
        if lang is None:
            continue
        if is_vendored(path):
            stats.vendored += 1
            continue
        wanted[path] = (Entry(path, blob, size), lang)
        d = os.path.dirname(path)
        while d and d not in code_dirs:
            code_dirs.add(d)
            d = os.path.dirname(d)
    for entry in readmes:
        d = os.path.dirname(entry.path)
        if d and d in code_dirs and not is_vendored(entry.path):
            wanted[entry.path] = (entry, None)
    stats.files = len(wanted)
    report.files_seen = len(wanted)

    if get_meta(conn, META_PARSER) != key:
        # new queries or libraries: every file is parsed again, and a run cut short by the
        # budget resumes that (the stored blobs are forgotten here, not at the end)
        with write(conn):
            conn.execute("UPDATE code_files SET blob = ''")
            set_meta(conn, META_PARSER, key)
    rescope = get_meta(conn, META_SCOPE) != scope
    known = {p: (b if not (rescope and st == "skipped") else "", st)  # a new size cap: look again
             for p, b, st in conn.execute("SELECT path, blob, status FROM code_files")}
    # mentions were complete before this run (no run cut short since): a small change can be
    # counted from the names it touches instead of from every defined name
    refs_were_complete = conn.execute(
        "SELECT 1 FROM code_files WHERE lang != 'readme' AND status != 'skipped' AND "
        "(refs_blob IS NULL OR refs_blob != blob) LIMIT 1").fetchone() is None
    delta = Delta()
    gone = [p for p in known if p not in wanted]
    if gone:
        with write(conn):
            for path in gone:
                stats.defs_removed += _delete_path(conn, path, delta)
        stats.removed = len(gone)
    changed = [(e, lang) for path, (e, lang) in wanted.items()
               if known.get(path, (None,))[0] != e.blob]
    parsers: dict[str, object] = {}
    batch: list[tuple[Entry, Language | None, str, str | None, list[Definition]]] = []
    try:
        with BlobReader(run.root) as read:
            for done, (entry, lang) in enumerate(changed):
                run.check()
                run.tick("code", done, len(changed))
                batch.append(_parse_one(entry, lang, read, parsers, max_bytes, parse_hook, stats))
                run.worked = True
                if len(batch) >= BATCH_FILES:
                    _flush(run, batch, stats, delta)
                    batch = []
    finally:
        if batch:
            _flush(run, batch, stats, delta)
        report.files_changed = stats.parsed + stats.failed + stats.skipped
        report.extra = stats.to_dict()
    run.tick("code", len(changed), len(changed))
    update_refs(run, commit, wanted, stats, timeout, delta,
                 targeted=refs_were_complete and len(changed) <= TARGETED_MAX_FILES)
    with write(conn):
        set_meta(conn, META_COMMIT, commit)
        set_meta(conn, META_SCOPE, scope)
        set_meta(conn, META_INDEXED_NS, time.time_ns())
    stats.complete = True
    report.extra = stats.to_dict()
    report.summary = {"commit": commit, "complete": True}


def _parse_one(entry: Entry, lang: Language | None, read, parsers: dict, max_bytes: int,
               parse_hook, stats: CodeStats):
    """(entry, lang, status, error, defs) for one changed file; never raises for the file."""
    lang_name = lang.name if lang is not None else "readme"
    if entry.size > max_bytes:
        stats.skipped += 1
        return entry, lang, "skipped", f"larger than {max_bytes} bytes ({entry.size})", []
    try:
        data = read(entry.blob)
    except OSError as exc:
        stats.failed += 1
        return entry, lang, "failed", f"read: {exc}", []
    if lang is None:
        stats.parsed += 1
        return entry, lang, "ok", None, [readme_definition(data, entry.path)]
    why = detect_generated(data, entry.path)
    if why:
        stats.skipped += 1
        return entry, lang, "skipped", why, []
    grammar = lang.grammars[os.path.splitext(entry.path)[1].lower()]
    try:
        parser = parsers.get(grammar)
        if parser is None:
            from tree_sitter_language_pack import get_parser

            parser = parsers[grammar] = get_parser(grammar)
        if parse_hook is not None:
            parse_hook(entry.path)
        parsed = extract(data, entry.path, lang, grammar, parser)
    except Exception as exc:  # a grammar or query failure costs this file, not the run
        stats.failed += 1
        return entry, lang, "failed", f"{lang_name}: {type(exc).__name__}: {exc}"[:300], []
    if parsed.error:
        stats.failed += 1
        return entry, lang, "failed", parsed.error, parsed.defs
    stats.parsed += 1
    return entry, lang, "ok", None, parsed.defs



def _delete_path(conn, path: str, delta: Delta) -> int:
    delta.undefined.update(n for (n,) in conn.execute("SELECT name FROM code_defs WHERE path = ?", (path,)))
    delta.unmentioned.update(n for (n,) in conn.execute("SELECT name FROM code_refs WHERE path = ?", (path,)))
    n = conn.execute("DELETE FROM code_defs WHERE path = ?", (path,)).rowcount
    conn.execute("DELETE FROM code_refs WHERE path = ?", (path,))
    conn.execute("DELETE FROM code_files WHERE path = ?", (path,))
    return n


def _flush(run: Run, batch, stats: CodeStats, delta: Delta) -> None:
    """Write a batch of parsed files (their old definitions go in the same transaction)."""
    now = time.time_ns()
    with write(run.conn):
        for entry, lang, status, error, defs in batch:
            delta.undefined.update(n for (n,) in run.conn.execute(
                "SELECT name FROM code_defs WHERE path = ?", (entry.path,)))
            stats.defs_removed += run.conn.execute(
                "DELETE FROM code_defs WHERE path = ?", (entry.path,)).rowcount
            run.conn.executemany(
                "INSERT INTO code_defs(path, name, qualname, kind, line_start, line_end, signature, "
                "doc, exported, component, rank, words) VALUES (?,?,?,?,?,?,?,?,?,?,0,?)",
                [(entry.path, d.name, d.qualname, d.kind, d.line_start, d.line_end, d.signature,
                  d.doc, int(d.exported), int(d.component), name_words(d.name)) for d in defs])
            stats.defs_added += len(defs)
            run.conn.execute(
                "INSERT INTO code_files(path, blob, lang, status, error, n_defs, indexed_ns, refs_blob) "
                "VALUES (?,?,?,?,?,?,?,NULL) ON CONFLICT(path) DO UPDATE SET blob = excluded.blob, "
                "lang = excluded.lang, status = excluded.status, error = excluded.error, "
                "n_defs = excluded.n_defs, indexed_ns = excluded.indexed_ns, refs_blob = NULL",
                (entry.path, entry.blob, lang.name if lang is not None else "readme", status, error,
                 len(defs), now))
            delta.defined.update(d.name for d in defs)



def _fail(run: Run, report: SourceReport, reason: str, detail: str) -> None:
    from memory_core.ingest import store

    report.errors += 1
    run.worked = True
    store.log(run.conn, "code", None, "error", reason, detail)


__all__ = ["CodeUnavailable", "Language", "extract", "ingest_code", "load_languages", "name_words"]
