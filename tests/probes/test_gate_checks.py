"""Each gate check over real SQLite and real files, travelling in time with an injected now."""

from __future__ import annotations

import os

import pytest

from memory_core.store.db import write
from probes import checks, gate, novelty
from probes.result import RED, CheckResult
from tests.support.gate_helpers import (
    DAY,
    T0,
    add_chunk,
    add_heartbeat,
    add_watermark,
    evidence,
    make_project,
    open_store,
)


@pytest.fixture
def proj(tmp_path):
    root = make_project(tmp_path / "proj")
    conn = open_store(root)
    yield root, conn
    conn.close()


# -- ingest freshness -----------------------------------------------------------------------

def test_ingestion_that_never_ran_is_red_with_the_ingest_fix(proj):
    root, conn = proj
    r = checks.ingest_freshness(evidence(root, conn))
    assert (r.status, r.detail, r.fix) == ("red", "ingestion never ran (no watermarks)", "memhealth ingest")


def test_a_watermark_older_than_the_budget_while_sessions_ran_is_red(proj):
    root, conn = proj
    add_watermark(conn, "docs", "README.md", T0)
    add_watermark(conn, "git", "HEAD", T0 + 3.5 * DAY)
    add_heartbeat(conn, "prompt", T0 + 4 * DAY)
    r = checks.ingest_freshness(evidence(root, conn, now=T0 + 4 * DAY + 60))
    assert r.status == "red"
    assert "docs 4.0 d behind" in r.detail and "git" not in r.detail.split("(")[0].replace("docs", "")
    assert r.fix.startswith("memhealth ingest docs")


def test_an_idle_project_with_old_watermarks_is_not_red(proj):
    root, conn = proj
    add_watermark(conn, "docs", "README.md", T0)
    add_heartbeat(conn, "session-end", T0 + 60)
    r = checks.ingest_freshness(evidence(root, conn, now=T0 + 30 * DAY))
    assert r.status == "green" and "idle" in r.detail


def test_sources_that_found_nothing_are_not_listed_as_fresh(proj):
    root, conn = proj
    add_watermark(conn, "docs", "README.md", T0)
    add_watermark(conn, "docs", "*", T0)
    add_watermark(conn, "transcript", "*", T0)  # the run marker: no transcript directory
    add_watermark(conn, "git", "*", T0)         # the run marker: not a git repository
    r = checks.ingest_freshness(evidence(root, conn, now=T0 + 60))
    assert r.status == "green"
    assert r.detail == "1 source(s) fresh: docs; nothing found to ingest: git, transcript"


# -- vector coverage ------------------------------------------------------------------------

def test_vector_coverage_is_a_note_when_embeddings_are_not_configured(proj):
    root, conn = proj
    assert checks.vector_coverage(evidence(root, conn)).status == "note"


def _embedding_cfg(root, dim=8):
    ev = evidence(root, None)
    ev.cfg["embedding"].update(url="http://127.0.0.1:9", dim=dim)
    return ev.cfg


def test_a_vector_table_whose_width_is_not_the_configured_dim_is_red(proj):
    root, conn = proj
    from memory_core.store.db import load_vec

    assert load_vec(conn)
    conn.execute("CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[4])")
    r = checks.vector_coverage(evidence(root, conn, cfg=_embedding_cfg(root, dim=8)))
    assert r.status == "red" and "4-d vectors" in r.detail and "dim = 8" in r.detail


def test_vector_coverage_below_the_minimum_is_red_and_full_coverage_is_green(proj):
    root, conn = proj
    from memory_core.store.db import load_vec

    assert load_vec(conn)
    add_chunk(conn, 4)
    conn.execute("CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[2])")
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks")]
    for i in ids[:3]:
        conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, '[0.1, 0.2]')", (i,))
    cfg = _embedding_cfg(root, dim=2)
    r = checks.vector_coverage(evidence(root, conn, cfg=cfg))
    assert r.status == "red" and "3/4 chunks" in r.detail and r.fix.startswith("memhealth embed")
    conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?, '[0.1, 0.2]')", (ids[3],))
    assert checks.vector_coverage(evidence(root, conn, cfg=cfg)).status == "green"


