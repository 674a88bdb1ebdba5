"""Sessions of the real Claude Code CLI against the scripted model, in a project set up by the
real `memhealth init`, with an isolated HOME. Used by the e2e tests and benchmarks/bench_session.py.

    project = SampleProject.create(tmp / "proj", capture_dir=tmp / "payloads")
    with ScriptedModel(script) as model:
        session = Session(binary, project.root, home=tmp / "home", model=model)
        run = session.run("read the ledger writer", tools="Read")
        run.session_id, run.result["result"], session.transcript(run.session_id)

The project is what a user would have: a small ledger service in a git repository, its docs,
memory files under `.memhealth/memory/`, hooks written by `memhealth init` into
`.claude/settings.local.json` with the worktree's interpreter. The optional capture hook
(tests/e2e/capture_hook.py) goes into `.claude/settings.json` beside them and saves each
payload the CLI sent.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter

from tests.e2e.claude_cli import SESSION_TIMEOUT_S, session_env

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_HOOK = os.path.join(HERE, "capture_hook.py")
CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
                 "Stop", "SessionEnd")
DEFAULT_TOOLS = "Read,Edit,Write,Grep,Glob,Bash"

# The sample project: a ledger service. Each memory file is one kind a user keeps.
FILES = {
    "README.md": """# Ledger service

An append-only ledger behind a small HTTP API. Writes are batched; reads come from
projections that the compactor keeps current.

## Layout

- `src/ledger/writer.py`: the ledger writer (batched appends, idempotency keys)
- `src/ledger/compactor.py`: snapshots and WAL checkpoints, off the request path
- `src/api.py`: the HTTP handlers

## Running

    python -m src.api --port 8080
""",
    "docs/architecture.md": """# Architecture

## Ledger writer

Appends are collected for up to 5 ms or 256 entries and written in one transaction. Each
append carries an idempotency key; a repeated key returns the first result instead of
writing twice. See `src/ledger/writer.py`.

## Compactor

The compactor folds old segments into snapshots and runs the WAL checkpoint. It never runs
on the request path.

## API

`POST /entries` appends, `GET /entries/{id}` reads from the projection.
""",
    "docs/operations.md": """# Operations

## Backups

Nightly snapshot copies; restore by replaying segments after the snapshot.

## Alerts

Page on writer queue depth over 10,000 for ten minutes.
""",
    "src/__init__.py": "",
    "src/ledger/__init__.py": "",
    "src/ledger/writer.py": '''"""The ledger writer: batched appends with idempotency keys."""

BATCH_MAX = 256
BATCH_WAIT_S = 0.005


class LedgerWriter:
    def __init__(self, conn):
        self.conn = conn
        self.seen = {}

    def append(self, key, entry):
        if key in self.seen:
            return self.seen[key]
        cur = self.conn.execute("INSERT INTO entries(key, body) VALUES (?, ?)", (key, entry))
        self.seen[key] = cur.lastrowid
        return cur.lastrowid
''',
    "src/ledger/compactor.py": '''"""Snapshots and WAL checkpoints, off the request path."""


def checkpoint(conn):
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
''',
    "src/api.py": '''"""HTTP handlers for the ledger."""


def post_entry(writer, key, body):
    return {"id": writer.append(key, body)}
''',
    ".memhealth/memory/MEMORY.md": """# Memory index

- [Ledger writer](ledger-writer.md): batched appends with idempotency keys, exists
- [WAL checkpoints](wal-checkpoints.md): only the compactor checkpoints
- [Queue depth alert](queue-alert.md): why the page threshold is 10,000

## LATEST

- [Resume: writer metrics](resume.md)
""",
    ".memhealth/memory/ledger-writer.md": """---
name: Ledger writer (batched appends, idempotency keys)
description: the ledger writer already exists and handles batching and duplicate appends
type: subsystem
path: src/ledger/writer.py
---
The ledger writer lives in src/ledger/writer.py. It batches appends (256 entries or 5 ms)
into one transaction and deduplicates them by idempotency key. Extend it; do not write a
second writer.
""",
    ".memhealth/memory/wal-checkpoints.md": """---
