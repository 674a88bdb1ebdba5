"""STALE-CLAIM blocks: an item whose claim the tree refutes — an inventory entry
whose `path:` is gone, a confirmed record whose file changed after it was recorded — is
delivered as a warning naming what changed, never as DO-NOT-REBUILD or DEAD-END. Checked at
prompt time with one os.stat per chosen item's path; real stores built by the real
`memhealth ingest`, and the prompt hook run as a real subprocess."""

from __future__ import annotations

import json
import os
import time

from memhealth.config import load
from memory_core.delivery import claims, inject
from memory_core.outbox.spans import Trace
from memory_core.records.triage import render_record
from memory_core.store.db import connect
from tests.conftest import payload, rows, run_cli, run_hook

FILLER = "\n".join(f"## Topic {i}\n\nNotes on page {i}: tables, charts, colours and the layout of "
                   f"section {i}, with examples.\n" for i in range(60))

CLI = """---
name: command-line client
type: subsystem
path: src/cli/main.py
aliases: cli
description: the command-line client; -v/--verbose prints connection details
---
The command-line client exists since 0.20.0. Extend its options, never write a second CLI.
"""

DEAD = {"id": 7, "kind": "dead_end", "title": "WAL checkpoint inside append() was slower",
        "statement": "I tried running the WAL checkpoint inside append() and it was slower: every append "
                     "stalled behind it.",
        "transcript": "/home/dev/.claude/projects/-srv-app/5f0c.jsonl", "line": 47, "session_id": "5f0c",
        "ts": "2026-11-30T21:04:11.000Z", "role": "assistant"}
REPROPOSE_DEAD = "Let's add a WAL checkpoint inside append() so the WAL never grows between compactor runs"
REPROPOSE_CLI = "Add a --verbose flag to the command line tool"


