"""A stored ablation schedule that is not one: a section that is not an arm's, a string
where a time belongs, an unknown arm, JSON that does not parse. Nothing reads it as
"ablated", no command prints a traceback, `status` never says "none registered" for it,
and its one fix (`memhealth ablation stop` clears it) clears the gate's RED too."""

from __future__ import annotations

import json
import time

import pytest

from memory_core.store.db import sqlite3
from tests.conftest import payload, run_cli, run_hook
from tests.faults.helpers import check, db_path, follow_fix, gate, heartbeats

DAY = 86400 * 10**9


def _schedule(**over) -> str:
    now = time.time_ns()
    sched = {"arm": "injection-off", "section": "injection", "registered_ns": now, "start_ns": now - DAY,
             "end_ns": now + DAY, "stopped_ns": None,
             "days": [{"day": 0, "arm": "ablated", "start_ns": now - DAY, "end_ns": now + DAY}]}
    sched.update(over)
    return json.dumps(sched)


BAD = {
    "section hooks": _schedule(section="hooks"),
    "string end_ns": _schedule(end_ns="tomorrow"),
    "unknown arm": _schedule(arm="everything-off"),
    "unparsable": "{not json",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_schedule_is_named_everywhere_and_cleared_by_its_fix(project, case):
    conn = sqlite3.connect(db_path(project), isolation_level=None)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('ablation.schedule', ?)", (BAD[case],))
    conn.close()
    for args in (("ablation", "status"), ("report", "--ablation")):
        out = run_cli(*args, cwd=str(project))
        text = out.stdout + out.stderr
        assert out.returncode == 1 and "Traceback" not in text, (args, text)
        assert "ablation schedule is unreadable" in text and "memhealth ablation stop" in text, (args, text)
        assert "none registered" not in text and "now: ablated" not in text, (args, text)
    run = run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project))
    assert run.returncode == 0 and b"ablation" in run.stderr
    assert heartbeats(project, "prompt")[-1][:3] == ("prompt", "error", "ablation")
    hb = check(gate(project), "hook_heartbeats")
    assert hb["status"] == "red" and "memhealth ablation stop" in hb["fix"], hb
    follow_fix(hb["fix"].split(";")[0], project)  # `memhealth ablation stop`, as printed
    status = run_cli("ablation", "status", cwd=str(project))
    assert status.returncode == 0 and "none registered" in status.stdout
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    assert heartbeats(project, "prompt")[-1][:2] == ("prompt", "ok")
    assert check(gate(project), "hook_heartbeats")["status"] != "red"
