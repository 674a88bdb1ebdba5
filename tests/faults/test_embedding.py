"""Embedding faults, through the session-start hook and `memhealth gate`: each one exits 0
within the hook's timeout, and the gate names a state of its own with its fix. An HTML
page and a truncated JSON reply are not "unreachable" (the alert that pages on down must
not fire on them)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import clean_env, payload, run_hook
from tests.faults.helpers import TIMEOUTS, check, gate
from tests.support.ollama_standin import OllamaStandin


class TruncatingProxy:
    """Answers every request with JSON cut off mid-body (a proxy that drops the tail)."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                body = b'{"model": "nomic-embed-text", "embeddings": [[0.12, 0.5'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class StatusServer(TruncatingProxy):
    """Answers every request at once with one HTTP status and body: a web server that is not
    Ollama (404 on every path), or an Ollama whose runner fails (500)."""

    def __init__(self, status: int, body: bytes):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if status == 404 else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


def _refused_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("fault, state, status, fix_words", [
    ("refused", "unreachable", "red", "ollama serve"),
    ("not_ollama", "not_ollama", "red", "something else listens"),
    ("truncated", "malformed_reply", "red", "proxy"),
    ("model_missing", "model_missing", "red", "ollama pull"),
    ("busy", "ok", "note", "OLLAMA_MAX_QUEUE"),
    ("hung", "wedged", "red", "restart Ollama"),
    # only a probe that waited out the full warm-up may say wedged
    ("404 everywhere", "not_ollama", "red", "something else listens"),
    ("500 at once", "server_error", "red", "server log"),
])
def test_each_embedding_fault_has_its_state_within_the_hook_budget(project, fault, state, status, fix_words):
    if fault == "refused":
        server, url = None, _refused_url()
    elif fault == "truncated":
        server = TruncatingProxy()
        url = server.url
    elif fault == "404 everywhere":
        server = StatusServer(404, b"404 page not found")
        url = server.url
    elif fault == "500 at once":
        server = StatusServer(500, b'{"error":"llama runner process has terminated: signal: killed"}')
        url = server.url
    else:
        server = OllamaStandin(fault, dim=8, hang_s=20)
        server.__enter__()
        url = server.url
    try:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=url, MEMHEALTH_EMBEDDING_DIM="8",
                        MEMHEALTH_EMBEDDING_TIMEOUT_S="0.5", MEMHEALTH_EMBEDDING_WARMUP_TIMEOUT_S="0.5")
        run = run_hook("session-start", payload("SessionStart", project, source="startup"), cwd=str(project),
                       env=env, timeout=TIMEOUTS["session-start"])
        assert run.returncode == 0 and run.seconds < 5.0  # SessionStart's latency budget
        assert "embedding_path" in run.context() or status == "note"
        probe = check(gate(project, env=env), "embedding_path")
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    assert (probe["state"], probe["status"]) == (state, status), probe
    assert fix_words in probe["fix"]
