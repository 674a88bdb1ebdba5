"""Sets 5 to 77 of the real-corpus prompts (tests/fixtures/realcorpus/prompts-heldout5.jsonl
… prompts-heldout77.jsonl): their shape only. Each was written from the inventories and frozen
before a tuning round of the meaning gate (set 5 before the first, set 6 before the second, …
set 11 before the seventh, sets 12 and 13 before the eighth round's measurement, sets 14 and
15 before the ninth's, sets 16 and 17 before the tenth's, sets 18, 19 and 20 before the
eleventh's, sets 21, 22 and 23 before the twelfth's, sets 24, 25 and 26 before the
thirteenth's, sets 27, 28 and 29 before the fourteenth's, sets 30, 31 and 32 before the
fifteenth's, sets 33, 34 and 35 before the sixteenth's, sets 36, 37 and 38 before the
seventeenth's, sets 39, 40 and 41 before the eighteenth's, sets 42, 43 and 44 before the
nineteenth's, sets 45, 46 and 47 before the twentieth's, sets 48, 49 and 50 before the
twenty-first's, sets 51, 52 and 53 before the twenty-second's, sets 54 to 59 before the
twenty-third round, sets 60 to 65 before its measurement, sets 66 to 71 before the
twenty-fourth's, sets 72 to 77 before the twenty-fifth's), so nothing here runs the
cascade on them; the measurements that do are in benchmarks/bench_meaning.py and
docs/internals/evaluation.md."""

from __future__ import annotations

import os
import re
from collections import Counter

import pytest

from tests.support import dnr_eval


def _entry_names(project: str) -> set[str]:
    """The inventory's entry names, read from the memory files themselves: a `name:` in a
    file's front matter, or a `## ` heading of a file of `type: subsystem` sections."""
    names = set()
    memory = os.path.join(dnr_eval.FIXTURE, project, "memory")
    for fname in os.listdir(memory):
        with open(os.path.join(memory, fname), encoding="utf-8") as fh:
            text = fh.read()
        head = re.match(r"---\n(.*?)\n---\n", text, re.S)
        if not head or "type: subsystem" not in head.group(1):
            continue
        sections = re.findall(r"^## (.+)$", text, re.M)
        if sections:
            names.update(s.strip() for s in sections)
        else:
            names.update(m.strip() for m in re.findall(r"^name: (.+)$", head.group(1), re.M))
    return names


HELD_OUT_SETS = (5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77)
ALL_SETS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77)


@pytest.mark.parametrize("n", HELD_OUT_SETS)
def test_a_held_out_set_is_read_by_prompts_for_and_only_when_asked(n):
    mine = dnr_eval.prompts_for(sets=(n,))
    assert len(mine) >= 80 and {p["set"] for p in mine} == {n}
    others = tuple(s for s in ALL_SETS if s != n)
    assert not [p for p in dnr_eval.prompts_for(sets=others) if p["set"] == n]
    everything = dnr_eval.prompts_for(sets=ALL_SETS)
    assert len({p["id"] for p in everything}) == len(everything)
    # no prompt of the set repeats one of the earlier sets' (they were read in detail)
    earlier = {p["prompt"].lower() for p in everything if p["set"] < n}
    assert not [p["id"] for p in mine if p["prompt"].lower() in earlier]
    assert len({p["prompt"].lower() for p in mine}) == len(mine)


@pytest.mark.parametrize("n", (6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77))
def test_a_later_sets_ids_are_its_own(n):
    mine = dnr_eval.prompts_for(sets=(n,))
    assert mine and all(re.fullmatch(rf"s{n}-(ht|re|st)-\d\d", p["id"]) for p in mine)
    short = {"httpx": "ht", "requests": "re", "starlette": "st"}
    assert all(p["id"].split("-")[1] == short[p["project"]] for p in mine)


@pytest.mark.parametrize("n", HELD_OUT_SETS)
def test_a_held_out_set_covers_every_project_with_near_misses_re_proposals_and_turns(n):
    mine = dnr_eval.prompts_for(sets=(n,))
    kinds = Counter(p.get("kind", p["label"]) for p in mine)
    assert kinds["near_miss"] >= 40 and kinds["reproposal"] >= 30
    assert kinds["chitchat"] + kinds["system_turn"] >= 8
    for name in dnr_eval.PROJECTS:
        theirs = [p for p in mine if p["project"] == name]
        assert {"new", "reproposal", "chitchat", "system_turn"} == {p["label"] for p in theirs}, name
        assert sum(p.get("kind") == "near_miss" for p in theirs) >= 12, name
        assert sum(p["label"] == "reproposal" for p in theirs) >= 10, name
    for p in mine:
        assert p["label"] in ("reproposal", *dnr_eval.SILENT_LABELS), p
        assert (p["label"] == "new") == (p.get("kind") == "near_miss"), p
        assert ("expect" in p) == (p["label"] == "reproposal"), p


@pytest.mark.parametrize("n", HELD_OUT_SETS)
def test_every_expectation_of_a_held_out_set_is_an_inventory_entry(n):
    for name in dnr_eval.PROJECTS:
        names = _entry_names(name)
        assert len(names) >= 10, (name, names)
        # the existing sets' expectations pass the same reading, so the reader is not the test
        for sets in ((1, 2, 3, 4), (n,)):
            expected = {p["expect"] for p in dnr_eval.prompts_for(name, sets=sets) if p["label"] == "reproposal"}
            assert expected and expected <= names, (name, sets, expected - names)
        # every entry is re-proposed at least once in the set
        mine = {p["expect"] for p in dnr_eval.prompts_for(name, sets=(n,)) if p["label"] == "reproposal"}
        assert mine == names, (name, names - mine)
