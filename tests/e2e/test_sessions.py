"""What reaches the model in real Claude Code sessions with memhealth's hooks installed.

Every assertion reads the request bodies the CLI sent to the scripted model, never what
memhealth printed: the point is what Claude reads."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import rows
from tests.e2e.harness import PINNED
from tests.e2e.reached import hook_blocks, position, request_with

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

VERDICT = re.compile(r"^MEMORY-HEALTH: (\d+)/(\d+) GREEN")
BUILD_PROMPT = ("Let's build a new ledger writer that batches appends and dedupes them by "
                "idempotency key")
SUBSYSTEM = "Ledger writer (batched appends, idempotency keys)"


def session_start_block(body: dict) -> str:
    blocks = hook_blocks(body, "SessionStart")
    assert len(blocks) == 1, blocks
    return blocks[0]


def decisions(project, session_id: str) -> list[tuple]:
    return rows(project.root, "SELECT prompt_len, outcome FROM decisions WHERE session_id = ? ORDER BY id",
                (session_id,))


def test_session_start_delivers_the_verdict_line_first(e2e):
    prompt = "Good morning! Quick question about the ledger service layout."
    run = e2e.run(prompt)
    body = request_with(e2e.model.agent_requests(), prompt)
    block = session_start_block(body)
    first = block.splitlines()[0]
    match = VERDICT.match(first)
    assert match and match.group(1) == match.group(2), block
    # the memory render follows the verdict, with the pinned invariant
    assert all(fact in block for fact in PINNED), block
    assert rows(e2e.project.root, "SELECT count(*) FROM heartbeats WHERE hook = 'session-start' "
                "AND session_id = ? AND outcome = 'ok'", (run.session_id,)) == [(1,)]
    e2e.assert_every_event_heartbeated()


def test_with_nothing_wrong_no_operator_notes_reach_the_model(e2e):
    prompt = "Good morning! Anything I should know before I start?"
    e2e.run(prompt)
    block = session_start_block(request_with(e2e.model.agent_requests(), prompt))
    lines = block.splitlines()
    assert VERDICT.match(lines[0]), block
    assert " RED " not in block  # nothing is wrong: a precondition, not the point
    operator = [line for line in lines if re.match(r"\s*NOTE\b", line)
                or re.search(r"\b(outbox|exporter|webhook|integrations?)\b", line)]
    assert operator == [], "operator notes reached the model:\n" + "\n".join(operator)


def test_a_prompt_re_proposing_an_existing_subsystem_gets_do_not_rebuild_after_it(e2e):
    run = e2e.run(BUILD_PROMPT)
    body = request_with(e2e.model.agent_requests(), BUILD_PROMPT)
    blocks = hook_blocks(body, "UserPromptSubmit")
    assert len(blocks) == 1, blocks
    block = blocks[0]
    assert "DO-NOT-REBUILD" in block and SUBSYSTEM in block, block
    # provenance: where the memory lives, that it is a record to verify
    assert ".memhealth/memory/ledger-writer.md" in block and "verify" in block, block
    # after the prompt, where Claude reads it as context for that prompt
    assert position(body, BUILD_PROMPT) < position(body, "UserPromptSubmit hook additional context"), body
    assert decisions(e2e.project, run.session_id)[-1] == (len(BUILD_PROMPT), "injected")
    e2e.assert_every_event_heartbeated()


def test_chit_chat_and_a_slash_command_get_nothing_and_the_same_session_still_can(e2e):
    commands = os.path.join(e2e.project.root, ".claude", "commands")
    os.makedirs(commands)
    body_text = "Plan how to build a new ledger writer with batched appends and idempotency keys."
    with open(os.path.join(commands, "ledger-plan.md"), "w", encoding="utf-8") as fh:
        fh.write(body_text + "\n")
    chat = "thanks, that looks great so far"
    first = e2e.run(chat)
    sid = first.session_id
    e2e.run("/ledger-plan", resume=sid)
    e2e.run(BUILD_PROMPT, resume=sid)  # the control: the same session still gets memory

    agent = e2e.model.agent_requests()
    chat_body = request_with(agent, chat)
    assert hook_blocks(chat_body, "UserPromptSubmit") == []
    # the slash command's expansion reached the model (it would match the subsystem) ...
    slash_body = request_with(agent, "<command-name>/ledger-plan</command-name>")
    assert position(slash_body, body_text) >= 0
    assert hook_blocks(slash_body, "UserPromptSubmit") == []
    # ... the build prompt in the same session got the block
    build_body = request_with(agent, BUILD_PROMPT)
    assert len(hook_blocks(build_body, "UserPromptSubmit")) == 1
    assert "DO-NOT-REBUILD" in hook_blocks(build_body, "UserPromptSubmit")[0]
    # the hook decided each prompt (the denominator is complete); only the last injected
    got = decisions(e2e.project, sid)
    assert [length for length, _ in got] == [len(chat), len("/ledger-plan"), len(BUILD_PROMPT)]
    assert [outcome for _, outcome in got][-1] == "injected"
    assert "injected" not in [outcome for _, outcome in got][:2], got
    e2e.assert_every_event_heartbeated()


def test_compact_on_resume_then_a_prompt_gets_the_pinned_facts_again(e2e):
    first_prompt = "Good morning! Where were we with the ledger?"
    first = e2e.run(first_prompt)
    sid = first.session_id
    startup = session_start_block(request_with(e2e.model.agent_requests(), first_prompt))
    pinned = _pinned(startup)
    assert pinned and all(any(fact in line for line in pinned) for fact in PINNED), startup

    e2e.run("/compact", resume=sid)
    assert len(e2e.model.compactions()) >= 1  # the CLI really compacted
    after = "What was the next step after compaction?"
    e2e.run(after, resume=sid)
    body = request_with(e2e.model.agent_requests(), after)
    assert position(body, "This session is being continued from a previous conversation") >= 0
    # the pre-compaction context is gone; SessionStart(compact) delivered it again
    assert position(body, first_prompt) < 0
    block = session_start_block(body)
    assert "Re-delivered after compaction" in block, block
    assert _pinned(block) == pinned, block
    sources = [p["source"] for p in e2e.project.payloads() if p.get("hook_event_name") == "SessionStart"]
    assert sources == ["startup", "resume", "compact", "resume"], sources
    e2e.assert_every_event_heartbeated()


def _pinned(block: str) -> list[str]:
    """The pinned items the cue block delivered (memory_core.delivery.cues: `- [kind] name (...)` lines
    under its `memhealth memory, pinned at session start` or `... re-delivered after
    compaction` line)."""
    lines = block.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(
        ("memhealth memory, pinned at session start", "memhealth memory, re-delivered after compaction"))), None)
    if start is None:
        return []
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("- ["):
            break
        out.append(line)
    return out