def _binary_vectors(conn, n: int) -> list[int]:
    """`n` chunks with 8-d vectors in the quantized layout, through the real write path."""
    from memory_core.index import vectors
    from tests.support.ollama_standin import vector

    assert vectors.ensure_vec_table(conn, 8) and vectors.layout(conn) == "binary"
    add_chunk(conn, n)
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
    assert vectors.store(conn, [(i, vector(str(i), 8)) for i in ids]) == (n, 0)
    return ids


def test_vector_coverage_reads_the_kept_count_of_the_quantized_layout(proj):
    root, conn = proj
    from memory_core.index import vectors

    ids = _binary_vectors(conn, 4)
    with write(conn):
        conn.execute("DELETE FROM chunks WHERE id = ?", (ids[0],))
        vectors.delete_for_chunks(conn, [ids[0]])
    add_chunk(conn, 1, content="not embedded yet")
    cfg = _embedding_cfg(root, dim=8)
    r = checks.vector_coverage(evidence(root, conn, cfg=cfg))
    assert r.status == "red" and "3/4 chunks" in r.detail  # 3 kept vectors, 4 chunks
    vectors.store(conn, [(max(ids) + 1, [0.5] * 8)])
    assert checks.vector_coverage(evidence(root, conn, cfg=cfg)).detail.startswith("4/4 chunks")


# -- capture queue, lineage -------------------------------------------------------------------

def test_capture_queue_reads_the_pending_count_and_turns_red_over_the_max(proj):
    root, conn = proj
    assert checks.capture_queue(evidence(root, conn)).detail == "0 pending"
    conn.execute("INSERT INTO meta(key, value) VALUES ('capture.pending', '41')")
    r = checks.capture_queue(evidence(root, conn))
    assert r.status == "red" and "capture pipeline" in r.fix


def test_lineage_rebuilt_before_its_records_changed_is_red_once_past_the_budget(proj):
    root, conn = proj
    assert checks.lineage_freshness(evidence(root, conn)).status == "green"
    conn.execute("INSERT INTO meta(key, value) VALUES ('lineage.built_ns', ?), ('lineage.source_ns', ?)",
                 (str(int(T0 * 1e9)), str(int((T0 + DAY) * 1e9))))
    assert checks.lineage_freshness(evidence(root, conn, now=T0 + 2 * DAY)).status == "green"
    assert checks.lineage_freshness(evidence(root, conn, now=T0 + 5 * DAY)).status == "red"


# -- index integrity -------------------------------------------------------------------------

def test_a_full_text_index_out_of_step_with_chunks_is_red(proj):
    root, conn = proj
    add_chunk(conn, 3)
    assert checks.index_integrity(evidence(root, conn)).status == "green"
    conn.execute("INSERT INTO chunks_fts(rowid, title, content) VALUES (999, 'ghost', 'no such chunk')")
    r = checks.index_integrity(evidence(root, conn))
    assert r.status == "red" and "rebuild" in r.fix


def test_each_run_checks_the_newest_ids_and_the_daily_run_the_whole_index(proj, monkeypatch):
    """A drift among old chunks waits for the daily scan (bounded runs); among the newest it
    is RED at once."""
    root, conn = proj
    monkeypatch.setattr(checks, "TAIL_PARITY", 5)
    add_chunk(conn, 20)
    assert checks.index_integrity(evidence(root, conn)).status == "green"  # the daily scan ran
    old_id, title, content = conn.execute("SELECT id, title, content FROM chunks ORDER BY id LIMIT 1").fetchone()
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, title, content) VALUES ('delete', ?, ?, ?)",
                 (old_id, title, content))
    hour_later = checks.index_integrity(evidence(root, conn, now=T0 + 3600))
    assert hour_later.status == "green" and "parity ok" in hour_later.detail
    daily = checks.index_integrity(evidence(root, conn, now=T0 + 2 * DAY))
    assert daily.status == "red" and "holds 19 rows for 20 chunks" in daily.detail
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    new_id, title, content = conn.execute("SELECT id, title, content FROM chunks ORDER BY id DESC LIMIT 1").fetchone()
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, title, content) VALUES ('delete', ?, ?, ?)",
                 (new_id, title, content))
    r = checks.index_integrity(evidence(root, conn, now=T0 + 2 * DAY + 60))
    assert r.status == "red" and "for the newest 5 chunks" not in r.detail  # the daily scan is still due
    assert "holds 19 rows for 20 chunks" in r.detail


