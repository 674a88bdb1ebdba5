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
imported by hooks, which must stay cheap (the import budget test in tests/test_cli.py).

Mentions (`code_refs`) rank definitions the way aider's repo map ranks tags: a name that
many other files use matters more. A changed file's mentions are counted from its tokens;
a name defined for the first time is looked for in the unchanged files with one
`git grep -w -F` over the commit, so a 10-file commit never re-reads the whole tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field

from memory_core.index.code import META_COMMIT, META_INDEXED_NS
from memory_core.ingest.base import Run, SourceReport
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
from memory_core.store.db import write
from memory_core.store.layout import SKIP_DIRS
from memory_core.store.meta import get_meta, set_meta

META_PARSER = "code.parser"          # queries + library versions: a change re-parses every file
META_SCOPE = "code.scope"            # the config's globs and size cap the index was listed with

CALL_TIMEOUT_S = 120.0
# A handful of new names is looked for with `git grep -F` (fast per pattern); more than this
# and reading the other files' tokens once is cheaper than git matching thousands of words.
GREP_MAX_NAMES = 500
# A run that changed at most this many files (after a complete one) looks up only the names
# it touched; more, and loading every defined name once is cheaper.
TARGETED_MAX_FILES = 200
BATCH_FILES = 200
README_NAMES = ("readme.md", "readme.rst", "readme.txt", "readme")
# Vendored and generated trees: dependency copies and build output are not the project's
# code (SKIP_DIRS is what every directory source skips; these are code-only conventions).
VENDORED_DIRS = SKIP_DIRS | {"third_party", "third-party", "thirdparty", "_vendor", "vendored",
                             "bower_components", "jspm_packages", "Pods", "Carthage"}
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class CodeUnavailable(Exception):
    """The code cannot be listed here (no git, not a repository, no commit); the message is
    the note."""


# ---------------------------------------------------------------------------------------------
# paths


def is_vendored(path: str) -> bool:
    parts = path.split("/")
    return any(p in VENDORED_DIRS or (p.startswith(".") and p not in (".", "..")) for p in parts[:-1])


def glob_regex(pattern: str) -> re.Pattern:
    """A path glob: `*` within a directory, `**` across directories, `?` one character."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def matcher(patterns: list[str]):
    """A predicate over relative paths; a pattern naming a directory covers what is in it."""
    regexes = []
    for p in patterns:
        p = p.strip().lstrip("./") if p.strip() not in (".", "./") else "**"
        if not p:
            continue
        regexes.append(glob_regex(p))
        if not any(ch in p for ch in "*?["):
            regexes.append(glob_regex(p.rstrip("/") + "/**"))
    return lambda path: any(r.match(path) for r in regexes)


# ---------------------------------------------------------------------------------------------
# git


def _git(root: str, args: list[str], timeout: float, stdin: bytes | None = None) -> bytes:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    proc = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=timeout,
                          env=env, input=stdin, check=False,
                          **({} if stdin is not None else {"stdin": subprocess.DEVNULL}))
    if proc.returncode not in (0, 1) or (proc.returncode == 1 and args[0] != "grep"):
        head = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CodeUnavailable(head[0][:200] if head else f"git {args[0]} exited {proc.returncode}")
    return proc.stdout


@dataclass(slots=True)
class Entry:
    path: str
    blob: str
    size: int


def head_commit(root: str, timeout: float = 10.0) -> str:
    """HEAD's commit id; CodeUnavailable without git, outside a repository or before a commit."""
    if shutil.which("git") is None:
        raise CodeUnavailable("git is not installed; code not indexed")
    try:
        out = _git(root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], timeout)
    except subprocess.TimeoutExpired:
        raise CodeUnavailable(f"git rev-parse did not answer within {timeout:.0f} s") from None
    except CodeUnavailable as exc:
        raise CodeUnavailable(f"not a git repository with a commit ({exc}); code not indexed") from None
    sha = out.decode().strip()
    if not sha:
        raise CodeUnavailable("the repository has no commits yet; code not indexed")
    return sha


def list_tree(root: str, commit: str, timeout: float) -> list[tuple[str, str, str, int]]:
    """(mode, path, blob, size) of every file at `commit` under `root` (paths relative to it)."""
    out = _git(root, ["ls-tree", "-r", "-l", "-z", commit], timeout)
    rows = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        parts = meta.split()
        if len(parts) < 4:
            continue
        mode, kind, blob, size = (p.decode() for p in parts[:4])
        rows.append((mode if kind == "blob" else kind, path.decode("utf-8", "replace"), blob,
                     int(size) if size.isdigit() else -1))
    return rows


