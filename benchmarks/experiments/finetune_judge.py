"""An experiment, not a part of memhealth: fine-tune all-MiniLM-L6-v2 as a classifier that reads a
prompt alone and says whether it re-proposes building a component (label `reproposal`) or is a
near miss (label `new`), on the labeled real-corpus prompts. It asks whether a learned
judgment of "is this a build of the project's own component" does what twenty-five lexical
rounds could not (docs/internals/evaluation.md, "A fine-tuned judgment").

It needs PyTorch and transformers, which memhealth does not depend on; run it in a venv of its
own, with the model fetched by `make real-model` (its weights and tokenizer are read from that
cache):

    python -m venv /tmp/judge && /tmp/judge/bin/pip install torch==2.13.0 transformers
    /tmp/judge/bin/python benchmarks/experiments/finetune_judge.py --train-max 71 --out /tmp/p-fresh.json
    /tmp/judge/bin/python benchmarks/experiments/finetune_judge.py --train-max 71 --leave-out starlette \\
        --out /tmp/p-lpo.json
    .venv/bin/python benchmarks/experiments/judge_veto.py /tmp/p-fresh.json --sets 72-77

Training: sets up to --train-max (all three projects, or two with --leave-out, the third then
being the test part); the test part is the later sets, or the left-out project's sets. Mean
pooling over the attention mask, one linear head, binary cross-entropy, AdamW (lr 4e-5,
weight decay 0.01, 50 warm-up steps, linear decay), 2 epochs, batches of 16, 128 tokens,
seed 0. About 13 minutes on two cores for 6,700 prompts. --other FILE scores another labeled
file (tests/fixtures/coderepos/prompts-*.jsonl: other projects, other writers) with the model
just trained. Writes {prompt id: P(reproposal)} as JSON.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "realcorpus")


def auc(scores, labels) -> float:
    """The area under the ROC curve, by ranks (no ties among real-valued scores expected)."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    rank = {i: r for r, i in enumerate(order)}
    pos = [i for i, y in enumerate(labels) if y]
    n1, n0 = len(pos), len(labels) - len(pos)
    if not n1 or not n0:
        return float("nan")
    return (sum(rank[i] for i in pos) - n1 * (n1 - 1) / 2) / (n1 * n0)


def labeled(paths) -> list[dict]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            rows += [r for r in (json.loads(line) for line in fh if line.strip())
                     if r.get("label") in ("reproposal", "new", "near_miss")]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-max", type=int, default=71)
    ap.add_argument("--leave-out", default=None, help="a project trained without and tested on")
    ap.add_argument("--other", action="append", default=[], help="another labeled file to score")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args(argv)

    import torch
    from transformers import BertModel, PreTrainedTokenizerFast

    from tests.support import minilm

    torch.set_num_threads(2)
    torch.manual_seed(0)
    random.seed(0)
    model_dir = minilm.model_dir()
    rows = labeled(sorted(glob.glob(os.path.join(FIXTURE, "prompts*.jsonl"))))
    set_of = lambda r: int(r.get("set", 1))  # noqa: E731
    if args.leave_out:
        train = [r for r in rows if set_of(r) <= args.train_max and r["project"] != args.leave_out]
        test = [r for r in rows if set_of(r) <= args.train_max and r["project"] == args.leave_out]
    else:
        train = [r for r in rows if set_of(r) <= args.train_max]
        test = [r for r in rows if set_of(r) > args.train_max]
    print(f"train {len(train)} prompts, test {len(test)}", flush=True)

    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(model_dir, "tokenizer.json"))
    tok.pad_token = "[PAD]"

    class Judge(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = BertModel.from_pretrained(model_dir)
            self.head = torch.nn.Linear(minilm.DIM, 1)

        def forward(self, ids, mask):
            hidden = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).float()
            return self.head((hidden * m).sum(1) / m.sum(1)).squeeze(-1)

    def encode(batch):
        t = tok([r["prompt"] for r in batch], truncation=True, max_length=128, padding=True, return_tensors="pt")
        return t["input_ids"], t["attention_mask"]

    model = Judge()
    opt = torch.optim.AdamW(model.parameters(), lr=4e-5, weight_decay=0.01)
    batch = 16
    steps = args.epochs * ((len(train) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50) * max(0.0, 1 - s / steps))
    started = time.time()
    for epoch in range(args.epochs):
        random.shuffle(train)
        model.train()
        for i in range(0, len(train), batch):
            part = train[i:i + batch]
            ids, mask = encode(part)
            y = torch.tensor([1.0 if r["label"] == "reproposal" else 0.0 for r in part])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(ids, mask), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        print(f"epoch {epoch + 1}: {time.time() - started:.0f} s", flush=True)

    model.eval()
    scores = {}

    def score(part_rows, name):
        with torch.no_grad():
            for i in range(0, len(part_rows), 64):
                part = part_rows[i:i + 64]
                ids, mask = encode(part)
                for r, p in zip(part, torch.sigmoid(model(ids, mask)).tolist(), strict=True):
                    scores[r["id"]] = p
        by = {}
        for r in part_rows:
            by.setdefault(r.get("project", "?"), []).append(r)
        for project, rs in sorted(by.items()):
            print(f"{name} {project}: {len(rs)} prompts, AUC "
                  f"{auc([scores[r['id']] for r in rs], [r['label'] == 'reproposal' for r in rs]):.4f}")

    score(test, "test")
    for path in args.other:
        score(labeled([path]), os.path.basename(path))
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(scores, fh)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
