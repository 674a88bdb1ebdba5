"""Score the deterministic heuristics on text they were not tuned on (tests/fixtures/heldout/).

    intent_scores("heldout")      # {"requests": 31, "request_recall": 0.9, "false_intent": 0.04, ...}
    capture_scores("heldout")     # {"dead_ends": 14, "with_what_was_tried": 0.86, ...}
    smallstore_scores(root, "heldout")   # {"recall": 0.77, "false_fire_rate": 0.0, ...}

Each set has a `dev` part (a tuning round may look at it) and a `heldout` part (it may not);
both were written before the heuristics were changed. Used by tests/memory_core/delivery/test_heldout.py and
benchmarks/bench_heldout.py, which prints the table in docs/internals/evaluation-heuristics.md.
"""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
HELDOUT = os.path.join(HERE, "fixtures", "heldout")
SMALLSTORE = os.path.join(HELDOUT, "smallstore")
PARTS = ("dev", "heldout")


def load(name: str, part: str | None = None) -> list[dict]:
    with open(os.path.join(HELDOUT, name), encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh if line.strip()]
    return [i for i in items if part is None or i["part"] == part]


# -- intent ------------------------------------------------------------------------------------

def intent_scores(part: str) -> dict:
    """Requests read as the intent they ask for; questions, status, chit-chat and plain
    operations read as none (a false intent)."""
    from memory_core.delivery.intent import classify

    items = load("intent.jsonl", part)
    results = [{**i, "got": classify(i["prompt"])[0]} for i in items]
    wanted = [r for r in results if r["intent"] is not None]
    silent = [r for r in results if r["intent"] is None]
    return {"prompts": len(results), "requests": len(wanted), "silent": len(silent),
            "request_recall": _ratio(sum(r["got"] == r["intent"] for r in wanted), len(wanted)),
            "false_intent": _ratio(sum(r["got"] is not None for r in silent), len(silent)),
            "accuracy": _ratio(sum(r["got"] == r["intent"] for r in results), len(results)),
            "misses": [(r["id"], r["prompt"], r["intent"], r["got"]) for r in results
                       if r["got"] != r["intent"]]}


# -- capture: a dead end stated by reference ---------------------------------------------------

def capture_scores(part: str) -> dict:
    """Dead ends found whose statement carries what was tried (`must`), earlier unrelated
    sentences swallowed (`must_not`), candidates where the text states no dead end."""
    from memory_core.records.extract import extract_text

    items = load("capture_anaphora.jsonl", part)
    found = carried = swallowed = false = labeled = 0
    misses = []
    for item in items:
        got = [s for k, s in extract_text(item["text"], item["role"]) if k == "dead_end"]
        if not item["expect"]:
            false += len(got)
            if got:
                misses.append((item["id"], "false", got))
        for exp in item["expect"]:
            labeled += 1
            if got:
                found += 1
            ok = [s for s in got if all(m.lower() in s.lower() for m in exp["must"])]
            carried += bool(ok)
            if not ok:
                misses.append((item["id"], "without what was tried", got))
        bad = [s for s in got for m in item["must_not"] if m.lower() in s.lower()]
        swallowed += bool(bad)
        if bad:
            misses.append((item["id"], "swallowed", bad))
    negatives = sum(1 for i in items if not i["expect"])
    return {"texts": len(items), "dead_ends": labeled, "negatives": negatives,
            "found": _ratio(found, labeled), "with_what_was_tried": _ratio(carried, labeled),
            "swallowed": swallowed, "false_candidates": false, "misses": misses}


# -- a small store -----------------------------------------------------------------------------

def build_smallstore(dest: str) -> str:
    """The 55-chunk courier project, `memhealth init` + `memhealth ingest docs memory`."""
    from tests.support.dnr_eval import build_project

    return build_project("courier", dest, source=os.path.join(SMALLSTORE, "courier"))


def smallstore_prompts(part: str) -> list[dict]:
    with open(os.path.join(SMALLSTORE, "prompts.jsonl"), encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh if line.strip()]
    return [i for i in items if i["part"] == part]


def smallstore_verdicts(root: str, part: str, intent: str = "build") -> list[dict]:
    """The cascade on each prompt with the intent fixed (the relevance gate is measured here,
    not the intent gate): which memory files it delivered."""
    from memhealth.config import load as load_config
    from memory_core.delivery import inject
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect

    cfg = load_config(os.path.join(root, ".memhealth"), environ={})
    cfg["embedding"]["url"] = ""  # the lexical cascade
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    out = []
    run = os.urandom(4).hex()  # a fresh session per prompt and run: caps of an earlier run do not count
    try:
        for p in smallstore_prompts(part):
            result = inject.decide(conn, p["prompt"], intent, cfg, f"small-{run}-{p['id']}", Trace())
            ids = [i["chunk_id"] for i in result.detail.get("items", [])]
            paths = [conn.execute("SELECT path FROM chunks WHERE id = ?", (i,)).fetchone()[0] for i in ids]
            delivered = [os.path.splitext(os.path.basename(x))[0] for x in paths]
            out.append({**p, "delivered": delivered, "outcome": result.outcome, "detail": result.detail})
    finally:
        conn.close()
    return out


def smallstore_scores(results: list[dict]) -> dict:
    repro = [r for r in results if r["label"] == "reproposal"]
    silent = [r for r in results if r["label"] != "reproposal"]
    hits = sum(1 for r in repro if r["expect"] in r["delivered"])
    wrong = sum(1 for r in repro if r["delivered"] and r["expect"] not in r["delivered"])
    fired = sum(1 for r in silent if r["delivered"])
    return {"prompts": len(results), "reproposals": len(repro), "near_misses": len(silent),
            "recall": _ratio(hits, len(repro)), "wrong_item": wrong,
            "false_fires": fired, "false_fire_rate": _ratio(fired, len(silent)),
            "misses": [(r["id"], r["prompt"], r["expect"], r["delivered"]) for r in results
                       if (r["label"] == "reproposal") != (r.get("expect") in r["delivered"])]}


def _ratio(n: int, d: int) -> float:
    return round(n / d, 3) if d else 1.0
