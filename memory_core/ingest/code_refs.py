"""Mentions (`code_refs`) and ranks of the code index's definitions.

    update_refs(run, commit, wanted, stats, timeout, delta, targeted=...)

Definitions are ranked the way aider's repo map ranks tags: a name that many other files use
matters more. A changed file's mentions are counted from its tokens; a name defined for the
first time is looked for in the unchanged files with one `git grep -w -F` over the commit,
so a 10-file commit never re-reads the whole tree.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_core.ingest.base import Run
from memory_core.ingest.code_git import BlobReader, CodeUnavailable, run_git
from memory_core.store.db import write

if TYPE_CHECKING:
    from memory_core.ingest.code import CodeStats

# A handful of new names is looked for with `git grep -F` (fast per pattern); more than this
# and reading the other files' tokens once is cheaper than git matching thousands of words.
GREP_MAX_NAMES = 500
BATCH_FILES = 200
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Delta:
    """Names this run's writes touched: defined now, no longer defined here, mentioned by a
    file that left the tree. Their ranks are computed again; nothing else's moved."""

    defined: set[str] = field(default_factory=set)
    undefined: set[str] = field(default_factory=set)
    unmentioned: set[str] = field(default_factory=set)


def _countable(name: str) -> bool:
    return len(name) >= 2 and not name.startswith("__")


def update_refs(run: Run, commit: str, wanted: dict, stats: CodeStats, timeout: float,
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
        out = run_git(root, ["grep", "-o", "-w", "-F", "-I", "--no-color", "-z", "-f", pattern_file,
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