name: WAL checkpoints run only in the compactor
description: never checkpoint the WAL from the request path
type: invariant
---
Only src/ledger/compactor.py runs the WAL checkpoint. A checkpoint on the request path
stalled every append for 400 ms in March.
""",
    ".memhealth/memory/queue-alert.md": """---
name: Queue depth page threshold is 10,000
description: decided after two false pages at 1,000
type: decision
---
The writer queue depth pages at 10,000 for ten minutes; 1,000 paged twice on normal bursts.
""",
    ".memhealth/memory/resume.md": """---
name: Resume here
description: next step is exporting writer batch metrics
type: project
---
Next: export the writer's batch size and wait time as metrics.
""",
}

PINNED = ("WAL checkpoints run only in the compactor",)  # the invariant the render pins


def _run(cmd: list[str], cwd: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def memhealth_argv() -> list[str]:
    """What `memhealth init` writes into settings: the worktree's interpreter."""
    from memhealth.installer import launcher_argv

    return launcher_argv()


def hook_env() -> dict:
    """No MEMHEALTH_*, OTEL_* or CLAUDE_* from the developer's shell reaches a hook."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}


class SampleProject:
    """A project directory as a user would have it, set up by the real `memhealth init`."""

    def __init__(self, root: str, capture_dir: str | None):
        self.root = root
        self.capture_dir = capture_dir

    @classmethod
    def create(cls, root, capture_dir=None, hooks: bool = True, ingest: bool = True,
               extra: dict[str, str] | None = None) -> SampleProject:
        """`extra`: more files (project-relative path: text), e.g. a memory file with cues."""
        root = str(root)
        for rel, body in {**FILES, **(extra or {})}.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(body)
        git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
        _run(["git", "init", "-q", "-b", "main"], root)
        _run(git + ["add", "README.md", "docs", "src"], root)
        _run(git + ["commit", "-q", "-m", "Ledger service: batched writer, compactor, API"], root)
        if capture_dir is not None:
            os.makedirs(str(capture_dir), exist_ok=True)
        project = cls(root, str(capture_dir) if capture_dir is not None else None)
        if hooks:
            _run(memhealth_argv() + ["init", "--project", root], root, env=hook_env())
        if capture_dir is not None:
            project.add_capture_hook()
        if hooks and ingest:
            project.ingest()
        return project

    def ingest(self, *sources: str) -> dict:
        proc = _run(memhealth_argv() + ["ingest", "--project", self.root, "--json", *sources], self.root,
                    timeout=120, env=hook_env())
        return json.loads(proc.stdout)

    def add_capture_hook(self) -> None:
        """Every event, every tool: the capture hook sees all that the CLI fires."""
        command = f"{sys.executable} -I {CAPTURE_HOOK} {self.capture_dir}"
        handler = {"type": "command", "command": command, "timeout": 10}
        settings = {"hooks": {event: [{"hooks": [handler]}] for event in CLAUDE_EVENTS}}
        path = os.path.join(self.root, ".claude", "settings.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(settings, fh, indent=2)

    @property
    def db_path(self) -> str:
        return os.path.join(self.root, ".memhealth", "memory.db")

    def payloads(self) -> list[dict]:
        """Every payload the capture hook saved, in the order the CLI sent them."""
        out = []
        for name in sorted(os.listdir(self.capture_dir)):
            if name.endswith(".json"):
                with open(os.path.join(self.capture_dir, name), encoding="utf-8") as fh:
                    out.append(json.load(fh))
        return out


class CliRun:
    """One CLI invocation: exit code, output, wall seconds, and the parsed `--output-format json`."""

    def __init__(self, argv, proc: subprocess.CompletedProcess, seconds: float):
        self.argv = argv
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        try:
            self.result = json.loads(proc.stdout)
        except ValueError:
            self.result = None

    @property
    def session_id(self) -> str:
        assert self.result and self.result.get("session_id"), f"no session id: {self.describe()}"
        return self.result["session_id"]

    def describe(self) -> str:
        return f"{self.argv[1:4]} -> exit {self.returncode}; stdout {self.stdout[-800:]!r}; stderr {self.stderr[-800:]!r}"


class Session:
    """Runs the CLI in `project` with HOME isolated, against `model`."""

    def __init__(self, binary: str, project: str, home: str, model, env: dict | None = None):
        self.binary = binary
        self.project = str(project)
        self.home = str(home)
        os.makedirs(self.home, exist_ok=True)
        self.model = model
        self.env = session_env(env if env is not None else hook_env(), self.home, model.url)

    def run(self, prompt: str, resume: str | None = None, tools: str = DEFAULT_TOOLS,
            timeout: float = SESSION_TIMEOUT_S, check: bool = True) -> CliRun:
        argv = [self.binary, "-p", prompt, "--output-format", "json"]
        if tools:
            argv += ["--allowedTools", tools]
        if resume:
            argv += ["--resume", resume]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, cwd=self.project, env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        run = CliRun(argv, proc, time.perf_counter() - t0)
        if check:
            assert run.returncode == 0 and run.result is not None, run.describe()
            assert not run.result.get("is_error"), run.describe()
        return run

    def transcript(self, session_id: str) -> str:
        found = glob.glob(os.path.join(self.home, ".claude", "projects", "*", f"{session_id}.jsonl"))
        assert len(found) == 1, f"transcript of {session_id}: {found}"
        return found[0]

    def transcript_records(self, session_id: str) -> list[dict]:
        with open(self.transcript(session_id), encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]


def hook_attachments(records: list[dict]) -> list[dict]:
    """The transcript's record of each hook run (`hook_success`, `hook_error`, ...)."""
    return [r["attachment"] for r in records if r.get("type") == "attachment"
            and isinstance(r.get("attachment"), dict) and str(r["attachment"].get("type", "")).startswith("hook_")]


