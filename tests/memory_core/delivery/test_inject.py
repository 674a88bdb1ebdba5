"""The injection cascade: silence unless rare words are shared, caps per session, ablation."""

from __future__ import annotations

import json
import random

import pytest

from memhealth.config import load
from memory_core.delivery import inject
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, write
from tests.conftest import clean_env, payload, rows, run_hook

COMMON = ("the a service request code file test change update value data error user time system "
          "function module config build run").split()


def seed(conn, n_generic=120, extra=()):
    rng = random.Random(3)
    with write(conn):
        for i in range(n_generic):
            text = " ".join(rng.choices(COMMON, k=40))
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('docs', ?, 1, 5, 'heading', 'notes', ?, ?, 0)",
                         (f"docs/n{i}.md", text, f"g{i}"))
        for path, kind, title, content, *attrs in extra:
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, attrs, created_ns) VALUES ('memory', ?, 1, 9, ?, ?, ?, ?, ?, 1780000000000000000)",
                         (path, kind, title, content, path, json.dumps(attrs[0]) if attrs else None))


COMPACTOR = ("memory/compactor.md", "subsystem", "snapshot compactor exists",
             "The snapshot compactor already exists in src/compactor.py; it folds each stream every "
             "10,000 events. Extend it instead of writing a second compactor.",
             {"type": "subsystem", "name": "snapshot compactor", "path": "src/compactor.py"})


@pytest.fixture
def store(tmp_path):
    conn = connect(tmp_path / "memory.db")
    seed(conn, extra=[COMPACTOR])
    return conn


def cfg(**injection):
    c = load(None, environ={})
    c["injection"].update(injection)
    return c


def test_rare_shared_words_inject_with_provenance_and_arithmetic(store):
    r = inject.decide(store, "let's build a snapshot compactor for the streams", "build", cfg(), "s1", Trace())
    assert r.outcome == "injected"
    assert 'DO-NOT-REBUILD? "snapshot compactor" may already exist (lives in src/compactor.py)' in r.text
    assert "memory/compactor.md:1-9" in r.text
    assert "recorded 2026-05-28" in r.text and "verify before building on it" in r.text
    d = r.detail
    assert d["matched"] >= 2 and d["idf_sum"] >= d["threshold"] and d["max_idf"] >= 3.0
    assert d["corpus"] == 121 and not d["small_corpus"]


def test_common_words_alone_never_inject(store):
    r = inject.decide(store, "build the service config and run the test module", "build", cfg(), "s1", Trace())
    assert r.outcome == "below_relevance" and r.text is None


def test_a_distinctive_word_shared_with_nothing_relevant_is_still_below_relevance(store):
    # "compactor" is rare (idf > 3) but alone: one match cannot pass min_matches = 2
    r = inject.decide(store, "build a compactor for the service config", "build", cfg(), "s1", Trace())
    assert r.outcome == "below_relevance" and r.detail["matched"] < 2


def test_an_item_is_injected_once_per_session_then_capped(store):
    prompt = "build a snapshot compactor for streams"
    assert inject.decide(store, prompt, "build", cfg(), "s1", Trace()).outcome == "injected"
    again = inject.decide(store, prompt, "build", cfg(), "s1", Trace())
    assert again.outcome == "capped" and again.text is None
    assert inject.decide(store, prompt, "build", cfg(), "s2", Trace()).outcome == "injected"


def test_ablation_records_would_have_fired_and_emits_nothing(store):
    r = inject.decide(store, "build a snapshot compactor", "build", cfg(mode="off"), "s1", Trace())
    assert r.outcome == "suppressed_ablation" and r.text is None
    assert r.detail["would_inject_chars"] > 0


def test_a_small_corpus_needs_two_word_boundary_matches(tmp_path):
    conn = connect(tmp_path / "memory.db")
    seed(conn, n_generic=3, extra=[COMPACTOR])
    assert inject.decide(conn, "build a compactor", "build", cfg(), "s", Trace()).outcome == "below_relevance"
    r = inject.decide(conn, "build a snapshot compactor", "build", cfg(), "s", Trace())
    assert r.outcome == "injected" and r.detail["small_corpus"]


def test_an_empty_store_is_below_relevance_with_a_reason(tmp_path):
    conn = connect(tmp_path / "memory.db")
    r = inject.decide(conn, "should we build a compactor", "build", cfg(), "s", Trace())
    assert (r.outcome, r.detail["reason"]) == ("below_relevance", "no candidates")