class BlobReader:
    """`git cat-file --batch`, one blob at a time, in one process.

        with BlobReader(root) as read: data = read(blob_id)
    """

    def __init__(self, root: str):
        env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
        self.proc = subprocess.Popen(["git", "-C", root, "cat-file", "--batch"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __call__(self, blob: str) -> bytes:
        self.proc.stdin.write(blob.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            raise OSError(f"git cat-file: blob {blob} missing")
        size = int(header[2])
        data = self.proc.stdout.read(size)
        self.proc.stdout.read(1)
        return data

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


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
    _update_refs(run, commit, wanted, stats, timeout, delta,
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


@dataclass
class Delta:
    """Names this run's writes touched: defined now, no longer defined here, mentioned by a
    file that left the tree. Their ranks are computed again; nothing else's moved."""

    defined: set[str] = field(default_factory=set)
    undefined: set[str] = field(default_factory=set)
    unmentioned: set[str] = field(default_factory=set)


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


def _countable(name: str) -> bool:
    return len(name) >= 2 and not name.startswith("__")


def _update_refs(run: Run, commit: str, wanted: dict, stats: CodeStats, timeout: float,
                 delta: Delta, targeted: bool) -> None:
    """Count mentions in files whose blob changed, look for new names in the rest, re-rank.

    `targeted`: mentions were complete before this run and it changed few files, so only the
    names it touched are looked up; otherwise every defined name is loaded (a cold index, a
    run resumed after a budget stop)."""
    conn = run.conn
    stale = [(p, b) for p, b in conn.execute(
        "SELECT path, blob FROM code_files WHERE lang != 'readme' AND status != 'skipped' "
        "AND (refs_blob IS NULL OR refs_blob != blob)")]
    stale_paths = {p for p, _ in stale}
    texts: dict[str, tuple[str, list[str]]] = {}
    if targeted:
        with BlobReader(run.root) as read:
            for path, blob in stale:
                try:
                    texts[path] = (blob, TOKEN.findall(read(blob).decode("utf-8", "replace")))
                except OSError:
                    continue
        tokens = {t for _b, toks in texts.values() for t in toks if _countable(t)}
        counted = _present(conn, "code_names", tokens | delta.defined | delta.undefined)
        defined_here = {n for n in delta.defined if _countable(n)}
        new = defined_here - counted
        gone_candidates = (delta.undefined & counted) - defined_here
        removed = gone_candidates - _present(conn, "code_defs", gone_candidates)
        defined = (counted - removed) | new
    else:
        defined = {n for (n,) in conn.execute("SELECT DISTINCT name FROM code_defs") if _countable(n)}
        counted = {n for (n,) in conn.execute("SELECT name FROM code_names")}
        new, removed = defined - counted, counted - defined
    touched: set[str] = set()
    with BlobReader(run.root) as read:
        for i in range(0, len(stale), BATCH_FILES):
            run.check()
            rows, done = [], []
            for path, blob in stale[i:i + BATCH_FILES]:
                if path in texts:
                    toks = texts[path][1]
                else:
                    try:
                        toks = TOKEN.findall(read(blob).decode("utf-8", "replace"))
                    except OSError:
                        continue
                counts = Counter(t for t in toks if t in defined)
                rows.extend((n, path, c) for n, c in counts.items())
                touched.update(counts)
                done.append((blob, path))
            with write(conn):
                for _blob, path in done:
                    touched.update(n for (n,) in conn.execute(
                        "SELECT name FROM code_refs WHERE path = ?", (path,)))
                    conn.execute("DELETE FROM code_refs WHERE path = ?", (path,))
                conn.executemany("INSERT OR REPLACE INTO code_refs(name, path, n) VALUES (?,?,?)", rows)
                conn.executemany("UPDATE code_files SET refs_blob = ? WHERE path = ?", done)
            stats.refs_files += len(done)
    stats.new_names = len(new)
    grep_rows: list[tuple[str, str, int]] = []
    if new:
        others = [(p, b) for p, b in conn.execute(
            "SELECT path, blob FROM code_files WHERE lang != 'readme' AND status != 'skipped'")
            if p not in stale_paths]
        if others and len(new) <= GREP_MAX_NAMES:
            grep_rows = _grep_mentions(run.root, commit, sorted(new), stale_paths, wanted, timeout)
        elif others:  # many new names (an index resumed after a budget stop): one pass over the rest
            grep_rows = _count_mentions(run, others, new)
    # a changed file's definitions are new rows (rank 0 so far); a name defined or undefined
    # elsewhere changes how its mentions are shared; a file gone no longer mentions anything
    touched |= new | removed | delta.defined | delta.undefined | delta.unmentioned
    with write(conn):
        conn.executemany("INSERT OR REPLACE INTO code_refs(name, path, n) VALUES (?,?,?)", grep_rows)
        for name in removed:
            conn.execute("DELETE FROM code_refs WHERE name = ?", (name,))
        conn.executemany("DELETE FROM code_names WHERE name = ?", [(n,) for n in removed])
        conn.executemany("INSERT OR IGNORE INTO code_names(name) VALUES (?)", [(n,) for n in new])
        _rank(conn, touched)


def _present(conn, table: str, names: set[str]) -> set[str]:
    """Which of `names` occur in `table`.name (code_names or code_defs), 500 at a time."""
    found: set[str] = set()
    items = sorted(names)
    for i in range(0, len(items), 500):
        chunk = items[i:i + 500]
        found.update(n for (n,) in conn.execute(
            f"SELECT DISTINCT name FROM {table} WHERE name IN ({','.join('?' * len(chunk))})", chunk))
    return found


def _count_mentions(run: Run, files: list[tuple[str, str]], names: set[str]) -> list[tuple[str, str, int]]:
    """(name, path, n) for `names` in `files` ((path, blob)), from each blob's tokens."""
    rows = []
    with BlobReader(run.root) as read:
        for path, blob in files:
            try:
                text = read(blob).decode("utf-8", "replace")
            except OSError:
                continue
            counts = Counter(t for t in TOKEN.findall(text) if t in names)
            rows.extend((n, path, c) for n, c in counts.items())
    return rows


def _grep_mentions(root: str, commit: str, names: list[str], skip: set[str], wanted: dict,
                   timeout: float) -> list[tuple[str, str, int]]:
    """(name, path, n) for `names` in the files at `commit` not in `skip`, by `git grep -o`."""
    exts = sorted({os.path.splitext(p)[1] for p, (_e, lang) in wanted.items() if lang is not None})
    with tempfile.NamedTemporaryFile("w", suffix=".names", delete=False, encoding="utf-8") as fh:
        fh.write("\n".join(names) + "\n")
        pattern_file = fh.name
    try:
        out = _git(root, ["grep", "-o", "-w", "-F", "-I", "--no-color", "-z", "-f", pattern_file,
                          commit, "--", *(f"*{e}" for e in exts)], timeout)
    except (CodeUnavailable, subprocess.TimeoutExpired, OSError):
        return []  # mentions are for ranking: a missed search leaves ranks low, never wrong rows
    finally:
        os.unlink(pattern_file)
    counts: Counter = Counter()
    prefix = commit + ":"
    for line in out.split(b"\n"):
        if not line:
            continue
        parts = line.split(b"\0")
        if len(parts) < 2:
            continue
        path = parts[0].decode("utf-8", "replace")
        if path.startswith(prefix):
            path = path[len(prefix):]
        if path in skip or path not in wanted:
            continue
        counts[(parts[-1].decode("utf-8", "replace"), path)] += 1
    return [(n, p, c) for (n, p), c in counts.items()]


def _rank(conn, names: set[str]) -> None:
    """rank = the number of other files that mention the definition's name, shared among the
    definitions of that name: twenty `models.py` modules do not each own every file that says
    `models` (aider's repo map discounts a name defined in many places the same way)."""
    if not names:
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS code_touched (name TEXT PRIMARY KEY, "
                 "n INTEGER NOT NULL DEFAULT 0, d INTEGER NOT NULL DEFAULT 1) WITHOUT ROWID")
    conn.execute("DELETE FROM code_touched")
    conn.executemany("INSERT OR IGNORE INTO code_touched(name) VALUES (?)", [(n,) for n in names])
    conn.execute("UPDATE code_touched SET "
                 "n = (SELECT count(*) FROM code_refs r WHERE r.name = code_touched.name), "
                 "d = max(1, (SELECT count(*) FROM code_defs c WHERE c.name = code_touched.name))")
    conn.execute(
        "UPDATE code_defs SET rank = ((SELECT n FROM code_touched t WHERE t.name = code_defs.name) - "
        "EXISTS(SELECT 1 FROM code_refs r WHERE r.name = code_defs.name AND r.path = code_defs.path)) "
        "* 1.0 / (SELECT d FROM code_touched t WHERE t.name = code_defs.name) "
        "WHERE name IN (SELECT name FROM code_touched)")
    conn.execute("DELETE FROM code_touched")


def _fail(run: Run, report: SourceReport, reason: str, detail: str) -> None:
    from memory_core.ingest import store

    report.errors += 1
    run.worked = True
    store.log(run.conn, "code", None, "error", reason, detail)


__all__ = ["CodeUnavailable", "Language", "extract", "ingest_code", "load_languages", "name_words"]
