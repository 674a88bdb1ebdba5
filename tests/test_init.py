"""`memhealth init`: merges hooks into Claude Code settings without losing anything."""

from __future__ import annotations

import json
import os
import stat

from memhealth.installer import WIRING
from tests.conftest import MEMHEALTH, run_cli

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 7}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
    },
}


def settings(root, name="settings.local.json"):
    return json.loads((root / ".claude" / name).read_text())


def our_handlers(data):
    found = {}
    for event, groups in data["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if "memhealth" in handler["command"]:
                    found[event] = handler
    return found


def test_init_creates_state_and_wires_every_hook_with_second_timeouts(tmp_path):
    proc = run_cli("init", "--project", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "created" in proc.stdout and "settings.local.json" in proc.stdout
    state = tmp_path / ".memhealth"
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert (state / "config.toml").exists() and (state / "memory.db").exists()
    handlers = our_handlers(settings(tmp_path))
    assert set(handlers) == {w[0] for w in WIRING}
    for event, handler in handlers.items():
        assert isinstance(handler["timeout"], int) and 1 <= handler["timeout"] <= 60, event
        command = handler["command"]
        assert os.path.isabs(command.split()[0]), command  # runs whatever the user's PATH
    assert handlers["UserPromptSubmit"]["command"].endswith("hook prompt")
    assert handlers["SessionStart"]["statusMessage"]


def test_the_installed_command_runs_with_an_empty_path(tmp_path):
    run_cli("init", "--project", str(tmp_path))
    command = our_handlers(settings(tmp_path))["Stop"]["command"]
    import subprocess

    proc = subprocess.run(command, shell=True, input=json.dumps({"cwd": str(tmp_path)}).encode(),
                          env={"PATH": ""}, capture_output=True, timeout=30)
    assert proc.returncode == 0 and proc.stderr == b""


def test_existing_user_hooks_and_settings_are_preserved(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps(USER_SETTINGS))
    assert run_cli("init", "--project", str(tmp_path)).returncode == 0
    data = settings(tmp_path)
    assert data["permissions"] == USER_SETTINGS["permissions"]
    assert data["hooks"]["Notification"] == USER_SETTINGS["hooks"]["Notification"]
    assert data["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert len(data["hooks"]["PreToolUse"]) == 2


def test_a_second_run_changes_nothing(tmp_path):
    assert run_cli("init", "--project", str(tmp_path)).returncode == 0
    path = tmp_path / ".claude" / "settings.local.json"
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    proc = run_cli("init", "--project", str(tmp_path))
    assert proc.returncode == 0
    assert "nothing changed" in proc.stdout
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_an_unparsable_settings_file_is_untouched_and_exits_2(tmp_path):
    (tmp_path / ".claude").mkdir()
    broken = b'{"hooks": {"Stop": [ , ]}  // a comment\n'
    path = tmp_path / ".claude" / "settings.local.json"
    path.write_bytes(broken)
    proc = run_cli("init", "--project", str(tmp_path))
    assert proc.returncode == 2
    assert "not valid JSON" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == broken
    assert not (tmp_path / ".memhealth").exists()  # nothing written at all


def test_shared_settings_go_to_settings_json(tmp_path):
    assert run_cli("init", "--project", str(tmp_path), "--settings", "shared").returncode == 0
    assert our_handlers(settings(tmp_path, "settings.json"))
    assert not (tmp_path / ".claude" / "settings.local.json").exists()


def test_the_gate_reads_the_shared_launcher_as_runnable(tmp_path):
    """Shared settings run "${CLAUDE_PROJECT_DIR:-.}"/.memhealth/bin/memhealth: the gate
    resolves the variable as Claude Code does, so a fresh shared init is not a wiring RED."""
    assert run_cli("init", "--project", str(tmp_path), "--settings", "shared").returncode == 0
    assert run_cli("ingest", "--project", str(tmp_path)).returncode == 0
    gate = run_cli("gate", "--project", str(tmp_path), "--json")
    checks = {c["name"]: c for c in json.loads(gate.stdout)["checks"]}
    assert checks["hook_heartbeats"]["status"] == "green", checks["hook_heartbeats"]
    # and a launcher that really is missing is still named
    os.remove(tmp_path / ".memhealth" / "bin" / "memhealth")
    gate = run_cli("gate", "--project", str(tmp_path), "--json")
    detail = {c["name"]: c for c in json.loads(gate.stdout)["checks"]}["hook_heartbeats"]["detail"]
    assert ".memhealth/bin/memhealth, which is not an executable here" in detail


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, cli):
    run = cli("init", "--project", tmp_path, "--dry-run")
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    state = tmp_path / ".memhealth"
    assert lines[0] == f"would create {state}/ (mode 0700)"
    assert f"would write {state / 'config.toml'} (commented defaults)" in lines
    assert any(line.startswith("would add UserPromptSubmit → ") for line in lines)
    assert lines[-1] == f"would write {tmp_path / '.claude' / 'settings.local.json'}"
    assert all(line.startswith("would ") and "would: " not in line and line.count("would") == 1
               for line in lines), lines  # not "would: would write"
    assert os.listdir(tmp_path) == []


def test_a_moved_interpreter_updates_our_entry_in_place(tmp_path):
    from memhealth.installer import init_project

    init_project(str(tmp_path), launch="/old/venv/bin/memhealth")
    actions = init_project(str(tmp_path), launch=MEMHEALTH)
    assert any(a.startswith("updated UserPromptSubmit") for a in actions)
    data = settings(tmp_path)
    assert len(data["hooks"]["UserPromptSubmit"]) == 1
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{MEMHEALTH} hook prompt"