def test_the_trace_carries_each_gate_with_its_arithmetic(store):
    trace = Trace()
    inject.decide(store, "build a snapshot compactor", "build", cfg(), "s1", trace)
    spans = {s.name: s for s in trace.spans}
    assert [s.name for s in trace.spans] == ["inject.relevance", "memory.search", "SELECT chunks_fts",
                                             "inject.session_cap"]
    assert spans["memory.search"].parent_span_id == spans["inject.relevance"].span_id
    assert spans["SELECT chunks_fts"].parent_span_id == spans["memory.search"].span_id
    assert spans["SELECT chunks_fts"].kind == "client"
    assert spans["SELECT chunks_fts"].attributes["db.system.name"] == "sqlite"
    rel = spans["inject.relevance"].attributes
    assert rel["memhealth.relevance.idf_sum"] > 0 and rel["memhealth.relevance.threshold"] == 7.0


def test_a_prompt_without_a_distinctive_word_stops_before_retrieval(store):
    trace = Trace()
    r = inject.decide(store, "build the service config and run the test module", "build", cfg(), "s1", trace)
    assert r.outcome == "below_relevance" and r.detail["reason"] == "no distinctive token in the prompt"
    assert r.detail["max_prompt_idf"] < 3.0
    assert [s.name for s in trace.spans] == ["inject.relevance"]  # no memory.search: nothing retrieved


def test_the_prompt_hook_injects_as_additional_context_and_compaction_resets_the_caps(project):
    conn = connect(project / ".memhealth" / "memory.db")
    seed(conn, extra=[COMPACTOR])
    conn.close()
    (project / "src").mkdir(exist_ok=True)  # where the entry says it lives (STALE-CLAIM otherwise)
    (project / "src" / "compactor.py").write_text("def fold(): ...\n", encoding="utf-8")
    body = payload("prompt", project, prompt="Let's build a snapshot compactor for the streams")
    first = run_hook("prompt", body, cwd=str(project))
    assert first.returncode == 0
    assert json.loads(first.stdout)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert 'DO-NOT-REBUILD? "snapshot compactor"' in first.context()
    assert run_hook("prompt", body, cwd=str(project)).stdout == b""  # capped: silence
    run_hook("pre-compact", payload("pre-compact", project, trigger="auto"), cwd=str(project))
    assert 'DO-NOT-REBUILD? "snapshot compactor"' in run_hook("prompt", body, cwd=str(project)).context()
    outcomes = [r[0] for r in rows(project, "SELECT outcome FROM decisions ORDER BY id")]
    assert outcomes == ["injected", "capped", "injected"]


def test_the_prompt_hook_in_ablation_mode_prints_nothing_but_records(project):
    conn = connect(project / ".memhealth" / "memory.db")
    seed(conn, extra=[COMPACTOR])
    conn.close()
    (project / "src").mkdir(exist_ok=True)  # where the entry says it lives (STALE-CLAIM otherwise)
    (project / "src" / "compactor.py").write_text("def fold(): ...\n", encoding="utf-8")
    run = run_hook("prompt", payload("prompt", project, prompt="build a snapshot compactor"),
                   cwd=str(project), env=clean_env(MEMHEALTH_INJECTION_MODE="off"))
    assert run.returncode == 0 and run.stdout == b""
    assert rows(project, "SELECT outcome FROM decisions") == [("suppressed_ablation",)]


def test_prompt_text_is_not_stored_unless_capture_is_opted_in(project):
    secret = "should we rotate the zebra-unicorn-42 credentials"
    run_hook("prompt", payload("prompt", project, prompt=secret), cwd=str(project))
    dump = json.dumps(rows(project, "SELECT * FROM decisions") + rows(project, "SELECT * FROM spans"))
    assert "zebra" not in dump
    run_hook("prompt", payload("prompt", project, prompt=secret), cwd=str(project),
             env=clean_env(MEMHEALTH_INJECTION_CAPTURE_CONTENT="true"))
    dump = json.dumps(rows(project, "SELECT * FROM spans"))
    assert "zebra" in dump


def test_source_restricted_retrieval_is_driven_by_the_fts_match_not_a_table_scan(store):
    from memory_core.index import fts

    plan = [row[3] for row in store.execute(f"EXPLAIN QUERY PLAN {fts.sourced_bm25_sql(3)}",
                                             ('"compactor"', "memory", "docs", "ledger", 10))]
    assert plan[0].startswith("SCAN chunks_fts VIRTUAL TABLE"), plan
    assert "USING INTEGER PRIMARY KEY" in plan[1], plan
    hits = fts.bm25(store, ["compactor", "snapshot"], limit=5, sources=("memory",))
    assert hits and all(store.execute("SELECT source FROM chunks WHERE id = ?", (i,)).fetchone() == ("memory",)
                        for i, _ in hits)


def test_words_no_chunk_contains_are_not_mistaken_for_distinctive_ones(store):
    r = inject.decide(store, "should we adopt zebrafish quuxification", "decision", cfg(), "s1", Trace())
    assert (r.outcome, r.detail["reason"]) == ("below_relevance", "no prompt token is in memory")
