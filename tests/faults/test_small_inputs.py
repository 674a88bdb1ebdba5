"""Small hostile inputs, each a clear one-line refusal or a named finding, never a traceback,
a 500 or a silent redo: a corrupt export watermark, an embedding URL with CRLF in it, alert
annotations given as a string, and a `remember` text that is not valid UTF-8."""

from __future__ import annotations

import json
import os

import pytest

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


# -- `memhealth mcp` on a real pipe: every bad line answered, a vanished reader an exit 0 --------

def _mcp(project):
    """`memhealth mcp --project P` on real pipes, initialized (the handshake a client does)."""
    import subprocess

    from tests.conftest import memhealth_cmd

    proc = subprocess.Popen(memhealth_cmd() + ["mcp", "--project", str(project)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(), cwd=str(project))
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    assert _replies(proc, 1)[0]["id"] == 1
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def _wait(proc, timeout: float = 30.0) -> int | None:
    """The exit code, or None (and the process killed) when it did not exit in time."""
    import subprocess

    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        return None


def _send(proc, message) -> None:
    proc.stdin.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _replies(proc, n: int, timeout: float = 30.0) -> list[dict]:
    """The next n lines the server writes, as JSON (each within the timeout)."""
    import select
    import time

    out, deadline = [], time.monotonic() + timeout
    while len(out) < n:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no reply {len(out) + 1} of {n} within {timeout} s: {out}"
        line = proc.stdout.readline()
        assert line, f"the server closed stdout after {out}; stderr: {proc.stderr.read()!r}"
        out.append(json.loads(line))
    return out


def test_mcp_answers_malformed_json_rpc_with_json_rpc_errors_and_keeps_serving(project):
    pytest.importorskip("mcp")
    proc = _mcp(project)
    try:
        bad = [b"{not json\n",                                   # parse error, id unknown
               b'{"jsonrpc": "2.0", "id": 7}\n',                 # no method, no result: invalid
               b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}\n',  # the spec's own example
               b"[1, 2]\n",                                      # a batch: not MCP
               b'"just a string"\n',
               b"\xff\xfe not utf-8 \xc3\x28\n"]                 # not UTF-8: a parse error too
        for line in bad:
            _send(proc, line)
        _send(proc, {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}})
        got = _replies(proc, len(bad) + 1)
        errors = [r for r in got if "error" in r]
        assert sorted(((r["error"]["code"], r["id"]) for r in errors), key=str) == sorted(
            [(-32700, None), (-32600, 7), (-32600, None), (-32600, None), (-32600, None), (-32700, None)], key=str)
        assert all(r["jsonrpc"] == "2.0" and r["error"]["message"] in ("Parse error", "Invalid Request")
                   for r in errors)
        assert any("not UTF-8" in r["error"]["data"] for r in errors)
        listed = [r for r in got if r.get("id") == 8]
        assert {t["name"] for t in listed[0]["result"]["tools"]} == {"search", "remember", "cues"}
        # and still serving after all of it: a real call works
        _send(proc, {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                     "params": {"name": "cues", "arguments": {}}})
        (reply,) = _replies(proc, 1)
        assert reply["id"] == 9 and "result" in reply and not reply["result"].get("isError"), reply
    finally:
        proc.stdin.close()
        rc = _wait(proc)
        err = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0 and "Traceback" not in err, err


def test_mcp_exits_0_quietly_when_its_reader_goes_away_and_keeps_what_it_recorded(project):
    pytest.importorskip("mcp")
    from tests.conftest import rows

    proc = _mcp(project)
    proc.stdout.close()  # the client stops reading: the next answer meets EPIPE
    _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember", "arguments": {
        "text": "Rotate ledger segments only after the WAL flush.", "kind": "invariant"}}})
    try:
        rc = _wait(proc)
    finally:
        err = proc.stderr.read().decode()
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.stderr.close()
    assert rc == 0, err
    assert err == "", err  # quietly: no traceback, no "Exception ignored" at shutdown
    # what it did before the answer could not be written is there: the memory, its span, its count
    memories = os.listdir(project / ".memhealth" / "memory")
    assert any("rotate-ledger-segments" in name for name in memories), memories
    assert rows(project, "SELECT name FROM spans WHERE name = 'tools/call remember'") == [("tools/call remember",)]
    assert rows(project, "SELECT labels FROM rollups WHERE metric = 'memhealth_mcp_calls_total'"), "no count"
