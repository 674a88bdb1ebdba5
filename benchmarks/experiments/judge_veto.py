"""An experiment, not a part of memhealth: the fine-tuned judgment of finetune_judge.py as a veto on
the DO-NOT-REBUILD cascade. For the labeled real-corpus sets given, each prompt's verdict in
three modes (BM25-only with no target check, BM25-only, with the model) and, for each threshold,
the false DO-NOT-REBUILDs and the re-proposals delivered when a block also needs the judgment's
P(reproposal) to reach it.

    .venv/bin/python benchmarks/experiments/judge_veto.py /tmp/p-fresh.json --sets 72-77

Needs the real model (`make real-model`) for the third mode. Only prompts the predictions file
scores are counted (chit-chat and machine turns never fire and are not scored).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from tests.support import dnr_eval  # noqa: E402

MODES = {"BM25-only, no target check": {"meaning": "off", "foreign_target": "off"},
         "BM25-only": {"meaning": "off"}, "with the model": {}}
THRESHOLDS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5)
PATIENT = {"embedding": {"timeout_s": 60.0}, "hooks": {"timeout_s": 600}}


def sets_arg(text: str) -> tuple[int, ...]:
    lo, _dash, hi = text.partition("-")
    return tuple(range(int(lo), int(hi or lo) + 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("predictions")
    ap.add_argument("--sets", type=sets_arg, default=sets_arg("72-77"))
    args = ap.parse_args(argv)
    with open(args.predictions, encoding="utf-8") as fh:
        judged = json.load(fh)
    from tests.support.minilm import MiniLM
    from tests.support.model_server import ModelServer

    results = {mode: [] for mode in MODES}
    with ModelServer(MiniLM.load()) as server, tempfile.TemporaryDirectory() as tmp:
        for name in dnr_eval.PROJECTS:
            root = dnr_eval.build_project(name, tmp, embedding_url=server.url)
            prompts = [p for p in dnr_eval.prompts_for(name, sets=args.sets) if p["id"] in judged]
            for n, (mode, overrides) in enumerate(MODES.items()):
                results[mode] += dnr_eval.evaluate(root, prompts, {**overrides, "meaning_timeout_s": 10.0}, PATIENT,
                                                   session=f"veto{n}")
    for mode, rows in results.items():
        silent = [r for r in rows if r["label"] in dnr_eval.SILENT_LABELS]
        wanted = [r for r in rows if r["label"] == "reproposal"]
        print(f"{mode}: {len(silent)} near misses, {len(wanted)} re-proposals")
        for tau in THRESHOLDS:
            false = sum(1 for r in silent if r["dnr"] and judged[r["id"]] >= tau)
            found = sum(1 for r in wanted if judged[r["id"]] >= tau
                        and any(dnr_eval.named(r["expect"], t) for t in r["dnr"]))
            print(f"  P >= {tau:<4}  false DNR {false} / {len(silent)}   recall {found} / {len(wanted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
