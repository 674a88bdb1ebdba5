"""A stand-in Ollama server for tests and benchmarks: a real HTTP server on 127.0.0.1:0.

    with OllamaStandin(mode="healthy", dim=8) as ollama:
        client = OllamaClient(ollama.url, "nomic-embed-text", 8)
        ollama.mode = "busy"                      # switch fault at runtime

It speaks the endpoints memhealth uses (Ollama's HTTP API): GET /api/tags, POST /api/show,
POST /api/embed, legacy POST /api/embeddings, GET /api/ps. Vectors are hash-seeded and
L2-normalised: identical text gives identical vectors; similar text is not close.

Modes (`OllamaStandin.MODES`):
    healthy           answers everything; the model is loaded
    instant           healthy, but request bodies are not kept (benchmarks)
    cold              the first embed waits `load_delay_s`, then warm; /api/ps empty until then
    hung              accepts, then answers nothing until `hang_s` passes or the server closes
    model_missing     404 on embed/show, empty tags (body form chosen by `missing_body`)
    busy              503 with Ollama's queue-full body (two spaces)
    wrong_width       embeddings of `dim + 1` floats
    context_overflow  500 "the input length exceeds the context length" past `max_chars`
    not_ollama        200 text/html on every path
    legacy            an old server: /api/embed is a 404 route; /api/embeddings works

`embed_delay_s` delays every embed answer (a model slower than an ingest budget).

Every request is recorded in `.requests` (method, path, parsed JSON body) so tests can
assert that keep_alive and options.num_ctx never change between requests.
"""

from __future__ import annotations

import array
import hashlib
import json
import math
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple

BUSY_BODY = {"error": "server busy, please try again.  maximum pending requests exceeded"}
OVERFLOW_ERROR = "the input length exceeds the context length"


class Request(NamedTuple):
    method: str
    path: str
    body: dict | None


def vector(text: str, dim: int) -> list[float]:
    """The stand-in's embedding of `text`: deterministic, hash-seeded, unit length."""
    # shake_256 gives any number of bytes in one C call, fast enough for >1000 texts/s.
    raw = array.array("h", hashlib.shake_256(text.encode("utf-8", "replace")).digest(2 * dim))
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


