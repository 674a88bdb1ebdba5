"""Agreement in meaning on real text: DO-NOT-REBUILD with the rare-word cascade alone (BM25-
only, the default) beside the same cascade with the real embedding model (all-MiniLM-L6-v2,
tests/support/minilm.py, behind its Ollama-compatible server on loopback): the meaning gate
alone, and the gate with the opt-in rescue of lexical misses. Then the prompt hook's wall
time with the real model, as ratios to the interpreter floor.

    python benchmarks/run.py meaning

Parts: tuned = httpx (sets 1, 2 and 4: the thresholds were chosen here); sets 1-4 of
requests and starlette (set 4: near misses and re-proposals in other words); sets 5-77 over
all three projects, each frozen before the tuning round that first measured it; sets 5-71
together (each read after its fresh measurement), and the sets no round has read (72-77)
together (docs/internals/evaluation.md says which round read which set). "false DNR" is the share of silence-deserving prompts that got a
DO-NOT-REBUILD; recall is over re-proposals (the block must name the expected entry).
Needs the model (`make real-model`); without it this module reports that and nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import compile_packages, floor, memhealth_cmd, pct, row, summary, time_cmd  # noqa: E402

from tests.support import dnr_eval  # noqa: E402

MODES = {
    "BM25-only, no target check": {"meaning": "off", "foreign_target": "off"},
    "BM25-only": {"meaning": "off"},
    "with the model": {},
    "with the model + rescue": {"meaning_rescue": "on"},
}
# in-process evaluation on a loaded box: the hook's own bounds are measured below, not here
PATIENT = {"embedding": {"timeout_s": 60.0}, "hooks": {"timeout_s": 600}}
# (projects, sets): each held-out set was frozen before the round that first measured it;
# docs/internals/evaluation.md says which round each set was then tuned in
SETS = tuple(range(1, 78))
NEVER_READ = (72, 73, 74, 75, 76, 77)  # measured, never read prompt by prompt: no rule came from them
PARTS = {
    "tuned (httpx, sets 1,2,4)": (dnr_eval.TUNING, (1, 2, 4)),
    "sets 1-4 (requests, starlette)": (dnr_eval.HELD_OUT, (1, 2, 3, 4)),
    **{f"set {n} (all three)": (dnr_eval.PROJECTS, (n,)) for n in SETS[4:]},
    "sets 5-71 (each read after its fresh run)": (dnr_eval.PROJECTS, tuple(range(5, 72))),
    "sets never read (72-77)": (dnr_eval.PROJECTS, NEVER_READ),
}


def evaluation(server_url: str, tmp: str) -> dict:
    """{(part, mode): summary} over the three projects."""
    results = {}
    for name in dnr_eval.PROJECTS:
        root = dnr_eval.build_project(name, tmp, embedding_url=server_url)
        prompts = dnr_eval.prompts_for(name, sets=SETS)
        for n, (mode, overrides) in enumerate(MODES.items()):
            results[(name, mode)] = dnr_eval.evaluate(root, prompts, {**overrides, "meaning_timeout_s": 10.0},
                                                      PATIENT, session=f"mode{n}")
    out = {}
    for part, (projects, sets) in PARTS.items():
        for mode in MODES:
            got = [r for p in projects for r in results[(p, mode)] if r.get("set", 1) in sets]
            s = dnr_eval.summary(got)
            s["false_dnr_prompts"] = sum(1 for r in got if r["label"] in dnr_eval.SILENT_LABELS and r["dnr"])
            s["recalled"] = sum(1 for r in got if r["label"] == "reproposal"
                                and any(dnr_eval.named(r["expect"], t) for t in r["dnr"]))
            out[(part, mode)] = s
    return out


def _hook_project(tmp: str, url: str) -> str:
    """The starlette fixture, ingested with every chunk's vector stored, wired to the model."""
    root = dnr_eval.build_project("starlette", os.path.join(tmp, "hook"), embedding_url=url, backfill=True)
    return root


def hook_times(url: str, tmp: str, repeat: int) -> list[dict]:
    from tests.conftest import clean_env

    root = _hook_project(tmp, url)
    compile_packages()  # hook figures as an install runs them, not compiling per process
    cmd = memhealth_cmd() + ["hook", "prompt"]
    cases = [
        ("prompt hook, non-intent", "thanks, that looks right", {}),
        ("prompt hook, near miss (lexical DNR, held by the target check)",
         "add a static files bucket on S3 with CloudFront for the marketing site's images", {}),
        ("prompt hook, re-proposal (lexical DNR, meaning gate asked)",
         "implement background tasks that run after the response has been sent", {}),
        ("prompt hook, re-proposal, BM25-only (meaning off)",
         "implement background tasks that run after the response has been sent",
         {"MEMHEALTH_INJECTION_MEANING": "off"}),
    ]
    base = floor(repeat)
    b = summary(base)
    out = [row("floor: python -c 'import sqlite3, json'", b["median"] * 1000, "ms",
               note=f"p99 {pct(base, 99) * 1000:.1f} ms")]
    for n, (name, prompt, env) in enumerate(cases):
        def stdin(i, n=n, prompt=prompt):  # a session of its own per run: the caps never fire
            return json.dumps({"session_id": f"bench-{n}-{i}", "cwd": root, "hook_event_name": "UserPromptSubmit",
                               "transcript_path": os.path.join(root, "t.jsonl"), "prompt": prompt}).encode()
        samples = time_cmd(cmd, stdin=stdin, cwd=root, repeat=repeat, env=clean_env(**env))
        s = summary(samples)
        out.append(row(f"{name}: p50", s["median"] / b["median"], "x floor",
                       note=f"p50 {s['median'] * 1000:.1f} ms, floor p50 {b['median'] * 1000:.1f} ms"))
        out.append(row(f"{name}: p99", pct(samples, 99) / pct(base, 99), "x floor p99",
                       note=f"p99 {pct(samples, 99) * 1000:.1f} ms, floor p99 {pct(base, 99) * 1000:.1f} ms"))
    return out


def bench(quick: bool = False) -> list[dict]:
    from tests.support.minilm import MiniLM, Unavailable
    from tests.support.model_server import ModelServer

    try:
        model = MiniLM.load()
    except Unavailable as exc:
        return [row("meaning: real model unavailable", 0, "", note=str(exc))]
    out = []
    with ModelServer(model) as server, tempfile.TemporaryDirectory() as tmp:
        table = evaluation(server.url, tmp)
        for (part, mode), s in table.items():
            out.append(row(f"{part}, {mode}: false DNR", s["false_dnr_rate"], "share",
                           "0 tuned, <=1% held-out" if mode.startswith("with") else "",
                           note=f"{s['false_dnr_prompts']} of {s['silent']} silent prompts; "
                                f"{s['false_dnr_blocks']} false blocks of {s['dnr_blocks']}"))
            out.append(row(f"{part}, {mode}: recall", s["recall"], "share", ">= BM25-only",
                           note=f"{s['recalled']} of {s['reproposals']} re-proposals; precision {s['precision']}"))
        out.extend(hook_times(server.url, tmp, 9 if quick else 31))
    return out
