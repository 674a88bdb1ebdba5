"""Locks: a lock taken while a hook works makes its completion spill; whoever reaps next
(the gate, a scrape) drains first, so the hook shows as the error it was (db_locked, with
the fix that finds the lock holder), never as killed. In a lock storm every prompt still
gets its decision row wherever its heartbeat went."""

from __future__ import annotations

import json
import os
import threading

import pytest

from tests.conftest import clean_env, payload, rows
from tests.faults.helpers import (
    TIMEOUTS,
    check,
    finish,
    gate,
    heartbeats,
    lock_held,
    start_hook,
    wait_for,
)
from tests.support.ollama_standin import OllamaStandin
from tests.telemetry.test_serve import ServeProcess


def _session_start_completing_under_a_lock(project, busy_s: str = "0.5") -> tuple[int, bytes, float]:
    """A session-start whose gate waits on a hung embedding server; the lock is taken once
    its heartbeat row is in, and held until it exits."""
    with OllamaStandin(mode="hung", hang_s=20) as ollama:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_TIMEOUT_S="1.5",
                        MEMHEALTH_GATE_HOOK_BUDGET_S="3", MEMHEALTH_HOOKS_BUSY_TIMEOUT_S=busy_s)
        proc = start_hook("session-start", json.dumps(payload("SessionStart", project)).encode(),
                          str(project), env=env)
        wait_for(lambda: rows(project, "SELECT 1 FROM heartbeats WHERE hook = 'session-start' "
                                       "AND outcome IS NULL"), what="the open heartbeat")
        with lock_held(project):
            rc, _out, err, seconds = finish(proc, TIMEOUTS["session-start"])
    assert os.path.exists(project / ".memhealth" / "spill.ndjson")
    return rc, err, seconds


def test_a_lock_at_completion_then_the_gate_drains_before_reaping(project):
    rc, err, seconds = _session_start_completing_under_a_lock(project)
    assert rc == 0 and seconds < TIMEOUTS["session-start"]
    assert b"recorded in" in err and b"spill.ndjson" in err
    verdict = gate(project)
    assert [h[:3] for h in heartbeats(project, "session-start")] == [("session-start", "error", "db_locked")]
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and "session-start: last run" in hb["detail"] and "db_locked" in hb["detail"]
    assert "fuser .memhealth/memory.db" in hb["fix"]
    assert not os.path.exists(project / ".memhealth" / "spill.ndjson")


def test_a_held_lock_costs_a_hook_one_busy_timeout_not_one_per_write(project):
    """session-start writes several times (the gate's drain, its verdict, the render, the
    heartbeat): under a held lock only the first waits busy_timeout (8 s here); the rest
    fail at once and spill. One wait ends inside the hook's 30 s timeout with 20 s to
    spare for a loaded machine; four (1.5 + 4 x 8 s) cannot, and finish() fails on it."""
    rc, _err, _seconds = _session_start_completing_under_a_lock(project, busy_s="8")
    assert rc == 0
    assert [h[:3] for h in heartbeats(project, "session-start")] == [("session-start", None, None)]


def test_a_lock_at_completion_then_a_scrape_drains_before_reaping(project):
    rc, _err, _seconds = _session_start_completing_under_a_lock(project)
    assert rc == 0
    app = ServeProcess(project, "--no-probes", "--no-export")
    try:
        samples = app.samples()
    finally:
        app.kill()
    assert [h[:3] for h in heartbeats(project, "session-start")] == [("session-start", "error", "db_locked")]
    key = ("memhealth_hook_invocations_total", (("hook", "session-start"), ("outcome", "error")))
    assert samples[key] == 1.0
    assert samples[("memhealth_hook_invocations_total", (("hook", "session-start"), ("outcome", "killed")))] == 0


@pytest.mark.parametrize("prompts", [24])
def test_a_lock_storm_leaves_a_decision_for_every_prompt(project, prompts):
    """Prompt hooks against a lock held through part of the storm: some spill at start,
    some at completion, some write directly; after the drain every prompt heartbeat has
    exactly one decision row."""
    body = json.dumps(payload("prompt", project, prompt="should we keep the retry budget?")).encode()
    env = clean_env(MEMHEALTH_HOOKS_BUSY_TIMEOUT_S="0.2")
    results = []
    lock = threading.Lock()

    def fire(n: int) -> None:
        proc = start_hook("prompt", body.replace(b"sess-1", f"storm-{n}".encode()), str(project), env=env)
        out = finish(proc, TIMEOUTS["prompt"])
        with lock:
            results.append(out)

    first = [threading.Thread(target=fire, args=(n,)) for n in range(prompts // 2)]
    with lock_held(project):
        for t in first:
            t.start()
        for t in first:
            t.join(60)
    second = [threading.Thread(target=fire, args=(n,)) for n in range(prompts // 2, prompts)]
    for t in second:
        t.start()
    for t in second:
        t.join(60)
    assert len(results) == prompts and all(r[0] == 0 and r[3] < TIMEOUTS["prompt"] for r in results)
    gate(project)  # drains the spill and the journal
    hb = rows(project, "SELECT trace_id FROM heartbeats WHERE hook = 'prompt'")
    decided = rows(project, "SELECT trace_id FROM decisions")
    assert len(hb) == prompts
    assert sorted(hb) == sorted(decided)
    locked = rows(project, "SELECT count(*) FROM heartbeats WHERE reason = 'db_locked'")[0][0]
    assert locked >= prompts // 2  # the first half all met the lock


def test_a_store_failure_in_the_cue_stage_is_named_by_the_store_not_the_stage():
    """Under load a session-start can meet the lock while it writes its cue evaluations (not
    at completion): the heartbeat then said `cues`, a reason with no FIX that finds the
    holder. A store failure is named by its family wherever the hook met it."""
    import sqlite3

    from memhealth.handlers import failure_of
    from memory_core.errors import StoreLocked

    assert failure_of(sqlite3.OperationalError("database is locked"), "cues") == "db_locked"
    assert failure_of(sqlite3.OperationalError("database disk image is malformed"), "cues") == "db_corrupt"
    assert failure_of(StoreLocked("database is locked"), "cues") == "db_locked"
    assert failure_of(sqlite3.OperationalError("no such column: pattern"), "cues") == "cues"
    assert failure_of(ValueError("a cue that does not compile"), "cues") == "cues"
