"""Shared fixtures: a real project directory, hooks run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

# The same SQLite library as the code under test: two libraries in one process release
# each other's POSIX locks on close, and a WAL database can then read as malformed.
from memory_core.db import sqlite3

BIN_DIR = os.path.dirname(sys.executable)
MEMHEALTH = os.path.join(BIN_DIR, "memhealth")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def memhealth_cmd() -> list[str]:
    """The command the installer writes into settings, so tests run hooks the way Claude does."""
    from memhealth.installer import launcher_argv

    return launcher_argv()


def clean_env(**extra) -> dict:
    """The environment hooks see: no MEMHEALTH_* or OTEL_* leaking in from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class HookRun:
    """The result of one hook subprocess: exit code, stdout, stderr, wall seconds."""

    def __init__(self, proc: subprocess.CompletedProcess, seconds: float):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds

    def context(self) -> str:
        return json.loads(self.stdout)["hookSpecificOutput"]["additionalContext"]


def run_hook(event: str, payload, cwd: str, timeout: float = 20, env: dict | None = None,
             stdout=subprocess.PIPE) -> HookRun:
    if isinstance(payload, bytes):
        data = payload
    else:
        data = json.dumps(payload).encode("utf-8")
    t0 = time.perf_counter()
    proc = subprocess.run(memhealth_cmd() + ["hook", event], input=data, cwd=cwd,
                          stdout=stdout, stderr=subprocess.PIPE, timeout=timeout,
                          env=env or clean_env())
    return HookRun(proc, time.perf_counter() - t0)


def run_cli(*args, cwd: str | None = None, timeout: float = 60, env: dict | None = None,
            input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(memhealth_cmd() + list(args), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env or clean_env(), input=input)


def rows(project, sql: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(os.path.join(str(project), ".memhealth", "memory.db"), timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def payload(event: str, cwd, **fields) -> dict:
    base = {"session_id": "sess-1", "transcript_path": os.path.join(str(cwd), "t.jsonl"),
            "cwd": str(cwd), "hook_event_name": event}
    base.update(fields)
    return base


@pytest.fixture
def project(tmp_path):
    """A project directory set up by the real `memhealth init`, without the convention files
    (tests/test_init_templates.py covers those), so a test starts from an empty memory."""
    root = tmp_path / "proj"
    root.mkdir()
    proc = run_cli("init", "--project", str(root), "--no-templates")
    assert proc.returncode == 0, proc.stderr
    return root


def require_binary(name: str) -> str:
    """Path of a system binary the test needs: in CI a missing one fails, elsewhere skips."""
    import shutil

    path = shutil.which(name)
    if path:
        return path
    message = f"{name} is not installed (Debian: apt-get install prometheus prometheus-alertmanager)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def stop_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s`: a test server never outlives its test."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
