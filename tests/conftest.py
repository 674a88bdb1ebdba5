"""Shared fixtures: a real project directory, hooks run as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

# The same SQLite library as the code under test: two libraries in one process release
# each other's POSIX locks on close, and a WAL database can then read as malformed.
from memory_core.store.db import sqlite3

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


_CLAUDE_EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "pre-tool": "PreToolUse",
                  "post-tool": "PostToolUse", "pre-compact": "PreCompact", "stop": "Stop",
                  "session-end": "SessionEnd"}


def payload(event: str, cwd, **fields) -> dict:
    """A payload the real CLI sent for `event` (memhealth's name or Claude Code's), from
    tests/fixtures/payloads/ (captured by tests/e2e), with its paths moved into `cwd`, the
    test's session id and transcript path, and `fields` on top."""
    from tests.support.payloads import PAYLOAD_DIR, real_payload

    claude = _CLAUDE_EVENTS.get(event, event)
    name = re.sub(r"(?<!^)([A-Z])", r"_\1", claude).lower()
    if claude == "SessionStart":
        name = f"{name}_{fields.get('source', 'startup')}"
    elif claude in ("PreToolUse", "PostToolUse"):
        tool = str(fields.get("tool_name", "Read")).lower()
        name = f"{name}_{tool if os.path.exists(os.path.join(PAYLOAD_DIR, f'{name}_{tool}.json')) else 'read'}"
    base = real_payload(name, cwd)
    base.update({"session_id": "sess-1", "transcript_path": os.path.join(str(cwd), "t.jsonl"),
                 "cwd": str(cwd), "hook_event_name": claude})
    base.update(fields)
    return base


@pytest.fixture(scope="session", autouse=True)
def user_state_dir(tmp_path_factory):
    """The per-user state dir (XDG_STATE_HOME: the instance id, spill fallbacks) of this test
    run, never the real user's; subprocesses inherit it through clean_env."""
    path = str(tmp_path_factory.mktemp("xdg-state"))
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = path
    yield path
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old


@pytest.fixture
def project(tmp_path):
    """A project directory set up by the real `memhealth init`, without the convention files
    (tests/memhealth/test_init_templates.py covers those), so a test starts from an empty memory."""
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


class CliRun:
    """What one in-process `memhealth` command returned and printed."""

    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys, monkeypatch):
    """`cli("search", "x", env={...})`: memhealth.cli.main in this process, for tests where an
    interpreter start proves nothing extra (hooks and the entry point keep their subprocess
    tests). The environment is cleaned as clean_env() does; per-process embedding state
    (circuits, logged degradations) is forgotten afterwards, as a new process would."""
    from memhealth.cli import main
    from memory_core.index import embed

    for name in list(os.environ):
        if name.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_")):
            monkeypatch.delenv(name)

    def run(*args, env: dict | None = None) -> CliRun:
        capsys.readouterr()  # what the test printed before is not this command's output
        with monkeypatch.context() as scoped:
            for name, value in (env or {}).items():
                scoped.setenv(name, str(value))
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse: usage errors, --help
                code = exc.code
            finally:
                embed.forget_process_state()
        out = capsys.readouterr()
        return CliRun(code, out.out, out.err)

    return run


# -- the real embedding model (tests/support/minilm.py, tests/support/model_server.py) ------

@pytest.fixture(scope="session")
def real_model():
    """all-MiniLM-L6-v2 in numpy, loaded once; CI fails without it, elsewhere the test skips."""
    from tests.support.minilm import require_model

    return require_model()


@pytest.fixture(scope="session")
def model_server(real_model):
    """The real model behind Ollama's embedding API on 127.0.0.1:0, one per test session."""
    from tests.support.model_server import ModelServer

    with ModelServer(real_model) as server:
        yield server
