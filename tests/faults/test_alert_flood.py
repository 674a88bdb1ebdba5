"""One huge `POST /alerts` must not hold the store's write lock for seconds: prompts running
beside it all record (the alerts are decided in short transactions), a delivery past the
per-request cap is a 413 recorded bounded in the sink, and alert rows and the sink file stay
bounded however many deliveries arrive."""

from __future__ import annotations

import json
import threading

from tests.conftest import payload, rows, run_hook
from tests.faults.helpers import heartbeats
from tests.telemetry.test_serve import ServeProcess


def _body(n: int, tag: str) -> bytes:
    return json.dumps({"receiver": "memhealth", "status": "firing", "alerts": [
        {"status": "firing", "labels": {"alertname": f"Flood{tag}{i}", "severity": "warning"},
         "annotations": {"summary": "x" * 100}} for i in range(n)]}).encode()


def test_a_flood_of_alerts_never_locks_out_prompts_and_stays_bounded(project):
    from telemetry.alert_intake import MAX_ALERTS_PER_REQUEST

    app = ServeProcess(project, "--no-probes", "--no-export")
    results = {}
    try:
        status, answer = app.post("/alerts", _body(MAX_ALERTS_PER_REQUEST + 1, "over"))
        assert status == 413 and str(MAX_ALERTS_PER_REQUEST) in answer["error"], (status, answer)

        def flood():
            results["flood"] = app.post("/alerts", _body(MAX_ALERTS_PER_REQUEST, "a"))

        t = threading.Thread(target=flood)
        t.start()
        runs = [run_hook("prompt", payload("prompt", project, prompt="thanks", prompt_id=f"p{i}"),
                         cwd=str(project)) for i in range(12)]
        t.join(120)
    finally:
        app.kill()
    assert results["flood"][0] == 200, results
    assert all(r.returncode == 0 for r in runs)
    assert [h[:2] for h in heartbeats(project, "prompt")] == [("prompt", "ok")] * 12
    ((n,),) = rows(project, "SELECT count(*) FROM alert_decisions")
    assert n == MAX_ALERTS_PER_REQUEST


def test_alert_rows_and_the_sink_stay_bounded(project):
    from probes.budget import ALERT_KEEP_ROWS
    from telemetry.alert_intake import SINK_MAX_BYTES

    sink = project / ".memhealth" / "alerts.ndjson"
    line = json.dumps({"ts": 0, "decision": "noted", "detail": "an earlier delivery"}) + "\n"
    sink.write_text(line * ((SINK_MAX_BYTES - 2000) // len(line)))  # near the limit already
    app = ServeProcess(project, "--no-probes", "--no-export")
    try:
        for round_ in range(ALERT_KEEP_ROWS // 1000 + 2):
            assert app.post("/alerts", _body(1000, f"r{round_}"))[0] == 200
    finally:
        app.kill()
    ((n,),) = rows(project, "SELECT count(*) FROM alert_decisions WHERE decision != 'paged'")
    assert n <= ALERT_KEEP_ROWS
    older = sink.with_name(sink.name + ".1")
    assert older.exists()  # it rotated once past the limit
    kept = [sink, older]
    assert sink.stat().st_size <= SINK_MAX_BYTES + 64 * 1024
    assert sum(p.stat().st_size for p in kept) <= 2 * SINK_MAX_BYTES + 64 * 1024
