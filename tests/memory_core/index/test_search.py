"""Hybrid search on a real store with the stand-in as a real server: fusion and degradation."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memhealth.config import defaults
from memory_core.index import vectors
from memory_core.index.embed import OllamaClient, forget_process_state
from memory_core.index.search import RRF_K, search
from memory_core.outbox.spans import Trace
from memory_core.store import db
from memory_core.text import clean
from tests.conftest import REPO
from tests.support.ollama_standin import OllamaStandin, closed_url

DIM = 8
MODEL = "nomic-embed-text"

CORPUS = [
    ("docs", "docs/wal.md", "WAL checkpoints", "The WAL checkpoint stalls when a reader holds a snapshot.", 10),
    ("memory", "memory/ollama.md", "Ollama", "Ollama binds 127.0.0.1; localhost may resolve to ::1 first.", 40),
    ("ledger", "ledger.md", "Decision", "We keep BM25 as the fallback when the embedding server is down.", 30),
    ("git", "git:abc123", "fix", "Fix checkpoint starvation by bounding reader snapshots.", 15),
    ("docs", "docs/vec.md", "Vectors", "sqlite-vec stores one float vector per chunk.", 10),
]


def add_chunk(conn, source, path, title, content, weight=10.0, line=1) -> int:
    cur = conn.execute(
        "INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
        "signal_weight, created_ns) VALUES (?, ?, ?, ?, 'heading', ?, ?, ?, ?, ?)",
        (source, path, line, line + 3, title, content, str(hash((path, content, line))), weight,
         time.time_ns()))
    return cur.lastrowid


@pytest.fixture(autouse=True)
def fresh_process_state():
    forget_process_state()
    yield
    forget_process_state()


@pytest.fixture
def store(tmp_path):
    conn = db.connect(tmp_path / "memory.db")
    for row in CORPUS:
        add_chunk(conn, *row)
    yield conn
    conn.close()


@pytest.fixture
def ollama():
    with OllamaStandin(mode="healthy", dim=DIM, models=[MODEL], hang_s=10.0) as server:
        yield server


def config(url: str = "", timeout_s: float = 2.0):
    cfg = defaults()
    cfg["embedding"].update(url=url, model=MODEL, dim=DIM, timeout_s=timeout_s)
    return cfg


def embed_all(conn, url: str) -> None:
    assert vectors.ensure_vec_table(conn, DIM)
    result = vectors.backfill(conn, OllamaClient(url, MODEL, DIM))
    assert result.error is None and result.remaining == 0


def degradations(conn) -> list[tuple]:
    return conn.execute("SELECT component, reason FROM degradations ORDER BY id").fetchall()



def test_unconfigured_embeddings_give_bm25_results_and_no_degradation_row(store):
    result = search(store, "why does the checkpoint stall?", config(), k=5)
    assert result.legs_answered == ["bm25"]
    assert result.degraded == "not_configured"
    assert {h.path for h in result.hits[:2]} == {"docs/wal.md", "git:abc123"}
    assert all(h.legs == ("bm25",) for h in result.hits)
    assert degradations(store) == []


def test_hybrid_search_fuses_both_legs_with_rrf_times_signal_weight(store, ollama):
    embed_all(store, ollama.url)
    # The stand-in's vectors are equal only for equal text, so embedding a chunk's exact
    # text makes the vector leg rank that chunk first.
    query = vectors.embed_text("Ollama", CORPUS[1][3])
    result = search(store, query, config(ollama.url), k=3)
    assert result.legs_answered == ["bm25", "vector"]
    assert result.degraded is None
    top = result.hits[0]
    assert top.path == "memory/ollama.md"
    assert set(top.legs) == {"bm25", "vector"}
    assert top.score == pytest.approx(2 / (RRF_K + 1) * (1 + 40 / 100))
    assert top.distance == pytest.approx(0.0, abs=1e-6)
    assert {"bm25_ms", "embed_ms", "knn_ms", "fuse_ms", "total_ms"} <= set(result.timings)


def test_signal_weight_lifts_a_lower_ranked_chunk(tmp_path):
    conn = db.connect(tmp_path / "memory.db")
    plain = add_chunk(conn, "docs", "a.md", "", "zebra zebra zebra crossing", weight=10)
    boosted = add_chunk(conn, "memory", "b.md", "", "zebra crossing rules and more words here", weight=40)
    result = search(conn, "zebra", config(), k=2)
    assert [h.chunk_id for h in result.hits] == [boosted, plain]
    assert result.hits[0].bm25 < result.hits[1].bm25


def test_a_hung_server_gives_bm25_results_within_the_timeout_and_one_degradation_row(store, ollama):
    embed_all(store, ollama.url)
    ollama.mode = "hung"  # hangs 30 s, then drops the connection unanswered
    result = search(store, "checkpoint stall", config(ollama.url, timeout_s=0.3), k=5)
    # "timeout", not a dropped connection: the 0.3 s timeout ended the vector leg, not the hang
    assert result.degraded == "timeout"
    assert result.legs_answered == ["bm25"]
    assert "docs/wal.md" in [h.path for h in result.hits]
    assert degradations(store) == [("embedding", "timeout")]


def test_an_unreachable_server_gives_bm25_results_and_one_degradation_row(store, ollama):
    embed_all(store, ollama.url)
    cfg = config(closed_url(), timeout_s=0.3)
    first = search(store, "checkpoint", cfg)
    second = search(store, "snapshot", cfg)
    # refused at once ("unreachable", not a connect timeout waited out), then not asked again
    assert (first.degraded, second.degraded) == ("unreachable", "circuit_open")
    assert first.hits and second.hits
    assert degradations(store) == [("embedding", "unreachable")]


def test_the_circuit_breaker_skips_the_second_call_while_a_new_process_retries(store, ollama, tmp_path):
    embed_all(store, ollama.url)
    ollama.mode = "hung"
    cfg = config(ollama.url, timeout_s=0.3)
    assert search(store, "checkpoint", cfg).degraded == "timeout"
    seen = len(ollama.requests)
    again = search(store, "checkpoint", cfg)
    assert again.degraded == "circuit_open" and again.hits
    assert len(ollama.requests) == seen
    ollama.mode = "healthy"
    code = f"""
