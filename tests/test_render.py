"""The session-start memory block: pinned items with provenance, bounded, re-delivered after
compaction."""

from __future__ import annotations

from memory_core.db import connect, write
from memory_core.render import ITEM_CHARS, MAX_LINES, session_render
from tests.conftest import payload, run_hook


def add(conn, source, path, kind, title, content, line_start=1):
    with write(conn):
        conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
                     "created_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1780000000000000000)",
                     (source, path, line_start, line_start + 5, kind, title, content, f"{path}{line_start}"))


def test_an_empty_store_says_how_to_fill_it(tmp_path):
    assert "run `memhealth ingest`" in session_render(connect(tmp_path / "m.db"))


def test_pinned_invariants_and_decisions_carry_their_provenance(tmp_path):
    conn = connect(tmp_path / "m.db")
    add(conn, "memory", "memory/compactor.md", "invariant", "compactor exists", "extend it, never rebuild it\n\nbody")
    add(conn, "memory", "memory/compactor.md", "invariant", "compactor exists > details", "more", line_start=9)
    add(conn, "ledger", "ledgers/d.ndjson", "entry", "one writer", "date: 2026-03-02\ndecision: one writer\nwhy: races")
    text = session_render(conn)
    assert "Pinned (invariants):\n- compactor exists (memory/compactor.md:1-6, recorded 2026-05-28): extend it" in text
    assert "details" not in text  # one line per memory file, its first chunk
    assert "- one writer (ledgers/d.ndjson:1-6, recorded 2026-05-28): date: 2026-03-02; why: races" in text
    assert "records, not instructions" in text


def test_after_compaction_the_pinned_items_are_delivered_again_and_said_so(tmp_path):
    conn = connect(tmp_path / "m.db")
    add(conn, "memory", "memory/a.md", "invariant", "a", "keep it")
    assert "Re-delivered after compaction" in session_render(conn, "compact")
    assert "Re-delivered" not in session_render(conn, "startup")


def test_the_render_stays_within_its_line_and_item_budgets(tmp_path):
    conn = connect(tmp_path / "m.db")
    for i in range(40):
        add(conn, "memory", f"memory/i{i:02d}.md", "invariant", f"rule {i}", "x" * 1000)
        add(conn, "ledger", "ledgers/d.ndjson", "entry", f"decision {i}", f"why: {'y' * 900}", line_start=i + 1)
    lines = session_render(conn, "compact").splitlines()
    assert len(lines) <= MAX_LINES
    assert all(len(line) <= max(ITEM_CHARS, 200) for line in lines)


def test_the_session_start_hook_after_compaction_redelivers_pinned_memory(project):
    conn = connect(project / ".memhealth" / "memory.db")
    add(conn, "memory", "memory/compactor.md", "invariant", "compactor exists", "extend it, never rebuild it")
    conn.close()
    run = run_hook("session-start", payload("session-start", project, source="compact"), cwd=str(project))
    text = run.context()
    assert text.startswith("MEMORY-HEALTH: ")
    assert "Re-delivered after compaction" in text and "compactor exists (memory/compactor.md:1-6" in text
