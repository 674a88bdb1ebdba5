"""What every fault test needs: a lock held by another process, a hook killed mid-wait,
a hook run as an unprivileged user, the gate's verdict as JSON, and the Claude Code
timeouts each hook must finish within."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from tests.conftest import clean_env, memhealth_cmd, rows, run_cli

# Claude Code kills a hook after its `timeout`; `memhealth init` writes these (seconds)
TIMEOUTS = {"session-start": 10, "prompt": 10, "pre-tool": 10, "post-tool": 10, "pre-compact": 10,
            "stop": 10, "session-end": 5}
NOBODY = 65534


def db_path(project) -> str:
    return os.path.join(str(project), ".memhealth", "memory.db")


@contextlib.contextmanager
def lock_held(project, mode: str = "IMMEDIATE"):
    """Another process holds the database's write lock until the block ends."""
    code = ("import sys\nfrom memory_core.db import sqlite3\n"
            f"c = sqlite3.connect({db_path(project)!r}, isolation_level=None)\n"
            f"c.execute('BEGIN {mode}')\nprint('locked', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        assert holder.stdout.readline().strip() == b"locked"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(10)


def start_hook(event: str, body: bytes | None, cwd: str, env: dict | None = None,
               close_stdin: bool = True, **kw) -> subprocess.Popen:
    """A hook process as Claude Code starts it; with close_stdin=False its stdin stays open."""
    proc = subprocess.Popen(memhealth_cmd() + ["hook", event], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=env or clean_env(), **kw)
    if body is not None:
        proc.stdin.write(body)
        proc.stdin.flush()
    if close_stdin:
        proc.stdin.close()
    return proc


def finish(proc: subprocess.Popen, timeout: float) -> tuple[int, bytes, bytes, float]:
    """Wait for a hook (bounded by its Claude Code timeout); (rc, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    proc.wait(timeout)  # not communicate(): it would close a stdin the test keeps open
    seconds = time.monotonic() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    return proc.returncode, out, err, seconds


def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    """Poll `predicate` until it returns something truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def journal_has(project, hook: str) -> bool:
    path = os.path.join(str(project), ".memhealth", "journal.ndjson")
    try:
        with open(path, "rb") as fh:
            return any(json.loads(line).get("hook") == hook for line in fh if line.strip())
    except OSError:
        return False


def gate(project, env: dict | None = None) -> dict:
    """`memhealth gate --json` in the project; the parsed verdict, with its exit code."""
    proc = run_cli("gate", "--json", cwd=str(project), env=env)
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)
    out["exit"] = proc.returncode
    return out


def check(verdict: dict, name: str) -> dict:
    return next(c for c in verdict["checks"] if c["name"] == name)


def heartbeats(project, hook: str | None = None) -> list[tuple]:
    sql = "SELECT hook, outcome, reason, detail FROM heartbeats WHERE hook != 'gate'"
    if hook:
        sql += f" AND hook = '{hook}'"
    return rows(project, sql + " ORDER BY id")


@contextlib.contextmanager
def unprivileged_project(project):
    """Run the block's hooks as a user that file modes apply to. Root ignores modes, so as
    root the project moves to a world-traversable directory owned by `nobody`, and hooks
    run under that uid (the returned preexec_fn); otherwise the current user is used."""
    if os.geteuid() != 0:
        yield project, None, clean_env()
        return
    base = tempfile.mkdtemp(prefix="memhealth-fault-")
    os.chmod(base, 0o755)
    moved = os.path.join(base, "proj")
    shutil.copytree(str(project), moved, symlinks=True)
    state = os.path.join(base, "state")
    os.makedirs(state)
    for dirpath, dirnames, filenames in os.walk(base):
        for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
            os.lchown(name, NOBODY, NOBODY)

    def demote():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    try:
        yield moved, demote, clean_env(HOME=base, XDG_STATE_HOME=state)
    finally:
        shutil.rmtree(base, ignore_errors=True)
