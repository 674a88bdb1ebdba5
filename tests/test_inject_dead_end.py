"""DEAD-END blocks: a confirmed dead-end record re-proposed on build or decide
intent, its own per-session cap, `status: confirmed` read at ingest, and relevance measured
over the curated sources so a dead end does not fade as its re-proposals pile up in
transcripts. Records are written by memory_core.records.triage.render_record (the file `memhealth
triage confirm` writes) and ingested by the real `memhealth ingest`."""

from __future__ import annotations

import os

import pytest

from memhealth.config import load
from memhealth.errors import ConfigError
from memory_core.delivery import entries, inject
from memory_core.index import fts
from memory_core.ingest.memory import parse_memory
from memory_core.outbox.spans import Trace
from memory_core.records.triage import render_record
from memory_core.store.db import connect, write
from tests.conftest import run_cli

FILLER = "\n".join(f"## Topic {i}\n\nNotes on page {i}: tables, charts, colours and the layout of "
                   f"section {i}, with examples.\n" for i in range(60))
TRANSCRIPT = "/home/dev/.claude/projects/-srv-app/5f0c.jsonl"
STATEMENT = ("I tried running the WAL checkpoint inside append() and it was slower: "
             "every append stalled behind it.")
REPROPOSE = "Let's add a WAL checkpoint inside append() so the WAL never grows between compactor runs"


def item(n: int, kind: str, title: str, statement: str) -> dict:
    return {"id": n, "kind": kind, "title": title, "statement": statement, "transcript": TRANSCRIPT,
            "line": 40 + n, "session_id": "5f0c", "ts": "2026-11-30T21:04:11.000Z", "role": "assistant"}


DEAD = item(7, "dead_end", "WAL checkpoint inside append() was slower", STATEMENT)


