"""OTLP collector faults — down, hung, refusing (503), slow to acknowledge: hooks never touch
the network (they stay exit 0 and fast), `memhealth export` gives up within its timeout
and keeps the backlog, and once the collector is back every span the hooks recorded
arrives (at least once: a late acknowledgement means the batch is sent again)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import clean_env, payload, rows, run_cli, run_hook
from tests.faults.helpers import TIMEOUTS
from tests.support.otlp_receiver import OtlpReceiver


@pytest.mark.parametrize("fault", ["down", "hang", "error", "slow"])
def test_a_collector_fault_keeps_every_span_until_it_is_back(project, fault):
    rx = OtlpReceiver().up()
    if fault == "down":
        rx.down()
    else:
        rx.mode = fault
    env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint, MEMHEALTH_TELEMETRY_EXPORT_TIMEOUT_S="0.5")
    try:
        for event, fields in (("prompt", {"prompt": "thanks"}), ("stop", {})):
            run = run_hook(event, payload(event, project, **fields), cwd=str(project), env=env)
            assert run.returncode == 0 and run.seconds < TIMEOUTS[event] and run.stderr == b""
        recorded = {t for (t,) in rows(project, "SELECT span_id FROM spans")}
        failed = run_cli("export", "--once", "--json", "--project", str(project), env=env, timeout=30)
        assert failed.returncode == 1 and json.loads(failed.stdout)["backlog"] >= len(recorded)
        assert json.loads(failed.stdout)["seconds"] < 0.5 + 0.5
        if fault == "down":
            rx.up()
        else:
            rx.mode = "ok"
            rx._release.set()  # let the hung handler go
        ok = run_cli("export", "--once", "--json", "--project", str(project), env=env, timeout=30)
        assert ok.returncode == 0, ok.stdout + ok.stderr
    finally:
        rx.down()
    received = {s.span_id for s in rx.spans}
    assert recorded and recorded <= received  # none lost (at-least-once)
