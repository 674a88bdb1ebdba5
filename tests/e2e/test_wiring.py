"""What a user sees when the hooks are wired wrong: settings that point at an interpreter that
is gone (a deleted virtualenv, a moved checkout). Claude Code runs the command through
/bin/sh, gets exit 127, and carries on: nothing of memhealth reaches Claude, the transcript
records a `hook_non_blocking_error` per event, and in `-p` mode the user's terminal shows only
the SessionEnd failure. The gate must name it, since no heartbeat is ever written."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import rows, run_cli
from tests.e2e.harness import hook_attachments
from tests.e2e.messages_api import text, tool_use
from tests.e2e.reached import hook_blocks, request_with

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

PROMPT = "Let's build a new ledger writer that batches appends and dedupes them by idempotency key"


def test_hooks_pointing_at_a_missing_interpreter_deliver_nothing_and_the_gate_names_it(e2e, tmp_path):
    settings = os.path.join(e2e.project.root, ".claude", "settings.local.json")
    with open(settings, encoding="utf-8") as fh:
        original = fh.read()
    launcher = json.loads(original)["hooks"]["Stop"][0]["hooks"][0]["command"].rsplit(" hook ", 1)[0]
    gone = str(tmp_path / "deleted-venv" / "bin" / "memhealth")
    with open(settings, "w", encoding="utf-8") as fh:
        fh.write(original.replace(launcher, gone))

    api = os.path.join(e2e.project.root, "src", "api.py")
    run = e2e.run(PROMPT, [[text("Looking at the API."), tool_use("Read", {"file_path": api})]])

    # the events fired (the capture hook beside ours saw them) ...
    fired = [p["hook_event_name"] for p in e2e.project.payloads()]
    assert fired[:2] == ["SessionStart", "UserPromptSubmit"] and "SessionEnd" in fired
    # ... and nothing of memhealth reached the model: no verdict, no memory, no error text
    body = request_with(e2e.model.agent_requests(), PROMPT)
    assert hook_blocks(body, "SessionStart") == [] and hook_blocks(body, "UserPromptSubmit") == []
    assert not any("MEMORY-HEALTH" in t or gone in t for t in e2e.model.texts())
    # the user: a hook error per event in the transcript, the SessionEnd failure on stderr
    errors = [a for a in hook_attachments(e2e.session.transcript_records(run.session_id))
              if a["type"] == "hook_non_blocking_error"]
    assert {a["hookEvent"] for a in errors} >= {"SessionStart", "UserPromptSubmit", "PreToolUse",
                                                "PostToolUse"}, errors
    assert all(a["exitCode"] == 127 and gone in a["stderr"] for a in errors), errors
    assert "SessionEnd hook" in run.stderr and gone in run.stderr, run.stderr
    assert rows(e2e.project.root, "SELECT count(*) FROM heartbeats") == [(0,)]

    # the operator: the gate names the command and the fix
    gate = run_cli("gate", "--json", "--project", e2e.project.root)
    check = next(c for c in json.loads(gate.stdout)["checks"] if c["name"] == "hook_heartbeats")
    assert gate.returncode == 1 and check["status"] == "red" and gone in check["detail"], check
    assert "memhealth init" in check["fix"]

    # the fix it names works: init rewrites the commands, the next session gets its verdict
    assert run_cli("init", "--project", e2e.project.root).returncode == 0
    again = "Good morning again, is memory healthy now?"
    e2e.run(again)
    blocks = hook_blocks(request_with(e2e.model.agent_requests(), again), "SessionStart")
    assert len(blocks) == 1 and blocks[0].startswith("MEMORY-HEALTH: "), blocks
