"""What every fault test needs: a lock held by another process, a hook killed mid-wait,
a hook run as an unprivileged user, the gate's verdict as JSON, and the Claude Code
timeouts each hook must finish within."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time

from tests.conftest import clean_env, memhealth_cmd, rows, run_cli

# Claude Code kills a hook after its `timeout`; `memhealth init` writes these (seconds)
TIMEOUTS = {"session-start": 30, "prompt": 10, "pre-tool": 5, "post-tool": 5, "pre-compact": 10,
            "stop": 5, "session-end": 5}


def db_path(project) -> str:
    return os.path.join(str(project), ".memhealth", "memory.db")


@contextlib.contextmanager
def lock_held(project, mode: str = "IMMEDIATE"):
    """Another process holds the database's write lock until the block ends."""
    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
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


def follow_fix(fix: str, cwd) -> None:
    """Run the commands a FIX names in backticks, in order, as an operator would: shell
    commands through the shell, `memhealth ...` through the real CLI (which must succeed)."""
    import re
    import shlex

    commands = re.findall(r"`([^`]+)`", fix)
    assert commands, f"the fix names no command: {fix}"
    for command in commands:
        if command.startswith("memhealth "):
            out = run_cli(*shlex.split(command)[1:], cwd=str(cwd))
            assert out.returncode == 0, out.stdout + out.stderr
        else:
            subprocess.run(command, shell=True, cwd=str(cwd), check=True)


def check(verdict: dict, name: str) -> dict:
    return next(c for c in verdict["checks"] if c["name"] == name)


def heartbeats(project, hook: str | None = None) -> list[tuple]:
    sql = "SELECT hook, outcome, reason, detail FROM heartbeats WHERE hook != 'gate'"
    if hook:
        sql += f" AND hook = '{hook}'"
    return rows(project, sql + " ORDER BY id")


@contextlib.contextmanager
def read_only(path: str):
    """`path` (a directory or file) refuses writes for the block's duration. Root ignores
    modes, so as root the inode is made immutable (chattr +i: EPERM for everyone)."""
    import pytest

    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", path], capture_output=True).returncode != 0:
            pytest.skip("root ignores file modes and chattr is unavailable on this filesystem")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", path], check=True)
        return
    mode = os.stat(path).st_mode & 0o777
    os.chmod(path, mode & ~0o222)
    try:
        yield
    finally:
        os.chmod(path, mode)
