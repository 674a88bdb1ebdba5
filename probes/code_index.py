"""The gate's `code_index` check: is the code index read at HEAD, and did its files parse?

    code_index(ev)   # green | note | red, over the store and `git` in ev.root

DO-NOT-REBUILD and STALE-CLAIM cite "read from the code at <commit>": an index far behind
HEAD cites code that may be gone. A commit made since the last ingest is normal (the next
ingest reads it): NOTE. HEAD older than the ingest budget with the index still behind it
means ingest has not read the code for that long: RED, fixed by `memhealth ingest code`.
Files that failed to parse are named; a few are the project's business (a syntax error, a
grammar behind the language): NOTE. When most files fail, the index says little about the
code: RED, with the globs to leave out or the ingest to re-run.
"""

from __future__ import annotations

import os

from memory_core.index import code as code_index
from probes.result import OPERATOR, CheckResult, ago, green, note, red

GIT_TIMEOUT_S = 3.0
FAILED_RED_SHARE = 0.2    # more than this share of the files failed ...
FAILED_RED_MIN = 5        # ... and at least this many: the index misses too much to cite
FAILED_NAMED = 5          # files named in the detail


def _git(root: str, *args: str) -> str | None:
    import subprocess  # here: the gate runs inside SessionStart, which imports little

    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        proc = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=GIT_TIMEOUT_S,
                              env=env, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def in_repository(root: str) -> bool:
    """Whether git can find a repository for `root`: GIT_DIR is set, or a `.git` (the
    directory, or the file of a linked worktree or submodule) is in `root` or above it, as
    git's own discovery looks. Outside one, the gate spawns no git and imports no subprocess."""
    if os.environ.get("GIT_DIR"):
        return True
    path = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def head_state(root: str) -> tuple[str, int] | None:
    """(HEAD's commit id, its committer time in Unix seconds), or None outside a repository."""
    import shutil

    if not in_repository(root) or shutil.which("git") is None:
        return None
    out = _git(root, "log", "-1", "--format=%H %ct", "HEAD")
    if not out:
        return None
    sha, _, ts = out.partition(" ")
    return sha, int(ts) if ts.isdigit() else 0


def code_index_check(ev) -> CheckResult:
    """RED when HEAD is older than the ingest budget and the index is still behind it, or
    when most files failed to parse; NOTE for a fresh commit not read yet, a few failed
    files, or an index still being built."""
    patterns = ev.cfg.get("ingest", {}).get("code", ["**"])
    if not patterns:
        return green("code index off ([ingest].code = [])")
    if not ev.has_table("code_files"):
        return green("no code index in this store yet")
    head = head_state(ev.root)
    if head is None:
        return green("not a git repository with a commit: no code to index")
    sha, head_ts = head
    stats = code_index.stats(ev.conn)
    indexed = stats["commit"]
    budget_days = ev.cfg["gate"]["ingest_max_age_days"]
    budget_s = budget_days * 86400.0
    fix_ingest = "memhealth ingest code"
    details: list[str] = []
    if indexed is None:
        if stats["files"]:
            return note(f"the code index is being built: {stats['files']} file(s) read so far, "
                        "not yet complete at HEAD", fix=fix_ingest, audience=OPERATOR)
        return red("the code has never been indexed (DO-NOT-REBUILD cannot cite it)", fix_ingest)
    if indexed != sha:
        behind = _git(ev.root, "rev-list", "--count", f"{indexed}..{sha}")
        how = f"{behind} commit(s) behind HEAD" if behind and behind.isdigit() else \
            f"read at {indexed[:12]}, HEAD is {sha[:12]}"
        age_s = ev.now - head_ts
        if age_s > budget_s:
            return red(f"the code index is {how}, and HEAD was committed {ago(age_s)} ago "
                       f"(budget {budget_days:g} d)", fix_ingest)
        details.append(f"{how} (committed {ago(max(age_s, 0.0))} ago; the next ingest reads it)")
    failed = stats["failed"]
    counted = max(stats["files"] - stats["skipped"], 1)
    if failed:
        named = code_index.failed_files(ev.conn, FAILED_NAMED)
        listing = "; ".join(f"{p} ({e})" for p, e in named) + (" ..." if failed > len(named) else "")
        if failed >= FAILED_RED_MIN and failed > FAILED_RED_SHARE * counted:
            return red(f"{failed} of {counted} source files failed to parse: {listing}",
                       "leave out what is not source in this language: add its globs to "
                       "[ingest].code_exclude in .memhealth/config.toml (for example "
                       "\"templates/**\"), then `memhealth ingest code`")
        details.append(f"{failed} file(s) failed to parse, the rest is indexed: {listing}")
    summary = (f"{stats['files']} file(s), {stats['defs']} definition(s), {stats['components']} "
               f"component(s) at {indexed[:12]}")
    if details:
        # a commit not read yet, or a few failed files: the person's to look at, not Claude's
        return note(summary + "; " + "; ".join(details), fix=fix_ingest if indexed != sha else "",
                    audience=OPERATOR)
    return green(summary)


__all__ = ["code_index_check", "head_state"]
