"""The per-tool-call cost of each hook transport, hook by hook: PreToolUse + PostToolUse for
one Read, as a process per event (`memhealth hook pre-tool`, what `memhealth init` writes)
and as two POSTs to a running `memhealth serve` (`memhealth init --transport http`), beside
the interpreter floor `python -c "import sqlite3, json"` measured in the same run.

Each HTTP sample opens a new connection per request (the worst case for the client); the
project has a memory item cued on the file read, so the first Read of each session gets its
cue (a fresh session id per sample: every sample is a first touch, the expensive path).
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import tempfile
import time

from common import floor, memhealth_cmd, pct, row, time_cmd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CUE = """---
name: The writer batches appends
kind: gotcha
paths: src/writer.py
---
The writer batches appends for 5 ms; never call it once per entry in a loop.
"""


def _payload(root: str, event: str, session: str) -> bytes:
    body = {"session_id": session, "cwd": root, "hook_event_name": event,
            "transcript_path": os.path.join(root, "t.jsonl"), "tool_name": "Read",
            "tool_input": {"file_path": os.path.join(root, "src", "writer.py")}, "tool_use_id": "toolu_1"}
    if event == "PostToolUse":
        body["tool_response"] = {"type": "text", "file": {"filePath": os.path.join(root, "src", "writer.py"),
                                                          "content": "BATCH_MAX = 256\n", "numLines": 1,
                                                          "startLine": 1, "totalLines": 1}}
    return json.dumps(body).encode()


def _project(tmp: str) -> str:
    import subprocess

    root = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(root, "src"))
    os.makedirs(os.path.join(root, ".memhealth", "memory"))
    with open(os.path.join(root, "src", "writer.py"), "w") as fh:
        fh.write("BATCH_MAX = 256\n")
    with open(os.path.join(root, ".memhealth", "memory", "writer.md"), "w") as fh:
        fh.write(CUE)
    for args in (["init", "--project", root, "--no-templates"], ["ingest", "--project", root, "memory"]):
        subprocess.run(memhealth_cmd() + args, check=True, capture_output=True)
    return root


def _post(port: int, path: str, body: bytes, auth: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                       "Authorization": auth})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
    finally:
        conn.close()


def bench(quick: bool = False) -> list[dict]:
    from tests.hook_serve import HookServe

    n_cmd, n_http = (10, 100) if quick else (30, 400)
    base = floor(repeat=n_cmd)
    with tempfile.TemporaryDirectory() as tmp:
        root = _project(tmp)
        command = []
        for i in range(n_cmd):
            pre = time_cmd(memhealth_cmd() + ["hook", "pre-tool"], _payload(root, "PreToolUse", f"c{i}"),
                           cwd=root, repeat=1, warmup=0)
            post = time_cmd(memhealth_cmd() + ["hook", "post-tool"], _payload(root, "PostToolUse", f"c{i}"),
                            cwd=root, repeat=1, warmup=0)
            command.append(pre[0] + post[0])
        serve = HookServe.start(root)
        try:
            auth = f"Bearer {serve.secret}"
            for i in range(5):  # warm-up: the first events import the handlers
                _post(serve.port, "/memhealth/hook/pre-tool", _payload(root, "PreToolUse", f"w{i}"), auth)
            over_http = []
            for i in range(n_http):
                t0 = time.perf_counter()
                _post(serve.port, "/memhealth/hook/pre-tool", _payload(root, "PreToolUse", f"h{i}"), auth)
                _post(serve.port, "/memhealth/hook/post-tool", _payload(root, "PostToolUse", f"h{i}"), auth)
                over_http.append(time.perf_counter() - t0)
        finally:
            serve.kill()
    f50 = pct(base, 50)
    rows = [row("interpreter floor (python -c 'import sqlite3, json')", f50 * 1000, "ms",
                note=f"p50 of {len(base)}")]
    for label, samples, target in (("command hooks", command, ""), ("HTTP hooks", over_http, "< 3 ms")):
        for q in (50, 99):
            v = pct(samples, q)
            rows.append(row(f"PreToolUse + PostToolUse per Read, {label}, p{q}", v * 1000, "ms",
                            target=target if q == 50 else "",
                            note=f"{v / f50:.2f}x the floor's p50; {len(samples)} samples"))
    rows.append(row("per Read: command / HTTP (p50)", pct(command, 50) / pct(over_http, 50), "x"))
    return rows
