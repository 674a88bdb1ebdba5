"""Git history: one chunk per commit (message and touched paths), from `git log`.

    ingest_git(run, report)     # [ingest].git = true, git_max_commits = 500

Incremental by the last ingested HEAD (the watermark row ("git", ".")): when the old HEAD
is an ancestor of the new one only `old..HEAD` is read, else (rebase, reset, first run)
the newest `git_max_commits` commits; already stored commits are no-ops through the dedup
index. Every git call has a timeout inside the run's budget. No git binary, not a
repository, or no commits yet is a note, not an error: plenty of projects have no history
worth ingesting, and the gate must not turn RED over it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from memory_core.ingest import store, watermark
from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import MAX_CHARS, Piece, split_bounded
from memory_core.store.db import write
from memory_core.text import split_lines

WATERMARK_PATH = "."
MAX_PATHS = 100          # touched paths listed in a commit's chunk
CALL_TIMEOUT_S = 60.0    # upper bound of one git call, whatever the budget
_RS, _US = "\x1e", "\x1f"
_FORMAT = f"--format={_RS}%H{_US}%an{_US}%aI{_US}%B{_US}"


class GitUnavailable(Exception):
    """git cannot tell us anything here; the message is the note."""


def _git(root: str, args: list[str], timeout: float) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    proc = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        head = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitUnavailable(head[0][:200] if head else f"git {args[0]} exited {proc.returncode}")
    return proc.stdout.decode("utf-8", "replace")


def parse_log(out: str) -> list[dict]:
    """Commits from `git log` output in _FORMAT with --name-only."""
    commits = []
    for record in out.split(_RS):
        parts = record.split(_US)
        if len(parts) < 5:
            continue
        sha, author, date, body, names = parts[0].strip(), parts[1], parts[2], parts[3], parts[4]
        if not sha:
            continue
        files = [line for line in names.strip("\n").split("\n") if line.strip()]
        commits.append({"sha": sha, "author": author, "date": date, "message": body.strip(),
                        "files": files})
    return commits


def commit_pieces(c: dict) -> list[Piece]:
    subject = c["message"].split("\n", 1)[0].strip() or c["sha"][:12]
    text = c["message"] or subject
    if c["files"]:
        listed = c["files"][:MAX_PATHS]
        more = len(c["files"]) - len(listed)
        text += "\n\nFiles:\n" + "\n".join(listed) + (f"\n... and {more} more" if more > 0 else "")
    attrs = {"sha": c["sha"], "author": c["author"], "date": c["date"],
             "files": c["files"][:MAX_PATHS]}
    return [Piece(None, None, subject, chunk, "commit", attrs)
            for _ls, _le, chunk in split_bounded(split_lines(text), 1, MAX_CHARS)]


def ingest_git(run: Run, report: SourceReport) -> None:
    limit = int(run.cfg["ingest"]["git_max_commits"])
    if not run.cfg["ingest"]["git"] or limit <= 0:
        report.notes.append("git history disabled in config")
        return
    if shutil.which("git") is None:
        report.notes.append("git is not installed; history not ingested")
        return
    timeout = min(CALL_TIMEOUT_S, max(run.remaining_s(), 5.0))
    try:
        _git(run.root, ["rev-parse", "--is-inside-work-tree"], timeout)
    except (GitUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        report.notes.append(f"not a git repository ({exc}); history not ingested")
        return
    try:
        head = _git(run.root, ["rev-parse", "--verify", "-q", "HEAD"], timeout).strip()
    except GitUnavailable:
        report.notes.append("the repository has no commits yet")
        return
    except (subprocess.TimeoutExpired, OSError) as exc:
        _fail(run, report, "timeout" if isinstance(exc, subprocess.TimeoutExpired) else "io", str(exc))
        return
    mark = watermark.load(run.conn, "git").get(WATERMARK_PATH)
    report.files_seen = 1
    last = mark.state.get("head") if mark else None
    if last == head:
        return  # the fast path: nothing committed since the last run
    run.check()
    rev = head
    if last:
        try:
            _git(run.root, ["merge-base", "--is-ancestor", last, head], timeout)
            rev = f"{last}..{head}"
        except GitUnavailable:
            rev = head  # history rewritten (rebase, reset): re-read the window
        except (subprocess.TimeoutExpired, OSError):
            rev = head
    try:
        out = _git(run.root, ["log", "--no-color", "--no-show-signature", "--name-only",
                              "--no-renames", f"-n{limit}", _FORMAT, rev, "--"], timeout)
    except subprocess.TimeoutExpired:
        _fail(run, report, "timeout", f"git log did not finish within {timeout:.0f} s")
        return
    except (GitUnavailable, OSError) as exc:
        _fail(run, report, "git", str(exc))
        return
    commits = parse_log(out)
    added_all = []
    with write(run.conn):
        for c in commits:
            added = store.insert(run.conn, "git", c["sha"], commit_pieces(c),
                                 SIGNAL_WEIGHTS["git"], run.now_ns)
            added_all.extend(added)
        watermark.save(run.conn, "git", WATERMARK_PATH, None, None, None,
                       {"head": head, "commits": len(commits)})
    run.worked = True
    report.files_changed = 1
    report.chunks_added += len(added_all)


def _fail(run: Run, report: SourceReport, reason: str, detail: str) -> None:
    report.errors += 1
    run.worked = True
    store.log(run.conn, "git", WATERMARK_PATH, "error", reason, detail)
