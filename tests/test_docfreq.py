"""Counts kept on write and bounded document frequencies: the prompt's relevance check reads
the same amount of the store at 4x the chunks (linear growth on the hook path is a
defect). Work is counted in SQLite VM steps, not time, so a busy machine cannot move it."""

from __future__ import annotations

import os
import random
import sqlite3 as stdlib_sqlite3

import pytest

from memhealth.config import load
from memory_core.delivery import entries, inject, relevance
from memory_core.index import docfreq, fts
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, sqlite3, write
from memory_core.store.schema import MIGRATIONS, _split

WORDS = ("snapshot compactor stream tenant quota replay alert budget shard ledger cursor "
         "window merge index vector probe").split()


def insert(conn, n, source="docs", start=0, text=None, seed=5):
    rng = random.Random(seed + start)
    with write(conn):
        conn.executemany(
            "INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
            "created_ns) VALUES (?, ?, 1, 5, 'heading', 'notes', ?, ?, 0)",
            [(source, f"{source}/f{i}.md", text or (" ".join(rng.choices(WORDS, k=30)) + f" rare{i}"),
              f"h{i}") for i in range(start, start + n)])


def exact(conn):
    return dict(conn.execute("SELECT source, count(*) FROM chunks GROUP BY source"))


def kept(conn):
    return {s: n for s, n in conn.execute("SELECT source, n FROM chunk_counts WHERE n > 0")}


@pytest.fixture
def conn(tmp_path):
    c = connect(tmp_path / "memory.db")
    yield c
    c.close()


def test_counts_follow_every_kind_of_write(conn):
    insert(conn, 50, "docs")
    insert(conn, 30, "transcript")
    assert kept(conn) == exact(conn) == {"docs": 50, "transcript": 30}
    with write(conn):
        conn.execute("DELETE FROM chunks WHERE source = 'docs' AND path = 'docs/f3.md'")
        conn.execute("UPDATE chunks SET source = 'memory' WHERE path IN ('transcript/f0.md', 'transcript/f1.md')")
        conn.execute("UPDATE chunks SET content = 'rewritten' WHERE path = 'docs/f4.md'")
    assert kept(conn) == exact(conn) == {"docs": 49, "transcript": 28, "memory": 2}
    assert docfreq.chunk_count(conn) == 79
    assert docfreq.chunk_count(conn, ("docs", "memory")) == 51
    assert docfreq.counts_by_source(conn) == [("docs", 49), ("memory", 2), ("transcript", 28)]
    # every write that can move a word's frequency moved the change counter:
    # 80 inserts, 1 delete, 2 source moves (out of one source, into another), 1 rewrite
    (changes,) = conn.execute("SELECT sum(changes) FROM chunk_counts").fetchone()
    assert changes == 80 + 1 + 2 * 2 + 2


def test_a_rolled_back_write_leaves_the_counts_alone(conn):
    insert(conn, 5)
    with pytest.raises(RuntimeError), write(conn):
        conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                     "VALUES ('docs', 'x', 'y', 'z', 0)")
        raise RuntimeError("stop")
    assert kept(conn) == exact(conn) == {"docs": 5}


def test_migration_counts_an_existing_store(tmp_path):
    path = tmp_path / "old.db"
    old = stdlib_sqlite3.connect(path, isolation_level=None)
    for number, _title, sql in MIGRATIONS:
        if number >= 5:
            break
        for statement in _split(sql):
            old.execute(statement)
        old.execute(f"PRAGMA user_version = {number}")
    insert(old, 40, "docs")
    insert(old, 7, "ledger", start=100)
    old.close()
    conn = connect(path)
    assert kept(conn) == {"docs": 40, "ledger": 7}
    insert(conn, 3, "docs", start=500)
    assert kept(conn) == exact(conn)


def test_a_store_opened_without_migrating_is_counted_the_old_way(tmp_path):
    path = tmp_path / "old.db"
    old = stdlib_sqlite3.connect(path, isolation_level=None)
    for statement in _split(MIGRATIONS[0][2]):
        old.execute(statement)
    old.execute("PRAGMA user_version = 1")
    insert(old, 12, "docs")
    old.close()
    conn = connect(path, migrate=False)
    assert docfreq.chunk_count(conn) == 12
    assert docfreq.counts_by_source(conn) == [("docs", 12)]
    assert docfreq.doc_freqs(conn, ["rare3", "snapshot"]) == {
        "rare3": 1, "snapshot": fts.doc_freq(conn, "snapshot")}


