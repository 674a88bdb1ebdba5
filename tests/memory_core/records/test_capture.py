"""Deterministic extraction: the labeled set, machine turns, questions and hypotheticals."""

from __future__ import annotations

import glob
import json
import os

import pytest

from memory_core.records.extract import extract_text
from tests.conftest import FIXTURES
from tests.support.capture_eval import CAPTURE, candidates, evaluate


def test_labeled_set_is_large_enough_and_recall_is_at_least_90_percent_per_kind():
    result = evaluate()
    assert result["labeled"] >= 60
    assert all(n >= 18 for n in result["by_kind"].values()), result["by_kind"]
    for kind, recall in result["recall"].items():
        assert recall >= 0.9, (kind, recall, result["misses"])
    # every false proposal costs a triage decision: keep them rare
    assert result["precision"] >= 0.9, result["extra"]


def test_machine_turns_tool_results_and_summaries_yield_no_candidate():
    path = os.path.join(CAPTURE, "machine-turns.jsonl")
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    assert len(records) >= 60
    # the same words typed by a human are three records: the zero below is the filter's doing
    words = ("We decided to use Redis instead of Memcached. I tried the retry loop and it failed. "
             "No, don't touch the migrations.")
    assert all(words in json.dumps(r) or json.dumps(words)[1:-1] in json.dumps(r) for r in records)
    human = {"type": "user", "sessionId": "s", "message": {"role": "user", "content": words}}
    typed = tmp_line(human)
    assert {c.kind for c in candidates(typed)} == {"decision", "dead_end", "correction"}
    assert candidates(path) == []


def tmp_line(record: dict) -> str:
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".jsonl")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(FIXTURES, "transcripts", "*.jsonl"))),
                         ids=os.path.basename)
def test_real_transcripts_propose_only_from_typed_or_assistant_text(path):
    from memory_core.delivery.intent import system_turn

    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    for cand in candidates(path):
        rec = json.loads(lines[cand.line - 1])
        assert rec["type"] in ("user", "assistant") and not rec.get("isMeta") \
            and not rec.get("isCompactSummary") and not rec.get("isSidechain")
        content = rec["message"]["content"]
        texts = [content] if isinstance(content, str) else \
            [b["text"] for b in content if b.get("type") == "text"]
        assert any(system_turn(t) is None for t in texts)
        assert cand.role == ("human" if rec["type"] == "user" else "assistant")


@pytest.mark.parametrize("text", [
    "Should we go with Redis for the queue?",
    "What if we used a bounded channel instead of the mutex?",
    "If we go with Redis we need another server to run.",
    "Maybe we'll use hybrid search later if the vectors get cheaper.",
    "We haven't decided on the queue implementation yet.",
    "We need to decide whether the cache stays.",
    "I think we should go with the bounded queue.",
    "Once we decide on the backend we can write the adapter.",
    "If that doesn't work, revert the change and try the other lock.",
    "Did the retry loop fail again?",
    "Let me try the prefetch and see whether it helps.",
    "The dashboard doesn't load for me today.",
])
def test_questions_hypotheticals_and_plans_are_not_records(text):
    assert extract_text(text, "human") == [] and extract_text(text, "assistant") == []


@pytest.mark.parametrize("text, kind", [
    ("We decided to use WAL mode instead of rollback journals.", "decision"),
    ("Decision: the handoff capacity stays 4.", "decision"),
    ("let's go with the bounded queue", "decision"),
    ("We'll use importlib.metadata instead of pkg_resources for the version.", "decision"),
    ("I tried mmap for the reader and it was slower than read().", "dead_end"),
    ("The retry loop didn't work because the lock is held across calls.", "dead_end"),
    ("I reverted the segment size change.", "dead_end"),
    ("Exemplars were a dead end on our Prometheus version.", "dead_end"),
    ("We ruled out the swap-table migration.", "dead_end"),
])
def test_explicit_records_by_either_speaker(text, kind):
    assert [k for k, _ in extract_text(text, "assistant")] == [kind]


def test_corrections_come_only_from_the_human():
    text = "No, don't rewrite the migration files by hand."
    assert extract_text(text, "human") == [("correction", text)]
    assert extract_text(text, "assistant") == []
    assert extract_text("No problem, the tests pass.", "human") == []
    assert extract_text("Don't forget to run the linter.", "human") == []


def test_code_blocks_and_quotes_inside_a_reply_are_not_read():
    reply = ("Here is the old comment:\n```\n# we decided to use the global lock\n```\n"
             "> I tried the channel and it failed\nNothing else changed.")
    assert extract_text(reply, "assistant") == []


def test_the_store_side_spells_the_same_kinds_as_the_extractor():
    from memory_core.records import extract as capture
    from memory_core.records import queue as capture_store
    from telemetry.catalog import CAPTURE_KINDS

    assert capture.KINDS == capture_store.KINDS == CAPTURE_KINDS


def test_a_dead_end_stated_by_reference_carries_what_was_tried():
    assert extract_text("I tried a per-row cache, but it thrashed. That approach is a dead end.", "human") == [
        ("dead_end", "I tried a per-row cache, but it thrashed. That approach is a dead end.")]
    # the sentence before was a dead end itself: one record, not two
    assert extract_text("We tried WAL2 and it failed twice. We reverted it.", "human") == [
        ("dead_end", "We tried WAL2 and it failed twice. We reverted it.")]
    # a dead end that names what was tried takes nothing from before it
    assert extract_text("Checkpoints run hourly. Rewriting the spill in protobuf was a dead end.", "human") == [
        ("dead_end", "Rewriting the spill in protobuf was a dead end.")]
