"""Append-only ledgers: byte offsets, complete lines, truncation and rotation, failures."""

from __future__ import annotations

import json
import os

from memhealth.config import defaults
from memory_core.ingest import run_ingest
from memory_core.store.db import connect


def config(ledgers=("ops/decisions.jsonl",)):
    cfg = defaults()
    cfg["ingest"].update(docs=[], memory=[], ledgers=list(ledgers), transcripts=[], git=False)
    return cfg


def entries(conn):
    return conn.execute("SELECT line_start, kind, title, content, signal_weight FROM chunks "
                        "WHERE source = 'ledger' ORDER BY line_start, id").fetchall()


def setup(tmp_path, lines: list[str]):
    path = tmp_path / "ops" / "decisions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path, connect(str(tmp_path / "memory.db"))


def test_ledger_lines_become_chunks_with_ledger_weight_and_rendered_json(tmp_path):
    path, conn = setup(tmp_path, [
        json.dumps({"type": "decision", "title": "Keep SQLite", "why": "one file per project"}),
        "",
        "- 2026-03-01 plain text entry about the WAL",
    ])
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["ledger"].chunks_added == 2
    assert entries(conn) == [
        (1, "decision", "Keep SQLite", "type: decision\ntitle: Keep SQLite\nwhy: one file per project", 30.0),
        (3, "entry", "decisions.jsonl", "- 2026-03-01 plain text entry about the WAL", 30.0)]


def test_appending_a_line_ingests_only_that_line(tmp_path):
    path, conn = setup(tmp_path, ["first entry", "second entry"])
    run_ingest(conn, str(tmp_path), config())
    assert run_ingest(conn, str(tmp_path), config()).chunks_added == 0
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("third entry\npartial without newline")
    report = run_ingest(conn, str(tmp_path), config())
    assert report.chunks_added == 1
    assert [r[:1] + r[3:4] for r in entries(conn)][-1] == (3, "third entry")


def test_a_truncated_ledger_is_reread_from_zero(tmp_path):
    path, conn = setup(tmp_path, ["one", "two", "three"])
    run_ingest(conn, str(tmp_path), config())
    path.write_text("fresh\n", encoding="utf-8")
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["ledger"].chunks_removed == 3
    assert [r[3] for r in entries(conn)] == ["fresh"]


def test_a_rotated_ledger_that_grew_past_the_old_offset_is_reread(tmp_path):
    path, conn = setup(tmp_path, ["old one", "old two"])
    run_ingest(conn, str(tmp_path), config())
    rotated = tmp_path / "ops" / "new.jsonl"
    rotated.write_text("".join(f"new entry {i}\n" for i in range(10)), encoding="utf-8")
    os.replace(rotated, path)  # logrotate-style: another inode, longer than the old offset
    run_ingest(conn, str(tmp_path), config())
    assert [r[3] for r in entries(conn)] == [f"new entry {i}" for i in range(10)]


def test_a_line_that_is_not_utf8_is_skipped_and_counted(tmp_path):
    path, conn = setup(tmp_path, ["good line"])
    with open(path, "ab") as fh:
        fh.write(b"bad \xff\xfe line\nanother good line\n")
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["ledger"].malformed == 1
    assert [r[0] for r in entries(conn)] == [1, 3]


def test_a_directory_where_a_ledger_is_expected_is_logged_and_retried_next_run(tmp_path):
    target = tmp_path / "ops" / "decisions.jsonl"
    target.mkdir(parents=True)
    conn = connect(str(tmp_path / "memory.db"))
    first = run_ingest(conn, str(tmp_path), config())
    assert first.errors == 1
    second = run_ingest(conn, str(tmp_path), config())
    assert second.errors == 1, "a failed file is retried, never skipped for good"
    log = conn.execute("SELECT source, path, reason, detail FROM ingest_log WHERE outcome = 'error'").fetchall()
    assert len(log) == 2
    assert log[0][:3] == ("ledger", os.path.join("ops", "decisions.jsonl"), "io")
    assert "IsADirectoryError" in log[0][3]
    target.rmdir()
    target.write_text("now a file\n", encoding="utf-8")
    third = run_ingest(conn, str(tmp_path), config())
    assert third.errors == 0 and [r[3] for r in entries(conn)] == ["now a file"]


def test_a_large_ledger_resumes_across_budgeted_runs_without_duplicates(tmp_path):
    from memory_core.ingest import appendfile

    lines = [f"entry number {i} " + "pad " * 30 for i in range(400)]
    path, conn = setup(tmp_path, lines)
    step = appendfile.STEP_BYTES
    appendfile.STEP_BYTES = 4096  # several steps per file, so the budget can fall between them
    try:
        first = run_ingest(conn, str(tmp_path), config(), budget_s=0)
        assert first.budget_exhausted and 0 < first.chunks_added < 400
        runs = 1
        while run_ingest(conn, str(tmp_path), config(), budget_s=0).budget_exhausted:
            runs += 1
            assert runs < 200
    finally:
        appendfile.STEP_BYTES = step
    got = [r[0] for r in entries(conn)]
    assert got == list(range(1, 401))