def test_kept_chunk_counts_that_drift_are_red_on_the_daily_scan(proj):
    root, conn = proj
    add_chunk(conn, 4)
    conn.execute("UPDATE chunk_counts SET n = n + 2 WHERE source = 'docs'")
    r = checks.index_integrity(evidence(root, conn))
    assert r.status == "red" and "docs: 6 kept, 4 rows" in r.detail and "chunk_counts" in r.fix


def test_the_gate_reads_the_same_at_four_times_the_chunks(tmp_path, monkeypatch):
    """Outside the daily scan no check reads the whole store: the work every run
    does, counted in SQLite VM steps, is the same at 4x the chunks."""
    from memory_core.store.db import write

    monkeypatch.setattr(checks, "TAIL_PARITY", 1_000)  # both stores hold more than the tail
    cost = {}
    for n in (3_000, 12_000):
        root = make_project(tmp_path / f"p{n}")
        conn = open_store(root)
        with write(conn):
            add_chunk(conn, n)
        gate.run_checks(evidence(root, conn))  # the daily scans, once
        steps = [0]

        def tick(steps=steps):
            steps[0] += 1
            return 0

        conn.set_progress_handler(tick, 100)
        results = gate.run_checks(evidence(root, conn, now=T0 + 3600))
        conn.set_progress_handler(None, 0)
        assert all(r.status != "red" or r.name not in ("index_integrity", "embedding_coverage")
                   for r in results)
        cost[n] = steps[0]
        conn.close()
    assert cost[12_000] < 1.3 * cost[3_000], cost
def test_vector_parity_is_red_for_orphan_vectors_and_the_kept_count_is_checked_daily(proj):
    root, conn = proj
    from memory_core.index import vectors

    ids = _binary_vectors(conn, 5)
    r = checks.index_integrity(evidence(root, conn))
    assert r.status == "green" and r.detail.endswith("parity ok (5 chunks, 5 vectors)")
    conn.execute("DELETE FROM chunks WHERE id IN (?, ?)", ids[:2])  # a process without sqlite-vec
    r = checks.index_integrity(evidence(root, conn, now=T0 + 60))
    assert r.status == "red" and "2 more vectors than chunks" in r.detail and r.fix.startswith("memhealth embed")
    assert vectors.prune_orphans(conn) == 2  # what `memhealth embed` runs first
    assert checks.index_integrity(evidence(root, conn, now=T0 + 120)).status == "green"
    conn.execute("UPDATE vector_counts SET n = n - 1")  # the kept count drifts below the truth
    # parity (every run) cannot see a count that is too low; the daily full check does
    assert checks.index_integrity(evidence(root, conn, now=T0 + 180)).status == "green"
    r = checks.index_integrity(evidence(root, conn, now=T0 + 2 * DAY))
    assert r.status == "red" and "kept vector count says 2 but the vector index holds 3" in r.detail
    assert r.fix.startswith("memhealth embed")
    vectors.prune_orphans(conn)
    r = checks.index_integrity(evidence(root, conn, now=T0 + 3 * DAY))
    assert r.status == "green" and r.detail.endswith("(3 chunks, 3 vectors)")


# -- memory files ----------------------------------------------------------------------------

def test_a_missing_memory_index_is_a_note_not_red(proj):
    root, conn = proj
    assert checks.memory_files(evidence(root, conn)).status == "note"


