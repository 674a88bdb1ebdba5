"""Docs and memory files: heading chunks, watermarks, replacement, failures, the budget."""

from __future__ import annotations

import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memhealth.config import defaults
from memory_core.ingest import run_ingest
from memory_core.ingest.chunking import MAX_CHARS, markdown_chunks
from memory_core.store.db import connect

OLD = 1_600_000_000_000_000_000  # 2020-09-13: far from "now", so never racy


def config(**ingest):
    cfg = defaults()
    cfg["ingest"].update(docs=["docs", "*.md"], memory=["memory"], ledgers=[], transcripts=[],
                         git=False)
    cfg["ingest"].update(ingest)
    return cfg


def write(path, text, mtime_ns=None, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode, encoding=None if "b" in mode else "utf-8") as fh:
        fh.write(text)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def chunks(conn, path):
    return conn.execute("SELECT line_start, line_end, title, content FROM chunks WHERE path = ? "
                        "ORDER BY line_start, id", (path,)).fetchall()


def open_store(tmp_path):
    return connect(str(tmp_path / "memory.db"))


GUIDE = """# Guide

Intro paragraph.

## Install

Run make.

```sh
# this is a shell comment, not a heading
make install
```

### From source

Clone it.

## Empty

# Usage
Use it.
"""


def test_markdown_is_chunked_by_heading_with_line_ranges_and_heading_path_titles():
    pieces = markdown_chunks(GUIDE, fallback_title="guide.md")
    got = [(p.line_start, p.line_end, p.title) for p in pieces]
    assert got == [(1, 3, "Guide"), (5, 12, "Guide > Install"),
                   (14, 16, "Guide > Install > From source"), (20, 21, "Usage")]
    assert "make install" in pieces[1].content, "a heading inside fenced code is not a heading"


def test_text_before_the_first_heading_is_titled_with_the_file_name():
    pieces = markdown_chunks("plain words\n\n# Later\nmore\n", fallback_title="notes.md")
    assert [(p.title, p.line_start, p.line_end) for p in pieces] == [
        ("notes.md", 1, 1), ("Later", 3, 4)]


def test_a_large_section_is_split_into_bounded_pieces_with_contiguous_line_ranges():
    paragraphs = [f"paragraph {i} " + "word " * 60 for i in range(80)]
    text = "# Big\n\n" + "\n\n".join(paragraphs) + "\n" + "x" * (MAX_CHARS * 2 + 5) + "\n"
    pieces = markdown_chunks(text, fallback_title="big.md")
    assert len(pieces) > 5
    assert all(len(p.content) <= MAX_CHARS for p in pieces)
    assert all(p.title == "Big" for p in pieces)
    starts = [p.line_start for p in pieces]
    assert starts == sorted(starts)
    lines = text.split("\n")
    for p in pieces[:-3]:  # whole-line pieces: the content is exactly those lines
        assert p.content == "\n".join(lines[p.line_start - 1:p.line_end])
    long_line = len(lines) - 1
    assert [p.line_start for p in pieces[-3:]] == [long_line] * 3


def test_docs_ingest_stores_heading_chunks_with_their_lines(tmp_path):
    write(tmp_path / "docs" / "guide.md", GUIDE)
    conn = open_store(tmp_path)
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["docs"].chunks_added == 4
    rows = chunks(conn, os.path.join("docs", "guide.md"))
    assert [(r[0], r[1], r[2]) for r in rows][:2] == [(1, 3, "Guide"), (5, 12, "Guide > Install")]
    weight, kind = conn.execute("SELECT DISTINCT signal_weight, kind FROM chunks").fetchone()
    assert (weight, kind) == (10.0, "section")


def test_a_changed_doc_replaces_its_chunks(tmp_path):
    path = tmp_path / "docs" / "a.md"
    write(path, "# One\nfirst version\n\n# Two\nkept\n", OLD)
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    write(path, "# One\nsecond version, longer\n\n# Two\nkept\n", OLD + 10)
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["docs"].chunks_removed == 2 and report.sources["docs"].chunks_added == 2
    texts = [r[3] for r in chunks(conn, os.path.join("docs", "a.md"))]
    assert texts == ["# One\nsecond version, longer", "# Two\nkept"]
    hits = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'first'").fetchone()[0]
    assert hits == 0, "the full-text index forgot the old version"


