"""Small hostile inputs, each a clear one-line refusal or a named finding, never a traceback,
a 500 or a silent redo: a corrupt export watermark, an embedding URL with CRLF in it, alert
annotations given as a string, and a `remember` text that is not valid UTF-8."""

from __future__ import annotations

import json
import os

from tests.conftest import clean_env, run_cli
from tests.support.otlp_receiver import OtlpReceiver
from tests.telemetry.test_export import SESSION, config, drive_session, outbox
from tests.telemetry.test_serve import ServeProcess


def test_a_corrupt_export_watermark_is_named_and_never_resends_every_span(project):
    from memory_core.store.db import connect, write
    from memory_core.store.meta import set_meta
    from telemetry.export import export_once

    drive_session(project, events=SESSION[:2])
    with OtlpReceiver() as rx:
        conn = connect(str(project / ".memhealth" / "memory.db"))
        cfg = config(project, otlp_endpoint=rx.endpoint)
        first = export_once(conn, cfg)
        assert first.ok and first.spans_sent == len(outbox(project)) > 0
        with write(conn):
            set_meta(conn, "export.spans.last_id", "12abc")
        second = export_once(conn, cfg)
        reasons = conn.execute("SELECT component, reason, detail FROM degradations").fetchall()
        conn.close()
    assert second.spans_sent == 0 and len(rx.spans) == first.spans_sent  # nothing re-sent
    assert ("export", "watermark_corrupt") in [r[:2] for r in reasons], reasons
    assert "12abc" in next(r[2] for r in reasons if r[1] == "watermark_corrupt")


def test_an_embedding_url_with_crlf_is_refused_by_config_validation(project):
    env = clean_env(MEMHEALTH_EMBEDDING_URL="http://127.0.0.1:11434\r\nX-Evil: 1")
    out = run_cli("gate", cwd=str(project), env=env)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "check raised" not in text and "Traceback" not in text, text
    assert "MEMHEALTH_EMBEDDING_URL" in text and "control character" in text, text
    (project / ".memhealth" / "config.toml").write_text('[embedding]\nurl = "http://127.0.0.1:11434 /x"\n')
    out = run_cli("gate", cwd=str(project))
    assert out.returncode != 0 and "[embedding].url" in out.stdout + out.stderr


def test_alert_annotations_given_as_a_string_are_a_400_not_a_500(project):
    app = ServeProcess(project, "--no-probes", "--no-export")
    try:
        body = {"receiver": "memhealth", "status": "firing",
                "alerts": [{"status": "firing", "labels": {"alertname": "X", "severity": "critical"},
                            "annotations": "fix: do the thing"}]}
        status, answer = app.post("/alerts", json.dumps(body).encode())
    finally:
        app.kill()
    assert status == 400 and "annotations" in json.dumps(answer), (status, answer)


def test_remember_with_invalid_utf8_refuses_in_one_line_and_writes_nothing(project):
    import subprocess

    from tests.conftest import memhealth_cmd

    arg = os.fsdecode(b"x \xff")  # what a shell passes for $'x \xff'
    out = subprocess.run(memhealth_cmd() + ["remember", arg], cwd=str(project), capture_output=True,
                         env=clean_env(), timeout=60)
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "UTF-8" in err
    memory = project / ".memhealth" / "memory"
    assert not memory.exists() or not [f for f in os.listdir(memory) if f.endswith(".md")]