def test_a_memory_index_over_280_lines_is_red(proj):
    root, conn = proj
    with open(os.path.join(root, "MEMORY.md"), "w") as fh:
        fh.write("".join(f"- memory {i}\n" for i in range(281)))
    r = checks.memory_files(evidence(root, conn))
    assert r.status == "red" and "281 lines" in r.detail


def _anchor(root, age_s: float) -> None:
    with open(os.path.join(root, "resume.md"), "w") as fh:
        fh.write("where we are\n")
    os.utime(os.path.join(root, "resume.md"), (T0 - age_s, T0 - age_s))
    with open(os.path.join(root, "MEMORY.md"), "w") as fh:
        fh.write("# Memory\n- one\n## ⏯ LATEST\n[resume](resume.md)\n")


def test_a_resume_anchor_stale_while_sessions_ran_is_red_but_idle_is_a_note(proj):
    root, conn = proj
    _anchor(root, 10 * DAY)
    assert checks.memory_files(evidence(root, conn)).status == "note"  # no sessions at all
    add_heartbeat(conn, "prompt", T0 - 60)
    r = checks.memory_files(evidence(root, conn))
    assert r.status == "red" and "resume anchor" in r.detail
    _anchor(root, 1 * DAY)
    assert checks.memory_files(evidence(root, conn)).status == "green"


# -- render novelty --------------------------------------------------------------------------

def _decision(conn, n: int) -> None:
    """A memory decision record: one of the session-start render's own inputs."""
    conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
                 "created_ns) VALUES ('memory', ?, 1, 3, 'decision', ?, ?, ?, 0)",
                 (f"memory/decision-{n}.md", f"decision {n}", f"we chose option {n}", f"d{n}"))


def test_a_render_frozen_while_its_own_inputs_moved_is_red(proj):
    root, conn = proj
    for i, sid in enumerate(["a", "b", "c"]):
        _decision(conn, i)  # a new decision each session: the render should have changed
        novelty.record_render(conn, sid, "frozen render", novelty.inputs_signature(conn),
                              int((T0 + i) * 1e9))
    r = novelty.render_novelty(evidence(root, conn, now=T0 + 10))
    assert r.status == "red" and "3 sessions" in r.detail and "inputs" in r.detail


def test_the_same_render_while_only_the_rest_of_the_corpus_moved_is_green(proj):
    """A doc edit and a re-ingest move the corpus, not the render's inputs."""
    root, conn = proj
    _decision(conn, 0)
    for i, sid in enumerate(["a", "b", "c", "d"]):
        add_chunk(conn, 1, content=f"a doc section edited in session {sid}")
        novelty.record_render(conn, sid, "same render", novelty.inputs_signature(conn), int((T0 + i) * 1e9))
    r = novelty.render_novelty(evidence(root, conn, now=T0 + 10))
    assert r.status == "green" and "so are its inputs" in r.detail


def test_rows_recorded_with_the_old_corpus_signature_never_compare(proj):
    root, conn = proj
    for i, sid in enumerate(["a", "b", "c"]):
        novelty.record_render(conn, sid, "same render", f"corpus{i}", int((T0 + i) * 1e9))
    assert novelty.render_novelty(evidence(root, conn, now=T0 + 10)).status == "green"


# -- integrations, telemetry -----------------------------------------------------------------

def test_optional_integrations_never_configured_are_notes_not_red(proj):
    root, conn = proj
    r = checks.integrations(evidence(root, conn))
    assert r.status == "note" and "webhook" in r.detail


def test_telemetry_is_silent_without_an_exporter_and_red_when_a_configured_one_fell_behind(proj):
    root, conn = proj
    conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES ('t', 's', 'x', ?, ?)",
                 (int(T0 * 1e9), int(T0 * 1e9)))
    r = checks.telemetry_pipeline(evidence(root, conn, now=T0 + 30 * DAY))
    assert r.status == "green" and "no exporter configured" in r.detail and "bounded" in r.detail
    conn.execute("INSERT INTO meta(key, value) VALUES ('export.spans.last_id', '0')")
    assert checks.telemetry_pipeline(evidence(root, conn, now=T0 + 60)).status == "green"
    r = checks.telemetry_pipeline(evidence(root, conn, now=T0 + 3 * 3600))
    assert r.status == "red" and "1 span(s)" in r.detail and "memhealth export --once" in r.fix
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'export.spans.last_id'")
    assert checks.telemetry_pipeline(evidence(root, conn, now=T0 + 3 * 3600)).status == "green"


