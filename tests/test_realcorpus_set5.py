"""Set 5 of the real-corpus prompts (tests/fixtures/realcorpus/prompts-heldout5.jsonl): its
shape only. It was written from the inventories and frozen before the meaning gate was next
tuned, so nothing here runs the cascade on it; the measurements that do are in
benchmarks/bench_meaning.py and docs/internals/evaluation.md."""

from __future__ import annotations

import os
import re
from collections import Counter

from tests import dnr_eval


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


def test_set_5_is_read_by_prompts_for_and_only_when_asked():
    five = dnr_eval.prompts_for(sets=(5,))
    assert len(five) >= 80 and {p["set"] for p in five} == {5}
    assert not [p for p in dnr_eval.prompts_for(sets=(1, 2, 3, 4)) if p["set"] == 5]
    everything = dnr_eval.prompts_for(sets=(1, 2, 3, 4, 5))
    assert len({p["id"] for p in everything}) == len(everything)
    # no set-5 prompt repeats one of the earlier sets' (they were read in detail)
    earlier = {p["prompt"].lower() for p in everything if p["set"] != 5}
    assert not [p["id"] for p in five if p["prompt"].lower() in earlier]
    assert len({p["prompt"].lower() for p in five}) == len(five)


def test_set_5_covers_every_project_with_near_misses_re_proposals_and_turns():
    five = dnr_eval.prompts_for(sets=(5,))
    kinds = Counter(p.get("kind", p["label"]) for p in five)
    assert kinds["near_miss"] >= 40 and kinds["reproposal"] >= 30
    assert kinds["chitchat"] + kinds["system_turn"] >= 8
    for name in dnr_eval.PROJECTS:
        mine = [p for p in five if p["project"] == name]
        assert {"new", "reproposal", "chitchat", "system_turn"} == {p["label"] for p in mine}, name
        assert sum(p.get("kind") == "near_miss" for p in mine) >= 12, name
        assert sum(p["label"] == "reproposal" for p in mine) >= 10, name
    for p in five:
        assert p["label"] in ("reproposal", *dnr_eval.SILENT_LABELS), p
        assert (p["label"] == "new") == (p.get("kind") == "near_miss"), p


def test_every_set_5_expectation_is_an_inventory_entry():
    for name in dnr_eval.PROJECTS:
        names = _entry_names(name)
        assert len(names) >= 10, (name, names)
        # the existing sets' expectations pass the same reading, so the reader is not the test
        for sets in ((1, 2, 3, 4), (5,)):
            expected = {p["expect"] for p in dnr_eval.prompts_for(name, sets=sets) if p["label"] == "reproposal"}
            assert expected and expected <= names, (name, sets, expected - names)
        # every entry is re-proposed at least once in set 5
        five = {p["expect"] for p in dnr_eval.prompts_for(name, sets=(5,)) if p["label"] == "reproposal"}
        assert five == names, (name, names - five)
