"""The wiring check at configuration time: every event memhealth needs is in a settings file
Claude Code reads (user, project, local) and runs memhealth, with a matcher covering the
tools the cues need. Real projects set up by `memhealth init`, the gate through the real CLI."""

from __future__ import annotations

import json
import os

from memhealth.installer import WIRING
from probes import wiring
from tests.conftest import clean_env, run_cli
from tests.gate_fix_helpers import commands_in, run_fix


def _project(tmp_path, *init_args):
    root = tmp_path / "proj"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(HOME=str(home))
    assert run_cli("init", "--project", str(root), "--no-templates", *init_args, env=env).returncode == 0
    return str(root), env


def _settings(root, name="settings.local.json") -> str:
    return os.path.join(root, ".claude", name)


def _edit(path, change) -> None:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    change(data)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)


def _wiring(root, env) -> dict:
    proc = run_cli("gate", "--json", "--project", root, env=env, timeout=90)
    return next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "hook_wiring")


def test_needed_events_are_what_init_writes():
    assert [(e, h, m) for e, h, m, _t, _s in WIRING] == [
        (e, h, "|".join(t) if t else None) for e, h, t in wiring.NEEDED]


def test_matchers_follow_claude_codes_rule():
    assert wiring.matcher_covers(None, "Read") and wiring.matcher_covers("*", "Bash")
    assert wiring.matcher_covers("", "Edit")
    assert wiring.matcher_covers("Read|Edit", "Edit") and not wiring.matcher_covers("Read|Edit", "Bash")
    assert not wiring.matcher_covers("Rea", "Read")            # an exact list, not a prefix
    assert wiring.matcher_covers("Read.*", "Read") and wiring.matcher_covers("^(Bash|Edit)$", "Edit")
    assert not wiring.matcher_covers("(", "Read")              # a bad regex matches nothing


def test_a_project_set_up_by_init_is_green(tmp_path):
    root, env = _project(tmp_path)
    check = _wiring(root, env)
    assert check["status"] == "green" and "all 7 events run memhealth (local settings)" in check["detail"], check


def test_an_event_removed_from_the_settings_is_red_and_init_as_printed_restores_it(tmp_path):
    root, env = _project(tmp_path)
    _edit(_settings(root), lambda d: d["hooks"].pop("PreToolUse"))
    check = _wiring(root, env)
    assert check["status"] == "red" and check["detail"].startswith("PreToolUse does not run memhealth"), check
    assert "~/.claude/settings.json" in check["detail"] and "settings.local.json" in check["detail"]
    assert commands_in(check["fix"]) == ["memhealth init"], check["fix"]
    run_fix(root, "memhealth init", env=env)
    assert _wiring(root, env)["status"] == "green"


def test_a_command_replaced_by_another_is_red_like_a_missing_one(tmp_path):
    root, env = _project(tmp_path)
    _edit(_settings(root), lambda d: d["hooks"]["UserPromptSubmit"][0]["hooks"][0].update(
        command="sh -c 'exit 1'"))
    check = _wiring(root, env)
    assert check["status"] == "red" and "UserPromptSubmit does not run memhealth" in check["detail"], check
    # what runs there instead is named: the witness's FIX points here for it
    assert "instead UserPromptSubmit runs `sh -c 'exit 1'` (settings.local.json)" in check["detail"], check


def test_a_matcher_that_leaves_out_tools_is_red_and_its_printed_edit_clears_it(tmp_path):
    root, env = _project(tmp_path)
    _edit(_settings(root), lambda d: d["hooks"]["PreToolUse"][0].update(matcher="Read"))
    check = _wiring(root, env)
    assert check["status"] == "red", check
    assert "PreToolUse runs memhealth only for tools matching 'Read'" in check["detail"], check
    assert "Edit, Write, MultiEdit, NotebookEdit, Bash" in check["detail"]
    # the FIX is an edit: the matcher it names, in the file it names
    assert '"Read|Edit|Write|MultiEdit|NotebookEdit|Bash"' in check["fix"] and "settings.local.json" in check["fix"]
    _edit(_settings(root), lambda d: d["hooks"]["PreToolUse"][0].update(matcher="Read|Edit|Write|MultiEdit|NotebookEdit|Bash"))
    assert _wiring(root, env)["status"] == "green"


def test_hooks_in_the_users_settings_count_and_disable_all_hooks_there_is_red(tmp_path):
    root, env = _project(tmp_path)
    local = _settings(root)
    with open(local, encoding="utf-8") as fh:
        data = json.load(fh)
    user = os.path.join(env["HOME"], ".claude", "settings.json")
    os.makedirs(os.path.dirname(user))
    with open(user, "w", encoding="utf-8") as fh:
        json.dump(data, fh)  # a user-wide install
    os.unlink(local)
    check = _wiring(root, env)
    assert check["status"] == "green" and "(user settings)" in check["detail"], check
    _edit(user, lambda d: d.update(disableAllHooks=True))
    check = _wiring(root, env)
    assert check["status"] == "red" and "disableAllHooks is true in ~/.claude/settings.json" in check["detail"]
    assert check["fix"] == 'remove "disableAllHooks" from ~/.claude/settings.json'
    _edit(user, lambda d: d.pop("disableAllHooks"))
    assert _wiring(root, env)["status"] == "green"


def test_shared_settings_get_the_shared_init(tmp_path):
    root, env = _project(tmp_path, "--settings", "shared")
    _edit(_settings(root, "settings.json"), lambda d: d["hooks"].pop("PreCompact"))
    check = _wiring(root, env)
    assert check["status"] == "red" and "PreCompact does not run memhealth" in check["detail"], check
    assert commands_in(check["fix"]) == ["memhealth init --settings shared"], check["fix"]
    run_fix(root, "memhealth init --settings shared", env=env)
    assert _wiring(root, env)["status"] == "green"
    assert not os.path.exists(_settings(root))  # the repair went where the hooks live


def test_our_command_under_the_wrong_event_is_named(tmp_path):
    root, env = _project(tmp_path)

    def misfile(d):
        hooks = d["hooks"]
        command = hooks["Stop"][0]["hooks"][0]["command"]
        hooks["PostToolUse"][0]["hooks"].append({"type": "command", "command": command})
    _edit(_settings(root), misfile)
    check = _wiring(root, env)
    assert check["status"] == "red" and "runs `memhealth hook stop` under PostToolUse" in check["detail"], check
    assert check["fix"].startswith("remove that entry from PostToolUse in ")
    _edit(_settings(root), lambda d: d["hooks"]["PostToolUse"][0]["hooks"].pop())  # as the FIX says
    assert _wiring(root, env)["status"] == "green"


def test_an_unparsable_user_settings_file_is_named(tmp_path):
    root, env = _project(tmp_path)
    user = os.path.join(env["HOME"], ".claude", "settings.json")
    os.makedirs(os.path.dirname(user))
    with open(user, "w", encoding="utf-8") as fh:
        fh.write("{not json")
    check = _wiring(root, env)
    assert check["status"] == "red" and "~/.claude/settings.json is not valid JSON" in check["detail"], check
    assert check["fix"] == "fix the JSON by hand (memhealth init refuses to overwrite it)"
    with open(user, "w", encoding="utf-8") as fh:
        fh.write("{}")
    assert _wiring(root, env)["status"] == "green"