def hook_matcher(claude_event: str) -> re.Pattern | None:
    """The tool matcher `memhealth init` wires for a tool event (None: every invocation)."""
    from memhealth.installer import WIRING

    for event, _ours, matcher, _timeout, _status in WIRING:
        if event == claude_event and matcher:
            return re.compile(rf"^(?:{matcher})$")
    return None


def expected_heartbeats(payloads: list[dict]) -> Counter:
    """(our hook, session id) for every payload the CLI sent that init's wiring matches."""
    from memhealth.hooks import EVENTS

    ours = {claude: hook for hook, claude in EVENTS.items()}
    expected: Counter = Counter()
    for p in payloads:
        matcher = hook_matcher(p["hook_event_name"])
        if matcher is None or matcher.match(p.get("tool_name", "")):
            expected[(ours[p["hook_event_name"]], p["session_id"])] += 1
    return expected


def completed_heartbeats(db_path: str) -> Counter:
    """(hook, session id) of every hook heartbeat that completed ok: not the gate's own, nor
    the capture worker's (SessionEnd spawns it; it is not a Claude Code event)."""
    from memory_core.store.db import sqlite3

    conn = sqlite3.connect(db_path, timeout=10)
    try:
        return Counter(conn.execute("SELECT hook, session_id FROM heartbeats WHERE hook NOT IN ('gate', 'capture') "
                                    "AND outcome = 'ok' AND ended_ns IS NOT NULL").fetchall())
    finally:
        conn.close()


def settled_capture_outcomes(db_path: str, at_least: int, timeout_s: float = 30.0) -> Counter:
    """Outcomes of the capture workers' heartbeats once `at_least` of them exist, none is
    still running and no session boundary waits to be captured (they are detached from the
    hook that spawned them: one per SessionEnd, and one from a SessionStart that found work
    pending with no worker holding the lease), waiting at most `timeout_s`."""
    import time

    from memory_core.records.queue import work_pending
    from memory_core.store.db import sqlite3

    deadline = time.monotonic() + timeout_s
    while True:
        conn = sqlite3.connect(db_path, timeout=10)
        try:
            rows = conn.execute("SELECT outcome FROM heartbeats WHERE hook = 'capture'").fetchall()
            waiting = work_pending(conn)
        finally:
            conn.close()
        settled = len(rows) >= at_least and all(r[0] is not None for r in rows) and not waiting
        if settled or time.monotonic() > deadline:
            return Counter(r[0] for r in rows)
        time.sleep(0.1)