import json
from memhealth.config import defaults
from memory_core.store import db
from memory_core.index.search import search
cfg = defaults()
cfg["embedding"].update(url={ollama.url!r}, model={MODEL!r}, dim={DIM}, timeout_s=2.0)
r = search(db.connect({str(tmp_path / "memory.db")!r}), "checkpoint", cfg)
print(json.dumps([r.legs_answered, r.degraded]))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [["bm25", "vector"], None]
    assert len(ollama.requests) == seen + 1


def test_a_store_without_vectors_never_calls_the_server(store, ollama):
    result = search(store, "checkpoint", config(ollama.url))
    assert result.degraded == "no_vectors" and result.legs_answered == ["bm25"]
    assert ollama.requests == []
    assert degradations(store) == []


def test_a_config_width_that_differs_from_the_table_degrades_and_names_the_fix(store, ollama):
    embed_all(store, ollama.url)
    cfg = config(ollama.url)
    cfg["embedding"]["dim"] = 16
    result = search(store, "checkpoint", cfg)
    assert result.degraded == "dimension_mismatch"
    assert "memhealth embed --rebuild" in result.degraded_detail
    assert result.hits
    assert len(ollama.requests) == len(CORPUS) // 64 + 1  # only the backfill's request
    assert degradations(store) == [("embedding", "dimension_mismatch")]


def test_a_precomputed_query_vector_runs_the_vector_leg_alone(store, ollama):
    embed_all(store, ollama.url)
    [qvec] = OllamaClient(ollama.url, MODEL, DIM).embed([vectors.embed_text("Ollama", CORPUS[1][3])])
    seen = len(ollama.requests)
    result = search(store, "", config(), k=2, query_vector=qvec, use_bm25=False)
    assert result.legs_answered == ["vector"]
    assert result.hits[0].path == "memory/ollama.md" and result.hits[0].legs == ("vector",)
    assert result.hits[0].distance == pytest.approx(0.0, abs=1e-6)
    assert len(ollama.requests) == seen


