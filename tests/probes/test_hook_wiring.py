"""The wiring check at configuration time: every event memhealth needs is in a settings file
Claude Code reads (user, project, local) and runs memhealth, with a matcher covering the
tools the cues need. Real projects set up by `memhealth init`, the gate through the real CLI."""

from __future__ import annotations

import json
import os

from memhealth.installer import WIRING
from probes import wiring
from tests.conftest import clean_env, run_cli
from tests.support.gate_fix_helpers import commands_in, run_fix


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


# -- the HTTP transport (`memhealth init --transport http`) -----------------------------------

def test_the_http_hooks_are_the_ones_init_sends_to_serves_endpoint():
    from memhealth import installer
    from telemetry.hook_endpoint import PREFIX

    assert wiring.HTTP_HOOKS == installer.HTTP_EVENTS
    assert wiring.HOOK_URL_PATH == installer.HOOK_PATH == PREFIX


def test_only_a_loopback_http_url_on_the_hook_path_is_memhealths_endpoint():
    assert wiring.our_url("http://127.0.0.1:9464/memhealth/hook/pre-tool") == "pre-tool"
    assert wiring.our_url("http://[::1]:9464/memhealth/hook/prompt?x=1") == "prompt"
    assert wiring.our_url("http://localhost:9464/memhealth/hook/stop") == "stop"
    assert wiring.our_url("http://127.0.0.1:9464/other/pre-tool") is None
    assert wiring.our_url("http://10.1.2.3:9464/memhealth/hook/pre-tool") is None  # serve binds loopback
    assert wiring.our_url("https://127.0.0.1:9464/memhealth/hook/pre-tool") is None
    assert wiring.our_url("http://127.0.0.1:99999/memhealth/hook/pre-tool") is None  # a malformed port
    assert wiring.our_url("http://127.0.0.1:9464/memhealth/hook/") is None
    assert wiring.hook_named("/venv/bin/memhealth hook post-tool") == "post-tool"
    assert wiring.hook_named("http://127.0.0.1:1/memhealth/hook/stop") == "stop"


def test_a_project_on_the_http_transport_is_green_and_says_which_events_go_over_http(tmp_path):
    root, env = _project(tmp_path, "--transport", "http")
    check = _wiring(root, env)
    assert check["status"] == "green", check
    assert check["detail"] == ("all 7 events run memhealth (local settings; UserPromptSubmit, PreToolUse, "
                               "PostToolUse, Stop over HTTP to 127.0.0.1:9464)"), check


def _set_url(url: str, event: str = "PreToolUse"):
    return lambda d: d["hooks"][event][0]["hooks"][0].update(url=url)


def test_an_http_entry_to_another_path_is_red_and_init_as_printed_adds_ours(tmp_path):
    root, env = _project(tmp_path, "--transport", "http")
    _edit(_settings(root), _set_url("http://127.0.0.1:9464/other/pre-tool"))
    check = _wiring(root, env)
    assert check["status"] == "red" and check["detail"].startswith("PreToolUse does not run memhealth"), check
    assert "instead PreToolUse runs `POST http://127.0.0.1:9464/other/pre-tool` (settings.local.json)" \
        in check["detail"], check
    assert commands_in(check["fix"]) == ["memhealth init"], check["fix"]
    run_fix(root, "memhealth init", env=env)
    assert _wiring(root, env)["status"] == "green"
    with open(_settings(root), encoding="utf-8") as fh:
        urls = [h.get("url") for g in json.load(fh)["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert "http://127.0.0.1:9464/memhealth/hook/pre-tool" in urls, urls  # ours, over HTTP still


def test_an_http_entry_to_a_remote_host_is_not_memhealths_and_init_points_it_back(tmp_path):
    root, env = _project(tmp_path, "--transport", "http")
    _edit(_settings(root), _set_url("http://10.1.2.3:9464/memhealth/hook/post-tool", "PostToolUse"))
    check = _wiring(root, env)
    assert check["status"] == "red" and "PostToolUse does not run memhealth" in check["detail"], check
    run_fix(root, commands_in(check["fix"])[0], env=env)
    assert _wiring(root, env)["status"] == "green"


def test_session_start_over_http_is_red_and_init_puts_the_command_back(tmp_path):
    root, env = _project(tmp_path, "--transport", "http")
    _edit(_settings(root), lambda d: d["hooks"]["SessionStart"][0]["hooks"].__setitem__(0, {
        "type": "http", "url": "http://127.0.0.1:9464/memhealth/hook/session-start", "timeout": 5}))
    check = _wiring(root, env)
    assert check["status"] == "red", check
    assert check["detail"].startswith("SessionStart POSTs to memhealth serve in ") \
        and "must be a command hook" in check["detail"], check
    assert "does not run memhealth" not in check["detail"], check  # named once, for what it is
    assert commands_in(check["fix"]) == ["memhealth init"], check["fix"]
    run_fix(root, "memhealth init", env=env)
    assert _wiring(root, env)["status"] == "green"


def test_our_http_entry_under_the_wrong_event_is_named(tmp_path):
    root, env = _project(tmp_path, "--transport", "http")

    def misfile(d):
        stop = d["hooks"]["Stop"][0]["hooks"][0]
        d["hooks"]["PostToolUse"][0]["hooks"].append(dict(stop))
    _edit(_settings(root), misfile)
    check = _wiring(root, env)
    assert check["status"] == "red" and "runs memhealth's stop hook over HTTP under PostToolUse" in check["detail"], check
    _edit(_settings(root), lambda d: d["hooks"]["PostToolUse"][0]["hooks"].pop())
    assert _wiring(root, env)["status"] == "green"