class OllamaStandin:
    """A fake Ollama with injectable faults; see the module docstring for the modes.

        with OllamaStandin(mode="cold", load_delay_s=0.5) as ollama:
            httpx.post(ollama.url + "/api/embed", json={...})   # waits 0.5 s once
    """

    MODES = ("healthy", "instant", "cold", "hung", "model_missing", "busy", "wrong_width",
             "context_overflow", "not_ollama", "legacy")

    def __init__(self, mode: str = "healthy", dim: int = 8, models: list[str] | None = None,
                 load_delay_s: float = 1.0, hang_s: float = 30.0, max_chars: int = 2000,
                 missing_body: str = "short", context_length: int = 8192,
                 overflow_status: int = 500, tls=None, generate=None, embed_delay_s: float = 0.0):
        self.dim = dim
        # every embed request waits this long before answering: a slow model on a small box
        self.embed_delay_s = embed_delay_s
        self.models = list(models) if models is not None else ["nomic-embed-text"]
        self.load_delay_s = load_delay_s
        self.hang_s = hang_s
        self.max_chars = max_chars
        self.missing_body = missing_body  # "short": model 'X' not found; "pull": ..., try pulling it first
        self.context_length = context_length
        self.overflow_status = overflow_status
        # /api/generate answers generate(request body) -> the "response" text
        self.generate = generate or (lambda body: '{"records": []}')
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._conns: dict[socket.socket, threading.Thread] = {}
        self._load_until: float | None = None
        self._loaded = True
        self._mode = "healthy"
        self.mode = mode
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.standin = self
        self.tls = tls  # an ssl.SSLContext (server side): speak https with its certificate
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # -- control --------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls is not None else 'http'}://{host}:{port}"

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in self.MODES:
            raise ValueError(f"unknown mode {value!r}; one of {', '.join(self.MODES)}")
        with self._lock:
            self._mode = value
            if value == "cold":  # switching to cold unloads the model
                self._loaded = False
                self._load_until = None

    @property
    def loaded(self) -> bool:
        return self._loaded

    def paths(self) -> list[str]:
        return [r.path for r in self.requests]

    def bodies(self, path: str) -> list[dict]:
        return [r.body for r in self.requests if r.path == path and r.body is not None]

    def close(self) -> None:
        """Stop serving; wake hung handlers and drop open connections (bounded)."""
        self._closing.set()
        self._server.shutdown()
        with self._lock:
            conns = list(self._conns.items())
        for sock, _thread in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        for _sock, thread in conns:
            thread.join(timeout=2.0)
        self._thread.join(timeout=2.0)

    def __enter__(self) -> OllamaStandin:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- behaviour ------------------------------------------------------------------

    def _record(self, method: str, path: str, body) -> None:
        if self._mode == "instant":
            body = None
        with self._lock:
            self.requests.append(Request(method, path, body if isinstance(body, dict) else None))

    def _has(self, name: str) -> bool:
        bare = name[:-len(":latest")] if name.endswith(":latest") else name
        return any(m == bare or m == name or m == f"{bare}:latest" for m in self.models)

    def _missing(self, name: str) -> tuple[int, dict]:
        if self.missing_body == "pull":
            return 404, {"error": f'model "{name}" not found, try pulling it first'}
        return 404, {"error": f"model '{name}' not found"}

    def _wait_loaded(self) -> float:
        """Block (bounded) until the model is loaded; return the seconds spent loading."""
        with self._lock:
            if self._loaded:
                return 0.0
            if self._load_until is None:
                self._load_until = time.monotonic() + self.load_delay_s
            until = self._load_until
        started = time.monotonic()
        remaining = until - started
        if remaining > 0:
            self._closing.wait(remaining)
        with self._lock:
            self._loaded = True
        return time.monotonic() - started

    def handle(self, method: str, path: str, body) -> tuple[int, str, bytes]:
        """(status, content type, body bytes) for one request."""
        mode = self._mode
        if mode == "not_ollama":
            return 200, "text/html", b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
        if mode == "hung":
            self._closing.wait(self.hang_s)
            return 0, "", b""  # drop the connection without an answer
        if method == "GET" and path == "/api/tags":
            models = [] if mode == "model_missing" else [
                {"name": f"{m}:latest" if ":" not in m else m, "model": f"{m}:latest" if ":" not in m else m,
                 "modified_at": "2026-01-01T00:00:00Z", "size": 274302450, "digest": "0" * 64,
                 "details": {"family": "nomic-bert", "parameter_size": "137M", "quantization_level": "F16"}}
                for m in self.models]
            return _json(200, {"models": models})
        if method == "GET" and path == "/api/ps":
            loaded = [] if (mode == "model_missing" or not self._loaded) else [
                {"name": m, "model": m, "size": 1, "digest": "0" * 64, "details": {},
                 "expires_at": "2099-01-01T00:00:00Z", "size_vram": 0,
                 "context_length": self.context_length} for m in self.models]
            return _json(200, {"models": loaded})
        if not isinstance(body, dict):
            return _json(400, {"error": "missing request body"})
        name = str(body.get("model", ""))
        if method == "POST" and path == "/api/show":
            if mode == "model_missing" or not self._has(name):
                return _json(*self._missing(name))
            return _json(200, {
                "details": {"family": "nomic-bert", "format": "gguf"},
                "model_info": {"general.architecture": "nomic-bert",
                               "nomic-bert.embedding_length": self.dim,
                               "nomic-bert.context_length": self.context_length},
                "capabilities": ["embedding"]})
        if method == "POST" and path in ("/api/embed", "/api/embeddings"):
            if path == "/api/embed" and mode == "legacy":
                return 404, "text/plain", b"404 page not found"  # Go's default for an unknown route
            if mode == "busy":
                return _json(503, BUSY_BODY)
            if mode == "model_missing" or not self._has(name):
                return _json(*self._missing(name))
            if path == "/api/embed":
                raw = body.get("input")
                texts = [raw] if isinstance(raw, str) else raw
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    return _json(400, {"error": "invalid input type"})
            else:
                prompt = body.get("prompt")
                if not isinstance(prompt, str):
                    return _json(400, {"error": "invalid input type"})
                texts = [prompt]
            if mode == "context_overflow" and any(len(t) > self.max_chars for t in texts):
                return _json(self.overflow_status, {"error": OVERFLOW_ERROR})
            t0 = time.monotonic()
            load_s = self._wait_loaded() if mode == "cold" else 0.0
            if self.embed_delay_s > 0:
                self._closing.wait(self.embed_delay_s)
            width = self.dim + 1 if mode == "wrong_width" else self.dim
            vectors = [vector(t, width) for t in texts]
            total_ns = int((time.monotonic() - t0) * 1e9)
            if path == "/api/embeddings":
                return _json(200, {"embedding": vectors[0]})
            return _json(200, {"model": name, "embeddings": vectors, "total_duration": total_ns,
                               "load_duration": int(load_s * 1e9),
                               "prompt_eval_count": sum(len(t.split()) for t in texts)})
        if method == "POST" and path == "/api/generate":
            if mode == "busy":
                return _json(503, BUSY_BODY)
            if mode == "model_missing" or not self._has(name):
                return _json(*self._missing(name))
            if not isinstance(body.get("prompt"), str):
                return _json(400, {"error": "invalid input type"})
            return _json(200, {"model": name, "created_at": "2026-12-01T00:00:00Z",
                               "response": self.generate(body), "done": True, "done_reason": "stop"})
        return 404, "text/plain", b"404 page not found"


def _json(status: int, payload: dict) -> tuple[int, str, bytes]:
    return status, "application/json; charset=utf-8", json.dumps(payload, separators=(",", ":")).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    standin: OllamaStandin


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects from Ollama
    # Real Ollama (Go net/http) sets TCP_NODELAY; without it every kept-alive answer would
    # wait ~40 ms for a delayed ACK and timings would measure that artifact.
    disable_nagle_algorithm = True
    timeout = 10.0  # an idle kept-alive connection cannot hold a thread forever

    def setup(self) -> None:
        super().setup()
        standin = self.server.standin
        with standin._lock:
            standin._conns[self.connection] = threading.current_thread()

    def finish(self) -> None:
        standin = self.server.standin
        with standin._lock:
            standin._conns.pop(self.connection, None)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format, *args) -> None:  # noqa: A002 - stdlib signature
        pass

    def _serve(self, method: str) -> None:
        standin = self.server.standin
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        path = self.path.split("?", 1)[0]
        standin._record(method, path, body)
        status, ctype, payload = standin.handle(method, path, body)
        if status == 0:
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


def closed_url() -> str:
    """An http:// URL on a loopback port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
