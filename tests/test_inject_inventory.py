"""What may be DO-NOT-REBUILD: subsystem inventory entries and confirmed records, never a doc
or changelog section, never the memory index. Stores are built by the real `memhealth ingest`."""

from __future__ import annotations

import json

import pytest

from memhealth.config import load
from memory_core.delivery import inject
from memory_core.delivery.entries import dnr_eligible
from memory_core.delivery.render import session_render
from memory_core.ingest.memory import parse_memory
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, write
from tests.conftest import payload, rows, run_cli, run_hook

CHANGELOG = """# Changelog

## 0.21.0 (15th November, 2021)

### Added

* The command-line client will now display connection information when `-v/--verbose` is used.
* The command-line client will now display server certificate information when `-v/--verbose` is used.

### Removed

* Curio support is no longer currently included.

## 0.20.0 (13th October, 2021)

### Added

* Added the `httpx` command-line client.
"""

INDEX = """# Memory index

- [command-line client](cli.md) — the CLI exists, with --verbose
- [retry policy](retries.md) — one place for retries

## ⏯ LATEST

Reviewing the SSL deprecations; next: the migration note.
"""

CLI = """---
name: command-line client
type: subsystem
path: httpx/_main.py
aliases: cli
description: the httpx command-line client; -v/--verbose prints connection details
---
The `httpx` command-line client exists since 0.20.0. Extend its options, never write a second CLI.
"""

SUBSYSTEMS = """---
name: subsystems
type: subsystem
description: one section per subsystem
---

## Retry policy

path: src/retry.py
aliases: backoff

Retries with exponential backoff for idempotent requests live in src/retry.py.

## Request signing

path: src/signing.py

HMAC request signing for the partner API.
"""

# enough unrelated prose that IDF means something (the cascade needs 50 chunks for it)
FILLER = "\n".join(f"## Topic {i}\n\nNotes on page {i}: tables, charts, colours and the layout of "
                   f"section {i}, with examples.\n" for i in range(60))


