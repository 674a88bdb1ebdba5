"""DO-NOT-REBUILD from the code: precision and recall on real repositories, and what the
code leg costs the prompt hook.

    python benchmarks/run.py code_dnr

Quality: tests/fixtures/coderepos (Starlette, axios, chi: Python, JavaScript, Go), each
committed into a git repository, `memhealth init` + `memhealth ingest docs code`
(subprocesses), then the prompt cascade in-process over the labeled prompts, one fresh
session per prompt (tests/code_eval.py). One row per part: tuned, held out (first part,
folded into the second tuning round), held out (second part, never tuned on).

Cost: the prompt hook, a subprocess with JSON on stdin as Claude Code runs it, in the
Starlette project before and after `ingest code`, as ratios to the interpreter floor
`python -c "import sqlite3, json"` measured in the same run, and to the same prompt in the
same project without the code index (what the code leg adds).
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

from tests import code_eval  # noqa: E402

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


def _cost(base: str, repeat: int) -> list[dict]:
    compile_packages()
    root = os.path.join(base, "cost", "starlette")
    shutil.copytree(os.path.join(code_eval.FIXTURE, "starlette"), root)
    code_eval.git(root, "init", "-q", "-b", "main")
    code_eval.git(root, "add", "-A")
    code_eval.git(root, "commit", "-q", "-m", "starlette as packaged")
    code_eval.memhealth("init", "--project", root)
    code_eval.memhealth("ingest", "--project", root, "docs")
    cmd = memhealth_cmd() + ["hook", "prompt"]

    def timed(prompt: str, tag: str) -> dict:
        # a session per run: the per-session cap would otherwise silence the repeats
        samples = []
        for i in range(repeat):
            samples += time_cmd(cmd, stdin=_stdin(root, prompt, f"{tag}-{i}"), cwd=root, repeat=1,
                                warmup=1 if i == 0 else 0)
        return summary(samples)

    base_floor = summary(floor(repeat))
    before = {name: timed(prompt, f"before-{n}") for n, (name, prompt) in enumerate(CASES)}
    code_eval.memhealth("ingest", "--project", root, "code")
    after = {name: timed(prompt, f"after-{n}") for n, (name, prompt) in enumerate(CASES)}
    out = [row("floor: python -c 'import sqlite3, json'", base_floor["median"] * 1000, "ms")]
    for name, _prompt in CASES:
        a, b = after[name], before[name]
        target = "<= 1.3x without" if name == "non-intent" else "<= 2.0x without"
        out.append(row(f"hook prompt, {name}, Starlette with its code index", a["median"] / base_floor["median"],
                       "x floor", note=f"median {a['median'] * 1000:.1f} ms"))
        out.append(row(f"hook prompt, {name}: with the code index / without", a["median"] / b["median"], "x",
                       target, note=f"{a['median'] * 1000:.1f} ms vs {b['median'] * 1000:.1f} ms"))
    return out


def bench(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        return _quality(tmp) + _cost(tmp, 7 if quick else 21)
