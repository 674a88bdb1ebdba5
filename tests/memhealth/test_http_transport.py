"""The HTTP hook transport: `memhealth init --transport http` points UserPromptSubmit,
PreToolUse, PostToolUse and Stop at a real `memhealth serve` process on loopback, which runs
the same hook contract by the same code as `memhealth hook EVENT`: the heartbeat row, the
decision row of every prompt, the cue audit, the same JSON out. A request without the
project's secret is refused (401), counted, and writes nothing else."""

from __future__ import annotations

import json
import os
import socket
import stat
import time

import pytest

from tests.conftest import payload, rows, run_cli, run_hook
from tests.support.hook_serve import HookServe

CUED = """---
name: The writer batches appends
kind: gotcha
paths: src/ledger/writer.py
---
The ledger writer batches appends for 5 ms; never call it once per entry in a loop.
"""
PINNED = """---
name: Checkpoints only in the compactor
kind: invariant
pinned: true
---
Only the compactor runs the WAL checkpoint.
"""


def settings(root) -> dict:
    with open(os.path.join(str(root), ".claude", "settings.local.json"), encoding="utf-8") as fh:
        return json.load(fh)


def ours(settings_doc: dict, claude_event: str) -> dict:
    (handler,) = [h for g in settings_doc["hooks"][claude_event] for h in g["hooks"]]
    return handler


@pytest.fixture
def cued_project(project):
    os.makedirs(project / "src" / "ledger", exist_ok=True)
    (project / "src" / "ledger" / "writer.py").write_text("BATCH_MAX = 256\n")
    memory = project / ".memhealth" / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "writer-batches.md").write_text(CUED)
    (memory / "checkpoints.md").write_text(PINNED)
    proc = run_cli("ingest", "--project", str(project), "memory")
    assert proc.returncode == 0, proc.stderr
    return project


@pytest.fixture
def served(cued_project):
    hs = HookServe.start(cued_project)
    try:
        yield hs
    finally:
        hs.kill()


def test_init_transport_http_wires_the_turn_hooks_to_serve_and_transport_command_goes_back(project):
    proc = run_cli("init", "--project", str(project), "--transport", "http", "--no-templates")
    assert proc.returncode == 0, proc.stderr
    doc = settings(project)
    secret_file = project / ".memhealth" / "hook-secret"
    secret = secret_file.read_text().strip()
    assert len(secret) == 64 and stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    settings_file = project / ".claude" / "settings.local.json"
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600  # it carries the secret
    for claude_event, event in (("UserPromptSubmit", "prompt"), ("PreToolUse", "pre-tool"),
                                ("PostToolUse", "post-tool"), ("Stop", "stop")):
        handler = ours(doc, claude_event)
        assert handler["type"] == "http", handler
        assert handler["url"] == f"http://127.0.0.1:9464/memhealth/hook/{event}"
        assert handler["headers"] == {"Authorization": f"Bearer {secret}"}
        assert isinstance(handler["timeout"], int) and handler["timeout"] <= 10
    for claude_event in ("SessionStart", "PreCompact", "SessionEnd"):
        assert ours(doc, claude_event)["type"] == "command"
    assert doc["hooks"]["PreToolUse"][0]["matcher"] == "Read|Edit|Write|MultiEdit|NotebookEdit|Bash"
    # idempotent, and the secret is kept; a plain `memhealth init` (the repair many FIXes name)
    # keeps the transport the settings use
    again = run_cli("init", "--project", str(project), "--transport", "http", "--no-templates")
    assert "nothing changed" in again.stdout and secret_file.read_text().strip() == secret
    repair = run_cli("init", "--project", str(project), "--no-templates")
    assert "nothing changed" in repair.stdout and ours(settings(project), "PreToolUse")["type"] == "http"

    back = run_cli("init", "--project", str(project), "--transport", "command", "--no-templates")
    assert back.returncode == 0, back.stderr
    doc = settings(project)
    for claude_event in ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"):
        handler = ours(doc, claude_event)
        assert handler["type"] == "command" and handler["command"].endswith(" hook " + {
            "UserPromptSubmit": "prompt", "PreToolUse": "pre-tool", "PostToolUse": "post-tool",
            "Stop": "stop"}[claude_event])
    assert secret not in settings_file.read_text()


