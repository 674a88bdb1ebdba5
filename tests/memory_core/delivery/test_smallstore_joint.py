"""Joint rarity on the small store (tests/fixtures/heldout/smallstore, 55 chunks): a topic
said in three places (its inventory entry, the confirmed record about it, the doc section on
it) has no word as rare as the rarity floor asks (RARE_DF chunks), yet `min_matches` + 1 of
its words are together in at most RARE_DF chunks. Those words count as distinctive, and the
decision row says which words and in how many chunks together. Prompts from the dev part or
written for this test, none from the held-out parts."""

from __future__ import annotations

import os

import pytest

from memory_core.delivery import relevance
from tests.support.heldout_eval import build_smallstore

ICFG = {"distinctive_idf": 3.0, "idf_sum_threshold": 7.0, "min_matches": 2}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_smallstore(str(tmp_path_factory.mktemp("joint")))


def _decide(root, prompt, session):
    from memhealth.config import load as load_config
    from memory_core.delivery import inject
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect

    cfg = load_config(os.path.join(root, ".memhealth"), environ={})
    cfg["embedding"]["url"] = ""
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        result = inject.decide(conn, prompt, "build", cfg, session, Trace())
        paths = [conn.execute("SELECT path FROM chunks WHERE id = ?", (i["chunk_id"],)).fetchone()[0]
                 for i in result.detail.get("items", []) if i.get("chunk_id")]
    finally:
        conn.close()
    return result, [os.path.splitext(os.path.basename(p))[0] for p in paths]


def _conn(root):
    from memory_core.store.db import connect

    return connect(os.path.join(root, ".memhealth", "memory.db"))


def test_chunks_holding_all_the_words_are_counted_by_one_match(store):
    from memory_core.index import docfreq

    conn = _conn(store)
    try:
        curated = ("memory", "docs", "ledger")
        # each word alone is in three chunks; all three together only in the decision record
        assert docfreq.doc_freqs(conn, ["msgpack", "json"], curated) == {"msgpack": 3, "json": 3}
        assert docfreq.joint_freq(conn, ["payloads", "msgpack", "json"], curated) == 1
        assert docfreq.joint_freq(conn, ["queues", "dead", "letters"], curated) == 6
        assert docfreq.joint_freq(conn, ["msgpack", "nosuchword"], curated) == 0
    finally:
        conn.close()


def test_joint_rarity_acts_where_the_rarity_floor_does():
    assert relevance.joint_in_effect(ICFG, 55)
    assert not relevance.joint_in_effect(ICFG, 169)   # the gates were set on stores this size
    assert not relevance.joint_in_effect(ICFG, 40)    # the overlap-only rule applies instead


def test_a_decision_said_in_three_places_is_delivered_by_its_words_rare_together(store):
    # dev d003: "msgpack" and "json" are each in 3 chunks (entry, decision, doc section)
    result, delivered = _decide(store, "switch job payloads from msgpack to JSON", "joint-1")
    assert result.outcome == "injected", result.detail
    assert "decision-msgpack" in delivered, result.detail
    joint = result.detail["joint"]
    assert set(joint["words"]) == {"payloads", "msgpack", "json"}
    assert joint["chunks"] <= joint["rare_df"] == relevance.RARE_DF


def test_the_same_decision_in_other_words_is_delivered_too(store):
    result, delivered = _decide(store, "encode job payloads as JSON instead of msgpack", "joint-2")
    assert "decision-msgpack" in delivered, result.detail


def test_words_common_together_are_not_distinctive_and_the_row_says_so(store):
    conn = _conn(store)
    try:
        joint = relevance.Joint(conn, ("memory", "docs", "ledger"), 2)
        got = joint.ask(["queues", "dead", "letters"])
        assert got == {"words": ["queues", "dead", "letters"], "chunks": 6, "rare_df": 2, "rare": False}
        assert joint.ask(["queues", "dead"]) is None        # min_matches + 1 words or none asked
        assert joint.ask(["payloads", "msgpack", "json"])["rare"] is True
    finally:
        conn.close()


def test_a_subsystem_named_by_words_rare_only_together_is_delivered(store):
    # dev d010: every word is in three or more chunks, and "a unix socket listing queues" is
    # not a new kind of dead-letter queue
    result, delivered = _decide(store, "write JSON endpoints on a unix socket listing queues and dead letters",
                                "joint-3")
    assert "admin-api" in delivered, result.detail
    assert "new_instance" not in result.detail
    assert result.detail["dnr"][0]["joint"]["chunks"] <= relevance.RARE_DF


def test_another_systems_work_holds_a_dead_end_as_well_as_a_do_not_rebuild(store):
    # written for this test: the dead end's own words, aimed at another program
    here, delivered = _decide(store, "use LISTEN/NOTIFY to wake idle workers in our queue", "t-here")
    there, _ = _decide(store, "use LISTEN/NOTIFY to wake idle workers of the Django mailer app", "t-there")
    assert "deadend-listen-notify" in delivered, here.detail
    assert there.outcome != "injected", there.detail
    assert there.detail["target"]["phrase"] == "the Django mailer app" and there.detail["target"]["held"] >= 1
