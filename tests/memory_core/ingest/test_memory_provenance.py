"""Memory shared through git carries who and when: a teammate's commit of a memory file is
delivered with its author, commit and date (read at ingest, never by a hook), a file that
differs from HEAD is marked local, and the gate names the memory files someone else changed
since this machine's last session. Real repositories (the git binary), the real CLI, the real
hooks as subprocesses with JSON on stdin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from tests.conftest import clean_env, payload, rows, run_cli, run_hook

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ISOLATED = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
ALICE = {"GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": "alice@example.org",
         "GIT_COMMITTER_NAME": "Alice", "GIT_COMMITTER_EMAIL": "alice@example.org"}
BOB = {"GIT_AUTHOR_NAME": "Bob Teammate", "GIT_AUTHOR_EMAIL": "bob@example.org",
       "GIT_COMMITTER_NAME": "Bob Teammate", "GIT_COMMITTER_EMAIL": "bob@example.org"}
MEMORY = ".claude/memory/wal-checkpoint.md"


def git(root, *args, who=ALICE) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          timeout=30, env=dict(os.environ, **ISOLATED, **who))
    return proc.stdout.strip()


def commit(root, rel: str, text: str, message: str, who=ALICE) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    git(root, "add", rel, who=who)
    git(root, "commit", "-q", "-m", message, who=who)
    return git(root, "rev-parse", "HEAD")


def feedback(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {body}\ntype: feedback\n---\n\n{body}\n"


@pytest.fixture
def repo(tmp_path):
    """Alice's checkout: a git repository whose user is Alice, initialised by memhealth, with
    one memory file of her own and one finished session on this machine."""
    root = tmp_path / "app"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "alice@example.org")
    git(root, "config", "user.name", "Alice")
    env = clean_env(**ISOLATED)
    assert run_cli("init", "--project", str(root), "--no-templates", env=env).returncode == 0
    commit(root, ".gitignore", ".memhealth/\n", "ignore the store")
    commit(root, ".claude/memory/own-note.md", feedback("own-note", "Run the WAL tests with -p no:randomly."),
           "Alice's note")
    assert run_cli("ingest", "--project", str(root), env=env).returncode == 0
    for event in ("session-start", "session-end"):
        assert run_hook(event, payload(event, root), str(root), env=env).returncode == 0
    return root, env


def session_context(root, env) -> str:
    hook = run_hook("session-start", payload("session-start", root, session_id="sess-2"), str(root), env=env)
    assert hook.returncode == 0, hook.stderr
    return hook.context()


def test_a_teammates_memory_file_is_delivered_with_author_and_commit_and_the_gate_names_it(repo):
    root, env = repo
    sha = commit(root, MEMORY, feedback("wal-checkpoint", "Checkpoints stall while a reader holds the WAL."),
                 "Memory: the WAL checkpoint stall", who=BOB)
    day = git(root, "log", "-1", "--format=%aI", sha)[:10]
    assert run_cli("ingest", "--project", str(root), env=env).returncode == 0

    context = session_context(root, env)
    (line,) = [x for x in context.splitlines() if "wal-checkpoint" in x]
    assert f"committed {sha[:12]} by Bob Teammate on {day}" in line
    (own,) = [x for x in context.splitlines() if "own-note" in x]
    assert "by Alice" in own and "local" not in own
    # the gate names Bob's file (and not Alice's own): for the person, not for Claude
    gate = run_cli("gate", "--project", str(root), "--json", env=env)
    checks = {c["name"]: c for c in json.loads(gate.stdout)["checks"]}
    detail = checks["memory_files"]["detail"]
    assert checks["memory_files"]["status"] == "note"
    assert "1 memory file(s) changed by others since this machine's last session" in detail
    assert f"{MEMORY} (Bob Teammate, {sha[:8]})" in detail and "own-note" not in detail
    assert "changed by others" not in context  # the operator's note stays out of Claude's context

    # after the next session on this machine, Bob's file is no longer news (commit dates have
    # whole seconds: the session ends in a later one)
    time.sleep(1.1)
    assert run_hook("session-end", payload("session-end", root, session_id="sess-2"), str(root),
                    env=env).returncode == 0
    again = json.loads(run_cli("gate", "--project", str(root), "--json", env=env).stdout)
    assert "changed by others" not in {c["name"]: c for c in again["checks"]}["memory_files"]["detail"]


def test_a_memory_file_that_differs_from_head_is_marked_local(repo):
    root, env = repo
    sha = commit(root, MEMORY, feedback("wal-checkpoint", "Checkpoints stall while a reader holds the WAL."),
                 "Memory: the WAL checkpoint stall", who=BOB)
    (root / MEMORY).write_text(feedback("wal-checkpoint", "Checkpoints never stall; ignore the WAL."),
                               encoding="utf-8")
    (root / ".claude/memory/draft.md").write_text(feedback("draft", "An idea nobody committed."),
                                                  encoding="utf-8")
    assert run_cli("ingest", "--project", str(root), env=env).returncode == 0
    context = session_context(root, env)
    (changed,) = [x for x in context.splitlines() if "wal-checkpoint" in x]
    assert f"committed {sha[:12]} by Bob Teammate" in changed and "local, changed since that commit" in changed
    (draft,) = [x for x in context.splitlines() if "draft" in x]
    assert "local, not committed" in draft and "committed " not in draft.replace("not committed", "")
    # committing it clears the mark at the next ingest
    git(root, "add", MEMORY)
    git(root, "commit", "-q", "-m", "fix the note")
    assert run_cli("ingest", "--project", str(root), env=env).returncode == 0
    (line,) = [x for x in session_context(root, env).splitlines() if "wal-checkpoint" in x]
    assert "by Alice" in line and "local" not in line


def test_provenance_is_read_at_ingest_and_the_hook_runs_no_git(repo, tmp_path):
    """The session-start hook with no git on PATH still delivers the commit: it reads what
    ingest stored (attrs.git), it never runs git itself."""
    root, env = repo
    sha = commit(root, MEMORY, feedback("wal-checkpoint", "Checkpoints stall while a reader holds the WAL."),
                 "Memory: the WAL checkpoint stall", who=BOB)
    assert run_cli("ingest", "--project", str(root), env=env).returncode == 0
    stored = {p: json.loads(a)["git"] for p, a in rows(root, "SELECT path, attrs FROM chunks WHERE source = 'memory'")}
    assert stored[MEMORY]["commit"] == sha[:12] and stored[MEMORY]["email"] == "bob@example.org"
    bare = tmp_path / "bin"
    bare.mkdir()
    no_git = dict(env, PATH=str(bare))  # the launcher is an absolute path; git is not findable
    assert shutil.which("git", path=no_git["PATH"]) is None
    context = session_context(root, no_git)
    assert f"committed {sha[:12]} by Bob Teammate" in context
