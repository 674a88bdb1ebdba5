"""The transcript as a witness, with the real CLI: a PreToolUse hook that fails before memhealth
runs, and a PreToolUse entry removed from the settings, leave no heartbeat, so only the
session's transcript can say they happened. The next `memhealth gate` must name the event,
the count, the exit code and the stderr; following the FIX it prints must turn it GREEN."""

from __future__ import annotations

import json
import os

from tests.conftest import run_cli
from tests.e2e.harness import hook_attachments
from tests.e2e.messages_api import text, tool_use
from tests.support.gate_fix_helpers import commands_in, run_fix

BOOM = "sh -c 'echo boom >&2; exit 1'"


def _settings(e2e) -> str:
    return os.path.join(e2e.project.root, ".claude", "settings.local.json")


def _edit_hooks(e2e, change) -> None:
    with open(_settings(e2e), encoding="utf-8") as fh:
        data = json.load(fh)
    change(data["hooks"])
    with open(_settings(e2e), "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)


def _three_reads(e2e) -> list:
    api = os.path.join(e2e.project.root, "src", "api.py")
    return [[text("Reading the API."), tool_use("Read", {"file_path": api})],
            [tool_use("Read", {"file_path": api})], [tool_use("Read", {"file_path": api})],
            [text("Read it three times.")]]


def _gate(root) -> dict:
    proc = run_cli("gate", "--json", "--project", root, timeout=120)
    data = json.loads(proc.stdout)
    assert proc.returncode == (1 if data["red"] else 0), proc.stderr
    return data


def _check(data: dict, name: str) -> dict:
    return next(c for c in data["checks"] if c["name"] == name)


def test_a_pre_tool_hook_that_exits_1_is_red_with_its_count_exit_code_and_stderr_until_init_repairs_it(e2e):
    _edit_hooks(e2e, lambda hooks: hooks["PreToolUse"][0]["hooks"][0].update(command=BOOM))
    run = e2e.run("Read the API module three times, please.", _three_reads(e2e))

    # the witness: three failures in the transcript, none of them a memhealth row
    errors = [a for a in hook_attachments(e2e.session.transcript_records(run.session_id))
              if a["type"] == "hook_non_blocking_error" and a["hookEvent"] == "PreToolUse"]
    assert len(errors) == 3 and all(a["exitCode"] == 1 and "boom" in a["stderr"] for a in errors), errors

    data = _gate(e2e.project.root)
    witness = _check(data, "hook_witness")
    assert witness["status"] == "red", witness
    assert "PreToolUse" in witness["detail"] and "failed 3 time(s)" in witness["detail"], witness
    assert "exit 1" in witness["detail"] and "stderr: boom" in witness["detail"], witness
    assert run.session_id[:8] in witness["detail"], witness
    wiring = _check(data, "hook_wiring")
    assert wiring["status"] == "red" and "PreToolUse does not run memhealth" in wiring["detail"], wiring

    # the FIX as printed: `memhealth init` puts the entry back ...
    assert commands_in(wiring["fix"]) == ["memhealth init"], wiring["fix"]
    assert "memhealth init" in commands_in(witness["fix"]), witness["fix"]
    run_fix(e2e.project.root, "memhealth init")
    # ... and "the next PreToolUse memhealth records clears this": a later session's tool call
    api = os.path.join(e2e.project.root, "src", "api.py")
    e2e.run("Read the API module once more.", [[tool_use("Read", {"file_path": api})], [text("Done.")]])
    data = _gate(e2e.project.root)
    assert data["red"] == 0, [c for c in data["checks"] if c["status"] == "red"]
    witness = _check(data, "hook_witness")
    # the operator still hears of it, once recovered: a NOTE, not a RED
    assert witness["status"] == "note" and "recorded again since" in witness["detail"], witness
    assert _check(data, "hook_wiring")["status"] == "green"


def test_a_pre_tool_entry_removed_from_the_settings_is_red_naming_the_event_until_its_fix_is_followed(e2e):
    _edit_hooks(e2e, lambda hooks: hooks.pop("PreToolUse"))
    run = e2e.run("Read the API module three times, please.", _three_reads(e2e))
    # nothing failed: no hook ran at all, so the transcript has no error to show either
    assert not [a for a in hook_attachments(e2e.session.transcript_records(run.session_id))
                if a["type"].endswith("error") and a.get("hookEvent") == "PreToolUse"]

    data = _gate(e2e.project.root)
    witness = _check(data, "hook_witness")
    assert witness["status"] == "red", witness
    assert "PreToolUse fired 3 time(s) with no memhealth hook run" in witness["detail"], witness
    assert "Read×3" in witness["detail"], witness
    wiring = _check(data, "hook_wiring")
    assert wiring["status"] == "red" and "PreToolUse does not run memhealth" in wiring["detail"], wiring

    # follow both FIXes exactly as printed, without another session
    for fix in (wiring["fix"], witness["fix"]):
        for command in commands_in(fix):
            run_fix(e2e.project.root, command)
    data = _gate(e2e.project.root)
    assert data["red"] == 0, [c for c in data["checks"] if c["status"] == "red"]
    assert _check(data, "hook_wiring")["status"] == "green"
    assert _check(data, "hook_witness")["status"] == "green"
    # the repaired entry is memhealth's own, so the next session's tool call is recorded
    with open(_settings(e2e), encoding="utf-8") as fh:
        pre = json.load(fh)["hooks"]["PreToolUse"]
    assert any("hook pre-tool" in h["command"] for g in pre for h in g["hooks"]), pre


def test_pre_tool_removed_from_the_settings_mid_session_is_red_for_the_calls_after_it(e2e):
    """Claude Code reloads its settings while a session runs: the calls after the edit fire
    with no memhealth hook; the one before it was recorded."""
    import time

    api = os.path.join(e2e.project.root, "src", "api.py")

    def remove_then_read(_body):
        _edit_hooks(e2e, lambda hooks: hooks.pop("PreToolUse"))
        time.sleep(3.0)  # the CLI's settings watcher picks the edit up before the next call
        return [tool_use("Read", {"file_path": api})]

    run = e2e.run("Read the API module three times, please.",
                  [[text("Reading the API."), tool_use("Read", {"file_path": api})], remove_then_read,
                   [tool_use("Read", {"file_path": api})], [text("Read it three times.")]])
    data = _gate(e2e.project.root)
    witness = _check(data, "hook_witness")
    assert witness["status"] == "red", witness
    assert "PreToolUse fired 2 time(s) with no memhealth hook run" in witness["detail"], witness
    assert run.session_id[:8] in witness["detail"]
    assert _check(data, "hook_wiring")["status"] == "red"
    for fix in (_check(data, "hook_wiring")["fix"], witness["fix"]):
        for command in commands_in(fix):
            run_fix(e2e.project.root, command)
    assert _gate(e2e.project.root)["red"] == 0
