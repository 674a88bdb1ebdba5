"""Score the deterministic extraction against the labeled set in tests/fixtures/capture/.

    result = evaluate()      # {"recall": {...}, "precision": ..., "misses": [...], "extra": [...]}

A label is found when a candidate on the same line, of the same kind, contains its text
(case-insensitive). Precision counts every candidate from the realistic sessions; one that
matches no label is an extra (a false proposal triage would have to reject).
"""

from __future__ import annotations

import json
import os

from memory_core.records.extract import KINDS, extract_lines

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
CAPTURE = os.path.join(HERE, "fixtures", "capture")


def candidates(path: str) -> list:
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return extract_lines(lines, 1, path, {})


def evaluate() -> dict:
    with open(os.path.join(CAPTURE, "labels.json"), encoding="utf-8") as fh:
        labels = json.load(fh)
    found = {k: 0 for k in KINDS}
    total = {k: 0 for k in KINDS}
    misses, extra, proposed, matched = [], [], 0, 0
    for fname, wanted in labels.items():
        cands = candidates(os.path.join(CAPTURE, "sessions", fname))
        proposed += len(cands)
        used = set()
        for label in wanted:
            total[label["kind"]] += 1
            hit = next((i for i, c in enumerate(cands) if c.line == label["line"] and c.kind == label["kind"]
                        and label["text"].lower() in c.statement.lower()), None)
            if hit is None:
                misses.append((fname, label["line"], label["kind"], label["text"]))
            else:
                found[label["kind"]] += 1
                used.add(hit)
        matched += len(used)
        extra.extend((fname, c.line, c.kind, c.statement) for i, c in enumerate(cands) if i not in used)
    recall = {k: (found[k] / total[k] if total[k] else 1.0) for k in KINDS}
    labeled = sum(total.values())
    return {"labeled": labeled, "by_kind": total, "recall": recall,
            "recall_all": sum(found.values()) / labeled if labeled else 1.0,
            "precision": matched / proposed if proposed else 1.0, "proposed": proposed,
            "misses": misses, "extra": extra}