def test_a_deleted_doc_loses_its_chunks(tmp_path):
    write(tmp_path / "docs" / "a.md", "# A\ntext\n")
    write(tmp_path / "docs" / "b.md", "# B\ntext\n")
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    os.unlink(tmp_path / "docs" / "a.md")
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["docs"].chunks_removed == 1
    assert [r[0] for r in conn.execute("SELECT DISTINCT path FROM chunks")] == [os.path.join("docs", "b.md")]


def test_equal_mtime_files_at_the_boundary_are_not_skipped(tmp_path):
    write(tmp_path / "docs" / "a.md", "# A\nalpha\n", OLD)
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    # a second file lands with exactly the high-water mtime (same second, coarse clocks)
    write(tmp_path / "docs" / "b.md", "# B\nbravo\n", OLD)
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["docs"].files_changed == 1
    assert chunks(conn, os.path.join("docs", "b.md"))
    # and a file copied in with an older mtime (cp -p, tar) is not skipped either
    write(tmp_path / "docs" / "c.md", "# C\ncharlie\n", OLD - 10**12)
    assert run_ingest(conn, str(tmp_path), config()).sources["docs"].files_changed == 1


def test_an_unchanged_corpus_is_not_read_again(tmp_path):
    path = tmp_path / "docs" / "a.md"
    write(path, "# A\nalpha\n", OLD)
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    # same size, same mtime, other bytes: only a read could notice, and none happens
    write(path, "# A\nALPHA\n", OLD)
    report = run_ingest(conn, str(tmp_path), config())
    assert report.files_changed == 0
    assert chunks(conn, os.path.join("docs", "a.md"))[0][3] == "# A\nalpha"


def test_a_racy_file_is_rehashed_even_when_its_stat_matches(tmp_path):
    path = tmp_path / "docs" / "a.md"
    write(path, "# A\nalpha\n")  # mtime = now: written within the racy window of our read
    mtime = os.stat(path).st_mtime_ns
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    write(path, "# A\nALPHA\n", mtime)  # same size, same mtime, new content
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["docs"].files_changed == 1
    assert chunks(conn, os.path.join("docs", "a.md"))[0][3] == "# A\nALPHA"


def test_a_touched_but_identical_doc_keeps_its_chunks(tmp_path):
    path = tmp_path / "docs" / "a.md"
    write(path, "# A\nalpha\n", OLD)
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks")]
    os.utime(path, ns=(OLD + 10**9, OLD + 10**9))
    report = run_ingest(conn, str(tmp_path), config())
    assert report.files_changed == 0 and report.chunks_removed == 0
    assert [r[0] for r in conn.execute("SELECT id FROM chunks")] == ids


def test_a_failing_file_is_logged_and_retried_next_run(tmp_path):
    bad = tmp_path / "docs" / "bad.md"
    write(bad, b"# Bad\ncaf\xe9 latin-1 bytes\n", mode="wb")
    write(tmp_path / "docs" / "good.md", "# Good\nfine\n")
    conn = open_store(tmp_path)
    first = run_ingest(conn, str(tmp_path), config())
    assert first.errors == 1 and first.sources["docs"].chunks_added == 1
    log = conn.execute("SELECT source, path, outcome, reason, detail FROM ingest_log "
                       "WHERE outcome = 'error'").fetchall()
    assert log == [("docs", os.path.join("docs", "bad.md"), "error", "decode",
                    "not UTF-8 at byte 9: invalid continuation byte")]
    assert conn.execute("SELECT count(*) FROM watermarks WHERE path = ?",
                        (os.path.join("docs", "bad.md"),)).fetchone()[0] == 0
    second = run_ingest(conn, str(tmp_path), config())
    assert second.errors == 1, "retried, not skipped"
    write(bad, "# Bad\ncafé now UTF-8\n")
    third = run_ingest(conn, str(tmp_path), config())
    assert third.errors == 0 and third.sources["docs"].chunks_added == 1
    assert chunks(conn, os.path.join("docs", "bad.md"))[0][3] == "# Bad\ncafé now UTF-8"