def _project(tmp_path, memory: dict[str, str], changelog: str = CHANGELOG):
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    (root / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(FILLER, encoding="utf-8")
    mem = root / ".memhealth" / "memory"
    mem.mkdir()
    for name, text in memory.items():
        (mem / name).write_text(text, encoding="utf-8")
    proc = run_cli("ingest", "--project", str(root), "docs", "memory")
    assert proc.returncode == 0, proc.stderr
    return root


def _decide(root, prompt, intent="build", session="s1"):
    conn = connect(root / ".memhealth" / "memory.db")
    try:
        return inject.decide(conn, prompt, intent, load(str(root / ".memhealth"), environ={}), session, Trace())
    finally:
        conn.close()


def test_a_changelog_section_is_never_the_subsystem(tmp_path):
    # this once injected `DO-NOT-REBUILD? "Changelog > 0.21.0 > Added" may already exist`
    root = _project(tmp_path, {"MEMORY.md": INDEX})
    r = _decide(root, "add a --verbose flag to the command line tool")
    assert r.outcome == "below_relevance" and r.text is None
    assert r.detail["inventory"] == 0


def test_the_inventory_entry_is_the_do_not_rebuild_and_the_changelog_its_evidence(tmp_path):
    root = _project(tmp_path, {"MEMORY.md": INDEX, "cli.md": CLI})
    r = _decide(root, "add a --verbose flag to the command line tool")
    assert r.outcome == "injected"
    head = [line for line in r.text.splitlines() if line.startswith("DO-NOT-REBUILD?")]
    assert head == [head[0]] and head[0].startswith(
        'DO-NOT-REBUILD? "command-line client" may already exist (lives in httpx/_main.py) — from memory '
        "(memory, .memhealth/memory/cli.md:1-8")
    assert '  mentioned in: CHANGELOG.md:5-8 "Changelog > 0.21.0 (15th November, 2021) > Added" (docs)' in r.text
    assert "Memory index" not in r.text
    assert r.detail["dnr"][0]["name"] == "command-line client" and r.detail["dnr"][0]["name_cover"] >= 0.5


def test_the_memory_index_is_not_an_item_but_still_feeds_the_resume_anchor(tmp_path):
    root = _project(tmp_path, {"MEMORY.md": INDEX, "cli.md": CLI})
    stored = rows(root, "SELECT kind, title FROM chunks WHERE path LIKE '%MEMORY.md'")
    assert stored == [("index", "Memory index > ⏯ LATEST")]  # the link list is not stored
    conn = connect(root / ".memhealth" / "memory.db")
    try:
        assert "Resume here:\n- Memory index > ⏯ LATEST" in session_render(conn)
    finally:
        conn.close()
    # a prompt about the index's own words finds nothing to offer
    r = _decide(root, "should we reconsider reviewing the SSL deprecations migration note", "decision")
    assert r.text is None and r.outcome in ("no_hits", "below_relevance"), (r.outcome, r.text)


def test_a_memory_md_met_as_a_doc_is_an_index_too(tmp_path):
    root = _project(tmp_path, {})
    (root / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    assert run_cli("ingest", "--project", str(root), "docs").returncode == 0
    assert rows(root, "SELECT source, kind FROM chunks WHERE path = 'MEMORY.md'") == [("docs", "index")]


def test_a_subsystems_file_is_one_entry_per_section_with_its_path():
    pieces = parse_memory(SUBSYSTEMS, "memory/subsystems.md")
    entries = [(p.title, p.kind, p.attrs["name"], p.attrs.get("path"), p.attrs.get("aliases")) for p in pieces]
    assert entries == [
        ("subsystems > Retry policy", "subsystem", "Retry policy", "src/retry.py", "backoff"),
        ("subsystems > Request signing", "subsystem", "Request signing", "src/signing.py", None)]
    # the file's description belongs to the inventory, not to its first entry
    assert "one section per subsystem" not in pieces[0].content
    one = parse_memory(CLI, "memory/cli.md")
    assert [(p.kind, p.attrs["name"], p.attrs["path"], p.attrs["aliases"]) for p in one] == [
        ("subsystem", "command-line client", "httpx/_main.py", "cli")]


def test_entries_from_a_subsystems_file_are_named_by_their_section(tmp_path):
    root = _project(tmp_path, {"subsystems.md": SUBSYSTEMS})
    r = _decide(root, "let's implement a retry policy with exponential backoff for idempotent requests")
    assert r.outcome == "injected"
    assert 'DO-NOT-REBUILD? "Retry policy" may already exist (lives in src/retry.py)' in r.text
    assert "Request signing" not in r.text
    # an alias names the entry as well as its name does
    r = _decide(root, "write backoff for idempotent requests", session="s2")
    assert 'DO-NOT-REBUILD? "Retry policy"' in r.text


def test_genuinely_new_work_that_shares_common_words_stays_silent(tmp_path):
    root = _project(tmp_path, {"MEMORY.md": INDEX, "cli.md": CLI, "subsystems.md": SUBSYSTEMS})
    for prompt in ("add a progress bar to the download command", "implement an on-disk response cache",
                   "build an OAuth2 client credentials flow"):
        r = _decide(root, prompt, session=prompt)
        assert (r.outcome, r.text) == ("below_relevance", None), (prompt, r.detail)


def test_investigation_intent_gets_no_do_not_rebuild(tmp_path):
    root = _project(tmp_path, {"cli.md": CLI})
    r = _decide(root, "why does the command line client hang with --verbose", "investigation")
    assert r.detail["inventory"] == 0
    assert "DO-NOT-REBUILD" not in (r.text or "")
    built = _decide(root, "should we write a new command line client with a --verbose flag", "decision")
    assert 'DO-NOT-REBUILD? "command-line client"' in built.text


@pytest.mark.parametrize("kind, status, block", [
    ("decision", "confirmed", "Decision lineage:"),  # a confirmed decision is lineage, never DO-NOT-REBUILD
    ("decision", "pending", "Decision lineage:"),
    ("dead_end", "confirmed", "DEAD-END:"),           # only a confirmed dead end is "tried and ruled out"
    ("dead_end", "pending", "Dead-end record:"),
])
def test_only_an_inventory_entry_is_do_not_rebuild_and_only_a_confirmed_dead_end_is_dead_end(
        tmp_path, kind, status, block):
    conn = connect(tmp_path / "memory.db")
    with write(conn):
        for i in range(60):
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('docs', ?, 1, 2, 'section', 't', ?, ?, 0)",
                         (f"d{i}.md", f"page {i} about tables and colours", f"h{i}"))
        conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, content_hash, "
                     "attrs, created_ns) VALUES ('memory', 'memory/wal.md', 1, 4, ?, 'wal checkpointer', "
                     "'The WAL checkpointer runs every 1000 pages in src/wal.py.', 'w', ?, 1)",
                     (kind, json.dumps({"name": "wal checkpointer", "status": status})))
    assert not dnr_eligible(kind, {"status": status})
    r = inject.decide(conn, "build a wal checkpointer that runs every 1000 pages", "build",
                      load(None, environ={}), "s", Trace())
    assert r.outcome == "injected" and f'{block} "wal checkpointer"' in r.text, r.text
    assert "DO-NOT-REBUILD" not in r.text


def test_the_prompt_hook_names_the_entry_through_a_real_subprocess(tmp_path):
    root = _project(tmp_path, {"MEMORY.md": INDEX, "cli.md": CLI})
    (root / "httpx").mkdir()  # where the entry says it lives: the hook checks (STALE-CLAIM otherwise)
    (root / "httpx" / "_main.py").write_text("def main(): ...\n", encoding="utf-8")
    run = run_hook("prompt", payload("prompt", root, prompt="Add a --verbose flag to the command line tool"),
                   cwd=str(root))
    assert run.returncode == 0
    assert 'DO-NOT-REBUILD? "command-line client"' in run.context()
    assert "Changelog > 0.21.0" in run.context()  # as evidence, on a "mentioned in" line
    assert not any(line.startswith("DO-NOT-REBUILD? \"Changelog") for line in run.context().splitlines())
    silent = run_hook("prompt", payload("prompt", root, prompt="implement a token bucket rate limiter per host"),
                      cwd=str(root))
    assert silent.returncode == 0 and silent.stdout == b""
    assert [r[0] for r in rows(root, "SELECT outcome FROM decisions ORDER BY id")] == ["injected", "below_relevance"]
