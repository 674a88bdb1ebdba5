"""`memhealth ingest` through the real entry point."""

from __future__ import annotations

import json
import os
import shutil

from tests.conftest import FIXTURES, clean_env, run_cli


def env(tmp_path):
    # HOME without ~/.claude: "auto" transcripts finds nothing and says so in a note; not a
    # repository, so git history and the code index are off (each would say so in a note)
    return clean_env(HOME=str(tmp_path / "home"), MEMHEALTH_INGEST_GIT="false", MEMHEALTH_INGEST_CODE="")


def test_ingest_prints_a_summary_line_then_its_notes_when_stderr_is_not_a_terminal(project, tmp_path):
    (project / "README.md").write_text("# Project\n\nThe checkpoint guard lives here.\n", encoding="utf-8")
    proc = run_cli("ingest", "--project", str(project), env=env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("memhealth ingest: 1 of 1 files changed, +1 -0 chunks (docs +1), 0 errors")
    # the note is printed, not hidden behind "1 note (--json)"
    assert "(--json)" not in lines[0]
    assert len(lines) == 2 and lines[1].startswith("  note (transcript): no Claude Code transcript directory")
    assert proc.stderr == "", "no progress bar without a terminal"
    again = run_cli("ingest", "--project", str(project), env=env(tmp_path))
    assert again.stdout.startswith("memhealth ingest: 0 of 1 files changed, +0 -0 chunks")


def test_ingest_json_prints_the_report(project, tmp_path):
    tx = project / "transcripts"
    tx.mkdir()
    shutil.copy(os.path.join(FIXTURES, "transcripts", "ccl_edge_cases.jsonl"), tx / "s.jsonl")
    proc = run_cli("ingest", "transcripts", "--json", "--project", str(project),
                   env=dict(env(tmp_path), MEMHEALTH_INGEST_TRANSCRIPTS="transcripts"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert list(report["sources"]) == ["transcript"]
    assert report["sources"]["transcript"]["malformed"] == 7
    assert report["budget_exhausted"] is False
    assert report["vectors"]["state"] == "not_configured"


def test_ingest_exits_1_when_a_file_failed_and_names_the_count(project, tmp_path):
    (project / "bad.md").write_bytes(b"# Bad\n\xff\n")
    proc = run_cli("ingest", "docs", "--project", str(project), env=env(tmp_path))
    assert proc.returncode == 1
    assert "1 error" in proc.stdout


def test_ingest_rejects_an_unknown_source_with_exit_2(project, tmp_path):
    proc = run_cli("ingest", "wiki", "--project", str(project), env=env(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("memhealth ingest: unknown source 'wiki'; "
                                   "known: docs, memory, ledger, transcript, git, code")


def test_ingest_budget_flag_stops_the_run_and_says_so(project, tmp_path):
    for i in range(3):
        (project / f"d{i}.md").write_text(f"# D{i}\nbody\n", encoding="utf-8")
    proc = run_cli("ingest", "docs", "--budget-s", "0.000001", "--project", str(project),
                   env=env(tmp_path))
    assert proc.returncode == 0
    assert "budget of 1e-06 s exhausted, run again to continue" in proc.stdout


def test_ingest_has_help_text(tmp_path):
    proc = run_cli("ingest", "--help", env=env(tmp_path))
    assert proc.returncode == 0
    assert "--budget-s" in proc.stdout and "SOURCE" in proc.stdout


def test_ingest_draws_a_progress_bar_when_stderr_is_a_terminal(project, tmp_path):
    import pty
    import subprocess

    from tests.conftest import memhealth_cmd

    for i in range(3):
        (project / f"d{i}.md").write_text(f"# D{i}\nbody\n", encoding="utf-8")
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(memhealth_cmd() + ["ingest", "docs", "--project", str(project)],
                              stdout=subprocess.PIPE, stderr=slave, env=env(tmp_path), timeout=60)
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert b"docs" in drawn and b"3/3 files" in drawn
    assert proc.stdout.decode().startswith("memhealth ingest: 3 of 3 files changed")


def test_a_trace_gets_an_ingest_span_with_one_child_per_source(tmp_path):
    from memhealth.config import defaults
    from memory_core.ingest import run_ingest
    from memory_core.outbox.spans import Trace
    from memory_core.store.db import connect

    (tmp_path / "README.md").write_text("# R\ntext\n", encoding="utf-8")
    cfg = defaults()
    cfg["ingest"].update(transcripts=[], git=False)
    trace = Trace()
    run_ingest(connect(str(tmp_path / "m.db")), str(tmp_path), cfg, trace=trace)
    names = [s.name for s in trace.spans]
    assert names == ["ingest", "ingest docs", "ingest memory", "ingest ledger", "ingest transcript",
                     "ingest code"]
    root, docs = trace.spans[0], trace.spans[1]
    assert docs.parent_span_id == root.span_id
    assert docs.attributes["memhealth.ingest.chunks_added"] == 1
    assert all(s.end_ns is not None for s in trace.spans)


def test_ingest_with_embeddings_backfills_chunks_an_earlier_run_left_without_a_vector(
        project, tmp_path, cli, monkeypatch):
    """Chunks ingested before embeddings were configured have no vector: the vector phase is
    a backfill, so the next ingest embeds them (it used to say "vectors ok: 0 embedded" while
    the gate said RED vector_coverage)."""
    from tests.support.ollama_standin import OllamaStandin

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (project / "README.md").write_text("# Project\n\nThe checkpoint guard lives here.\n", encoding="utf-8")
    (project / "wal.md").write_text("# WAL\n\nThe checkpoint stalls under load.\n", encoding="utf-8")
    assert cli("ingest", "docs", "--project", project).returncode == 0  # BM25 only, no vectors
    with OllamaStandin("healthy", dim=8) as ollama:
        env = {"MEMHEALTH_EMBEDDING_URL": ollama.url, "MEMHEALTH_EMBEDDING_DIM": 8}
        as_text = cli("ingest", "docs", "--project", project, env=env)
        as_json = cli("ingest", "docs", "--json", "--project", project, env=env)
    assert as_text.returncode == as_json.returncode == 0
    text, data = as_text.stdout, json.loads(as_json.stdout)
    assert text.splitlines() == [text.strip()]
    assert "vectors ok: 2 embedded, 2/2 chunks have one" in text
    assert data["vectors"] == {"state": "ok", "embedded": 0, "pending": 0, "detail": "",
                               "backfill": "done", "with_vector": 2, "chunks": 2}


def test_ingest_against_a_dead_embedding_server_says_what_still_lacks_a_vector(
        project, tmp_path, cli, monkeypatch):
    from tests.support.ollama_standin import closed_url

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (project / "README.md").write_text("# Project\n\nThe checkpoint guard lives here.\n", encoding="utf-8")
    env = {"MEMHEALTH_EMBEDDING_URL": closed_url(), "MEMHEALTH_EMBEDDING_DIM": 8}
    proc = cli("ingest", "docs", "--project", project, env=env)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert "vectors degraded: 0 embedded, 1 pending, 0/1 chunks have one" in lines[0]
    assert lines[-1] == "  vectors: 1 chunk(s) have no vector; `memhealth embed` backfills them"
