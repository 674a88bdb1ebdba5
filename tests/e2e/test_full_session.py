"""One full scripted session, every event the CLI fires, and what it left behind.

The module runs one session (module-scoped: ~3 s) through the real CLI:
  1. `-p` with four tool calls (Read, Grep, Edit, Bash): SessionStart(startup),
     UserPromptSubmit, Pre/PostToolUse x4, Stop, SessionEnd;
  2. `/compact` on `--resume`: SessionStart(resume), PreCompact, SessionStart(compact), SessionEnd;
  3. a prompt on `--resume`: SessionStart(resume), UserPromptSubmit, Stop, SessionEnd.
Then every event must have a completed heartbeat, the transcript must show no hook error,
its ingestion must take only typed prompts and replies, and the payload fixtures in
tests/fixtures/payloads/ must have the shapes the CLI sent (MEMHEALTH_E2E_REFRESH_PAYLOADS=1
rewrites them from this run).
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from tests.conftest import rows
from tests.e2e.claude_cli import wanted_version
from tests.e2e.conftest import make_world
from tests.e2e.harness import (
    completed_heartbeats,
    expected_heartbeats,
    hook_attachments,
    settled_capture_outcomes,
)
from tests.e2e.messages_api import text, tool_use
from tests.support.payloads import (
    PAYLOAD_DIR,
    SCRUB_HOME,
    SCRUB_PROJECT,
    payload_name,
    scrub,
    shape,
)

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

PROMPT = "Tidy the ledger writer: read it, find the checkpoint calls, fix its docstring, run a check."
REPLY = "The writer batches appends in append(); I tightened its docstring and the import check passed."
AFTER = "Thanks. What should the writer metrics export look like?"


@pytest.fixture(scope="module")
def full(tmp_path_factory, claude_binary):
    base = tmp_path_factory.mktemp("full")
    world = make_world(claude_binary, base)
    root = world.project.root
    writer = os.path.join(root, "src", "ledger", "writer.py")
    script = [
        [text("Reading the writer first."), tool_use("Read", {"file_path": writer})],
        [tool_use("Grep", {"pattern": "wal_checkpoint", "path": root, "output_mode": "content"})],
        [tool_use("Edit", {"file_path": writer,
                           "old_string": '"""The ledger writer: batched appends with idempotency keys."""',
                           "new_string": '"""The ledger writer: batched appends, deduplicated by idempotency key."""'})],
        [tool_use("Bash", {"command": "python3 -c 'import src.ledger.writer' && echo import-ok",
                           "description": "Check the writer imports"})],
        [text(REPLY)],
    ]
    runs = [world.run(PROMPT, script)]
    sid = runs[0].session_id
    runs.append(world.run("/compact", resume=sid))
    runs.append(world.run(AFTER, resume=sid))
    # each SessionEnd spawned a detached capture worker: settled before anything reads the
    # store (a running one is a heartbeat row without an outcome yet)
    world.capture_outcomes = settled_capture_outcomes(world.project.db_path, at_least=3)
    world.sid = sid
    world.runs = runs
    try:
        yield world
    finally:
        world.model.stop()


def test_the_scripted_tools_really_ran(full):
    with open(os.path.join(full.project.root, "src", "ledger", "writer.py"), encoding="utf-8") as fh:
        assert "deduplicated by idempotency key" in fh.read()
    results = [b for r in full.model.agent_requests() for m in r["body"]["messages"]
               if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == "tool_result"]
    assert any("import-ok" in json.dumps(b) for b in results), "the Bash call did not run"
    assert not any(b.get("is_error") for b in results), results


def test_every_event_of_every_run_has_a_completed_heartbeat(full):
    fired = full.project.payloads()
    names = [p["hook_event_name"] for p in fired]
    # the order the CLI fires them in (observed with the pinned CLI)
    assert names[:2] == ["SessionStart", "UserPromptSubmit"] and names.count("PreCompact") == 1
    assert Counter(names)["SessionEnd"] == 3 and Counter(names)["Stop"] == 2
    expected = expected_heartbeats(fired)
    # four tool calls; init's matcher leaves Grep out (Read, Edit, Bash are ours)
    assert names.count("PreToolUse") == 4 and names.count("PostToolUse") == 4
    assert expected[("pre-tool", full.sid)] == 3 and expected[("post-tool", full.sid)] == 3
    assert completed_heartbeats(full.project.db_path) == expected
    assert set(full.capture_outcomes) == {"ok"} and sum(full.capture_outcomes.values()) >= 3, full.capture_outcomes
    assert rows(full.project.root, "SELECT hook, outcome, reason, detail FROM heartbeats "
                                   "WHERE outcome IS NOT 'ok'") == []


def test_the_transcript_shows_every_hook_succeeded(full):
    records = full.session.transcript_records(full.sid)
    attachments = hook_attachments(records)
    kinds = Counter(a["type"] for a in attachments)
    # hook_system_message: operator notes shown to the user (systemMessage), never to the model
    assert set(kinds) <= {"hook_success", "hook_additional_context", "hook_system_message"}, kinds
    assert all(a.get("exitCode", 0) == 0 and not a.get("stderr") for a in attachments), attachments
    ours = [a for a in attachments if a["type"] == "hook_success" and "hookSpecificOutput" in a.get("stdout", "")]
    assert {a["hookName"] for a in ours} >= {"SessionStart:startup", "SessionStart:compact"}, attachments
    summaries = [r for r in records if r.get("type") == "system" and r.get("subtype") == "stop_hook_summary"]
    assert len(summaries) == 2 and all(s["hookErrors"] == [] for s in summaries), summaries


def test_transcript_ingest_takes_no_attachment_queue_or_hook_output_lines(full):
    proc = full.project.ingest("transcripts")
    assert proc["errors"] == 0, proc
    path = full.session.transcript(full.sid)
    with open(path, encoding="utf-8") as fh:
        kinds = {n: json.loads(line).get("type") for n, line in enumerate(fh, start=1) if line.strip()}
    assert {"attachment", "queue-operation"} <= set(kinds.values()), set(kinds.values())
    chunks = rows(full.project.root, "SELECT line_start, line_end, kind, content FROM chunks "
                                     "WHERE source = 'transcript' ORDER BY line_start")
    assert {kinds[ls] for ls, _le, _k, _c in chunks} <= {"user", "assistant"}, chunks
    joined = "\n".join(c for *_x, c in chunks)
    for machine in ("MEMORY-HEALTH", "hookSpecificOutput", "hook additional context", "DO-NOT-REBUILD"):
        assert machine not in joined, machine
    typed = [c for _ls, _le, k, c in chunks if k == "prompt"]
    assert PROMPT in typed and AFTER in typed and "/compact" not in typed, typed
    assert any(REPLY in c for _ls, _le, k, c in chunks if k == "reply"), chunks


def test_payload_fixtures_have_the_shapes_the_cli_sent(full):
    """tests/fixtures/payloads/*.json are this CLI's payloads, scrubbed; a new CLI that
    changes a shape fails here (rerun with MEMHEALTH_E2E_REFRESH_PAYLOADS=1 to refresh)."""
    home = full.session.home
    captured: dict[str, dict] = {}
    for p in full.project.payloads():
        captured.setdefault(payload_name(p), scrub(p, full.project.root, home))
    wanted = {"session_start_startup", "session_start_resume", "session_start_compact",
              "user_prompt_submit", "pre_compact", "stop", "session_end",
              *(f"{when}_tool_use_{tool}" for when in ("pre", "post")
                for tool in ("read", "edit", "grep", "bash"))}
    assert wanted <= set(captured), sorted(captured)
    if os.environ.get("MEMHEALTH_E2E_REFRESH_PAYLOADS") == "1":
        os.makedirs(PAYLOAD_DIR, exist_ok=True)
        for name in sorted(wanted):
            with open(os.path.join(PAYLOAD_DIR, f"{name}.json"), "w", encoding="utf-8") as fh:
                json.dump(captured[name], fh, indent=2, ensure_ascii=False, sort_keys=True)
                fh.write("\n")
        with open(os.path.join(PAYLOAD_DIR, "VERSION"), "w", encoding="utf-8") as fh:
            fh.write(wanted_version() + "\n")
        _write_transcript_fixture(full.session.transcript_records(full.sid), full.project.root, home)
    for name in sorted(wanted):
        with open(os.path.join(PAYLOAD_DIR, f"{name}.json"), encoding="utf-8") as fh:
            fixture = json.load(fh)
        assert shape(fixture) == shape(captured[name]), name
        flat = json.dumps(fixture)
        assert SCRUB_PROJECT in flat and SCRUB_HOME in flat and home not in flat, name


# Records that carry the CLI's own system prompt, tool and skill listings and request bodies:
# large, not ours to republish, and never user/assistant turns.
_DROPPED = {"api-request", "api-request-shape", "api-request-blob"}
_DROPPED_ATTACHMENTS = {"prompt_snapshot", "skill_listing", "agent_listing_delta", "deferred_tools_delta"}


def _write_transcript_fixture(records: list[dict], project: str, home: str) -> None:
    """tests/fixtures/payloads/transcript.jsonl: this session's transcript, scrubbed, minus
    the records that only restate the CLI's prompt (for tests/memory_core/ingest/test_ingest_transcripts.py)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    extra = ((os.path.join(os.path.dirname(project), "payloads"), "/home/dev/capture"),
             (repo, "/opt/memhealth"))
    kept = [scrub(r, project, home, extra) for r in records if r.get("type") not in _DROPPED
            and not (r.get("type") == "attachment"
                     and r.get("attachment", {}).get("type") in _DROPPED_ATTACHMENTS)]
    with open(os.path.join(PAYLOAD_DIR, "transcript.jsonl"), "w", encoding="utf-8") as fh:
        for r in kept:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
