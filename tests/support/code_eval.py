"""DO-NOT-REBUILD from the code on real repositories: a fixture project of
tests/fixtures/coderepos committed into a fresh git repository, `memhealth init` and
`memhealth ingest docs code` as a new user runs them (no hand-written memory), then the
prompt cascade over its labeled prompts.

    root = build_project("chi", tmp_dir)
    results = evaluate(root, prompts_for("chi", part="tuned"))
    summary(results)   # {"recall": 0.9, "false_dnr_blocks": 0, "precision": 1.0, ...}

A DO-NOT-REBUILD is correct only when it cites a file (or a file under a folder) the prompt's
`expect` lists; one citing anything else is a false one, whatever the prompt's label. The
held-out part (`part="heldout"`) was written and committed before the delivery existed and is
never tuned on. Used by tests/memory_core/delivery/test_inject_code.py and docs/internals/evaluation-code.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from memhealth.config import load
from memhealth.installer import launcher_argv
from memory_core.delivery import inject
from memory_core.delivery.intent import classify, system_turn
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect
from memory_core.text import clean

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "coderepos")
PROJECTS = ("starlette", "axios", "chi")
PARTS = ("tuned", "heldout", "heldout2")
LABELS = ("reproposal", "new", "near_miss", "status", "question", "chitchat", "system_turn")
# what the code leg renders: DO-NOT-REBUILD? "Name" already exists in the code (kind at path:line)
CITED = re.compile(r'^DO-NOT-REBUILD\? "([^"]+)" already exists in the code \(\S+ at ([^\s:]+):(\d+)\)', re.M)
ANY_DNR = re.compile(r"^DO-NOT-REBUILD\?", re.M)
GIT_ENV = {"GIT_AUTHOR_NAME": "fixture", "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
           "GIT_COMMITTER_NAME": "fixture", "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def prompts_for(*projects: str, part: str | None = None) -> list[dict]:
    out = []
    for name in PARTS if part is None else (part,):
        with open(os.path.join(FIXTURE, f"prompts-{name}.jsonl"), encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return [p for p in out if not projects or p["project"] in projects]


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_", "GIT_"))}


def git(root: str, *args: str, env: dict | None = None) -> str:
    proc = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60,
                          env={**(env or clean_env()), **GIT_ENV})
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def memhealth(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(launcher_argv() + list(args), capture_output=True, text=True, timeout=300,
                          env=env or clean_env())
    if proc.returncode != 0:
        raise RuntimeError(f"memhealth {args[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc


def build_project(name: str, dest: str, env: dict | None = None) -> str:
    """Copy the fixture project to `dest`, commit it into a new git repository, `memhealth
    init` it and `memhealth ingest docs code`. Returns the project root."""
    root = os.path.join(dest, name)
    shutil.copytree(os.path.join(FIXTURE, name), root)
    git(root, "init", "-q", "-b", "main", env=env)
    git(root, "add", "-A", env=env)
    git(root, "commit", "-q", "-m", f"{name} as packaged", env=env)
    memhealth("init", "--project", root, env=env)
    memhealth("ingest", "--project", root, "docs", "code", env=env)
    return root


def verdict(conn, cfg, prompt: str, session_id: str, root: str | None = None) -> dict:
    """The cascade as the prompt hook runs it: machine turn, intent, then inject.decide."""
    text = clean(prompt)
    if system_turn(text):
        return {"outcome": "system_turn", "cited": [], "dnr": 0, "text": None, "detail": {}}
    intent, _phrase = classify(text)
    if intent is None:
        return {"outcome": "no_intent", "cited": [], "dnr": 0, "text": None, "detail": {}}
    result = inject.decide(conn, text, intent, cfg, session_id, Trace(), root=root)
    body = result.text or ""
    return {"outcome": result.outcome, "intent": intent, "text": result.text,
            "cited": [(n, p, int(ln)) for n, p, ln in CITED.findall(body)],
            "dnr": len(ANY_DNR.findall(body)), "detail": result.detail}


def evaluate(root: str, prompts: list[dict], session: str = "eval") -> list[dict]:
    cfg = load(os.path.join(root, ".memhealth"), environ={})
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        # a fresh session per prompt: each is judged on its own, the caps still run
        return [{**p, **verdict(conn, cfg, p["prompt"], f"{session}-{p['id']}", root)} for p in prompts]
    finally:
        conn.close()


def answers(expect: list[str], path: str) -> bool:
    """Does a cited path answer the prompt: one of its files, or a file under one of its folders?"""
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in expect)


def summary(results: list[dict]) -> dict:
    """Recall over re-proposals (a DO-NOT-REBUILD citing a file that answers), false
    DO-NOT-REBUILD blocks (any block on a prompt that deserves none, or citing a wrong file),
    precision over the blocks emitted, and per label the prompts that got one."""
    repro = [r for r in results if r["label"] == "reproposal"]
    blocks = sum(r["dnr"] for r in results)
    correct = sum(1 for r in repro for _n, p, _ln in r["cited"][:1] if answers(r["expect"], p))
    hits = sum(1 for r in repro if any(answers(r["expect"], p) for _n, p, _ln in r["cited"]))
    by_label = {label: [r["id"] for r in results if r["label"] == label and r["dnr"]]
                for label in LABELS if label != "reproposal"}
    silent = [r for r in results if r["label"] != "reproposal"]
    return {"prompts": len(results), "reproposals": len(repro), "silent": len(silent),
            "hits": hits, "recall": round(hits / len(repro), 3) if repro else 1.0,
            "dnr_blocks": blocks, "false_dnr_blocks": blocks - correct,
            "precision": round(correct / blocks, 3) if blocks else 1.0,
            "false_dnr_on_silent": sum(len(v) for v in by_label.values()),
            "false_by_label": {k: v for k, v in by_label.items() if v},
            "missed": [r["id"] for r in repro if not any(answers(r["expect"], p) for _n, p, _ln in r["cited"])]}
