"""Vectors during ingest: batches to a real stand-in Ollama, replacement, degradation."""

from __future__ import annotations

import os

import pytest

from memhealth.config import defaults
from memory_core.index import vectors
from memory_core.index.embed import forget_process_state
from memory_core.ingest import run_ingest
from memory_core.store.db import connect, vec_unavailable_reason
from tests.support.ollama_standin import OllamaStandin, closed_url

DIM = 8
pytestmark = pytest.mark.skipif(bool(vec_unavailable_reason()), reason=vec_unavailable_reason() or "")


@pytest.fixture(autouse=True)
def fresh_process_state():
    forget_process_state()  # circuit breaker and log-once sets, as a new process has them
    yield
    forget_process_state()


def config(url, batch_size=4):
    cfg = defaults()
    cfg["ingest"].update(docs=["docs"], memory=[], ledgers=[], transcripts=[], git=False)
    cfg["embedding"].update(url=url, dim=DIM, batch_size=batch_size, bulk_timeout_s=5.0)
    return cfg


def docs(root, n):
    os.makedirs(root / "docs", exist_ok=True)
    for i in range(n):
        (root / "docs" / f"d{i}.md").write_text(f"# Doc {i}\nbody of document {i}\n", encoding="utf-8")


def test_new_chunks_are_embedded_in_batches_and_stored(tmp_path):
    docs(tmp_path, 10)
    with OllamaStandin(mode="healthy", dim=DIM) as server:
        conn = connect(str(tmp_path / "memory.db"))
        report = run_ingest(conn, str(tmp_path), config(server.url, batch_size=4))
        embeds = server.bodies("/api/embed")
    assert report.vectors_state == "ok"
    assert report.vectors_embedded == 10 and report.vectors_pending == 0
    # the first request is a one-text probe that measures the server; then full batches
    assert [len(b["input"]) for b in embeds] == [1, 4, 4, 1]
    assert vectors.coverage(conn) == (10, 10)


def test_a_replaced_doc_takes_its_old_vectors_with_it(tmp_path):
    docs(tmp_path, 2)
    with OllamaStandin(mode="healthy", dim=DIM) as server:
        conn = connect(str(tmp_path / "memory.db"))
        cfg = config(server.url)
        run_ingest(conn, str(tmp_path), cfg)
        (tmp_path / "docs" / "d1.md").write_text("# Doc 1\nrewritten body, longer\n", encoding="utf-8")
        run_ingest(conn, str(tmp_path), cfg)
    assert vectors.coverage(conn) == (2, 2)
    orphans = conn.execute("SELECT count(*) FROM chunks_vec WHERE rowid NOT IN (SELECT id FROM chunks)")
    assert orphans.fetchone()[0] == 0
    # the exact table and the index moved together, and the kept count with them (migration 6)
    assert conn.execute("SELECT count(*) FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)"
                        ).fetchone()[0] == 0
    assert vectors.count_check(conn) == (2, 2) and vectors.vector_count(conn) == 2



def test_a_dead_embedding_server_never_fails_ingest_and_is_recorded_once(tmp_path):
    docs(tmp_path, 6)
    conn = connect(str(tmp_path / "memory.db"))
    report = run_ingest(conn, str(tmp_path), config(closed_url(), batch_size=2))
    assert report.errors == 0 and report.chunks_added == 6
    assert report.vectors_state == "degraded" and report.vectors_pending == 6
    assert report.vectors_detail.startswith("unreachable")
    rows = conn.execute("SELECT component, reason FROM degradations").fetchall()
    assert rows == [("embedding", "unreachable")]


def test_a_wrong_width_server_stores_no_vectors_and_keeps_the_chunks(tmp_path):
    docs(tmp_path, 3)
    with OllamaStandin(mode="wrong_width", dim=DIM) as server:
        conn = connect(str(tmp_path / "memory.db"))
        report = run_ingest(conn, str(tmp_path), config(server.url))
    assert report.chunks_added == 3
    assert report.vectors_embedded == 0 and report.vectors_pending == 3
    assert vectors.coverage(conn) == (0, 3)


def test_an_ingest_of_some_sources_embeds_only_theirs(tmp_path):
    """`memhealth remember` and triage re-read memory alone: they embed memory's new chunks,
    not the store's whole backlog of docs without vectors (that is a full ingest's job)."""
    docs(tmp_path, 4)
    os.makedirs(tmp_path / "mem", exist_ok=True)
    (tmp_path / "mem" / "m.md").write_text("---\nname: m\ntype: project\n---\nbody\n", encoding="utf-8")
    conn = connect(str(tmp_path / "memory.db"))
    plain = config("", batch_size=4)
    plain["ingest"]["memory"] = ["mem"]
    run_ingest(conn, str(tmp_path), plain, sources=["docs"])  # BM25 only: 4 doc chunks, no vectors
    with OllamaStandin(mode="healthy", dim=DIM) as server:
        cfg = config(server.url, batch_size=4)
        cfg["ingest"]["memory"] = ["mem"]
        report = run_ingest(conn, str(tmp_path), cfg, sources=["memory"])
        assert report.vectors_embedded == 1 and report.vectors_pending == 4
        assert conn.execute("SELECT count(*) FROM chunk_vectors JOIN chunks ON chunks.id = chunk_id "
                            "WHERE source = 'docs'").fetchone()[0] == 0
        full = run_ingest(conn, str(tmp_path), cfg)  # every enabled source: the backlog too
    assert full.vectors_embedded == 4 and vectors.coverage(conn) == (5, 5)
