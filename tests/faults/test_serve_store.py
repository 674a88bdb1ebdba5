"""A database deleted under serve: /healthz says so (degraded, store missing) instead of
"ok", and once a hook recreates the store, scrapes and probes read the new file, not the
deleted one (the new store is a reset the gate names)."""

from __future__ import annotations

import json
import os

from tests.conftest import clean_env, payload, rows, run_hook
from tests.faults.helpers import check, db_path, gate, wait_for
from tests.support.otlp_receiver import OtlpReceiver
from tests.telemetry.test_serve import ServeProcess


def test_a_database_deleted_under_serve_is_noticed_and_reopened(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    rx = OtlpReceiver().up()
    app = ServeProcess(project, env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint,
                                              MEMHEALTH_SERVE_EXPORT_INTERVAL_S="1"))
    try:
        wait_for(lambda: rx.spans, what="serve's first export")
        assert json.loads(app.get("/healthz")[1])["store"] == "ok"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db_path(project) + suffix):
                os.unlink(db_path(project) + suffix)
        health = json.loads(app.get("/healthz")[1])
        assert health["status"] == "degraded" and health["store"].startswith("missing")
        for _ in range(3):  # hooks recreate the store; serve must read that file now
            assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
        key = ("memhealth_hook_invocations_total", (("hook", "prompt"), ("outcome", "ok")))
        assert wait_for(lambda: app.samples().get(key) == 3.0, what="the new store's prompts in /metrics")
        assert json.loads(app.get("/healthz")[1])["status"] == "ok"
        # the exporter reads the new file too: every trace of the new store arrives
        new_traces = {t for (t,) in rows(project, "SELECT trace_id FROM heartbeats WHERE hook = 'prompt'")}
        assert len(new_traces) == 3
        wait_for(lambda: new_traces <= {s.trace_id for s in rx.spans}, timeout=20,
                 what="the new store's traces at the collector")
    finally:
        app.kill()
        rx.down()
    assert "store reset" in check(gate(project), "hook_heartbeats")["detail"]


def test_serve_never_recreates_a_deleted_store_nor_uses_up_its_reset_notice(project):
    for _ in range(3):
        assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    app = ServeProcess(project, "--no-export", env=clean_env(MEMHEALTH_SERVE_PROBE_INTERVAL_S="1"))

    def probes_after(n):
        return lambda: json.loads(app.get("/healthz")[1])["probe"]["runs"] >= n

    try:
        wait_for(probes_after(1), what="serve's first probe")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db_path(project) + suffix):
                os.unlink(db_path(project) + suffix)
        runs = json.loads(app.get("/healthz")[1])["probe"]["runs"]
        wait_for(probes_after(runs + 3), timeout=20, what="three scheduled probes")
        assert not os.path.exists(db_path(project))  # the scheduled gate did not recreate it
        assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
        runs = json.loads(app.get("/healthz")[1])["probe"]["runs"]
        wait_for(probes_after(runs + 3), timeout=20, what="three probes of the new store")
    finally:
        app.kill()
    hb = check(gate(project), "hook_heartbeats")  # the person's gate still hears it, once
    assert "store reset" in hb["detail"] and "killed" not in hb["detail"], hb
    assert "store reset" not in check(gate(project), "hook_heartbeats")["detail"]


def test_serve_all_says_when_a_registered_project_is_lost_and_one_corrupt_store_fails_only_itself(tmp_path):
    import shutil
    import urllib.request

    from tests.telemetry.test_serve_all import ServeAll, _env, _init

    env = _env(tmp_path / "xdg")
    a, b = tmp_path / "a", tmp_path / "b"
    _init(a, env)
    _init(b, env)
    app = ServeAll(env)

    def post(body: dict) -> tuple[int, dict]:
        req = urllib.request.Request(app.url + "/alerts", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    try:
        assert json.loads(app.get("/healthz"))["status"] == "ok"
        with open(db_path(b), "r+b") as fh:
            fh.write(b"this is not a database, " * 200)
        # pages written since the last checkpoint live in the WAL, where a reader finds them
        # first: empty it too, or a header still there hides the corrupt file (seen under load)
        if os.path.exists(db_path(b) + "-wal"):
            with open(db_path(b) + "-wal", "r+b") as fh:
                fh.truncate(0)
        alerts = [{"status": "firing", "labels": {"alertname": "X", "severity": "warning", "project": p}}
                  for p in ("a", "b")]
        status, reply = post({"receiver": "memhealth", "status": "firing", "alerts": alerts})
        assert status == 200, (status, reply)  # a's alert is decided; b's store is b's problem
        assert reply["projects"]["a"]["decisions"] == 1 and "error" in reply["projects"]["b"], reply
        shutil.rmtree(a)
        health = wait_for(lambda: (lambda h: h if h["status"] != "ok" else None)(json.loads(app.get("/healthz"))),
                          timeout=20, what="healthz to say a project is lost")
        assert health["status"] == "degraded" and "a" in health["not_served"], health
    finally:
        app.stop()
