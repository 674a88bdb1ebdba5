"""Optional LLM synthesis in the capture worker, against an Ollama stand-in on loopback:
grounded proposals are kept, ungrounded ones dropped, a failure falls back to the patterns
and is recorded; off by default."""

from __future__ import annotations

import json
import re

from tests.conftest import clean_env, payload, rows, run_hook
from tests.memhealth.test_capture_worker import wait_for, work_status
from tests.memory_core.records.test_triage import turn
from tests.support.ollama_standin import OllamaStandin, closed_url

MISSED = "Memory-mapped reads gave us nothing on this workload, so they stay out of the reader."
TOOL_MARKER = "zzqx-tool-output-marker"


def write_session(path) -> None:
    lines = [turn("user", "Why is the reader slow on cold caches?", 1),
             turn("assistant", MISSED, 2),
             turn("user", "No, don't touch the page cache settings.", 3),
             json.dumps({"type": "user", "sessionId": "s1", "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": f"{TOOL_MARKER} we decided X"}]}}),
             turn("assistant", "We decided to keep plain read() calls in the reader.", 5)]
    path.write_text("\n".join(lines) + "\n")


def scripted(body: dict) -> str:
    """A model that finds the missed record, plus what grounding must drop."""
    assert re.search(r"\[L2 assistant\] Memory-mapped reads", body["prompt"])
    return json.dumps({"records": [
        {"line": 2, "kind": "dead_end", "statement": "Memory-mapped reads gave us nothing on this workload"},
        {"line": 2, "kind": "decision", "statement": "We will rewrite the reader in Rust"},   # not said
        {"line": 5, "kind": "correction", "statement": "keep plain read() calls in the reader"},  # not human
        {"line": 5, "kind": "decision", "statement": "keep plain read() calls in the reader"},  # patterns have it
        {"line": 99, "kind": "dead_end", "statement": "Memory-mapped reads gave us nothing"},  # no such turn
    ]})


def end_session(project, transcript, env) -> None:
    run_hook("session-end", payload("SessionEnd", project, transcript_path=str(transcript)),
             cwd=str(project), env=env)
    wait_for(lambda: work_status(project) == ["done"])
    wait_for(lambda: rows(project, "SELECT 1 FROM heartbeats WHERE hook = 'capture' AND outcome IS NOT NULL"))


def test_grounded_proposals_are_kept_and_the_rest_dropped(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    write_session(transcript)
    with OllamaStandin(models=["qwen2.5:7b"], generate=scripted) as ollama:
        end_session(project, transcript, clean_env(MEMHEALTH_CAPTURE_LLM_MODEL="qwen2.5:7b",
                                                   MEMHEALTH_CAPTURE_LLM_URL=ollama.url))
        bodies = ollama.bodies("/api/generate")
    assert len(bodies) == 1
    assert bodies[0]["model"] == "qwen2.5:7b" and bodies[0]["stream"] is False and bodies[0]["format"] == "json"
    assert TOOL_MARKER not in bodies[0]["prompt"]  # tool results never reach the model
    got = rows(project, "SELECT line, kind, origin, statement FROM capture_candidates ORDER BY line, kind")
    assert got == [
        (2, "dead_end", "llm", "Memory-mapped reads gave us nothing on this workload"),
        (3, "correction", "pattern", "No, don't touch the page cache settings."),
        (5, "decision", "pattern", "We decided to keep plain read() calls in the reader."),
    ]
    detail = rows(project, "SELECT outcome, detail FROM heartbeats WHERE hook = 'capture'")[0]
    assert detail[0] == "ok" and "llm ok (+1, 3 ungrounded dropped)" in detail[1]


def test_a_failing_model_falls_back_to_the_patterns_and_is_recorded(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    write_session(transcript)
    end_session(project, transcript, clean_env(MEMHEALTH_CAPTURE_LLM_MODEL="qwen2.5:7b",
                                               MEMHEALTH_CAPTURE_LLM_URL=closed_url()))
    assert rows(project, "SELECT kind, origin FROM capture_candidates ORDER BY line") == \
        [("correction", "pattern"), ("decision", "pattern")]
    assert rows(project, "SELECT component, reason FROM degradations") == [("capture", "llm_unreachable")]
    detail = rows(project, "SELECT outcome, detail FROM heartbeats WHERE hook = 'capture'")[0]
    assert detail[0] == "ok" and "llm failed: llm_unreachable" in detail[1]


def test_a_model_that_does_not_answer_json_is_a_recorded_fallback(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    write_session(transcript)
    with OllamaStandin(models=["qwen2.5:7b"], generate=lambda body: "Sure! Here are the records:") as ollama:
        end_session(project, transcript, clean_env(MEMHEALTH_CAPTURE_LLM_MODEL="qwen2.5:7b",
                                                   MEMHEALTH_CAPTURE_LLM_URL=ollama.url))
    assert rows(project, "SELECT count(*), min(origin), max(origin) FROM capture_candidates") == \
        [(2, "pattern", "pattern")]
    assert rows(project, "SELECT reason FROM degradations WHERE component = 'capture'") == [("llm_bad_output",)]


def test_synthesis_is_off_by_default(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    write_session(transcript)
    with OllamaStandin(models=["qwen2.5:7b"], generate=scripted) as ollama:
        # the embedding URL is configured, the model is not: no generate call
        end_session(project, transcript, clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url))
        paths = ollama.paths()
    assert "/api/generate" not in paths
    assert rows(project, "SELECT count(*), max(origin) FROM capture_candidates") == [(2, "pattern")]
