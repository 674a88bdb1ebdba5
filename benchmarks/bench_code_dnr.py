"""DO-NOT-REBUILD from the code: precision and recall on real repositories, and what the
code leg costs the prompt hook.

    python benchmarks/run.py code_dnr

Quality: tests/fixtures/coderepos (Starlette, axios, chi: Python, JavaScript, Go), each
committed into a git repository, `memhealth init` + `memhealth ingest docs code`
(subprocesses), then the prompt cascade in-process over the labeled prompts, one fresh
session per prompt (tests/support/code_eval.py). One row per part: tuned, held out (first part,
folded into the second tuning round), held out (second part, never tuned on).

Cost: the prompt hook, a subprocess with JSON on stdin as Claude Code runs it, in two copies
of the Starlette project, one ingested without and one with its code index, runs
interleaved, as ratios to the interpreter floor `python -c "import sqlite3, json"` measured
in the same rounds, and to the same prompt in the copy without the code index (what the code
leg adds).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from common import compile_packages, floor, memhealth_cmd, row, summary, time_cmd  # noqa: E402

from tests.support import code_eval  # noqa: E402

CASES = [
    ("non-intent", "thanks, that looks right"),
    ("build intent, a re-proposal caught from the code", "add a middleware that gzips responses"),
    ("build intent, a near miss", "add gzip compression to the nightly database backup script"),
    ("build intent, new work", "add OAuth2 login with GitHub as the identity provider"),
]


def _quality(base: str) -> list[dict]:
    roots = {name: code_eval.build_project(name, base) for name in code_eval.PROJECTS}
    out = []
    for part in code_eval.PARTS:
        results = []
        for name, root in roots.items():
            results += code_eval.evaluate(root, code_eval.prompts_for(name, part=part), session=part)
        s = code_eval.summary(results)
        out.append(row(f"code DNR recall, {part}", s["recall"] * 100, "%", ">= 80 (tuned)" if part == "tuned" else "",
                       note=f"{s['hits']}/{s['reproposals']} re-proposals; precision {s['precision']:.3f}; "
                            f"false blocks {s['false_dnr_blocks']} on {s['prompts']} prompts; "
                            f"missed {' '.join(s['missed'])}"))
        out.append(row(f"code DNR false blocks, {part}", s["false_dnr_blocks"], "blocks",
                       "0 (tuned)" if part == "tuned" else "",
                       note=json.dumps(s["false_by_label"]) if s["false_by_label"] else ""))
    return out


def _stdin(root: str, prompt: str, session: str) -> bytes:
    return json.dumps({"session_id": session, "cwd": root, "hook_event_name": "UserPromptSubmit",
                       "transcript_path": os.path.join(root, "t.jsonl"), "prompt": prompt}).encode()


def _project(base: str, name: str, sources: list[str]) -> str:
    root = os.path.join(base, name, "starlette")
    shutil.copytree(os.path.join(code_eval.FIXTURE, "starlette"), root)
    code_eval.git(root, "init", "-q", "-b", "main")
    code_eval.git(root, "add", "-A")
    code_eval.git(root, "commit", "-q", "-m", "starlette as packaged")
    code_eval.memhealth("init", "--project", root)
    code_eval.memhealth("ingest", "--project", root, *sources)
    return root


def _cost(base: str, repeat: int) -> list[dict]:
    compile_packages()
    without = _project(base, "without", ["docs"])
    with_code = _project(base, "with", ["docs", "code"])
    cmd = memhealth_cmd() + ["hook", "prompt"]
    # interleaved, so that the box's load weighs on both sides alike: floor, then each case
    # without and with the code index; a session per run (the per-session cap would
    # otherwise silence the repeats)
    samples: dict[tuple[str, str], list[float]] = {}
    floors: list[float] = []
    for i in range(repeat + 1):
        keep = i > 0  # the first round warms the page cache and the bytecode
        f = floor(1)
        if keep:
            floors += f
        for n, (name, prompt) in enumerate(CASES):
            for side, root in (("without", without), ("with", with_code)):
                got = time_cmd(cmd, stdin=_stdin(root, prompt, f"{side}-{n}-{i}"), cwd=root, repeat=1, warmup=0)
                if keep:
                    samples.setdefault((name, side), []).extend(got)
    base_floor = summary(floors)
    out = [row("floor: python -c 'import sqlite3, json'", base_floor["median"] * 1000, "ms")]
    out += _in_process(with_code, without, 50 if repeat < 15 else 200)
    for name, _prompt in CASES:
        a, b = summary(samples[(name, "with")]), summary(samples[(name, "without")])
        target = "<= 1.3x without" if name == "non-intent" else "<= 2.0x without"
        out.append(row(f"hook prompt, {name}, Starlette with its code index", a["median"] / base_floor["median"],
                       "x floor", note=f"median {a['median'] * 1000:.1f} ms"))
        out.append(row(f"hook prompt, {name}: with the code index / without", a["median"] / b["median"], "x",
                       target, note=f"{a['median'] * 1000:.1f} ms vs {b['median'] * 1000:.1f} ms"))
    return out


def _in_process(with_code: str, without: str, repeat: int) -> list[dict]:
    """`inject.decide` in-process on each build prompt, with and without the code index: what
    the code leg adds per prompt, free of process start-up and of the box's load spikes."""
    import time

    from memhealth.config import load
    from memory_core.delivery import inject
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect

    out = []
    for name, prompt in CASES[1:]:
        medians = {}
        for side, root in (("with", with_code), ("without", without)):
            cfg = load(os.path.join(root, ".memhealth"), environ={})
            conn = connect(os.path.join(root, ".memhealth", "memory.db"))
            times = []
            for i in range(repeat):
                t0 = time.perf_counter()
                inject.decide(conn, prompt, "build", cfg, f"inproc-{side}-{i}", Trace(), root=root)
                times.append(time.perf_counter() - t0)
            conn.close()
            medians[side] = summary(times)["median"] * 1000
        out.append(row(f"inject.decide in-process, {name}: added by the code leg", medians["with"] - medians["without"],
                       "ms", note=f"{medians['with']:.2f} ms with, {medians['without']:.2f} ms without, "
                                  f"median of {repeat}"))
    return out


def bench(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        return _quality(tmp) + _cost(tmp, 7 if quick else 21)