def test_search_records_a_memory_search_span_with_the_embedding_span_inside(store, ollama):
    embed_all(store, ollama.url)
    trace = Trace()
    search(store, "checkpoint", config(ollama.url), k=4, trace=trace)
    outer, bm25, inner, knn = trace.spans
    assert (outer.name, outer.kind) == ("memory.search", "internal")
    assert outer.attributes["memhealth.search.k"] == 4
    assert outer.attributes["memhealth.search.legs"] == "bm25,vector"
    assert "checkpoint" not in json.dumps(outer.attributes)  # no query text by default
    assert inner.name == f"embeddings {MODEL}" and inner.parent_span_id == outer.span_id
    # each store query is a DB client span under the retrieval (tests/telemetry/test_semconv.py)
    assert [(s.name, s.kind, s.parent_span_id) for s in (bm25, knn)] == [
        ("SELECT chunks_fts", "client", outer.span_id), ("SELECT chunks_vec", "client", outer.span_id)]


def test_control_characters_and_nul_in_the_query_are_stripped(store):
    result = search(store, "check\x00point\x1b[31m stall\x7f", config())
    assert "stall" in result.tokens
    assert all("\x00" not in t for t in result.tokens)
    assert result.hits


def test_an_empty_or_punctuation_query_finds_nothing_without_raising(store):
    assert search(store, "", config()).hits == []
    assert search(store, '"*) OR NEAR(', config()).hits == []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.text(max_size=200), min_size=1, max_size=4),
       query=st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=200))
def test_arbitrary_unicode_documents_and_queries_never_raise(tmp_path, docs, query):
    conn = db.connect(tmp_path / "memory.db")
    try:
        for i, doc in enumerate(docs):
            add_chunk(conn, "docs", f"p{i}.md", clean(doc[:20]), clean(doc), line=time.time_ns())
        result = search(conn, query, config(), k=5)
        assert len(result.hits) <= 5
        assert result.legs_answered == ["bm25"]
    finally:
        conn.close()


def test_the_search_command_prints_source_path_lines_score_and_legs(project, ollama, cli):
    conn = db.connect(project / ".memhealth" / "memory.db")
    for row in CORPUS:
        add_chunk(conn, *row)
    embed_all(conn, ollama.url)
    conn.close()
    env = {"MEMHEALTH_EMBEDDING_URL": ollama.url, "MEMHEALTH_EMBEDDING_DIM": DIM}
    proc = cli("search", "checkpoint stall", "--k", "2", "--project", project, env=env)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "docs/wal.md:1-4" in first or "git:abc123:1-4" in first
    assert "[bm25" in first
    proc = cli("search", "checkpoint", "--json", "--project", project, env=env)
    data = json.loads(proc.stdout)
    assert data["legs_answered"] == ["bm25", "vector"] and data["degraded"] is None
    assert {"chunk_id", "source", "path", "line_start", "line_end", "score", "legs"} <= set(data["hits"][0])


