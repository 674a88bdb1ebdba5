"""Text first, vectors after: one `memhealth ingest` against an embedding server slower than
its budget indexes every source's text — the inventory among it — before it spends any
budget on vectors; the vectors backfill over the following runs, and the gate says how far
along they are.

The store is the httpx project of the real-corpus fixture (its docs and its 13 memory files),
ingested by the real CLI against the stand-in Ollama on loopback, each embed request held
`DELAY_S` so the corpus's embedding outlasts the budget several times over.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from memhealth.config import load
from memory_core.store.db import connect, vec_unavailable_reason
from tests.conftest import clean_env, rows, run_cli
from tests.support.dnr_eval import FIXTURE, prompts_for, verdict
from tests.support.gate_fix_helpers import check
from tests.support.ollama_standin import OllamaStandin

pytestmark = pytest.mark.skipif(bool(vec_unavailable_reason()), reason=vec_unavailable_reason() or "")

DIM = 8
DELAY_S = 0.4     # per embed request of BATCH texts: ~20 texts/s, the corpus needs ~10 s
BATCH = 8
BUDGET_S = 4.0


def _project(tmp_path, url: str) -> str:
    root = str(tmp_path / "httpx")
    shutil.copytree(os.path.join(FIXTURE, "httpx"), root)
    assert run_cli("init", "--project", root).returncode == 0
    path = os.path.join(root, ".memhealth", "config.toml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace("[ingest]\n", '[ingest]\nmemory = ["memory"]\n', 1)
    text = text.replace("[embedding]\n", f'[embedding]\nurl = "{url}"\ndim = {DIM}\nbatch_size = {BATCH}\n', 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return root


def _ingest(root: str) -> dict:
    proc = run_cli("ingest", "docs", "memory", "--json", "--budget-s", str(BUDGET_S), "--project", root,
                   env=clean_env(HOME=os.path.join(root, "home")), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _memory_files(root: str) -> set[str]:
    return {f"memory/{n}" for n in os.listdir(os.path.join(root, "memory")) if n.endswith(".md")}


def test_one_ingest_indexes_every_memory_file_before_vectors_and_the_next_continues(tmp_path):
    with OllamaStandin("healthy", dim=DIM, embed_delay_s=DELAY_S) as ollama:
        root = _project(tmp_path, ollama.url)
        first = _ingest(root)
        # the text of every source is in: every memory file has its watermark and chunks
        assert not first["budget_exhausted"], first
        marked = {r[0] for r in rows(root, "SELECT path FROM watermarks WHERE source = 'memory' AND path != '*'")}
        assert marked == _memory_files(root)
        indexed = {r[0] for r in rows(root, "SELECT DISTINCT path FROM chunks WHERE source = 'memory'")}
        assert indexed == _memory_files(root)
        # ...and the vectors did not all fit: the phase stopped on the budget, memory first
        vec = first["vectors"]
        assert vec["backfill"] == "budget" and 0 < vec["with_vector"] < vec["chunks"], vec
        memory_total = rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory'")[0][0]
        memory_left = rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory' "
                                 "AND id NOT IN (SELECT chunk_id FROM chunk_vectors)")[0][0]
        assert memory_left == max(memory_total - vec["with_vector"], 0)  # the inventory's first

        # a re-proposal gets its DO-NOT-REBUILD after this one run (the lexical leg)
        cfg = load(os.path.join(root, ".memhealth"), environ={})
        cfg["embedding"]["url"] = ""  # the lexical cascade alone: it needs only the text
        conn = connect(os.path.join(root, ".memhealth", "memory.db"))
        try:
            repro = [p for p in prompts_for("httpx") if p["label"] == "reproposal"][:8]
            fired = [p for p in repro if any(p["expect"].lower() in t.lower()
                                             for t in verdict(conn, cfg, p["prompt"], f"s-{p['id']}")["dnr"])]
        finally:
            conn.close()
        assert fired, "no DO-NOT-REBUILD after one ingest"

        # the gate says how far along the vectors are: a NOTE, not a RED, while they move
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url)
        cov = check(root, "vector_coverage", env=env)
        assert cov["status"] == "note", cov
        assert f"vectors {vec['with_vector']}/{vec['chunks']}" in cov["detail"] and "backfilling" in cov["detail"]

        # the second run re-reads no text and continues the vectors
        second = _ingest(root)
        assert second["files_changed"] == 0 and second["chunks_added"] == 0
        assert second["vectors"]["with_vector"] > vec["with_vector"]
        assert second["vectors"]["embedded"] == second["vectors"]["with_vector"] - vec["with_vector"]


def test_the_text_phase_alone_is_cut_by_the_budget_and_vectors_wait_for_it(tmp_path):
    """A budget too small for the text leaves the vectors for later: none are embedded while
    a source's text is still missing."""
    with OllamaStandin("healthy", dim=DIM) as ollama:
        root = _project(tmp_path, ollama.url)
        proc = run_cli("ingest", "docs", "memory", "--json", "--budget-s", "0.000001", "--project", root,
                       env=clean_env(HOME=os.path.join(root, "home")), timeout=120)
        data = json.loads(proc.stdout)
        assert data["budget_exhausted"] and data["vectors"]["embedded"] == 0
        assert ollama.bodies("/api/embed") == []


def test_with_the_real_model_one_ingest_indexes_every_source_text_before_vectors(tmp_path, model_server):
    """The real all-MiniLM-L6-v2 behind the Ollama-compatible server: the httpx project plus
    2,000 generated doc chunks, more than its forward passes can embed in the budget on this
    box. One run indexes all the text, the inventory among it; the vectors wait their turn."""
    from tests.support.model_server import configure_project

    root = _project(tmp_path, model_server.url)
    configure_project(root, model_server.url, batch_size=16)
    extra = os.path.join(root, "docs", "generated")
    os.makedirs(extra)
    for i in range(500):
        sections = "\n".join(f"## Part {s} of note {i}\n\nretry budget {i} for the pool, section {s}, "
                             f"{'connection pool limits and timeouts ' * 6}\n" for s in range(4))
        with open(os.path.join(extra, f"n{i:03d}.md"), "w", encoding="utf-8") as fh:
            fh.write(sections)
    proc = run_cli("ingest", "docs", "memory", "--json", "--budget-s", "6", "--project", root,
                   env=clean_env(HOME=os.path.join(root, "home")), timeout=180)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert not data["budget_exhausted"], data
    assert {r[0] for r in rows(root, "SELECT DISTINCT path FROM chunks WHERE source = 'memory'")} == _memory_files(root)
    vec = data["vectors"]
    assert vec["chunks"] > 2000 and vec["with_vector"] < vec["chunks"] and vec["backfill"] == "budget", vec
    memory_left = rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory' "
                             "AND id NOT IN (SELECT chunk_id FROM chunk_vectors)")[0][0]
    memory_total = rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory'")[0][0]
    assert memory_left == max(memory_total - vec["with_vector"], 0)  # the inventory's vectors first
    cfg = load(os.path.join(root, ".memhealth"), environ={})
    cfg["embedding"]["url"] = ""
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        socks = next(p for p in prompts_for("httpx") if p["expect"] == "SOCKS proxy support")
        assert any("SOCKS" in t for t in verdict(conn, cfg, socks["prompt"], "real-model")["dnr"])
    finally:
        conn.close()
