"""The code index's view of git: which paths count, the tree at a commit, its blobs.

    commit = head_commit(root)                    # CodeUnavailable: no git, no repository, no commit
    for mode, path, blob, size in list_tree(root, commit, timeout): ...
    with BlobReader(root) as read: data = read(blob)
    include = matcher(["src/**"]); is_vendored("third_party/x/y.c")

What is indexed is the commit, not the working tree (memory_core.ingest.code). Vendored and
generated trees (dependency copies, build output) are not the project's code.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from memory_core.store.layout import SKIP_DIRS

# Vendored and generated trees: dependency copies and build output are not the project's
# code (SKIP_DIRS is what every directory source skips; these are code-only conventions).
VENDORED_DIRS = SKIP_DIRS | {"third_party", "third-party", "thirdparty", "_vendor", "vendored",
                             "bower_components", "jspm_packages", "Pods", "Carthage"}


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


def run_git(root: str, args: list[str], timeout: float, stdin: bytes | None = None) -> bytes:
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
        out = run_git(root, ["rev-parse", "--verify", "-q", "HEAD^{commit}"], timeout)
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
    out = run_git(root, ["ls-tree", "-r", "-l", "-z", commit], timeout)
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

