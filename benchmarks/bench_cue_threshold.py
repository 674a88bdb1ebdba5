"""The semantic cue trigger's threshold on labeled pairs, with the real model
(all-MiniLM-L6-v2): precision and recall at the threshold shipped for all-minilm
(memory_core.delivery.cue_semantic.SEMANTIC_MIN_COSINE_BY_MODEL), at the conservative
SEMANTIC_MIN_COSINE a model nobody measured gets, and at the threshold the tuned part alone
picks.

    python benchmarks/run.py cue_threshold

Pairs: tests/fixtures/semantic-cues/pairs.jsonl (a cue's query, a prompt, whether it should
fire), written before any cosine was computed on them; six cues tuned, six held out. The
rule: a cue delivers into Claude's context, which stays silent by default, so a false fire
costs more than a miss: the tuned threshold is the one with the best F-beta at beta 0.5
(precision weighted twice recall) on the tuned part (ties: the higher, fewer false fires),
placed midway between the cosines around it; the held-out part is only scored.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import row  # noqa: E402

PAIRS = os.path.join(os.path.dirname(HERE), "tests", "fixtures", "semantic-cues", "pairs.jsonl")


BETA = 0.5  # F-beta: precision counts twice as much as recall


def score(pairs: list[dict], threshold: float) -> dict:
    tp = sum(1 for p in pairs if p["fires"] and p["cos"] >= threshold)
    fp = sum(1 for p in pairs if not p["fires"] and p["cos"] >= threshold)
    pos = sum(1 for p in pairs if p["fires"])
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / pos if pos else 1.0
    b2 = BETA * BETA
    fbeta = (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0
    return {"tp": tp, "fp": fp, "pos": pos, "neg": len(pairs) - pos, "precision": precision,
            "recall": recall, "fbeta": fbeta}


def tuned_threshold(pairs: list[dict]) -> float:
    cuts = sorted({p["cos"] for p in pairs})
    best = max(cuts, key=lambda t: (score(pairs, t)["fbeta"], t))
    below = [c for c in cuts if c < best]
    return round((best + below[-1]) / 2, 3) if below else best


def bench(quick: bool = False) -> list[dict]:
    from memory_core.delivery.cue_semantic import SEMANTIC_MIN_COSINE, semantic_min_cosine
    from tests.support.minilm import MODEL_NAME, MiniLM, Unavailable

    try:
        model = MiniLM.load()
    except Unavailable as exc:
        return [row("cue threshold: real model unavailable", 0, "", note=str(exc))]
    with open(PAIRS, encoding="utf-8") as fh:
        pairs = [json.loads(line) for line in fh if line.strip()]
    cues = model.embed([p["cue"] for p in pairs])
    prompts = model.embed([p["prompt"] for p in pairs])
    for p, c, q in zip(pairs, cues, prompts, strict=True):
        p["cos"] = float(c @ q)
    tuned = [p for p in pairs if p["split"] == "tuned"]
    held = [p for p in pairs if p["split"] == "held-out"]
    chosen = tuned_threshold(tuned)
    shipped = semantic_min_cosine({"embedding": {"model": MODEL_NAME}, "injection": {}})
    out = [row(f"semantic cue threshold shipped for {MODEL_NAME}", shipped, "cosine",
               note=f"chosen on the tuned part now: {chosen}" + ("" if shipped == chosen else " (differs)"))]
    for label, t in ((f"unmeasured-model {SEMANTIC_MIN_COSINE}", SEMANTIC_MIN_COSINE),
                     (f"tuned {chosen}", chosen)):
        for part, got in (("tuned", tuned), ("held-out", held)):
            s = score(got, t)
            out.append(row(f"semantic cue at {label}, {part}: precision", s["precision"], "share",
                           note=f"{s['tp']} true and {s['fp']} false fires"))
            out.append(row(f"semantic cue at {label}, {part}: recall", s["recall"], "share",
                           note=f"{s['tp']} of {s['pos']} paraphrases; {s['neg']} same-topic prompts"))
            out.append(row(f"semantic cue at {label}, {part}: F0.5", s["fbeta"], "share"))
    for part, got in (("tuned", tuned), ("held-out", held)):
        pos = sorted(p["cos"] for p in got if p["fires"])
        neg = sorted(p["cos"] for p in got if not p["fires"])
        out.append(row(f"semantic cue cosines, {part}", pos[0], "min paraphrase",
                       note=f"paraphrases {pos[0]:.3f}-{pos[-1]:.3f}, same-topic {neg[0]:.3f}-{neg[-1]:.3f}"))
    return out
