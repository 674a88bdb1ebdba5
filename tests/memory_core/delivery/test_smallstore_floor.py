"""The small store's rarity floor (memory_core.delivery.inject.rarity_floor) promises that
`min_matches` words said in RARE_DF chunks are enough. The gates compare the candidate's
IDF sum rounded to three places against the floor's unrounded threshold, so on most store
sizes between 50 and 100 chunks two such words fall short of it by less than 0.001. Found
on the dev part of tests/fixtures/heldout/smallstore (55 chunks); the floor is now taken
down to three places, as the sums are."""

from __future__ import annotations

import os

from memory_core.index import fts
from tests.support.heldout_eval import build_smallstore

# decision-db-clock's words said in exactly two of the 55 chunks: "skewed" and "machines"
# (the record and one doc section); "tolerate" is in none
PROMPT = "tolerate skewed machines"


def test_two_words_at_the_floors_rarity_are_short_of_its_threshold_only_by_rounding():
    # the arithmetic the defect comes from, at the dev store's size
    idf = fts.idf(55, 2)
    assert round(2 * idf, 3) < 2 * idf < round(2 * idf, 3) + 0.001


def test_a_record_matched_by_two_words_at_the_floors_rarity_is_delivered(tmp_path):
    from memhealth.config import load as load_config
    from memory_core.delivery import inject
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect

    root = build_smallstore(str(tmp_path))
    cfg = load_config(os.path.join(root, ".memhealth"), environ={})
    cfg["embedding"]["url"] = ""
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        result = inject.decide(conn, PROMPT, "build", cfg, "floor-rounding", Trace())
    finally:
        conn.close()
    detail = result.detail
    assert detail["corpus"] == 55 and detail["rarity_floor"]["rare_df"] == 2
    assert detail["matched"] == 2 and detail["max_idf"] >= detail["distinctive_idf"]
    assert result.outcome == "injected", detail
    assert "timestamps from the database clock" in result.text