def test_the_budget_stops_a_run_and_the_next_run_resumes(tmp_path):
    for i in range(5):
        write(tmp_path / "docs" / f"d{i}.md", f"# Doc {i}\nbody {i}\n")
    conn = open_store(tmp_path)
    first = run_ingest(conn, str(tmp_path), config(), budget_s=0)
    assert first.budget_exhausted
    assert first.sources["docs"].files_changed == 1, "the first file always makes progress"
    row = conn.execute("SELECT source, outcome FROM ingest_log WHERE outcome = 'budget'").fetchone()
    assert row == ("docs", "budget")
    second = run_ingest(conn, str(tmp_path), config(), budget_s=0)
    assert second.sources["docs"].files_changed == 1
    rest = run_ingest(conn, str(tmp_path), config())
    assert not rest.budget_exhausted and rest.sources["docs"].files_changed == 3
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 5


MEMORY = """---
name: wal-checkpoint-stall
description: checkpoints stall while a long reader holds the WAL
type: invariant
---
Never hold a read transaction across a network call.

## Why
The 2026-02 outage.
"""


def test_memory_frontmatter_type_becomes_the_kind_with_memory_weight(tmp_path):
    write(tmp_path / "memory" / "wal.md", MEMORY)
    write(tmp_path / "memory" / "plain.md", "no frontmatter here\n")
    conn = open_store(tmp_path)
    report = run_ingest(conn, str(tmp_path), config())
    assert report.sources["memory"].chunks_added == 3
    assert report.sources["docs"].files_seen == 0, "memory files are not also docs"
    rows = conn.execute("SELECT line_start, line_end, kind, title, content, signal_weight, attrs "
                        "FROM chunks WHERE path = ? ORDER BY line_start",
                        (os.path.join("memory", "wal.md"),)).fetchall()
    assert [(r[0], r[1], r[2], r[3], r[5]) for r in rows] == [
        (1, 6, "invariant", "wal-checkpoint-stall", 40.0),
        (8, 9, "invariant", "wal-checkpoint-stall > Why", 40.0)]
    assert rows[0][4].startswith("checkpoints stall while a long reader holds the WAL")
    assert '"type":"invariant"' in rows[0][6]
    (kind,) = conn.execute("SELECT kind FROM chunks WHERE path = ?",
                           (os.path.join("memory", "plain.md"),)).fetchone()
    assert kind == "memory"


def test_control_characters_never_reach_the_store(tmp_path):
    write(tmp_path / "docs" / "ctl.md", "# Ti\x00tle\nbo\x00dy \x1b[31mred\x1b[0m\n")
    conn = open_store(tmp_path)
    run_ingest(conn, str(tmp_path), config())
    title, content = conn.execute("SELECT title, content FROM chunks").fetchone()
    assert "\x00" not in title + content and "\x1b" not in content
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'red'").fetchone()[0] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000))
def test_arbitrary_unicode_documents_never_raise_in_ingest(text):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "docs", "any.md")
        os.makedirs(os.path.dirname(path))
        # surrogatepass: lone surrogates become invalid UTF-8 on disk, the decode-failure path
        with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as fh:
            fh.write(text)
        conn = connect(os.path.join(tmp, "memory.db"))
        try:
            report = run_ingest(conn, tmp, config())
            stored = conn.execute("SELECT line_start, line_end, content FROM chunks").fetchall()
        finally:
            conn.close()
        # exactly the files that are not valid UTF-8 (a lone surrogate) fail, and nothing else
        assert report.errors == (1 if any(0xD800 <= ord(c) <= 0xDFFF for c in text) else 0)
        n_lines = text.count("\n") + 1
        for start, end, content in stored:
            assert 1 <= start <= end <= n_lines
            assert content.strip() and len(content) <= MAX_CHARS