def test_the_http_transport_refuses_shared_settings_and_writes_nothing(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    proc = run_cli("init", "--project", str(root), "--settings", "shared", "--transport", "http")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "--settings local" in proc.stderr
    assert not (root / ".claude").exists() and not (root / ".memhealth").exists()


def test_a_tool_event_over_http_gets_the_same_answer_and_rows_as_the_command_hook(served):
    root = served.root
    body = payload("pre-tool", root, session_id="over-http", tool_name="Read",
                   tool_input={"file_path": os.path.join(root, "src", "ledger", "writer.py")})
    code, answer = served.post("pre-tool", body)
    assert code == 200, answer
    run = run_hook("pre-tool", {**body, "session_id": "by-command"}, cwd=root)
    assert run.returncode == 0 and run.stderr == b""
    assert json.loads(answer) == json.loads(run.stdout)  # the same code: the same JSON
    assert "The writer batches appends" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    beats = dict(rows(root, "SELECT session_id, pid FROM heartbeats WHERE hook = 'pre-tool' AND outcome = 'ok'"))
    assert beats["over-http"] == served.pid and beats["by-command"] != served.pid
    fired = rows(root, "SELECT a.session_id, a.outcome FROM cue_audit a JOIN heartbeats h ON h.trace_id = a.trace_id "
                       "WHERE a.event = 'pre-tool' ORDER BY a.id")
    assert fired == [("over-http", "fired"), ("by-command", "fired")]
    transport = rows(root, "SELECT attributes FROM spans WHERE name = 'memhealth.hook pre-tool' ORDER BY id")
    assert ['"memhealth.hook.transport": "http"' in a[0] or '"memhealth.hook.transport":"http"' in a[0]
            for a in transport] == [True, False]
    code, ping = served.request("GET", "/memhealth/hook/ping")
    handled = json.loads(ping)["handled_ms"]
    assert code == 200 and handled["n"] == 1 and handled["p50"] > 0  # serve's own time per event


def test_every_prompt_over_http_writes_its_heartbeat_and_decision_row(served):
    root = served.root
    sent = [payload("prompt", root, prompt="thanks, looks good"),
            payload("prompt", root, prompt="<task-notification>\n<task-id>x</task-id>\n</task-notification>"),
            b'{"session_id": "sess-1", "prompt": ']
    for body in sent:
        code, answer = served.post("prompt", body)
        assert code == 200 and answer == b"", answer  # nothing to say: an empty body
    beats = rows(root, "SELECT outcome, reason FROM heartbeats WHERE hook = 'prompt' ORDER BY id")
    assert beats == [("ok", None), ("ok", None), ("error", "malformed_json")]
    assert [r[0] for r in rows(root, "SELECT outcome FROM decisions ORDER BY id")] == \
        ["no_intent", "system_turn", "error"]


def test_no_or_a_wrong_secret_is_refused_counted_and_writes_nothing(served):
    root = served.root
    body = payload("prompt", root, prompt="why do we batch the ledger writer?")
    for auth in (None, "Bearer " + "0" * 64, served.secret, "Basic " + served.secret):
        code, answer = served.post("prompt", body, authorization=auth)
        assert code == 401, (auth, answer)
    code, _ = served.request("GET", "/memhealth/hook/ping", authorization=None)
    assert code == 401
    assert rows(root, "SELECT count(*) FROM heartbeats") == [(0,)]
    assert rows(root, "SELECT count(*) FROM decisions") == [(0,)]
    assert rows(root, "SELECT value FROM rollups WHERE metric = 'memhealth_hook_http_rejected_total' "
                      "AND labels = '{\"reason\":\"unauthorized\"}'") == [(5.0,)]
    code, metrics = served.request("GET", "/metrics", authorization=None)
    assert code == 200
    assert 'memhealth_hook_http_rejected_total{reason="unauthorized"} 5.0' in metrics.decode()
    code, answer = served.request("GET", "/memhealth/hook/ping")
    assert code == 200 and json.loads(answer)["project"] == root


def test_a_request_without_a_length_is_refused_and_counted(served):
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(b"POST /memhealth/hook/prompt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                     + served.secret.encode() + b"\r\n\r\n")
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.0 400"), reply
    assert rows(served.root, "SELECT value FROM rollups WHERE metric = 'memhealth_hook_http_rejected_total' "
                             "AND labels = '{\"reason\":\"bad_request\"}'") == [(1.0,)]


def _db_fds(pid: int, db: str) -> int:
    fd_dir = f"/proc/{pid}/fd"
    return sum(1 for fd in os.listdir(fd_dir) if os.path.realpath(os.path.join(fd_dir, fd)) == db)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_serve_keeps_one_store_connection_across_events(served):
    root = served.root
    db = os.path.realpath(os.path.join(root, ".memhealth", "memory.db"))
    body = payload("post-tool", root, tool_name="Bash")
    assert served.post("post-tool", body)[0] == 200
    open_after_one = _db_fds(served.pid, db)
    for i in range(20):
        assert served.post("post-tool", {**body, "tool_use_id": f"t{i}"})[0] == 200
    assert _db_fds(served.pid, db) == open_after_one
    assert rows(root, "SELECT count(*), min(pid), max(pid) FROM heartbeats WHERE hook = 'post-tool'") == \
        [(21, served.pid, served.pid)]


def test_a_store_replaced_under_serve_is_reopened_not_written_as_a_ghost(served):
    root = served.root
    body = payload("stop", root)
    assert served.post("stop", body)[0] == 200
    db = os.path.join(root, ".memhealth", "memory.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    assert served.post("stop", body)[0] == 200
    assert rows(root, "SELECT hook, outcome FROM heartbeats") == [("stop", "ok")]  # the new file has it


def test_the_context_cost_of_each_invocation_is_exactly_what_it_emitted(served):
    root = served.root
    start = run_hook("session-start", payload("session-start", root, session_id="cost-1"), cwd=root)
    assert start.returncode == 0
    body = payload("pre-tool", root, session_id="cost-1", tool_name="Read",
                   tool_input={"file_path": os.path.join(root, "src", "ledger", "writer.py")})
    code, answer = served.post("pre-tool", body)
    assert code == 200
    emitted = {"session-start": len(start.context()),
               "pre-tool": len(json.loads(answer)["hookSpecificOutput"]["additionalContext"])}
    # serve answers as soon as the context is written, then commits the invocation's rows (the
    # hook's "written" is then true): the rows follow within moments, not before the answer
    deadline = time.monotonic() + 10
    while True:
        charged = dict(rows(root, "SELECT hook, sum(chars) FROM context_blocks WHERE session_id = 'cost-1' "
                                  "GROUP BY hook"))
        if charged == emitted or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert charged == emitted
    kinds = dict(rows(root, "SELECT kind, sum(chars) FROM context_blocks WHERE hook = 'session-start' GROUP BY kind"))
    context = start.context()
    assert context.startswith("MEMORY-HEALTH: ") and set(kinds) == {"verdict", "pinned"}
    assert kinds["verdict"] >= len(context.splitlines()[0])
    assert rows(root, "SELECT kind FROM context_blocks WHERE hook = 'pre-tool'") == [("cue",)]

    report = run_cli("report", "--json", "--project", root)
    assert report.returncode == 0, report.stderr
    cost = json.loads(report.stdout)["session_cost"]
    (session,) = [s for s in cost["sessions"] if s["session_id"] == "cost-1"]
    assert session["context_chars"] == sum(emitted.values())
    assert session["context_tokens_est"] == sum(-(-n // 4) for n in
                                                (r[0] for r in rows(root, "SELECT chars FROM context_blocks "
                                                                          "WHERE session_id = 'cost-1'")))
    assert session["tool_calls"] == 1 and session["hook_invocations"] == 2
    by_event = {e["hook"]: e for e in cost["by_event"]}
    assert by_event["pre-tool"]["with_context"] == 1 and by_event["pre-tool"]["p99_ms"] is not None
    text = run_cli("report", "--project", root).stdout
    assert "What memory cost" in text and "cost-1" in text


def test_session_start_starts_serve_when_autostart_is_on(cued_project):
    from tests.support.gate_fix_helpers import set_config

    root = str(cued_project)
    hs = HookServe.start(root)  # wire the settings to a port, then free it: nothing answers there
    hs.kill()
    set_config(root, "serve", "hook_autostart", True)
    run = run_hook("session-start", payload("session-start", root), cwd=root, timeout=60)
    assert run.returncode == 0, run.stderr
    with open(os.path.join(root, ".memhealth", "serve.pid"), encoding="ascii") as fh:
        pid = int(fh.read())
    try:
        out = json.loads(run.stdout)
        assert "started `memhealth serve`" in out["systemMessage"]
        assert "RED hook_transport" not in out["hookSpecificOutput"]["additionalContext"]
        code, answer = HookServe(root, None, hs.port).request("GET", "/memhealth/hook/ping")
        assert code == 200 and json.loads(answer)["project"] == root
        check = next(c for c in json.loads(run_cli("gate", "--json", "--project", root).stdout)["checks"]
                     if c["name"] == "hook_transport")
        assert check["status"] == "green" and check["state"] == "http", check
    finally:
        os.kill(pid, 15)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


def test_serve_keeps_the_embedding_breaker_open_across_events_for_its_cool_down(cued_project):
    """In a command hook the breaker lives one event; in serve it carries across events (a
    dead Ollama is not retried by every prompt) and closes after BREAKER_COOLDOWN_S."""
    from memhealth import hook_server
    from memhealth.project import Project
    from memory_core.index import embed

    now = [1000.0]
    runner = hook_server.HookRunner(Project(str(cued_project)), clock=lambda: now[0])
    url = "http://127.0.0.1:9"
    embed._OPEN[url] = embed.EmbedError("unreachable", "connection refused")
    out: list[bytes] = []
    body = json.dumps(payload("stop", cued_project)).encode()
    try:
        runner.run("stop", body, out.append)
        now[0] += hook_server.BREAKER_COOLDOWN_S - 1
        runner.run("stop", body, out.append)
        assert embed.circuit_open(url) is not None  # still open: the next prompt skips the dead server
        now[0] += 2
        runner.run("stop", body, out.append)
        assert embed.circuit_open(url) is None  # cooled down: the next prompt tries again
        assert rows(cued_project, "SELECT count(*), min(pid) FROM heartbeats WHERE hook = 'stop' AND outcome = 'ok'") \
            == [(3, os.getpid())]
    finally:
        embed.forget_process_state()
        runner.close()


def test_the_ablation_report_puts_each_arm_s_context_cost_side_by_side(project):
    """The injection-off arm's saving is the context it kept out: what the baseline emitted
    against nothing, and the would-inject characters the ablated arm recorded instead."""
    from memory_core.store.db import connect
    from tests.memory_core.delivery.test_ablation import BUILD, pass_a_day
    from tests.memory_core.delivery.test_inject import COMPACTOR, seed

    conn = connect(project / ".memhealth" / "memory.db")
    seed(conn, extra=[COMPACTOR])
    conn.close()
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "compactor.py").write_text("def fold(): ...\n", encoding="utf-8")
    p = str(project)
    assert run_cli("ablation", "start", "injection-off", "--days", "2", "--project", p).returncode == 0
    ablated = run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-day1"), cwd=p)
    assert ablated.stdout == b""
    (detail,) = rows(project, "SELECT detail FROM decisions")
    would = json.loads(detail[0])["would_inject_chars"]
    assert would > 0
    pass_a_day(project)
    conn = connect(project / ".memhealth" / "memory.db")
    with conn:
        conn.execute("UPDATE context_blocks SET ts_ns = ts_ns - 86400000000000")
    conn.close()
    baseline = run_hook("prompt", payload("prompt", project, prompt=BUILD, session_id="s-day2"), cwd=p)
    emitted = len(baseline.context())
    data = json.loads(run_cli("report", "--ablation", "--json", "--project", p).stdout)
    base, abl = data["arms"]["baseline"]["cost"], data["arms"]["ablated"]["cost"]
    assert (base["context_chars"], abl["context_chars"]) == (emitted, 0)
    assert base["context_tokens_est"] == -(-emitted // 4)
    assert (base["would_inject_chars"], abl["would_inject_chars"]) == (0, would)
    assert base["hook_ms"] > 0 and abl["hook_ms"] > 0
    text = run_cli("report", "--ablation", "--project", p).stdout
    assert "recall kept out (would-inject chars)" in text and str(would) in text


@pytest.mark.parametrize("listen, said", [("0.0.0.0:9464", "loopback"), ("127.0.0.1:0", "fixed port")])
def test_the_http_transport_needs_a_fixed_loopback_listen_address(project, listen, said):
    from tests.support.hook_serve import set_listen

    set_listen(project, listen)
    before = (project / ".claude" / "settings.local.json").read_text()
    proc = run_cli("init", "--project", str(project), "--transport", "http", "--no-templates")
    assert proc.returncode == 2 and said in proc.stderr and "[serve] listen" in proc.stderr, proc.stderr
    assert (project / ".claude" / "settings.local.json").read_text() == before
    assert not (project / ".memhealth" / "hook-secret").exists()