@pytest.mark.parametrize("sources", [None, ("memory",)])
def test_frequencies_are_exact_for_rare_words_and_kept_for_common_ones(conn, monkeypatch, sources):
    monkeypatch.setattr(docfreq, "COMMON", 64)
    insert(conn, 300, "transcript", seed=1)
    insert(conn, 200, "memory", start=1000, seed=2)
    words = ["snapshot", "rare1003", "rare7", "nowhere", "quota"]
    first = docfreq.doc_freqs(conn, words, sources)
    assert first == {w: fts.doc_freq(conn, w, sources) for w in words}
    scope = docfreq.scope_key(sources)
    stored = dict(conn.execute("SELECT term, df FROM term_df WHERE scope = ?", (scope,)))
    assert stored == {"snapshot": first["snapshot"], "quota": first["quota"]}  # only common words
    # the next prompt reads the kept count: a planted value comes back
    with write(conn):
        conn.execute("UPDATE term_df SET df = df - 3 WHERE term = 'snapshot'")
    assert docfreq.doc_freqs(conn, ["snapshot"], sources)["snapshot"] == first["snapshot"] - 3


def test_a_kept_count_is_counted_again_once_writes_could_move_it_past_its_bound(conn, monkeypatch):
    monkeypatch.setattr(docfreq, "COMMON", 64)
    insert(conn, 400, "memory", text="snapshot compactor stream")
    df0 = docfreq.doc_freqs(conn, ["snapshot"])["snapshot"]
    assert df0 == 400
    bound = df0 // docfreq.DRIFT  # 20 changes keep it; the 21st re-counts
    insert(conn, bound, "memory", start=1000, text="snapshot again")
    within = docfreq.doc_freqs(conn, ["snapshot"])["snapshot"]
    assert within == df0 and abs(within - fts.doc_freq(conn, "snapshot")) <= df0 / docfreq.DRIFT
    insert(conn, 1, "memory", start=5000, text="snapshot once more")
    assert docfreq.doc_freqs(conn, ["snapshot"])["snapshot"] == fts.doc_freq(conn, "snapshot") == 421
    assert conn.execute("SELECT df FROM term_df WHERE term = 'snapshot'").fetchone() == (421,)


def test_keeping_a_count_never_waits_for_the_lock(conn, tmp_path, monkeypatch):
    monkeypatch.setattr(docfreq, "COMMON", 16)
    insert(conn, 100, "docs")
    other = connect(tmp_path / "memory.db")
    other.execute("BEGIN IMMEDIATE")
    try:
        before = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        got = docfreq.doc_freqs(conn, ["snapshot"])
        assert got == {"snapshot": fts.doc_freq(conn, "snapshot")}
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == before > 0
        assert not conn.in_transaction
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert conn.execute("SELECT count(*) FROM term_df").fetchone() == (0,)  # skipped, not queued


def test_refresh_recounts_stale_words_and_forgets_ones_no_longer_common(conn, monkeypatch):
    monkeypatch.setattr(docfreq, "COMMON", 32)
    insert(conn, 100, "docs", text="snapshot compactor")
    docfreq.doc_freqs(conn, ["snapshot", "compactor"])
    with write(conn):
        conn.execute("UPDATE chunks SET content = 'snapshot only' WHERE id > 10")
    assert docfreq.refresh(conn) == 2
    assert dict(conn.execute("SELECT term, df FROM term_df")) == {"snapshot": 100}  # compactor: 10 left
    assert docfreq.refresh(conn) == 0  # nothing stale now


def _steps(conn, fn) -> int:
    """SQLite VM instructions `fn` runs on `conn` (the progress handler fires on every one: a
    coarser step rounds each statement's count, and a decision is only a few hundred)."""
    n = [0]

    def tick():
        n[0] += 1
        return 0

    conn.set_progress_handler(tick, 1)
    try:
        fn()
    finally:
        conn.set_progress_handler(None, 0)
    return n[0]


