"""Who and when, from git, for every memory file: read at ingest, never on the hook path.

    attach_git_provenance(run, report)    # after the memory source synced

Memory files and confirmed records are meant to be committed, so a teammate's commit reaches
everyone's agent at the next session. Each memory chunk's attrs get `git`:

    {"commit": "3f2a9c1d0b7e", "author": "Bob", "email": "bob@example.com",
     "date": "2026-11-30T10:12:00+01:00", "local": false}

from the last commit that touched the file (one `git log` for all of them), and `local: true`
when the working tree differs from HEAD for it (modified, staged or untracked: what the agent
will be told is not what the commit says). A file never committed has only `local: true`.
The user's own `user.email` is kept in meta `git.user_email`, so the gate can tell a
teammate's change from one's own. No git, or not a repository: nothing is attached, and the
delivery says what it always said.
"""

from __future__ import annotations

import json
import subprocess

from memory_core.ingest.base import Run, SourceReport
from memory_core.ingest.git import CALL_TIMEOUT_S, GitUnavailable, _git
from memory_core.store.db import write
from memory_core.store.meta import set_meta

META_USER_EMAIL = "git.user_email"
MAX_COMMITS = 5000  # history walked to find each file's last commit; older ones stay unattributed
_RS, _US = "\x1e", "\x1f"


def _last_commits(root: str, paths: list[str], timeout: float) -> dict[str, dict]:
    out = _git(root, ["log", f"-n{MAX_COMMITS}", "--relative", "--name-only",
                      f"--format={_RS}%H{_US}%an{_US}%ae{_US}%aI{_US}", "--", *paths], timeout)
    found: dict[str, dict] = {}
    wanted = set(paths)
    for record in out.split(_RS):
        parts = record.split(_US)
        if len(parts) < 5 or not parts[0].strip():
            continue
        info = {"commit": parts[0].strip()[:12], "author": parts[1], "email": parts[2], "date": parts[3]}
        for name in parts[4].strip("\n").split("\n"):
            name = name.strip()
            if name in wanted and name not in found:  # newest first: the first seen is the last
                found[name] = info
    return found


def _local(root: str, paths: list[str], timeout: float) -> set[str]:
    """Paths whose working-tree content differs from HEAD (changed, staged) or is untracked."""
    changed = _git(root, ["diff", "--name-only", "--relative", "HEAD", "--", *paths], timeout)
    untracked = _git(root, ["ls-files", "--others", "--exclude-standard", "--", *paths], timeout)
    return {line.strip() for line in (changed + "\n" + untracked).splitlines() if line.strip()}


def git_provenance(root: str, paths: list[str], timeout: float) -> tuple[dict[str, dict], str]:
    """({path: git attr}, the user's email); GitUnavailable when git cannot say."""
    _git(root, ["rev-parse", "--verify", "-q", "HEAD"], timeout)
    commits = _last_commits(root, paths, timeout)
    local = _local(root, paths, timeout)
    try:
        email = _git(root, ["config", "user.email"], timeout).strip()
    except GitUnavailable:  # unset: exit 1
        email = ""
    out = {}
    for path in paths:
        attr = dict(commits.get(path) or {})
        attr["local"] = path in local or not attr
        out[path] = attr
    return out, email


def attach_git_provenance(run: Run, report: SourceReport) -> None:
    """Set attrs.git on every memory chunk whose provenance changed; a note when git cannot
    say (not a repository, no commits, no git), never an error."""
    paths = [p for (p,) in run.conn.execute(
        "SELECT DISTINCT path FROM chunks WHERE source = 'memory' AND path NOT LIKE '/%' ORDER BY path")]
    if not paths:
        return
    timeout = min(CALL_TIMEOUT_S, max(run.remaining_s(), 5.0))
    try:
        found, email = git_provenance(run.root, paths, timeout)
    except FileNotFoundError:
        return  # no git binary: nothing to attribute
    except (GitUnavailable, subprocess.TimeoutExpired, OSError) as exc:
        report.notes.append(f"memory provenance from git unavailable: {str(exc)[:160]}")
        return
    updates = []
    for cid, path, attrs_json in run.conn.execute(
            "SELECT id, path, attrs FROM chunks WHERE source = 'memory' AND path NOT LIKE '/%'"):
        try:
            attrs = json.loads(attrs_json) if attrs_json else {}
        except ValueError:
            attrs = {}
        if not isinstance(attrs, dict) or attrs.get("git") == found.get(path):
            continue
        attrs["git"] = found.get(path)
        updates.append((json.dumps(attrs, sort_keys=True), cid))
    with write(run.conn):
        run.conn.executemany("UPDATE chunks SET attrs = ? WHERE id = ?", updates)
        set_meta(run.conn, META_USER_EMAIL, email)
    local = sum(1 for a in found.values() if a.get("local"))
    if updates:
        report.notes.append(f"git provenance: {len(found)} memory file(s), {local} local")
