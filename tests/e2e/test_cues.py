"""Cues with the real client: a memory item cued on a file arrives with the tool call that
touches it, once per session, and again after a compaction; every pinned item arrives again
after the compaction.

The module runs one scripted session through the real CLI (module-scoped: ~3 s), in the
sample project plus two memory files: a gotcha cued on `src/ledger/writer.py` and a pinned
invariant (beside the sample's own invariant and init's invariants file):
  1. `-p`: Read the writer, Read it again;
  2. `/compact` on `--resume` (SessionStart resume, PreCompact, SessionStart compact);
  3. a prompt on `--resume`: Read the writer.
CLI 2.1.332 puts PreToolUse's additionalContext in a `system` message right after that tool
call's tool_result (reached.after_tool_result), and the compact SessionStart's into the same
system message as the next resume's.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import rows
from tests.e2e.conftest import make_world
from tests.e2e.messages_api import text, tool_use
from tests.e2e.reached import after_tool_result, every_hook_block, request_with

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

CUED = ".memhealth/memory/writer-seen-map.md"
PINNED_FILE = ".memhealth/memory/keys-never-reused.md"
EXTRA = {
    CUED: """---
name: The writer's seen map is per process
kind: gotcha
paths: src/ledger/writer.py
---
LedgerWriter.seen lives in one process: a second API worker does not see its keys, so
idempotency across workers needs the entries table's unique key.
""",
    PINNED_FILE: """---
name: Idempotency keys are never reused
kind: invariant
pinned: true
---
A key names one entry forever; never recycle keys after a compaction.
""",
}
CUE_NAME = "The writer's seen map is per process"
FIRST = "Read the ledger writer, then read its first lines again."
AFTER = "Read the writer once more now that we compacted."
PINNED_NAMES = ("Idempotency keys are never reused", "WAL checkpoints run only in the compactor")


@pytest.fixture(scope="module")
def cued(tmp_path_factory, claude_binary):
    base = tmp_path_factory.mktemp("cues")
    world = make_world(claude_binary, base, extra=EXTRA)
    writer = os.path.join(world.project.root, "src", "ledger", "writer.py")
    world.reads = [tool_use("Read", {"file_path": writer}),
                   tool_use("Read", {"file_path": writer, "offset": 1, "limit": 5}),
                   tool_use("Read", {"file_path": writer})]
    first = world.run(FIRST, [[text("Reading the writer."), world.reads[0]], [world.reads[1]],
                              [text("Read it twice.")]])
    world.sid = first.session_id
    world.run("/compact", resume=world.sid)
    world.run(AFTER, [[world.reads[2]], [text("Read it again.")]], resume=world.sid)
    try:
        yield world
    finally:
        world.model.stop()


def tool_context(world, n: int) -> list[str]:
    """The PreToolUse blocks that reached the model with the n-th scripted Read (in the
    request that answers it)."""
    tid = world.reads[n]["id"]
    # the first request that carries the call is the one answering it (with its result)
    body = request_with(world.model.agent_requests(), tid)
    return every_hook_block({"messages": after_tool_result(body, tid)}, "PreToolUse:Read")


def cue_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- [")]


def test_the_first_read_of_a_cued_file_gets_the_cue_with_that_tool_call(cued):
    blocks = tool_context(cued, 0)
    assert len(blocks) == 1, blocks
    block = blocks[0]
    assert block.startswith("memhealth memory, first touch by Read of src/ledger/writer.py."), block
    (item,) = cue_lines(block)
    # the item with its provenance: kind, name, file:line, that it is a record to verify
    assert item.startswith(f"- [gotcha] {CUE_NAME} ({CUED}:6, recorded "), item
    assert "verify before building on it): LedgerWriter.seen lives in one process" in item, item
    assert "[invariant]" not in block  # pinned items come at session start, not with a tool call


def test_a_second_read_of_it_in_the_same_session_gets_nothing(cued):
    # the CLI fired PreToolUse for both Reads and our hook evaluated both: fired, then deduped
    pre = [p for p in cued.project.payloads() if p["hook_event_name"] == "PreToolUse"]
    assert [p["tool_use_id"] for p in pre] == [r["id"] for r in cued.reads], pre
    audit = rows(cued.project.root, "SELECT outcome, reason, epoch FROM cue_audit WHERE session_id = ? "
                 "AND event = 'pre-tool' AND trigger = 'path' ORDER BY id", (cued.sid,))
    assert audit[:2] == [("fired", None, 0), ("skipped", "deduped", 0)], audit
    assert tool_context(cued, 1) == []
    # what the model read when answering the second Read: the first Read's cue, once
    body = request_with(cued.model.agent_requests(), cued.reads[1]["id"])
    assert len(every_hook_block(body, "PreToolUse:Read")) == 1


def test_a_read_after_compact_on_resume_gets_the_cue_again(cued):
    assert len(cued.model.compactions()) == 1  # the CLI really compacted
    blocks = tool_context(cued, 2)
    assert len(blocks) == 1 and cue_lines(blocks[0]) == cue_lines(tool_context(cued, 0)[0]), blocks
    audit = rows(cued.project.root, "SELECT outcome, epoch FROM cue_audit WHERE session_id = ? "
                 "AND event = 'pre-tool' AND trigger = 'path' ORDER BY id", (cued.sid,))
    assert audit[-1] == ("fired", 1), audit  # a new epoch: the compaction re-armed it
    # the pre-compaction cue went with the context it came in: the model reads this one only
    body = request_with(cued.model.agent_requests(), cued.reads[2]["id"])
    assert every_hook_block(body, "PreToolUse:Read") == blocks


def test_every_pinned_item_arrives_after_the_compaction(cued):
    sources = [p["source"] for p in cued.project.payloads() if p["hook_event_name"] == "SessionStart"]
    assert sources == ["startup", "resume", "compact", "resume"], sources
    startup = every_hook_block(request_with(cued.model.agent_requests(), FIRST), "SessionStart")
    assert len(startup) == 1, startup
    pinned = cue_lines(startup[0])
    names = [line.split("] ", 1)[1].split(" (", 1)[0] for line in pinned]
    # exactly the pinned items (init's invariants template holds no rule yet, so pins nothing)
    assert set(names) == set(PINNED_NAMES), startup[0]

    body = request_with(cued.model.agent_requests(), AFTER)
    assert FIRST not in "\n".join(str(m) for m in body["messages"])  # compacted away
    blocks = every_hook_block(body, "SessionStart")
    compact = [b for b in blocks if "re-delivered after compaction" in b.splitlines()[1]]
    assert len(compact) == 1, blocks
    assert compact[0].splitlines()[1].startswith(
        f"memhealth memory, re-delivered after compaction: all {len(pinned)} pinned items."), compact[0]
    assert cue_lines(compact[0]) == pinned, compact[0]
    audit = rows(cued.project.root, "SELECT count(*) FROM cue_audit WHERE session_id = ? AND event = 'session-start' "
                 "AND outcome = 'fired' AND detail = 'pinned at compact'", (cued.sid,))
    assert audit == [(len(pinned),)]
    cued.assert_every_event_heartbeated()