def test_the_search_command_says_when_it_fell_back_to_bm25(project, cli):
    conn = db.connect(project / ".memhealth" / "memory.db")
    add_chunk(conn, *CORPUS[0])
    assert vectors.ensure_vec_table(conn, DIM)
    conn.close()
    env = {"MEMHEALTH_EMBEDDING_URL": closed_url(), "MEMHEALTH_EMBEDDING_DIM": DIM}
    proc = cli("search", "checkpoint", "--project", project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "docs/wal.md" in proc.stdout
    assert "BM25 only (unreachable)" in proc.stderr


def test_the_vector_leg_on_the_quantized_path_keeps_95_percent_of_the_exact_ten(tmp_path, monkeypatch):
    from tests.memory_core.index.test_vectors import QDIM, clustered

    corpus, queries = clustered(4000, 20)
    conn = db.connect(tmp_path / "memory.db")
    assert vectors.ensure_vec_table(conn, QDIM)
    with db.write(conn):
        ids = [add_chunk(conn, "docs", f"d{i}.md", "", f"chunk {i}") for i in range(len(corpus))]
        vectors.store(conn, list(zip(ids, corpus, strict=True)))
    monkeypatch.setattr(vectors, "EXACT_BELOW", 1000)  # 4000 vectors: the quantized path
    found = 0
    for q in queries:
        result = search(conn, "", config(), k=10, query_vector=q, use_bm25=False)
        assert result.legs_answered == ["vector"]
        found += len({h.chunk_id for h in result.hits}
                     & {cid for cid, _ in vectors.knn(conn, q, 10, exact=True)})
    assert found / (10 * len(queries)) >= 0.95
    conn.close()


def test_an_old_layout_store_answers_and_memhealth_embed_upgrades_it_without_reembedding(project, ollama, cli):
    path = project / ".memhealth" / "memory.db"
    conn = db.connect(path)
    if not vectors.vec_ready(conn):
        pytest.skip("sqlite-vec cannot load in this interpreter")
    ids = [add_chunk(conn, *row) for row in CORPUS]
    # what memhealth wrote before the quantized index: one vec0 float table, nothing else
    conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    conn.execute("INSERT INTO meta(key, value) VALUES ('vec_dim', ?)", (str(DIM),))
    texts = [vectors.embed_text(row[2], row[3]) for row in CORPUS]
    for cid, vec in zip(ids, OllamaClient(ollama.url, MODEL, DIM).embed(texts), strict=True):
        conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, ?)", (cid, vectors.pack(vec)))
    query = vectors.embed_text("Ollama", CORPUS[1][3])
    before = search(conn, query, config(ollama.url), k=3)
    assert before.legs_answered == ["bm25", "vector"] and before.degraded is None
    assert before.hits[0].path == "memory/ollama.md" and set(before.hits[0].legs) == {"bm25", "vector"}
    conn.close()
    embeds = len(ollama.bodies("/api/embed"))

    env = {"MEMHEALTH_EMBEDDING_URL": ollama.url, "MEMHEALTH_EMBEDDING_DIM": DIM}
    proc = cli("embed", "--project", project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "embedded 0 chunk(s)" in proc.stdout and f"vectors: {len(CORPUS)}/{len(CORPUS)}" in proc.stdout
    assert len(ollama.bodies("/api/embed")) == embeds  # upgraded from the stored vectors

    conn = db.connect(path)
    assert vectors.layout(conn) == "binary"
    after = search(conn, query, config(ollama.url), k=3)
    assert [(h.chunk_id, h.legs) for h in after.hits] == [(h.chunk_id, h.legs) for h in before.hits]
    assert [h.distance for h in after.hits] == pytest.approx([h.distance for h in before.hits], abs=1e-6)
    conn.close()


def test_sourced_doc_freq_reads_the_covering_index_even_after_analyze(tmp_path):
    """The prompt hook counts a word's curated chunks (fts.doc_freq with sources). Without
    statistics the planner probes the match's rowids from the (source, path) covering index;
    after ANALYZE it preferred a primary-key lookup reading every matching row: 711 ms per
    common word at 1M chunks instead of ~60 ms. The plan is pinned, with or without stats."""
    from memory_core.index import fts

    conn = db.connect(tmp_path / "memory.db")
    with db.write(conn):
        conn.executemany(
            "INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
            "created_ns) VALUES (?, ?, 1, 2, 'heading', 't', ?, ?, 0)",
            [("docs" if i % 10 == 0 else "transcript", f"f{i // 10}.md",
              f"snapshot compactor turn{i}", f"h{i}") for i in range(3000)])
    conn.execute("ANALYZE")  # the statistics that flipped the plan (PRAGMA optimize writes them too)
    sql, args = fts.sourced_doc_freq_sql(3), ("memory", "docs", "ledger", '"snapshot"')
    plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args)]
    assert plan[0] == "SEARCH chunks USING COVERING INDEX chunks_by_path (source=?)", plan
    assert not any("INTEGER PRIMARY KEY" in step for step in plan), plan
    assert fts.doc_freq(conn, "snapshot", ("memory", "docs", "ledger")) == 300
    assert fts.doc_freq(conn, "snapshot") == 3000
    assert fts.doc_freq(conn, "turn10", ("docs",)) == 1 and fts.doc_freq(conn, "turn11", ("docs",)) == 0
    conn.close()
