"""Shared settings travel: `memhealth init --settings shared` writes no path from
this machine into the committed `.claude/settings.json`. Its hooks run a portable launcher,
committed beside the config, that finds memhealth on the machine that runs it; on a machine
without memhealth, SessionStart says so in one line and every other hook is silent.

A teammate is simulated with a real `sh -c` of the settings' command, as Claude Code runs it:
a different PATH, a different interpreter location, no memhealth at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import BIN_DIR, REPO, payload, rows, run_cli

EVENTS = ("session-start", "prompt", "pre-tool", "post-tool", "pre-compact", "stop", "session-end")


def _commands(root) -> dict[str, str]:
    data = json.loads((root / ".claude" / "settings.json").read_text())
    out = {}
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                out[handler["command"].rsplit(" ", 1)[1]] = handler["command"]
    return out


def _as_claude(root, command: str, event: str, env: dict) -> subprocess.CompletedProcess:
    """Run a settings command the way Claude Code does: a shell, JSON on stdin."""
    body = json.dumps(payload(event, root, session_id="mate-1", prompt="hello", source="startup"))
    return subprocess.run(["sh", "-c", command], input=body.encode(), capture_output=True, timeout=60,
                          cwd=str(root), env=env)


@pytest.fixture
def shared(tmp_path):
    root = tmp_path / "checkout"
    root.mkdir()
    proc = run_cli("init", "--project", str(root), "--settings", "shared")
    assert proc.returncode == 0, proc.stderr
    return root


def _teammate_env(root, path: str, **extra) -> dict:
    env = {"PATH": path, "HOME": str(root.parent), "CLAUDE_PROJECT_DIR": str(root), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def test_the_committed_settings_hold_no_path_from_this_machine(shared):
    text = (shared / ".claude" / "settings.json").read_text()
    for local in {sys.executable, os.path.realpath(sys.executable), BIN_DIR, REPO, str(shared)}:
        assert local not in text
    commands = _commands(shared)
    assert set(commands) == set(EVENTS)
    for event, command in commands.items():
        assert command == f'"${{CLAUDE_PROJECT_DIR:-.}}"/.memhealth/bin/memhealth hook {event}'
    launcher = shared / ".memhealth" / "bin" / "memhealth"
    assert os.access(launcher, os.X_OK)
    assert sys.executable not in launcher.read_text() and BIN_DIR not in launcher.read_text()
    # and the launcher is committed: the state dir's .gitignore does not exclude it
    ignored = (shared / ".memhealth" / ".gitignore").read_text().split()
    assert "bin" not in ignored and "bin/" not in ignored
    assert run_cli("init", "--project", str(shared), "--settings", "shared").stdout.startswith(
        "memhealth init: already set up")


def test_a_teammate_without_memhealth_gets_one_line_at_session_start_and_silence_after(shared, tmp_path):
    bare = tmp_path / "bare-bin"  # a machine with sh and coreutils, and no memhealth
    bare.mkdir()
    for tool in ("sh", "cat", "dirname"):
        os.symlink(shutil.which(tool), bare / tool)
    env = _teammate_env(shared, str(bare))
    commands = _commands(shared)
    start = _as_claude(shared, commands["session-start"], "SessionStart", env)
    assert start.returncode == 0 and start.stderr == b""
    lines = start.stdout.decode().splitlines()
    assert len(lines) == 1
    message = json.loads(lines[0])
    assert set(message) == {"systemMessage"} and "memhealth is not installed on this machine" in message["systemMessage"]
    for event in ("prompt", "pre-tool", "post-tool", "pre-compact", "stop", "session-end"):
        run = _as_claude(shared, commands[event], event, env)
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b""), event


def test_a_teammate_with_memhealth_elsewhere_on_path_gets_working_hooks(shared, tmp_path):
    theirs = tmp_path / "their-bin"  # memhealth installed somewhere else, found through PATH
    theirs.mkdir()
    os.symlink(os.path.join(BIN_DIR, "memhealth"), theirs / "memhealth")
    env = _teammate_env(shared, f"{theirs}:/usr/bin:/bin")
    commands = _commands(shared)
    start = _as_claude(shared, commands["session-start"], "SessionStart", env)
    assert start.returncode == 0, start.stderr
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("MEMORY-HEALTH: ")
    prompt = _as_claude(shared, commands["prompt"], "UserPromptSubmit", env)
    assert prompt.returncode == 0 and prompt.stderr == b""
    assert rows(shared, "SELECT hook, outcome FROM heartbeats WHERE hook != 'gate' ORDER BY id") == [
        ("session-start", "ok"), ("prompt", "ok")]


def test_memhealth_bin_names_the_command_on_a_machine_where_it_is_not_on_path(shared, tmp_path):
    env = _teammate_env(shared, "/usr/bin:/bin", MEMHEALTH_BIN=os.path.join(BIN_DIR, "memhealth"))
    run = _as_claude(shared, _commands(shared)["prompt"], "UserPromptSubmit", env)
    assert run.returncode == 0 and run.stderr == b""
    assert rows(shared, "SELECT hook, outcome FROM heartbeats") == [("prompt", "ok")]


def test_without_claude_project_dir_the_launcher_is_found_from_the_project_directory(shared, tmp_path):
    theirs = tmp_path / "their-bin"
    theirs.mkdir()
    os.symlink(os.path.join(BIN_DIR, "memhealth"), theirs / "memhealth")
    env = _teammate_env(shared, f"{theirs}:/usr/bin:/bin")
    del env["CLAUDE_PROJECT_DIR"]
    run = _as_claude(shared, _commands(shared)["prompt"], "UserPromptSubmit", env)
    assert run.returncode == 0 and run.stderr == b""
    assert rows(shared, "SELECT hook, outcome FROM heartbeats") == [("prompt", "ok")]


def test_local_settings_still_pin_this_interpreter(tmp_path):
    assert run_cli("init", "--project", str(tmp_path)).returncode == 0
    text = (tmp_path / ".claude" / "settings.local.json").read_text()
    assert BIN_DIR in text
    assert not (tmp_path / ".memhealth" / "bin").exists()


def test_a_python3_that_imports_memhealth_is_the_last_resort(shared, tmp_path):
    only_python = tmp_path / "py-bin"  # no memhealth script, but a python3 that has it
    only_python.mkdir()
    for tool in ("sh", "cat", "dirname"):
        os.symlink(shutil.which(tool), only_python / tool)
    wrapper = only_python / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = _teammate_env(shared, str(only_python))
    run = _as_claude(shared, _commands(shared)["prompt"], "UserPromptSubmit", env)
    assert run.returncode == 0 and run.stderr == b""
    assert rows(shared, "SELECT hook, outcome FROM heartbeats") == [("prompt", "ok")]
