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


def json_line(proc) -> dict:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert lines[0].startswith('{"version": 1, '), lines[0]
    return json.loads(lines[0])


def test_json_lists_the_same_actions_the_text_prints_and_a_second_run_changes_nothing(tmp_path):
    text_root, json_root = tmp_path / "text", tmp_path / "json"
    text_root.mkdir()
    json_root.mkdir()
    text = run_cli("init", "--project", str(text_root))
    proc = run_cli("init", "--project", str(json_root), "--json")
    assert proc.returncode == 0 and proc.stderr == ""
    data = json_line(proc)
    assert data["project"] == str(json_root) and data["settings"] == "local"
    assert data["dry_run"] is False and data["changed"] is True and data["notes"] == []
    # the same lines as the text output, with this project's name and paths
    expected = [line.replace(str(text_root), str(json_root)).replace("'text'", "'json'")
                for line in text.stdout.splitlines() if not line.startswith("next: ")]
    assert data["actions"] == expected
    assert data["next"] == [line.removeprefix("next: ") for line in text.stdout.splitlines()
                            if line.startswith("next: ")]
    assert our_handlers(settings(json_root))  # --json reports; it still does the work
    again = json_line(run_cli("init", "--project", str(json_root), "--json"))
    assert again["changed"] is False and again["actions"] == [] and again["next"] == []


def test_json_dry_run_says_what_would_change_and_writes_nothing(tmp_path):
    data = json_line(run_cli("init", "--project", str(tmp_path), "--dry-run", "--json"))
    assert data["dry_run"] is True and data["changed"] is True and data["next"] == []
    assert data["actions"][0] == f"would create {tmp_path / '.memhealth'}/ (mode 0700)"
    assert all(a.startswith("would ") for a in data["actions"])
    assert os.listdir(tmp_path) == []


def test_json_errors_are_one_object_on_stdout_and_nothing_is_written(tmp_path):
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.local.json"
    path.write_bytes(b'{"hooks": [ , ]}\n')
    proc = run_cli("init", "--project", str(tmp_path), "--json")
    assert proc.returncode == 2 and proc.stderr == ""
    data = json_line(proc)
    assert data["command"] == "init" and data["error"]["exit"] == 2
    assert "not valid JSON" in data["error"]["message"]
    assert not (tmp_path / ".memhealth").exists()


def test_json_unregister_reports_whether_it_was_registered_and_a_broken_registry(tmp_path):
    from tests.conftest import clean_env

    state = tmp_path / "state"
    env = clean_env(XDG_STATE_HOME=state)
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates", env=env).returncode == 0
    registry = state / "memhealth" / "projects.json"
    first = json_line(run_cli("init", "--unregister", "--project", str(root), "--json", env=env))
    assert first == {"version": 1, "project": str(root), "unregistered": True, "registry": str(registry)}
    assert json_line(run_cli("init", "--unregister", "--project", str(root), "--json",
                             env=env))["unregistered"] is False
    registry.write_text("not a registry\n")
    proc = run_cli("init", "--unregister", "--project", str(root), "--json", env=env)
    assert proc.returncode == 1 and proc.stderr == ""
    error = json_line(proc)["error"]
    assert error["exit"] == 1 and "not a memhealth project registry" in error["message"]
    assert registry.read_text() == "not a registry\n"
