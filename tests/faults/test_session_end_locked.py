"""A SessionEnd that meets a held lock still hands its session to capture: the boundary is
kept beside the store and a worker records it once the lock is free, so the session's
decisions, dead ends and corrections are not lost to one busy moment."""

from __future__ import annotations

from tests.conftest import clean_env, payload, run_hook
from tests.faults.helpers import gate, heartbeats, lock_held, wait_for
from tests.memory_core.records.test_triage import SESSION, listing, turn


def test_a_session_end_under_a_held_lock_still_gets_its_session_captured(project, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text("\n".join(turn(r, t, i, "s1") for i, (r, t) in enumerate(SESSION, 1)) + "\n")
    env = clean_env(MEMHEALTH_HOOKS_BUSY_TIMEOUT_S="0.2")
    with lock_held(project):
        run = run_hook("session-end", payload("SessionEnd", project, session_id="s1",
                                              transcript_path=str(transcript)), cwd=str(project), env=env)
        assert run.returncode == 0 and b"locked" in run.stderr
        assert b"capture" in run.stderr, run.stderr  # it says where the session went
    # the lock is free: the worker the hook left records the boundary and captures it
    kinds = wait_for(lambda: sorted(i["kind"] for i in listing(project)), timeout=60,
                     what="the session's candidates")
    assert kinds == sorted(["dead_end", "correction", "decision", "dead_end"])
    gate(project)  # drains the spill: the hook's own failure is recorded too
    assert ("session-end", "error", "db_locked") in [h[:3] for h in heartbeats(project)]
