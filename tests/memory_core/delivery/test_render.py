"""The session-start memory block: pinned items with provenance, bounded, re-delivered after
compaction."""

from __future__ import annotations

from memory_core.delivery.render import ITEM_CHARS, MAX_LINES, session_render
from memory_core.store.db import connect, write
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


def _session_start_context(root, sid: str) -> str:
    import json

    run = run_hook("session-start", payload("SessionStart", root, session_id=sid, source="startup"), str(root))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_fresh_init_says_nothing_but_the_verdict(tmp_path):
    """The convention files init writes are empty templates: nothing in them earns a line in
    Claude's context (no chunk counts, no unfilled invariants, no link to an empty resume)."""
    from tests.conftest import run_cli

    assert run_cli("init", "--project", str(tmp_path)).returncode == 0
    assert run_cli("ingest", "--project", str(tmp_path)).returncode == 0
    context = _session_start_context(tmp_path, "fresh")
    assert len(context.splitlines()) == 1 and context.startswith("MEMORY-HEALTH: "), context


def test_the_resume_anchor_delivers_what_it_links_not_the_link(tmp_path):
    from tests.conftest import run_cli

    assert run_cli("init", "--project", str(tmp_path)).returncode == 0
    resume = tmp_path / ".memhealth" / "memory" / "resume.md"
    resume.write_text("---\nname: resume\ntype: resume\n---\n# Resume\n\n## Earlier arc\n\nShipped the "
                      "writer.\n\n## Current arc\n\nMoving checkpoints off the hot path; next: the "
                      "replay test.\n", encoding="utf-8")
    assert run_cli("ingest", "--project", str(tmp_path)).returncode == 0
    context = _session_start_context(tmp_path, "resume")
    assert "Resume here:\n- resume > Resume > Current arc (.memhealth/memory/resume.md:" in context, context
    assert "Moving checkpoints off the hot path; next: the replay test." in context
    assert "](resume.md)" not in context and "Shipped the writer" not in context
    # an invariant file that holds a rule and is pinned reaches Claude; the template did not
    inv = tmp_path / ".memhealth" / "memory" / "invariants.md"
    inv.write_text(inv.read_text(encoding="utf-8")  # a rule under the template: pinned by itself
                   + "\n- One writer per ledger: the queue serializes appends (see writer.py).\n",
                   encoding="utf-8")
    assert run_cli("ingest", "--project", str(tmp_path)).returncode == 0
    assert "One writer per ledger" in _session_start_context(tmp_path, "pinned")


def test_the_emptiness_check_reads_one_row_not_the_whole_store(tmp_path):
    """SessionStart asks whether memory is empty. A count(*) walked every page of chunks'
    smallest index on each session start (26 ms at 1M chunks): the check stops at one row."""
    from memory_core.delivery.render import ANY_CHUNK_SQL

    conn = connect(tmp_path / "memory.db")
    ops = [row[1] for row in conn.execute(f"EXPLAIN {ANY_CHUNK_SQL}")]
    assert "Count" not in ops and "AggStep" not in ops and "DecrJumpZero" in ops, ops  # LIMIT 1
    assert session_render(conn).startswith("memhealth: memory is empty")
    with write(conn):
        conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                     "content_hash, created_ns) VALUES ('docs', 'a.md', 1, 2, 'heading', 't', 'x', 'h', 0)")
    assert "memory is empty" not in session_render(conn)
    conn.close()


def test_a_pinned_decision_is_delivered_once_not_again_under_decisions(project):
    """The cue block delivers a pinned memory file whole; the render's Decisions section
    must not list the same file a second time in Claude's context."""
    from tests.conftest import run_cli

    memory = project / ".memhealth" / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "writer-queue.md").write_text(
        "---\nname: single writer queue\ntype: decision\npinned: true\n---\n"
        "All event appends go through the single writer queue in src/writer.py.\n")
    (memory / "snapshots.md").write_text(
        "---\nname: snapshot every 10,000 events\ntype: decision\n---\n"
        "Snapshots are taken every 10,000 events per stream.\n")
    assert run_cli("ingest", "memory", "--project", str(project)).returncode == 0
    text = _session_start_context(project, "pinned-once")
    assert text.count("memory/writer-queue.md") == 1, text  # the pinned block, once
    assert "snapshot every 10,000 events (.memhealth/memory/snapshots.md" in text  # an unpinned one still is
