"""The labeled evaluation set (tests/support/cue_evalset.py) through the real pre-tool hook: no false
alarm, and every first touch delivered."""

from __future__ import annotations

from tests.conftest import clean_env, memhealth_cmd, rows, run_cli
from tests.support import cue_evalset


def test_the_labeled_set_is_large_enough_and_mixes_real_and_synthetic_calls():
    events = cue_evalset.all_events()
    tool_events = [e for e in events if not e.get("compact")]
    assert len(tool_events) >= 200
    assert sum(e["source"] == "real" for e in tool_events) >= 60
    assert sum(bool(e["expect"]) for e in events) >= 20
    assert sum(bool(e["expect"]) for e in events if e["source"] == "real") >= 10


def test_every_labeled_call_fires_exactly_what_its_label_says(project):
    cue_evalset.build_project(str(project))
    proc = run_cli("ingest", "memory", "--project", str(project))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = cue_evalset.all_events()
    fired = cue_evalset.replay(str(project), events, memhealth_cmd(), env=clean_env())
    s = cue_evalset.score(events, fired)
    assert s["false_alarms"] == [] and s["misses"] == []
    assert (s["fp"], s["fn"]) == (0, 0) and s["tp"] >= 20
    # every evaluation was audited: one row per tool call at least, fired rows = deliveries
    assert rows(project, "SELECT count(DISTINCT trace_id) FROM cue_audit WHERE event = 'pre-tool'") == [
        (s["events"],)]
    assert rows(project, "SELECT count(*) FROM cue_audit WHERE outcome = 'fired'") == [(s["tp"],)]