def test_an_exporter_configured_by_endpoint_that_never_ran_turns_red_once_spans_age(proj):
    root, conn = proj
    conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES ('t', 's', 'x', ?, ?)",
                 (int(T0 * 1e9), int(T0 * 1e9)))
    ev = evidence(root, conn, now=T0 + 3 * 3600)
    ev.cfg["telemetry"]["otlp_endpoint"] = "http://127.0.0.1:9"
    r = checks.telemetry_pipeline(ev)
    assert r.status == "red" and "never ran" in r.detail and "otlp_endpoint" in r.detail


# -- the gate --------------------------------------------------------------------------------

def _explodes(ev) -> CheckResult:
    raise RuntimeError("disk on fire")


def test_a_check_that_raises_becomes_red_with_a_fix_not_a_crash(proj):
    root, conn = proj
    results = gate.run_checks(evidence(root, conn), [("explodes", _explodes),
                                                     ("capture_queue", checks.capture_queue)])
    assert results[0].status == RED and results[0].detail == "check raised: RuntimeError: disk on fire"
    assert results[0].fix and results[1].status == "green"


def test_the_gate_counts_its_checks_and_records_rows_rollups_and_its_own_heartbeat(proj):
    root, conn = proj
    verdict = gate.run(evidence(root, conn))
    assert verdict.total == len(gate.CHECKS)
    assert verdict.headline() == f"MEMORY-HEALTH: {verdict.total - 1}/{verdict.total} GREEN (1 RED)"
    assert conn.execute("SELECT total, red, verdict FROM gate_runs").fetchall() == [(verdict.total, 1, "red")]
    (n,) = conn.execute("SELECT count(*) FROM gate_checks WHERE run_id = ?", (verdict.run_id,)).fetchone()
    assert n == verdict.total
    assert conn.execute("SELECT hook, outcome FROM heartbeats").fetchall() == [("gate", "ok")]
    assert conn.execute("SELECT value FROM rollups WHERE metric = 'memhealth_gate_runs_total' "
                        "AND labels = '{\"verdict\":\"red\"}'").fetchone() == (1.0,)
    assert conn.execute("SELECT value FROM rollups WHERE metric = 'memhealth_gate_check_status' "
                        "AND labels = '{\"check\":\"ingest_freshness\"}'").fetchone() == (2.0,)
    assert conn.execute("SELECT value FROM rollups WHERE metric = 'memhealth_embedding_state' "
                        "AND labels = '{\"state\":\"not_configured\"}'").fetchone() == (1.0,)
    names = [r[0] for r in conn.execute("SELECT name FROM spans ORDER BY id")]
    assert names[0] == "memhealth.gate" and "probe embedding_path" in names


def test_the_full_integrity_scans_run_once_a_day_and_parity_every_time(proj):
    root, conn = proj
    add_chunk(conn, 2)
    assert "quick_check, counts and FTS integrity-check ok" in checks.index_integrity(evidence(root, conn)).detail
    later = checks.index_integrity(evidence(root, conn, now=T0 + 3600))
    assert later.detail.startswith("full scans ok 60 min ago")
    assert "integrity-check ok" in checks.index_integrity(evidence(root, conn, now=T0 + 2 * DAY)).detail


def test_the_hook_deadline_comes_from_the_session_start_timeout_in_settings(proj):
    import time

    root, _conn = proj
    deadline = gate.hook_deadline(root, "session-start", time.time_ns() - 2_000_000_000)
    # `memhealth init` wires 30 s and 2 s are spent: at most 28 s are left (time only takes
    # away); the lower bound leaves seconds of slack and still excludes 600 s and 30 s
    assert 25.0 < deadline - time.monotonic() <= 28.0 + 0.01
