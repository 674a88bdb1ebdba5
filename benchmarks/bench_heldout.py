"""The deterministic heuristics on text nobody tuned them on: intent, dead ends stated by
reference, relevance on a 55-chunk store, each on its `dev` part (what a tuning round looked
at) and its `heldout` part (only ever scored), side by side. The sets and their scoring are
tests/fixtures/heldout/ and tests/support/heldout_eval.py; the table is in
docs/internals/evaluation-heuristics.md.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for path in (HERE, REPO):
    if path not in sys.path:
        sys.path.insert(0, path)

from common import row  # noqa: E402


def bench(quick: bool) -> list[dict]:
    from tests.support import heldout_eval as ev

    rows = []
    for part in ev.PARTS:
        s = ev.intent_scores(part)
        rows.append(row(f"intent, {part}: requests read as their intent", s["request_recall"], "ratio", "",
                        f"{s['requests']} requests"))
        rows.append(row(f"intent, {part}: false intent on questions/status/chit-chat", s["false_intent"],
                        "ratio", "", f"{s['silent']} prompts"))
    for part in ev.PARTS:
        s = ev.capture_scores(part)
        rows.append(row(f"capture, {part}: dead ends carrying what was tried", s["with_what_was_tried"], "ratio",
                        "", f"{s['dead_ends']} dead ends; found {s['found']}, swallowed {s['swallowed']}, "
                        f"false {s['false_candidates']}"))
    tmp = tempfile.mkdtemp(prefix="memhealth-bench-heldout-")
    try:
        root = ev.build_smallstore(tmp)
        for part in ev.PARTS:
            s = ev.smallstore_scores(ev.smallstore_verdicts(root, part))
            rows.append(row(f"small store, {part}: re-proposals delivered", s["recall"], "ratio", "",
                            f"{s['reproposals']} re-proposals, {s['wrong_item']} wrong item"))
            rows.append(row(f"small store, {part}: false fires on near misses", s["false_fire_rate"], "ratio", "",
                            f"{s['false_fires']} of {s['near_misses']}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


if __name__ == "__main__":
    import json

    print(json.dumps(bench(quick="--quick" in sys.argv), indent=2))
