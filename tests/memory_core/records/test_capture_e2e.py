"""End to end through real hook processes: a session's transcript is captured at SessionEnd,
triage confirms one dead end and rejects a decision, and a later prompt that re-proposes the
dead end gets the confirmed record with its provenance, never the rejected one."""

from __future__ import annotations

import json

import pytest

from tests.conftest import payload, rows, run_cli, run_hook
from tests.memhealth.test_capture_worker import wait_for, work_status
from tests.memory_core.records.test_triage import turn

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

SESSION = [
    ("user", "The nightly export job times out on the orders table. Find out why."),
    ("assistant", "The export reads the orders table through a single cursor. I tried "
                  "parallel cursor sharding for the orders export and it made things worse: "
                  "the shards contended on the same index pages."),
    ("assistant", "We decided to stream the orders export through the replica instead of the primary."),
]


def test_a_confirmed_dead_end_comes_back_with_provenance_when_it_is_re_proposed(project, tmp_path):
    transcript = tmp_path / "sess-a.jsonl"
    transcript.write_text("\n".join(turn(r, t, i, "sess-a") for i, (r, t) in enumerate(SESSION, 1)) + "\n")
    end = run_hook("session-end", payload("SessionEnd", project, session_id="sess-a",
                                          transcript_path=str(transcript)), cwd=str(project))
    assert end.returncode == 0 and end.stdout == b""
    wait_for(lambda: work_status(project) == ["done"])

    listed = json.loads(run_cli("triage", "--json", cwd=str(project)).stdout)["candidates"]
    kinds = {i["kind"]: i for i in listed}
    assert set(kinds) == {"dead_end", "decision"}
    confirm = run_cli("triage", "confirm", str(kinds["dead_end"]["id"]), cwd=str(project))
    assert confirm.returncode == 0, confirm.stderr
    record = confirm.stdout.split("→")[1].strip()
    assert run_cli("triage", "reject", str(kinds["decision"]["id"]), cwd=str(project)).returncode == 0

    # a new session re-proposes the same dead end (and touches the rejected decision's words)
    start = run_hook("session-start", payload("SessionStart", project, session_id="sess-b", source="startup"),
                     cwd=str(project))
    assert start.returncode == 0
    prompt = run_hook("prompt", payload("UserPromptSubmit", project, session_id="sess-b",
                                        prompt="Should we add parallel cursor sharding to the orders "
                                               "export so the replica stream finishes sooner?"),
                      cwd=str(project))
    assert prompt.returncode == 0, prompt.stderr
    context = prompt.context()
    assert record in context  # the record file, as provenance
    assert "I tried parallel cursor sharding for the orders export" in context
    assert f"{transcript}:2" in context  # where it was said: transcript and line
    assert "stream the orders export through the replica" not in context
    decision = rows(project, "SELECT outcome, detail FROM decisions WHERE session_id = 'sess-b'")
    assert decision[0][0] == "injected"
    items = json.loads(decision[0][1])["items"]
    paths = [rows(project, "SELECT path FROM chunks WHERE id = ?", (i["chunk_id"],))[0][0] for i in items]
    assert record in paths