def _store(tmp_path, name, n):
    c = connect(tmp_path / f"{name}.db")
    # curated (memory) and transcripts both large, every chunk full of the same common words
    insert(c, n // 2, "transcript", seed=9)
    insert(c, n // 2, "memory", start=10 * n, seed=9)
    return c


def test_the_prompt_relevance_check_does_not_grow_with_the_store(tmp_path):
    small, large = _store(tmp_path, "small", 8_000), _store(tmp_path, "large", 32_000)
    cfg = load(None, environ={})
    cfg["injection"]["sources"] = ["memory"]
    prompt = "should we rebuild the snapshot compactor replay for tenant quota alerts and rare4001?"

    def decide(c):
        return lambda: inject.decide(c, prompt, "build", cfg, "s1", Trace())

    for c in (small, large):
        decide(c)()  # the first prompt counts the common words once and keeps them
    cost = {name: _steps(c, decide(c)) for name, c in (("small", small), ("large", large))}
    # before: counts and exact frequencies made this ~4x at 4x the chunks
    assert cost["large"] < 1.3 * cost["small"], cost
    old = {name: _steps(c, lambda c=c: [fts.chunk_count(c), fts.doc_freq(c, "snapshot", ("memory",))])
           for name, c in (("small", small), ("large", large))}
    assert old["large"] > 3 * old["small"], old  # what the check used to do does grow


def test_the_sourced_capped_count_reads_no_more_than_common_rows(tmp_path, monkeypatch):
    """With ANALYZE statistics the planner must still look matches up by rowid."""
    c = _store(tmp_path, "s", 6_000)
    c.execute("ANALYZE")
    plan = " ".join(r[3] for r in c.execute(
        "EXPLAIN QUERY PLAN SELECT count(*), ifnull(sum(source IN (?)), 0) FROM chunks NOT INDEXED "
        "WHERE id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", ("memory", '"x"', 5)))
    assert "INTEGER PRIMARY KEY" in plan and "chunks_by_path" not in plan, plan
    assert isinstance(c, sqlite3.Connection)


def test_the_inventory_is_read_through_its_partial_index(tmp_path):
    """The entry leg reads subsystems and dead ends only: the index's WHERE and the query's
    kind list must stay one set, or SQLite scans every memory and ledger chunk."""
    assert entries.ENTRY_KINDS_SQL == "kind IN ('dead-end', 'dead_end', 'subsystem')"
    assert {k for k in entries.DNR_KINDS | entries.DEAD_END_KINDS} == {"dead-end", "dead_end", "subsystem"}
    c = _store(tmp_path, "s", 2_000)
    c.execute("ANALYZE")
    plan = " ".join(r[3] for r in c.execute(
        f"EXPLAIN QUERY PLAN SELECT id FROM chunks WHERE source IN (?, ?) AND {entries.ENTRY_KINDS_SQL} "
        "ORDER BY id", entries.DNR_SOURCES))
    assert "chunks_entries" in plan, plan


def test_an_ingest_recounts_the_frequencies_its_writes_made_stale(tmp_path, monkeypatch):
    from memory_core.ingest import run_ingest
    from tests.gate_helpers import make_project, open_store

    monkeypatch.setattr(docfreq, "COMMON", 16)
    root = make_project(tmp_path / "proj")
    docs = tmp_path / "proj" / "docs"
    docs.mkdir()
    for i in range(40):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nThe snapshot compactor folds stream {i}.\n")
    cfg = load(os.path.join(root, ".memhealth"), environ={})
    conn = open_store(root)
    run_ingest(conn, root, cfg, ["docs"])
    df = docfreq.doc_freqs(conn, ["snapshot"])["snapshot"]
    assert df == fts.doc_freq(conn, "snapshot") >= 40
    for i in range(40, 50):
        (docs / f"n{i}.md").write_text(f"# Note {i}\n\nAnother snapshot of stream {i}.\n")
    report = run_ingest(conn, root, cfg, ["docs"])
    assert report.frequencies_recounted == 1
    assert conn.execute("SELECT df FROM term_df WHERE term = 'snapshot'").fetchone() == (
        fts.doc_freq(conn, "snapshot"),)
    assert docfreq.doc_freqs(conn, ["snapshot"])["snapshot"] == df + 10


def _mixed(tmp_path, name, n):
    """n chunks: 30 % hold 'ferry', one memory chunk names 'zanzibar'; memory is curated."""
    c = connect(tmp_path / f"{name}.db")
    rng = random.Random(11)
    with write(c):
        c.executemany(
            "INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
            "created_ns) VALUES (?, ?, 1, 5, 'heading', 'notes', ?, ?, 0)",
            [("memory" if i % 2 else "transcript", f"f{i}.md",
              " ".join(rng.choices(WORDS, k=20)) + (" ferry" if i % 10 < 3 else ""), f"h{i}")
             for i in range(n)])
        c.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                  "content_hash, created_ns) VALUES ('memory', 'memory/zanzibar.md', 1, 4, 'decision', "
                  "'zanzibar ferry ledger', 'We route the zanzibar ferry ledger through the replay "
                  "cursor; the zanzibar offsets are kept per tenant.', 'z', 0)")
    return c


def test_a_large_store_retrieves_by_its_rarer_words_within_a_postings_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(relevance, "BM25_UNBOUNDED_MAX", 1_000)
    monkeypatch.setattr(relevance, "QUERY_POSTINGS", 600)
    cfg = load(None, environ={})
    cfg["injection"]["sources"] = ["memory"]
    prompt = "why does the zanzibar ferry ledger replay its cursor per tenant?"
    cost, results = {}, {}
    for n in (4_000, 16_000):
        c = _mixed(tmp_path, f"m{n}", n)
        inject.decide(c, prompt, "investigation", cfg, "warm", Trace())  # common words kept
        out = []
        cost[n] = _steps(c, lambda c=c, out=out: out.append(
            inject.decide(c, prompt, "investigation", cfg, f"s{len(out)}", Trace())))
        results[n] = out[0]
    for r in results.values():
        assert r.detail["query_left_out"] == ["ferry"]  # in 30 %: 1,200+ postings > 600
        assert r.outcome == "injected" and "zanzibar" in r.text, r.detail  # found by its rare word
    assert cost[16_000] < 1.3 * cost[4_000], cost