def project(tmp_path, memory: dict[str, str], files: dict[str, str]) -> str:
    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(FILLER, encoding="utf-8")
    for rel, text in {**{f".memhealth/memory/{k}": v for k, v in memory.items()}, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    proc = run_cli("ingest", "--project", str(root), "docs", "memory")
    assert proc.returncode == 0, proc.stderr
    return str(root)


def decide(root: str, prompt: str, session: str = "s1", with_root: bool = True):
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        return inject.decide(conn, prompt, "build", load(os.path.join(root, ".memhealth"), environ={}),
                             session, Trace(), root=root if with_root else None)
    finally:
        conn.close()


def with_path(record: str, path: str) -> str:
    """A triage record someone pointed at the file it is about (`path:` in its frontmatter)."""
    return record.replace("status: confirmed\n", f"status: confirmed\npath: {path}\n", 1)


def test_an_inventory_entry_claims_its_path_exists(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x\n", encoding="utf-8")
    root = str(tmp_path)
    assert claims.stale_claim(root, "subsystem", {"path": "src/a.py"}) is None
    assert claims.stale_claim(root, "subsystem", {"path": "src/gone.py"}) == "src/gone.py no longer exists"
    # a list: the first one missing is named; a directory exists like a file
    assert claims.stale_claim(root, "subsystem", {"path": "`src/a.py`, src/b.py"}) == "src/b.py no longer exists"
    assert claims.stale_claim(root, "subsystem", {"path": "src/"}) is None
    # words around a path are commentary, not paths that could be missing
    assert claims.stale_claim(root, "subsystem", {"path": "src/a.py (SOCKS5 support)"}) is None
    assert claims.stale_claim(root, "subsystem", {"path": "gone.py (SOCKS5)"}) == "gone.py no longer exists"
    # what the tree cannot refute cheaply is never stale: no path, a glob, a URL, outside the project
    for value in (None, "", "src/**/*.py", "https://example.org/x.py", "../elsewhere.py", "/etc/nothing-here"):
        assert claims.stale_claim(root, "subsystem", {"path": value}) is None, value
    # an item that claims nothing about the tree (a note, a hand-written unconfirmed record)
    assert claims.stale_claim(root, "feedback", {"path": "src/gone.py"}) is None
    assert claims.stale_claim(root, "dead_end", {"path": "src/gone.py", "recorded": "2026-01-01"}) is None


def test_a_confirmed_record_claims_its_file_as_it_was_when_recorded(tmp_path):
    (tmp_path / "src").mkdir()
    target = tmp_path / "src" / "wal.py"
    target.write_text("x\n", encoding="utf-8")
    root = str(tmp_path)
    at = time.mktime((2026, 11, 30, 12, 0, 0, 0, 0, -1))
    os.utime(target, (at, at))
    base = {"status": "confirmed", "path": "src/wal.py"}
    for kind in ("decision", "dead_end", "correction"):
        assert claims.stale_claim(root, kind, {**base, "recorded": "2099-01-01T00:00:00Z"}) is None
        assert claims.stale_claim(root, kind, {**base, "recorded": "2020-01-01T00:00:00Z"}) == \
            "src/wal.py changed after this was recorded on 2020-01-01"
    # a bare date is the end of that day: a change later that day is not provably after it
    assert claims.stale_claim(root, "decision", {**base, "recorded": time.strftime("%Y-%m-%d", time.gmtime(at))}) is None
    # without a readable `recorded:` only existence is checked
    assert claims.stale_claim(root, "decision", {**base, "recorded": "last week"}) is None
    assert claims.stale_claim(root, "decision", {**base, "path": "src/old.py"}) == "src/old.py no longer exists"
    # a source that is a project file counts; a transcript (appended to as it goes) never does
    src = {"status": "confirmed", "recorded": "2020-01-01T00:00:00Z"}
    assert claims.stale_claim(root, "decision", {**src, "source": "src/wal.py:12 (session s, 2020)"}) == \
        "src/wal.py changed after this was recorded on 2020-01-01"
    (tmp_path / "t.jsonl").write_text("{}\n", encoding="utf-8")
    assert claims.stale_claim(root, "decision", {**src, "source": "t.jsonl:3 (session s, 2020, assistant)"}) is None
    assert claims.stale_claim(root, "decision", {**src, "source": f"{DEAD['transcript']}:47 (session 5f0c)"}) is None


def test_recorded_at_reads_timestamps_and_dates_in_utc():
    assert claims.recorded_at("2026-11-30T22:00:00Z") == (1796076001.0, "2026-11-30")  # the second after
    assert claims.recorded_at("2026-02-28") == (1772323200.0, "2026-02-28")  # the end of that day
    assert claims.recorded_at("2026-13-01") is None and claims.recorded_at(None) is None


def test_a_subsystem_whose_file_is_gone_is_stale_claim_never_do_not_rebuild(tmp_path):
    root = project(tmp_path, {"cli.md": CLI}, {"src/cli/main.py": "def main(): ...\n"})
    ok = decide(root, REPROPOSE_CLI, "s1")
    assert ok.outcome == "injected" and 'DO-NOT-REBUILD? "command-line client"' in ok.text, ok.text
    assert "STALE-CLAIM" not in ok.text and "stale_claim" not in ok.detail
    os.unlink(os.path.join(root, "src", "cli", "main.py"))
    r = decide(root, REPROPOSE_CLI, "s2")
    assert r.outcome == "injected"
    assert r.text.splitlines()[1].startswith('STALE-CLAIM: "command-line client" (a subsystem inventory entry) — '
                                             "src/cli/main.py no longer exists"), r.text
    assert "DO-NOT-REBUILD" not in r.text and "may already exist" not in r.text
    assert "Extend its options, never write a second CLI." in r.text  # what memory said, to correct it
    assert r.detail["stale_claim"] == [{"chunk_id": r.detail["items"][0]["chunk_id"], "instead_of": "dnr",
                                        "why": "src/cli/main.py no longer exists"}]
    assert r.detail["items"][0]["block"] == "stale_claim"
    # without a project root (an in-process evaluation) nothing is checked: as before
    assert "DO-NOT-REBUILD" in decide(root, REPROPOSE_CLI, "s3", with_root=False).text


def test_a_confirmed_dead_end_about_a_changed_file_is_stale_claim(tmp_path):
    record = with_path(render_record(DEAD, "2026-11-30T22:00:00Z"), "src/wal.py")
    root = project(tmp_path, {"records/dead_end-7-wal.md": record}, {"src/wal.py": "def append(): ...\n"})
    past = time.mktime((2026, 11, 29, 12, 0, 0, 0, 0, -1))
    os.utime(os.path.join(root, "src", "wal.py"), (past, past))
    ok = decide(root, REPROPOSE_DEAD, "s1")
    assert 'DEAD-END: "WAL checkpoint inside append() was slower"' in ok.text, ok.text
    os.utime(os.path.join(root, "src", "wal.py"))  # edited now, after the record
    r = decide(root, REPROPOSE_DEAD, "s2")
    assert r.outcome == "injected"
    assert ('STALE-CLAIM: "WAL checkpoint inside append() was slower" (a confirmed dead end) — '
            "src/wal.py changed after this was recorded on 2026-11-30") in r.text, r.text
    assert "DEAD-END" not in r.text and "was tried and ruled out" not in r.text
    assert r.text.count(DEAD["statement"]) == 1


def test_the_prompt_hook_delivers_a_deleted_subsystem_as_stale_claim(tmp_path):
    root = project(tmp_path, {"cli.md": CLI}, {"src/cli/main.py": "def main(): ...\n"})
    first = run_hook("prompt", payload("prompt", root, prompt=REPROPOSE_CLI, session_id="a"), cwd=root)
    assert first.returncode == 0 and 'DO-NOT-REBUILD? "command-line client"' in first.context()
    os.unlink(os.path.join(root, "src", "cli", "main.py"))
    run = run_hook("prompt", payload("prompt", root, prompt=REPROPOSE_CLI, session_id="b"), cwd=root)
    assert run.returncode == 0, run.stderr
    context = run.context()
    assert 'STALE-CLAIM: "command-line client"' in context and "src/cli/main.py no longer exists" in context, context
    assert "DO-NOT-REBUILD" not in context
    (detail,) = [json.loads(d) for (d,) in rows(root, "SELECT detail FROM decisions ORDER BY id DESC LIMIT 1")]
    assert detail["stale_claim"][0]["why"] == "src/cli/main.py no longer exists"
