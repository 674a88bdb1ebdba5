"""The per-tool-call cost of each hook transport, hook by hook: PreToolUse + PostToolUse for
one Read, as a process per event (`memhealth hook pre-tool`, what `memhealth init` writes)
and as two POSTs to a running `memhealth serve` (`memhealth init --transport http`), beside
the interpreter floor `python -c "import sqlite3, json"` measured in the same run.

Each HTTP sample opens a new connection per request (the worst case for the client); the
project has a memory item cued on the file read, so the first Read of each session gets its
cue (a fresh session id per sample: every sample is a first touch, the expensive path).

Then the prompt hook with the real embedding model configured (all-MiniLM-L6-v2 behind its
Ollama-compatible server on loopback, tests/support/model_server.py, its vector cache off so
every prompt is embedded): command hook vs HTTP hook, where serve keeps the store, the
imported handlers and the embedding client warm. Three prompts on the starlette fixture
(tests/fixtures/realcorpus, every chunk's vector stored): a re-proposal (DO-NOT-REBUILD
passes the rare-word gate, the meaning gate embeds the prompt: one model call), a near miss
(the same, then silence), and chit-chat (no gate passes: no model call). Samples alternate
floor, command and HTTP, a fresh session each (the per-session caps never stop a block).
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
    """The tool hooks per transport, then the prompt hook with the real model."""
    from tests.support.hook_serve import HookServe

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
    return rows + bench_prompt_with_model(quick)


# -- the prompt hook with the real embedding model (`python benchmarks/run.py transport`) --------

PROMPTS = (  # (label, prompt, whether a DO-NOT-REBUILD must reach Claude)
    ("re-proposal (DO-NOT-REBUILD, meaning gate embeds the prompt)",
     "implement background tasks that run after the response has been sent", True),
    ("near miss (rare-word gate passes, meaning gate embeds, silent)",
     "add a static files bucket on S3 with CloudFront for the marketing site's images", False),
    ("chit-chat (no gate passes, no model call)", "thanks, that looks right", False),
)


def _prompt_payload(root: str, session: str, prompt: str) -> bytes:
    return json.dumps({"session_id": session, "cwd": root, "hook_event_name": "UserPromptSubmit",
                       "transcript_path": os.path.join(root, "t.jsonl"), "prompt": prompt,
                       "prompt_id": f"p-{session}"}).encode()


def _post_answer(port: int, body: bytes, auth: str) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", "/memhealth/hook/prompt", body=body,
                     headers={"Content-Type": "application/json", "Authorization": auth})
        resp = conn.getresponse()
        data = resp.read()
        assert resp.status == 200, resp.status
        return data
    finally:
        conn.close()


def _embed_once(url: str, text: str) -> float:
    """Seconds of one POST /api/embed of `text` to the model server (a new connection)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps({"model": "all-minilm", "input": [text]}).encode()
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("POST", "/api/embed", body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
    finally:
        conn.close()
    return time.perf_counter() - t0


def _load() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "?"


def bench_prompt_with_model(quick: bool = False) -> list[dict]:
    """Command vs HTTP prompt hook with the real model configured (see the module doc)."""
    import subprocess

    from tests.conftest import clean_env
    from tests.support import dnr_eval
    from tests.support.hook_serve import HookServe
    from tests.support.minilm import MiniLM, Unavailable
    from tests.support.model_server import ModelServer

    try:
        model = MiniLM.load()
    except Unavailable as exc:
        return [row("prompt hook with the real model: model unavailable", 0, "", note=str(exc))]
    n = 9 if quick else 31
    load_before = _load()
    out: list[dict] = []
    with ModelServer(model, cache=False) as server, tempfile.TemporaryDirectory() as tmp:
        root = dnr_eval.build_project("starlette", tmp, embedding_url=server.url, backfill=True)
        env = clean_env()
        hook = memhealth_cmd() + ["hook", "prompt"]
        # each prompt once by command, and its answer checked: the figures are of the real path
        for label, prompt, dnr in PROMPTS:
            before = server.requests
            run = subprocess.run(hook, input=_prompt_payload(root, f"check-{label[:8]}", prompt), cwd=root,
                                 env=env, capture_output=True, timeout=120)
            assert run.returncode == 0 and (b"DO-NOT-REBUILD" in run.stdout) == dnr, (label, run.stdout[:300])
            asked = server.requests - before
            assert asked == (0 if label.startswith("chit-chat") else 1), (label, asked)
        serve = HookServe.start(root, env=env)
        try:
            auth = f"Bearer {serve.secret}"
            for label, prompt, dnr in PROMPTS:  # warm-up, and the same answer over HTTP
                before = server.requests
                answer = _post_answer(serve.port, _prompt_payload(root, f"warm-{label[:8]}", prompt), auth)
                assert (b"DO-NOT-REBUILD" in answer) == dnr, (label, answer[:300])
                assert server.requests - before == (0 if label.startswith("chit-chat") else 1), label
            floor_s: list[float] = []
            model_s: list[float] = []  # the model's own share: one /api/embed of the prompt, direct
            got = {label: {"command": [], "http": []} for label, _p, _d in PROMPTS}
            for i in range(n):
                floor_s.extend(floor(repeat=1))
                model_s.append(_embed_once(server.url, f"{PROMPTS[0][1]} ({i})"))
                for label, prompt, _dnr in PROMPTS:
                    got[label]["command"].extend(time_cmd(
                        hook, _prompt_payload(root, f"c{i}-{label[:8]}", prompt), env=env, cwd=root,
                        repeat=1, warmup=0))
                    body = _prompt_payload(root, f"h{i}-{label[:8]}", prompt)
                    t0 = time.perf_counter()
                    _post_answer(serve.port, body, auth)
                    got[label]["http"].append(time.perf_counter() - t0)
        finally:
            serve.kill()
    f50, f99 = pct(floor_s, 50), pct(floor_s, 99)
    out.append(row("prompt hook, real model: interpreter floor (python -c 'import sqlite3, json')", f50 * 1000,
                   "ms", note=f"p50 of {len(floor_s)}; p99 {f99 * 1000:.1f} ms; load {load_before} -> {_load()}"))
    m50, m99 = pct(model_s, 50), pct(model_s, 99)
    out.append(row("prompt hook, real model: one /api/embed of the prompt, direct (the model's share)",
                   m50 * 1000, "ms", note=f"p50 of {len(model_s)}; p99 {m99 * 1000:.1f} ms; "
                                          f"{m50 / f50:.2f}x the floor's p50"))
    for label, _prompt, _dnr in PROMPTS:
        for transport in ("command", "http"):
            samples = got[label][transport]
            p50, p99 = pct(samples, 50), pct(samples, 99)
            out.append(row(f"prompt hook, real model, {label}, {transport}: p50", p50 / f50, "x floor p50",
                           note=f"p50 {p50 * 1000:.1f} ms; {len(samples)} samples"))
            out.append(row(f"prompt hook, real model, {label}, {transport}: p99", p99 / f99, "x floor p99",
                           note=f"p99 {p99 * 1000:.1f} ms; floor p99 {f99 * 1000:.1f} ms"))
        out.append(row(f"prompt hook, real model, {label}: command / HTTP (p50)",
                       pct(got[label]["command"], 50) / pct(got[label]["http"], 50), "x"))
    return out
