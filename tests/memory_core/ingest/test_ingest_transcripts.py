"""Transcript ingest over the real Claude Code fixtures (tests/fixtures/transcripts/)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from memhealth.config import defaults
from memory_core.ingest import META_TRANSCRIPT_DIR, run_ingest
from memory_core.ingest.transcripts import slugs
from memory_core.store.db import connect, write
from tests.conftest import FIXTURES

TRANSCRIPTS = os.path.join(FIXTURES, "transcripts")


def config(transcripts=("tx",)):
    cfg = defaults()
    cfg["ingest"].update(docs=[], memory=[], ledgers=[], transcripts=list(transcripts), git=False)
    return cfg


@pytest.fixture
def corpus(tmp_path):
    """A project whose transcript directory holds a copy of every fixture."""
    root = tmp_path / "proj"
    root.mkdir()
    tx = root / "tx"
    tx.mkdir()
    for name in sorted(os.listdir(TRANSCRIPTS)):
        if name.endswith(".jsonl"):
            shutil.copy(os.path.join(TRANSCRIPTS, name), tx / name)
    conn = connect(str(root / "memory.db"))
    yield root, conn
    conn.close()


def contents(conn, where: str = "1", params=()) -> list[str]:
    return [r[0] for r in conn.execute(
        f"SELECT content FROM chunks WHERE source = 'transcript' AND {where}", params)]


def file_chunks(conn, name: str) -> list[tuple]:
    return conn.execute(
        "SELECT line_start, kind, content FROM chunks WHERE path = ? ORDER BY line_start, id",
        (os.path.join("tx", name),)).fetchall()


# Every machine-generated user-turn shape present in the fixtures, as it opens the text.
MACHINE_SHAPES = [
    "<task-notification>",                       # mehmory_harness-noise
    "<local-command-stdout>",                    # spotter_tool_heavy, fasthooks, ccl_edge_cases
    "<local-command-caveat>",                    # spotter_tool_heavy (isMeta)
    "Caveat: The messages below were generated",  # fasthooks (untagged), ccl_edge_cases
    "<command-name>",                            # spotter_tool_heavy, fasthooks, ccl_edge_cases
    "<command-message>",                         # ccviewer, mehmory
    "[Request interrupted by user",              # spotter_short, spotter_tool_heavy
    "This session is being continued from a previous conversation",  # compaction summaries
    "Your task is to create a detailed summary",  # the summarizer's prompt (spotter acompact)
    "agentId: showcol",                          # subagent completion callbacks
    "<usage>subagent_tokens",
    "<system-reminder>",                         # reminder-only turns and inline reminders
    "<analysis>",                                # the summarizer's reply
    "Split complex tasks into independent subtasks",  # ccviewer's expanded slash command (isMeta)
]


def test_machine_turns_from_real_transcripts_never_become_chunks(corpus):
    root, conn = corpus
    report = run_ingest(conn, str(root), config())
    assert report.errors == 0
    texts = contents(conn)
    assert texts, "typed prompts and replies must be ingested"
    for shape in MACHINE_SHAPES:
        leaked = [t[:80] for t in texts if shape in t]
        assert not leaked, f"{shape!r} leaked into memory: {leaked}"
    assert report.sources["transcript"].filtered > 0


def test_typed_prompts_and_replies_are_kept_with_their_line(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    short = file_chunks(conn, "spotter_short.jsonl")
    assert (4, "prompt", "mix phx.server doesnt seem to start") in short
    assert any(kind == "reply" and "project structure" in text for _, kind, text in short)
    noise = [text for _, kind, text in file_chunks(conn, "mehmory_harness-noise.jsonl")]
    assert noise[:3] == ["A", "Ship it", "push direct to main"]


def test_a_system_reminder_inside_a_typed_prompt_is_cut_and_the_typed_text_kept(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    rows = file_chunks(conn, "ccl_system_reminder.jsonl")
    prompts = [text for _, kind, text in rows if kind == "prompt"]
    assert len(prompts) == 1, "the reminder-only turn must be filtered"
    assert prompts[0].startswith("Please review the change.")
    assert "The tail content still renders as user text." in prompts[0]
    assert "cwd changed" not in prompts[0]


def test_compaction_summaries_are_filtered_and_turns_after_compaction_kept(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    dag = [text for _, _, text in file_chunks(conn, "ccl_dag_compact_after_rewind.jsonl")]
    assert "After compaction" in dag and "Final answer" in dag
    assert not file_chunks(conn, "spotter_agent-acompact-70d8e7.jsonl"), \
        "the summarizer sidechain is machine text from end to end"


def test_subagent_text_is_kept_as_subagent_and_its_task_prompt_filtered(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    agent = file_chunks(conn, "spotter_agent-a7be2f0.jsonl")
    assert agent and {kind for _, kind, _ in agent} == {"subagent"}
    assert not any(text.startswith("I need to understand:") for _, _, text in agent)
    inline = file_chunks(conn, "ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    assert any(kind == "subagent" and "Package.json Analysis Summary" in text
               for _, kind, text in inline)
    assert not any(text.startswith("Examine the package.json") for _, _, text in inline)


def test_malformed_lines_in_edge_cases_are_skipped_and_counted(corpus):
    root, conn = corpus
    report = run_ingest(conn, str(root), config())
    # lines 10, 11, 13, 14, 15, 16 and 18 (1-based): a misspelled `contenst`, `message` as a
    # string, "massive error", {"silly": "this"}, 42, [1], a bare string in a content list
    edge = conn.execute("SELECT state FROM watermarks WHERE path = ?",
                        (os.path.join("tx", "ccl_edge_cases.jsonl"),)).fetchone()
    assert json.loads(edge[0])["malformed"] == 7
    assert report.sources["transcript"].malformed == 7
    texts = [text for _, _, text in file_chunks(conn, "ccl_edge_cases.jsonl")]
    assert any("中文" in t and "🎉" in t for t in texts)


def test_a_last_line_without_newline_is_not_consumed_until_complete(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    path = root / "tx" / "ccl_edge_cases.jsonl"
    size = path.stat().st_size
    (offset,) = conn.execute("SELECT offset FROM watermarks WHERE path = ?",
                             (os.path.join("tx", "ccl_edge_cases.jsonl"),)).fetchone()
    last = path.read_bytes().rsplit(b"\n", 1)[1]
    assert offset == size - len(last), "the unterminated summary record stays unread"
    with open(path, "ab") as fh:
        fh.write(b"\n")
    report = run_ingest(conn, str(root), config())
    (offset,) = conn.execute("SELECT offset FROM watermarks WHERE path = ?",
                             (os.path.join("tx", "ccl_edge_cases.jsonl"),)).fetchone()
    assert offset == size + 1
    assert report.chunks_added == 0, "a summary record is not memory"


def test_a_second_run_ingests_nothing(corpus):
    root, conn = corpus
    first = run_ingest(conn, str(root), config())
    count = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    second = run_ingest(conn, str(root), config())
    assert first.chunks_added == count > 0
    assert second.chunks_added == 0 and second.files_changed == 0
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == count


def test_appending_one_line_ingests_exactly_that_line(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    before = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    record = {"type": "user", "uuid": "u-new", "sessionId": "s", "isSidechain": False,
              "timestamp": "2026-03-01T10:00:00Z",
              "message": {"role": "user", "content": "why does the checkpoint stall under load"}}
    path = root / "tx" / "spotter_short.jsonl"
    lines_before = path.read_bytes().count(b"\n")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
    report = run_ingest(conn, str(root), config())
    assert report.chunks_added == 1 and report.files_changed == 1
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == before + 1
    row = conn.execute("SELECT line_start, kind, content FROM chunks ORDER BY id DESC LIMIT 1").fetchone()
    assert row == (lines_before + 1, "prompt", "why does the checkpoint stall under load")


def test_a_partial_record_is_read_once_its_newline_arrives(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    line = json.dumps({"type": "user", "message": {"role": "user", "content": "half written prompt"}})
    path = root / "tx" / "spotter_short.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line[:20])
    assert run_ingest(conn, str(root), config()).chunks_added == 0
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line[20:] + "\n")
    assert run_ingest(conn, str(root), config()).chunks_added == 1
    assert contents(conn, "content = ?", ("half written prompt",))


def test_a_truncated_transcript_is_reread_from_the_start(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    path = root / "tx" / "spotter_short.jsonl"
    keep = path.read_bytes().split(b"\n")[:4]
    path.write_bytes(b"\n".join(keep) + b"\n")
    report = run_ingest(conn, str(root), config())
    assert report.sources["transcript"].chunks_removed > 0
    assert [k for _, k, _ in file_chunks(conn, "spotter_short.jsonl")] == ["prompt"]


def test_auto_finds_the_transcript_dir_recorded_by_hooks(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    tx = tmp_path / "elsewhere" / "-Some-Case-Kept"
    tx.mkdir(parents=True)
    shutil.copy(os.path.join(TRANSCRIPTS, "spotter_short.jsonl"), tx / "s1.jsonl")
    conn = connect(str(root / "memory.db"))
    with write(conn):
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (META_TRANSCRIPT_DIR, str(tx)))
    report = run_ingest(conn, str(root), config(["auto"]))
    assert report.sources["transcript"].files_seen == 1
    assert report.sources["transcript"].chunks_added > 0


def test_auto_derives_the_case_preserving_slug_under_claude_projects(tmp_path, monkeypatch):
    root = tmp_path / "My.Project"
    root.mkdir()
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    slug = slugs(str(root))[0]
    assert slug.startswith("-tmp-") and slug.endswith("-My-Project"), slug
    sub = home / ".claude" / "projects" / slug / "sess-1" / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(os.path.join(TRANSCRIPTS, "spotter_short.jsonl"), sub.parent.parent / "sess-1.jsonl")
    shutil.copy(os.path.join(TRANSCRIPTS, "spotter_agent-a7be2f0.jsonl"), sub / "agent-a7be2f0.jsonl")
    conn = connect(str(root / "memory.db"))
    report = run_ingest(conn, str(root), config(["auto"]))
    assert report.sources["transcript"].files_seen == 2


def test_no_transcript_directory_is_a_note_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    conn = connect(str(tmp_path / "memory.db"))
    report = run_ingest(conn, str(tmp_path), config(["auto"]))
    assert report.errors == 0
    assert "no Claude Code transcript directory" in report.sources["transcript"].notes[0]


def test_a_deleted_transcript_keeps_its_chunks(corpus):
    root, conn = corpus
    run_ingest(conn, str(root), config())
    before = len(file_chunks(conn, "spotter_short.jsonl"))
    os.unlink(root / "tx" / "spotter_short.jsonl")
    run_ingest(conn, str(root), config())
    assert len(file_chunks(conn, "spotter_short.jsonl")) == before > 0


def test_a_prompt_pasted_with_a_huge_image_is_kept_and_an_absurd_line_skipped(tmp_path, monkeypatch):
    from memory_core.ingest import appendfile

    monkeypatch.setattr(appendfile, "STEP_BYTES", 1024)
    monkeypatch.setattr(appendfile, "MAX_LINE_BYTES", 64 * 1024)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "A" * 20_000}}
    pasted = {"type": "user", "message": {"role": "user", "content": [
        image, {"type": "text", "text": "the chart in this screenshot is wrong"}]}}
    absurd = {"type": "user", "message": {"role": "user", "content": [
        {**image, "source": {**image["source"], "data": "B" * 100_000}},
        {"type": "text", "text": "never read"}]}}
    typed = {"type": "user", "message": {"role": "user", "content": "after the images"}}
    tx = tmp_path / "tx"
    tx.mkdir()
    (tx / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (pasted, absurd, typed)),
                                encoding="utf-8")
    conn = connect(str(tmp_path / "memory.db"))
    report = run_ingest(conn, str(tmp_path), config())
    got = conn.execute("SELECT line_start, content FROM chunks ORDER BY line_start").fetchall()
    assert got == [(1, "the chart in this screenshot is wrong"), (3, "after the images")]
    assert report.sources["transcript"].malformed == 1


def test_a_transcript_the_real_cli_wrote_yields_only_typed_prompts_and_replies(tmp_path):
    """tests/fixtures/payloads/transcript.jsonl was written by Claude Code 2.1.332 in the
    e2e suite (tests/e2e/test_full_session.py): `attachment` lines (each hook's stdout,
    hook_additional_context), `queue-operation` lines repeating the prompt, `system`
    stop-hook summaries. Only the user's typed prompts and the assistant's text may become
    memory, each chunk on a user/assistant line."""
    root = tmp_path / "proj"
    (root / "tx").mkdir(parents=True)
    source = os.path.join(FIXTURES, "payloads", "transcript.jsonl")
    shutil.copy(source, root / "tx" / "session.jsonl")
    with open(source, encoding="utf-8") as fh:
        records = {n: json.loads(line) for n, line in enumerate(fh, start=1)}
    kinds = {r["type"] for r in records.values()}
    assert {"attachment", "queue-operation", "system", "user", "assistant"} <= kinds
    hook_output = [r["attachment"] for r in records.values() if r["type"] == "attachment"
                   and r["attachment"]["type"] in ("hook_success", "hook_additional_context")]
    assert hook_output, "the fixture must hold hook output to test against"
    conn = connect(str(root / "memory.db"))
    try:
        report = run_ingest(conn, str(root), config())
        assert report.errors == 0
        chunks = file_chunks(conn, "session.jsonl")
    finally:
        conn.close()
    assert {records[line]["type"] for line, _kind, _text in chunks} == {"user", "assistant"}
    texts = "\n".join(text for _, _, text in chunks)
    for marker in ("MEMORY-HEALTH", "hookSpecificOutput", "memhealth memory:", "Pinned (invariants)"):
        assert marker not in texts, marker
    prompts = [text for _, kind, text in chunks if kind == "prompt"]
    queued = [r["content"] for r in records.values() if r["type"] == "queue-operation" and r.get("content")]
    assert prompts == [q for q in queued if q != "/compact"], (prompts, queued)
    assert any(kind == "reply" and "batches appends" in text for _, kind, text in chunks)
