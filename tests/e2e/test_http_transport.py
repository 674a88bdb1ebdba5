"""The HTTP hook transport with the real client: `memhealth init --transport http` sends
UserPromptSubmit, PreToolUse, PostToolUse and Stop to a real `memhealth serve`; SessionStart,
PreCompact and SessionEnd stay command hooks.

One module-scoped world (the sample project plus a memory item cued on the writer):
  1. a session with serve up: the verdict at SessionStart, DO-NOT-REBUILD after the
     re-proposing prompt, and the cue with the first Read of the writer reach the model; the
     turn's events leave their heartbeats in serve's process;
  2. a session in which serve is killed (SIGKILL) between two tool calls: the CLI goes on,
     the transcript records the refused events, and nothing written before is lost;
  3. the next session: its SessionStart gate names the dead transport to the model, and
     `memhealth gate` prints the FIX.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import rows, run_cli
from tests.e2e.conftest import make_world
from tests.e2e.harness import hook_attachments
from tests.e2e.messages_api import text, tool_use
from tests.e2e.reached import after_tool_result, every_hook_block, hook_blocks, request_with
from tests.support.hook_serve import HookServe

CUED = ".memhealth/memory/writer-seen-map.md"
EXTRA = {CUED: """---
name: The writer's seen map is per process
kind: gotcha
paths: src/ledger/writer.py
---
LedgerWriter.seen lives in one process: a second API worker does not see its keys.
"""}
CUE_NAME = "The writer's seen map is per process"
BUILD = "Let's build a new ledger writer that batches appends and dedupes them by idempotency key"
SUBSYSTEM = "Ledger writer (batched appends, idempotency keys)"
SECOND = "Now look at the API handlers and the compactor."
THIRD = "Good morning again: is memory healthy?"
TABLES = ("heartbeats", "decisions", "cue_audit", "context_blocks", "spans")


def snapshot(root: str) -> dict:
    return {t: rows(root, f"SELECT * FROM {t} ORDER BY rowid") for t in TABLES}


@pytest.fixture(scope="module")
def world(tmp_path_factory, claude_binary):
    base = tmp_path_factory.mktemp("http")
    w = make_world(claude_binary, base, extra=EXTRA)
    w.serve = HookServe.start(w.project.root)
    root = w.project.root
    writer = os.path.join(root, "src", "ledger", "writer.py")
    w.read = tool_use("Read", {"file_path": writer})
    first = w.run(BUILD, [[text("Reading the writer first."), w.read], [text("It exists already.")]])
    w.first = first.session_id
    w.heartbeats_first = rows(root, "SELECT hook, pid, outcome FROM heartbeats WHERE session_id = ? "
                                    "AND hook != 'gate'", (w.first,))
    w.before = snapshot(root)

    api = tool_use("Read", {"file_path": os.path.join(root, "src", "api.py")})
    compactor = tool_use("Read", {"file_path": os.path.join(root, "src", "ledger", "compactor.py")})

    def kill_serve_then_read(_body):
        w.serve.kill()  # serve dies between the first and the second tool call, as a crash would
        return [compactor]

    second = w.run(SECOND, [[api], kill_serve_then_read, [text("Done reading.")]])
    w.second = second.session_id
    w.api, w.compactor = api, compactor
    w.third = w.run(THIRD)
    try:
        yield w
    finally:
        w.serve.kill()
        w.model.stop()


def test_the_verdict_do_not_rebuild_and_a_cue_reach_the_model_over_http(world):
    body = request_with(world.model.agent_requests(), BUILD)
    (start,) = hook_blocks(body, "SessionStart")
    assert start.startswith("MEMORY-HEALTH: ") and " GREEN" in start.splitlines()[0], start
    assert "RED" not in start.splitlines()[0]
    (recall,) = hook_blocks(body, "UserPromptSubmit")
    assert "DO-NOT-REBUILD" in recall and SUBSYSTEM in recall, recall
    tid = world.read["id"]
    cued = every_hook_block({"messages": after_tool_result(request_with(world.model.agent_requests(), tid), tid)},
                            "PreToolUse:Read")
    assert len(cued) == 1 and CUE_NAME in cued[0] and CUED in cued[0], cued


def test_the_turn_hooks_ran_in_serve_and_the_session_hooks_as_processes(world):
    by_hook: dict[str, set] = {}
    for hook, pid, outcome in world.heartbeats_first:
        assert outcome == "ok", (hook, outcome)
        by_hook.setdefault(hook, set()).add(pid == world.serve.pid)
    assert by_hook["prompt"] == {True} and by_hook["pre-tool"] == {True} and by_hook["post-tool"] == {True}
    assert by_hook["session-start"] == {False} and by_hook["session-end"] == {False}
    assert by_hook.get("stop") == {True}, by_hook  # CLI 2.1.332 POSTs Stop to an http entry too
    records = world.session.transcript_records(world.first)
    assert [a for a in hook_attachments(records) if a["type"] == "hook_non_blocking_error"] == []


def test_serve_killed_mid_session_loses_nothing_written_before_and_the_cli_goes_on(world):
    root = world.project.root
    after = snapshot(root)
    for table, before in world.before.items():
        assert after[table][:len(before)] == before, table  # every row written before is intact
    # the first tool call of the second session was served; the one after the kill was not
    served = rows(root, "SELECT hook FROM heartbeats WHERE session_id = ? AND hook IN ('pre-tool', 'post-tool')",
                  (world.second,))
    assert sorted(h for (h,) in served) == ["post-tool", "pre-tool"]
    errors = [a for a in hook_attachments(world.session.transcript_records(world.second))
              if a["type"] == "hook_non_blocking_error"]
    refused = {a["hookEvent"] for a in errors if "ECONNREFUSED" in a.get("stderr", "")}
    assert {"PreToolUse", "PostToolUse"} <= refused, errors
    assert any(a.get("toolUseID") == world.compactor["id"] for a in errors), errors


def test_the_next_session_start_names_the_dead_transport(world):
    body = request_with(world.model.agent_requests(), THIRD)
    (start,) = hook_blocks(body, "SessionStart")
    assert "RED hook_transport" in start and f"127.0.0.1:{world.serve.port}" in start, start
    gate = run_cli("gate", "--json", "--project", world.project.root)
    check = next(c for c in json.loads(gate.stdout)["checks"] if c["name"] == "hook_transport")
    assert gate.returncode == 1 and check["status"] == "red"
    assert f"memhealth serve --detach --project {world.project.root}" in check["fix"]
    # the third session's prompt was refused too: no prompt row for it, a refused event in its transcript
    assert rows(world.project.root, "SELECT count(*) FROM heartbeats WHERE hook = 'prompt' AND session_id = ?",
                (world.third.session_id,)) == [(0,)]


def test_the_next_gate_names_the_dead_transport_and_the_events_the_witness_saw_refused(world):
    root = world.project.root
    gate = run_cli("gate", "--json", "--project", root, timeout=120)
    checks = {c["name"]: c for c in json.loads(gate.stdout)["checks"]}
    assert gate.returncode == 1, gate.stderr
    assert checks["hook_transport"]["status"] == "red", checks["hook_transport"]
    # the wiring is memhealth's own: the settings send the turn's hooks to serve's endpoint
    assert checks["hook_wiring"]["status"] == "green", checks["hook_wiring"]
    assert "over HTTP to 127.0.0.1:" in checks["hook_wiring"]["detail"]
    witness = checks["hook_witness"]
    assert witness["status"] == "red", witness
    # the second session's refused Read (pre and post) and the third session's prompt
    for event in ("PreToolUse", "PostToolUse", "UserPromptSubmit"):
        assert f"{event} hook failed" in witness["detail"], (event, witness["detail"])
    assert "over the HTTP transport" in witness["detail"] and "ECONNREFUSED" in witness["detail"], witness
    assert "exit 0" not in witness["detail"], witness  # no process ran: no exit code is claimed
    assert f"`memhealth serve --detach --project {root} --listen 127.0.0.1:{world.serve.port}`" in witness["fix"]
    assert "`memhealth init --transport command`" in witness["fix"], witness["fix"]
