"""Capture at SessionEnd, with the real client: what a session said becomes triage candidates,
and a confirmed dead end reaches the model when the same ground is proposed again.

The module runs one scripted session through the real CLI (module-scoped: ~3 s):
  1. a prompt re-proposing the ledger writer (so the DO-NOT-REBUILD block is one of the
     transcript's attachments, beside the session-start verdict); the assistant reads the
     writer and states a dead end;
  2. on `--resume`, the user corrects it and the assistant states a decision.
Each SessionEnd hands the transcript to the detached capture worker; the fixture waits for
both workers (bounded), then keeps `memhealth triage --json` as it was right after capture.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conftest import rows
from tests.e2e.conftest import make_world
from tests.e2e.harness import hook_env, memhealth_argv, settled_capture_outcomes
from tests.e2e.messages_api import text, tool_use
from tests.e2e.reached import hook_blocks, position, request_with

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

BUILD_PROMPT = ("Let's build a new ledger writer that batches appends and dedupes them by "
                "idempotency key")
DEAD_END = "I tried running the WAL checkpoint inside append() and it was slower: every append stalled behind it."
CORRECTION = "No, don't write a second writer; extend the existing LedgerWriter."
DECISION = "We decided to keep the idempotency keys in the writer's seen map instead of a separate table."
# a later session proposes the dead end again (build intent: "add")
REPROPOSE = "Let's add a WAL checkpoint inside append() so the WAL never grows between compactor runs"


def memhealth(root: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(memhealth_argv() + [*args, "--project", root], cwd=root, env=hook_env(),
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"memhealth {' '.join(args)} exited {proc.returncode}: {proc.stderr}"
    return proc


# Sixty doc sections on other topics: the sample project grown past the cascade's small-corpus
# mode (memory_core/delivery/relevance.py MIN_IDF_CORPUS = 50 chunks), as any real project is.
HANDBOOK = "# Handbook\n\n" + "".join(
    f"## {topic.title()} note {i}\n\nThe {topic} component keeps its state in table "
    f"{topic.replace(' ', '_')}_{i}; owners rotate weekly and changes need a review from its team.\n\n"
    for i, topic in enumerate(("billing", "invoices", "tenants", "auth tokens", "rate limits", "exports",
                               "reports", "search index", "migrations", "schema", "retention", "archival",
                               "payments", "refunds", "audit log", "webhooks", "metrics", "tracing",
                               "dashboards", "on-call") * 3))


def capture_session(world) -> None:
    """The scripted two-run session, both capture workers waited for, the triage listing kept."""
    writer = os.path.join(world.project.root, "src", "ledger", "writer.py")
    first = world.run(BUILD_PROMPT, [[text("Reading the writer first."), tool_use("Read", {"file_path": writer})],
                                     [text(DEAD_END)]])
    world.sid = first.session_id
    world.run(CORRECTION, [[text(DECISION)]], resume=world.sid)
    # two SessionEnds, two detached workers: both must have finished before triage is read
    world.outcomes = settled_capture_outcomes(world.project.db_path, at_least=2)
    world.listing = json.loads(memhealth(world.project.root, "triage", "--json").stdout)["candidates"]


@pytest.fixture(scope="module")
def captured(tmp_path_factory, claude_binary):
    world = make_world(claude_binary, tmp_path_factory.mktemp("capture"))
    try:
        capture_session(world)
        yield world
    finally:
        world.model.stop()


def confirm_dead_end(world) -> tuple[dict, str]:
    """`memhealth triage confirm` the session's dead end: (its candidate, its record's path prefix)."""
    (dead,) = [c for c in world.listing if c["kind"] == "dead_end"]
    out = memhealth(world.project.root, "triage", "confirm", str(dead["id"])).stdout
    record = f".memhealth/memory/records/dead_end-{dead['id']}-"
    assert f"#{dead['id']} confirmed → {record}" in out, out
    return dead, record


def test_capture_workers_ran_and_finished_ok(captured):
    # one per SessionEnd (a SessionStart may add one when it finds work pending and no worker)
    assert set(captured.outcomes) == {"ok"} and sum(captured.outcomes.values()) >= 2, captured.outcomes
    captured.assert_every_event_heartbeated()


def test_triage_holds_exactly_the_statements_the_session_made(captured):
    got = sorted((c["kind"], c["statement"], c["role"], c["state"]) for c in captured.listing)
    assert got == sorted([("dead_end", DEAD_END, "assistant", "pending"),
                          ("correction", CORRECTION, "human", "pending"),
                          ("decision", DECISION, "assistant", "pending")]), captured.listing


def test_provenance_points_at_the_line_of_the_real_transcript_that_said_it(captured):
    path = captured.session.transcript(captured.sid)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for c in captured.listing:
        assert c["transcript"] == path and c["session_id"] == captured.sid, c
        record = json.loads(lines[c["line"] - 1])
        # the line is the turn itself: a typed prompt or the assistant's own text
        assert record["type"] == {"human": "user", "assistant": "assistant"}[c["role"]], record
        assert c["statement"] in json.dumps(record["message"], ensure_ascii=False), (c, record)
        assert c["ts"] == record["timestamp"], (c, record)


def test_memhealth_hook_output_in_the_transcript_never_becomes_a_candidate(captured):
    """The transcript holds memhealth's own output (the verdict and the render at each
    session start, the DO-NOT-REBUILD block after the prompt) as `attachment` lines, and the
    CLI's queue-operation lines; read as typed text, that output would be a correction
    ("Extend it; do not write a second writer."). None of it is a candidate."""
    from memory_core.records.extract import extract_text

    with open(captured.session.transcript(captured.sid), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    ours = {n: r["attachment"] for n, r in enumerate(records, start=1) if r.get("type") == "attachment"
            and r["attachment"].get("type") == "hook_additional_context"}
    texts = {n: "\n".join(a["content"]) for n, a in ours.items()}
    assert any(t.startswith("MEMORY-HEALTH: ") for t in texts.values()), texts
    assert any("DO-NOT-REBUILD" in t for t in texts.values()), texts
    # what the extractor would have proposed had it read those lines as the human's text
    bait = [s for t in texts.values() for _kind, s in extract_text(t, "human")]
    assert bait, texts  # memhealth's own output would be proposed: the test below means something
    machine = {n for n, r in enumerate(records, start=1) if r.get("type") not in ("user", "assistant")}
    assert "queue-operation" in {records[n - 1]["type"] for n in machine}
    for c in captured.listing:
        assert c["line"] not in machine, c
        for s in bait:
            assert s not in c["statement"] and c["statement"] not in s, (c, s)
    statements = "\n".join(c["statement"] for c in captured.listing)
    for marker in ("MEMORY-HEALTH", "DO-NOT-REBUILD", "hookSpecificOutput", "memhealth"):
        assert marker not in statements, marker


def test_a_confirmed_dead_end_reaches_the_model_when_it_is_proposed_again(captured):
    """A confirmed record is memory of kind `dead_end` whose `status: confirmed` the memory
    ingester keeps in the chunk's attrs; re-proposed on build intent it arrives as a DEAD-END
    block after the prompt (memory_core/delivery/entries.py `entry_block`), with both provenances. It is
    not a DO-NOT-REBUILD: only an inventory entry is."""
    dead, record = confirm_dead_end(captured)
    assert rows(captured.project.root, "SELECT count(*) FROM chunks")[0][0] < 50  # the small-corpus mode

    fresh = captured.run(REPROPOSE)
    assert fresh.session_id != captured.sid
    body = request_with(captured.model.agent_requests(), REPROPOSE)
    blocks = hook_blocks(body, "UserPromptSubmit")
    assert len(blocks) == 1, blocks
    block = blocks[0]
    assert DEAD_END in block, block
    heads = [line for line in block.splitlines() if record in line]
    assert len(heads) == 1 and heads[0].startswith("DEAD-END: "), block
    assert block.count(DEAD_END) == 1, block  # the statement once, not as description, heading and body
    assert "DO-NOT-REBUILD" not in block, block
    # both provenances: the record file, and the transcript line where it was said
    assert f"{dead['transcript']}:{dead['line']}" in block, block
    assert position(body, REPROPOSE) < position(body, "UserPromptSubmit hook additional context"), body
    listing = json.loads(memhealth(captured.project.root, "triage", "--json", "--all").stdout)["candidates"]
    assert {(c["kind"], c["state"]) for c in listing} == {("dead_end", "confirmed"), ("correction", "pending"),
                                                         ("decision", "pending")}, listing
    # the new session's own worker finished too (it found nothing new to propose)
    outcomes = settled_capture_outcomes(captured.project.db_path, at_least=sum(captured.outcomes.values()) + 1)
    assert set(outcomes) == {"ok"}, outcomes
    assert json.loads(memhealth(captured.project.root, "triage", "--json").stdout)["candidates"] == \
        [c for c in listing if c["state"] == "pending"]


@pytest.fixture(scope="module")
def grown(tmp_path_factory, claude_binary):
    """The same session and dead end, confirmed, in the sample project plus sixty unrelated doc
    sections (past the cascade's small-corpus mode)."""
    world = make_world(claude_binary, tmp_path_factory.mktemp("grown"), extra={"docs/handbook.md": HANDBOOK})
    try:
        capture_session(world)
        world.dead, world.record = confirm_dead_end(world)
        world.reproposals = []
        yield world
    finally:
        world.model.stop()


def repropose(world) -> None:
    """A new session whose prompt re-proposes the dead end; records whether it reached the
    model (and the cascade's arithmetic), then waits for that session's capture worker, which
    also ingests its transcript (the prompt becomes a transcript chunk)."""
    before = len(world.model.agent_requests())
    workers = sum(settled_capture_outcomes(world.project.db_path, at_least=1).values())
    world.run(REPROPOSE)
    body = world.model.agent_requests()[before]["body"]
    blocks = hook_blocks(body, "UserPromptSubmit")
    arrived = len(blocks) == 1 and DEAD_END in blocks[0] and world.record in blocks[0]
    (detail,) = rows(world.project.root, "SELECT detail FROM decisions ORDER BY id DESC LIMIT 1")[0]
    world.reproposals.append((arrived, json.loads(detail)))
    assert set(settled_capture_outcomes(world.project.db_path, at_least=workers + 1)) == {"ok"}


def test_a_confirmed_dead_end_reaches_the_model_in_a_project_past_the_small_corpus_mode(grown):
    assert rows(grown.project.root, "SELECT count(*) FROM chunks")[0][0] >= 50
    if not grown.reproposals:
        repropose(grown)
    arrived, detail = grown.reproposals[0]
    assert arrived and not detail["small_corpus"], detail


def test_a_confirmed_dead_end_keeps_reaching_the_model_each_time_it_is_proposed_again(grown):
    while len(grown.reproposals) < 3:
        repropose(grown)
    assert [arrived for arrived, _d in grown.reproposals] == [True, True, True], [
        (a, d.get("outcome"), d.get("corpus"), d.get("max_idf"), d.get("reason")) for a, d in grown.reproposals]