def project(tmp_path, records: dict[str, str], config: str = "", docs: str = FILLER) -> str:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    if config:  # one more key under the [injection] table init wrote
        path = root / ".memhealth" / "config.toml"
        path.write_text(path.read_text(encoding="utf-8").replace("[injection]\n", f"[injection]\n{config}", 1),
                        encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(docs, encoding="utf-8")
    rec = root / ".memhealth" / "memory" / "records"
    rec.mkdir(parents=True)
    for name, text in records.items():
        (rec / name).write_text(text, encoding="utf-8")
    proc = run_cli("ingest", "--project", str(root), "docs", "memory")
    assert proc.returncode == 0, proc.stderr
    return str(root)


def decide(root: str, prompt: str, intent: str = "build", session: str | None = "s1"):
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        return inject.decide(conn, prompt, intent, load(os.path.join(root, ".memhealth"), environ={}),
                             session, Trace())
    finally:
        conn.close()


def test_ingest_keeps_a_records_status_and_provenance_in_its_attrs():
    text = render_record(DEAD, "2026-11-30T22:00:00Z")
    (piece,) = parse_memory(text, ".memhealth/memory/records/dead_end-7-wal.md")
    assert piece.kind == "dead_end"
    assert piece.attrs["status"] == "confirmed" and piece.attrs["recorded"] == "2026-11-30T22:00:00Z"
    assert piece.attrs["source"] == f"{TRANSCRIPT}:47 (session 5f0c, 2026-11-30T21:04:11.000Z, assistant)"
    # a memory that is not a record keeps no such keys, whatever its frontmatter says
    (note,) = parse_memory("---\nname: n\ntype: feedback\nstatus: confirmed\n---\nbody\n", "n.md")
    assert "status" not in (note.attrs or {})


@pytest.mark.parametrize("intent", ["build", "decision"])
def test_a_confirmed_dead_end_re_proposed_is_a_dead_end_block_with_the_statement_once(tmp_path, intent):
    root = project(tmp_path, {"dead_end-7-wal.md": render_record(DEAD, "2026-11-30T22:00:00Z")})
    r = decide(root, REPROPOSE, intent)
    assert r.outcome == "injected", r.detail
    lines = r.text.splitlines()
    head = [n for n, line in enumerate(lines) if line.startswith("DEAD-END: ")]
    assert len(head) == 1, r.text
    n = head[0]
    assert lines[n].startswith('DEAD-END: "WAL checkpoint inside append() was slower" was tried and ruled out — '
                               "from memory (memory, .memhealth/memory/records/dead_end-7-wal.md:1-"), lines[n]
    assert lines[n + 1] == f"  {STATEMENT}"
    assert lines[n + 2] == f"  said at: {TRANSCRIPT}:47 (session 5f0c, 2026-11-30T21:04:11.000Z, assistant)"
    assert r.text.count("every append stalled behind it") == 1, r.text
    assert "DO-NOT-REBUILD" not in r.text and "Decision lineage" not in r.text
    assert r.detail["items"][0]["block"] == "dead_end" and r.detail["dead_end"][0]["name"] == DEAD["title"]


def test_on_investigate_intent_a_dead_end_is_no_dead_end_block(tmp_path):
    """Asking how the checkpoint works proposes nothing: the record may come back as a
    record, never as "was tried and ruled out"."""
    root = project(tmp_path, {"dead_end-7-wal.md": render_record(DEAD, "2026-11-30T22:00:00Z")})
    r = decide(root, "How does the WAL checkpoint inside append() work?", "investigation")
    assert r.outcome == "injected", r.detail
    assert "DEAD-END" not in r.text and 'Dead-end record: "WAL checkpoint' in r.text, r.text


@pytest.mark.parametrize("status", ["pending", None])
def test_a_dead_end_without_status_confirmed_is_never_a_dead_end_block(tmp_path, status):
    text = render_record(DEAD, "2026-11-30T22:00:00Z").replace(
        "status: confirmed\n", f"status: {status}\n" if status else "")
    root = project(tmp_path, {"dead_end-7-wal.md": text})
    assert entries.entry_block("dead_end", {"status": status}) is None
    r = decide(root, REPROPOSE)
    assert r.outcome == "injected", r.detail  # still memory: a lineage-path record, labelled as one
    assert "DEAD-END" not in r.text and 'Dead-end record: "WAL checkpoint' in r.text, r.text


def test_a_confirmed_decision_record_stays_decision_lineage(tmp_path):
    decision = item(8, "decision", "Checkpoint the WAL in the compactor, not in append()",
                    "Decided: the compactor runs the WAL checkpoint between batches, never append().")
    root = project(tmp_path, {"decision-8.md": render_record(decision, "2026-11-30T22:00:00Z")})
    assert entries.entry_block("decision", {"status": "confirmed"}) is None
    assert not entries.dnr_eligible("decision", {"status": "confirmed"})
    r = decide(root, "Should we move the WAL checkpoint out of the compactor batches?", "decision")
    assert r.outcome == "injected", r.detail
    assert r.text.count('Decision lineage: "Checkpoint the WAL in the compactor') == 1, r.text
    assert "DEAD-END" not in r.text and "DO-NOT-REBUILD" not in r.text


def test_dead_end_blocks_have_their_own_per_session_cap(tmp_path):
    topics = [("WAL checkpoint inside append()", "WAL checkpoint inside append()"),
              ("mmap for the segment reader", "the segment reader through mmap"),
              ("bloom filter on tenant quotas", "a bloom filter on tenant quotas"),
              ("zstd dictionary for snapshots", "a zstd dictionary for snapshots")]
    records = {f"dead_end-{n}.md": render_record(item(n, "dead_end", title,
                                                      f"I tried {what} and it was slower; ruled out."),
                                                 "2026-11-30T22:00:00Z")
               for n, (title, what) in enumerate(topics, start=1)}
    root = project(tmp_path, records, config="dead_end_cap = 2\n")
    prompts = [f"Let's add {what} to speed it up" for _t, what in topics]
    got = [decide(root, p, session="cap") for p in prompts]
    assert [r.outcome for r in got] == ["injected", "injected", "capped", "capped"], [r.detail for r in got]
    assert all(r.text.startswith("[memhealth]") and "DEAD-END: " in r.text for r in got[:2])
    assert got[2].detail["reason"] == "per-session cap reached"
    # another session starts its own count; the DO-NOT-REBUILD cap is not spent by dead ends
    assert decide(root, prompts[3], session="other").outcome == "injected"
    assert load(None, environ={})["injection"]["dead_end_cap"] == 3


@pytest.mark.parametrize("value", ["-1", "1001", "\"three\""])
def test_dead_end_cap_is_validated_like_the_other_caps(tmp_path, value):
    (tmp_path / "config.toml").write_text(f"[injection]\ndead_end_cap = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load(str(tmp_path), environ={})
    assert "[injection].dead_end_cap" in str(info.value)


def test_a_dead_end_keeps_arriving_however_often_transcripts_repeat_it(tmp_path):
    """Each re-proposal is ingested as transcript chunks. Rarity is measured over the curated
    sources, so the dead end's words stay as rare as they were: the tenth re-proposal gets
    the same block as the first (on all chunks, "checkpoint" and "append" would be in more
    than a third of the store and below distinctive_idf)."""
    root = project(tmp_path, {"dead_end-7-wal.md": render_record(DEAD, "2026-11-30T22:00:00Z")})
    first = decide(root, REPROPOSE, session="p0")
    assert first.outcome == "injected" and not first.detail["small_corpus"], first.detail
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    with write(conn):
        for i in range(40):
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('transcript', ?, ?, ?, 'turn', 'user', ?, ?, 0)",
                         (f"t{i // 4}.jsonl", i, i, f"{REPROPOSE} (session {i})", f"t{i}"))
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    again = decide(root, REPROPOSE, session="p10")
    assert again.outcome == "injected" and "DEAD-END: " in again.text, again.detail
    assert again.detail["corpus"] == first.detail["corpus"] < total and again.detail["idf_over"] == "curated"
    assert (again.detail["idf_sum"], again.detail["max_idf"]) == (first.detail["idf_sum"], first.detail["max_idf"])
    # the same store measured on every chunk: the words the dead end needs are common now
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        everything = {t: fts.idf(total, fts.doc_freq(conn, t)) for t in ("checkpoint", "append")}
    finally:
        conn.close()
    assert max(everything.values()) < 3.0, everything
    assert again.detail["dead_end"][0]["matched"] >= 2


def test_under_fifty_curated_chunks_rarity_is_the_whole_indexs_and_a_named_dead_end_still_arrives(tmp_path):
    """A young memory (a few curated chunks) beside many transcript turns: rarity over so few
    chunks says little, so the whole index measures it, as before. The dead end is then
    still delivered when the prompt names it (most of its title's words)."""
    root = project(tmp_path, {"dead_end-7-wal.md": render_record(DEAD, "2026-11-30T22:00:00Z")},
                   docs="# Guide\n\nHow to run the service.\n")
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    with write(conn):
        for i in range(80):
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('transcript', ?, ?, ?, 'turn', 'user', ?, ?, 0)",
                         (f"t{i // 4}.jsonl", i, i, f"{REPROPOSE} (session {i})", f"t{i}"))
    conn.close()
    r = decide(root, REPROPOSE)
    assert r.detail["idf_over"] == "all" and not r.detail["small_corpus"] and r.detail["corpus"] > 80, r.detail
    assert r.outcome == "injected" and r.detail["dead_end"][0]["named"], r.detail
    assert 'DEAD-END: "WAL checkpoint inside append() was slower"' in r.text
