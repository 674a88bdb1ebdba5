"""`memhealth demo`, the quick start's main job, run as a user runs it."""

from __future__ import annotations

import json
import re

import pytest

# The same SQLite library as the code under test: two libraries in one process release
# each other's POSIX locks on close, and a WAL database can then read as malformed.
from memory_core.store.db import sqlite3
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these


def test_the_demo_drives_a_session_through_the_real_hooks_and_reports(tmp_path):
    proc = run_cli("demo", "--dir", str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    verdicts = re.findall(r"MEMORY-HEALTH: (\d+)/(\d+) GREEN(.*)", out)
    assert len(verdicts) == 4, out  # two session starts, the later session's, the closing gate
    assert all(green == total and rest.strip() == "" for green, total, rest in verdicts), verdicts
    assert " RED " not in out
    assert "memhealth_hook_invocations_total{hook=\"prompt\",outcome=\"ok\"} 8" in out
    assert "DO-NOT-REBUILD" in out and "memory/compactor-exists.md" in out

    db = sqlite3.connect(tmp_path / "ledgerline" / ".memhealth" / "memory.db")
    outcomes = [r[0] for r in db.execute("SELECT outcome FROM decisions ORDER BY id")]
    # silence by default: only prompts that share rare words with memory inject
    assert outcomes == ["no_intent", "injected", "injected", "system_turn", "injected", "capped",
                        "below_relevance", "injected"]
    # the re-proposal only the code answers: no memory file names EventUpcaster, the code index
    # does, and the block cites the definition and the commit it was read at
    memory = tmp_path / "ledgerline" / "memory"
    assert not any("upcaster" in f.read_text().lower() for f in memory.iterdir())
    third = json.loads(db.execute("SELECT detail FROM decisions ORDER BY id LIMIT 1 OFFSET 2").fetchone()[0])
    assert [item["block"] for item in third["items"]] == ["code"]
    assert third["code"]["dnr"]["name"] == "EventUpcaster" and third["code"]["dnr"]["path"] == "src/upcaster.py"
    assert re.search(r'DO-NOT-REBUILD\? "EventUpcaster" already exists in the code \(class at src/upcaster\.py:4\) '
                     r"— read from\n  \|     the code at [0-9a-f]{12}", out), out
    hooks = dict(db.execute("SELECT hook, count(*) FROM heartbeats WHERE outcome = 'ok' GROUP BY hook"))
    assert hooks["session-start"] == 3 and hooks["session-end"] == 1 and hooks["pre-tool"] == 2
    # cues: the gotcha on the first touch of its file, again on the first touch after the
    # compaction; the pinned decision at the start and again after the compaction
    fired = db.execute("SELECT a.event, a.trigger, m.name, a.epoch FROM cue_audit a JOIN memory_items m "
                       "ON m.id = a.item_id WHERE a.outcome = 'fired' ORDER BY a.id").fetchall()
    assert [(e, t, n) for e, t, n, _ in fired] == [
        ("session-start", "pinned", "single writer queue"), ("pre-tool", "path", "sequence numbers have gaps"),
        ("session-start", "pinned", "single writer queue"), ("pre-tool", "path", "sequence numbers have gaps"),
        ("session-start", "pinned", "single writer queue")]  # the later session's start
    assert fired[1][3] < fired[3][3]  # a new epoch after the compaction
    assert "first touch by Read of src/compactor.py" in out and "sequence numbers have gaps" in out
    assert db.execute("SELECT count(*) FROM heartbeats WHERE outcome != 'ok'").fetchone() == (0,)
    # capture and triage: the dead end the assistant stated became a candidate at session end,
    # was retitled and confirmed, and the later session's re-proposal got the DEAD-END block
    assert db.execute("SELECT kind, state, title FROM capture_candidates").fetchall() == [
        ("dead_end", "confirmed", "Redis projection cache")]
    last = json.loads(db.execute("SELECT detail FROM decisions ORDER BY id DESC LIMIT 1").fetchone()[0])
    assert [item["block"] for item in last["items"]] == ["dead_end"]
    assert 'DEAD-END: "Redis projection cache" was tried and ruled out' in out
    assert "so I reverted it." in out and "said at: " in out  # the statement, with where it was said
    # session end brought the session's own transcript into memory
    assert db.execute("SELECT count(*) FROM chunks WHERE source = 'transcript' AND path LIKE '%demo-%'").fetchone()[0] > 0


def test_the_demo_can_run_twice_in_the_same_directory(tmp_path):
    assert run_cli("demo", "--dir", str(tmp_path), timeout=300).returncode == 0
    second = run_cli("demo", "--dir", str(tmp_path), timeout=300)
    assert second.returncode == 0, second.stderr


def test_the_demo_leaves_the_users_project_registry_as_it_found_it(tmp_path):
    """The demo's throwaway project is never registered, so `serve --all` never serves it:
    an existing registry is left byte for byte, and none is created where there was none."""
    from tests.conftest import clean_env

    state = tmp_path / "state"
    reg = state / "memhealth" / "projects.json"
    fresh = run_cli("demo", "--dir", str(tmp_path / "a"), timeout=300,
                    env=clean_env(XDG_STATE_HOME=str(state)))
    assert fresh.returncode == 0, fresh.stderr
    assert not reg.exists() and not any(state.rglob("projects*"))

    mine = tmp_path / "mine"
    mine.mkdir()
    assert run_cli("init", "--project", str(mine), env=clean_env(XDG_STATE_HOME=str(state))).returncode == 0
    registered = reg
    before = registered.read_bytes()
    again = run_cli("demo", "--dir", str(tmp_path / "b"), timeout=300, env=clean_env(XDG_STATE_HOME=str(state)))
    assert again.returncode == 0, again.stderr
    assert registered.read_bytes() == before and b"mine" in before
