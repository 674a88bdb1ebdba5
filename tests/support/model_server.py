"""An Ollama-compatible embedding server backed by the real all-MiniLM-L6-v2
(tests/support/minilm.py), on 127.0.0.1 only: meaning is tested with meaning.

    with ModelServer() as server:                  # in-process, a thread per connection
        configure_project(root, server.url)        # [embedding] url, model, dim = 384
    python -m tests.support.model_server           # a process: prints its URL, serves until
                                                   # SIGTERM, stdin closing, or --max-seconds

It answers what memhealth's client and the gate's probe call (Ollama's API, docs/api.md):
POST /api/embed (`input` a string or a list; `truncate`, default true), the legacy POST
/api/embeddings, GET /api/tags, POST /api/show (`bert.embedding_length` 384,
`bert.context_length` 256), GET /api/ps and GET /api/version. A model other than
`all-minilm` is a 404 in Ollama's words.

Bounded, as a server on a shared box must be: a request body over `max_body_bytes` is a
413, more than `max_inputs` texts a 400; one model runs one batch at a time (Ollama's
OLLAMA_NUM_PARALLEL=1) and a request that cannot get it within `queue_timeout_s`, or finds
`max_pending` requests already waiting, gets Ollama's 503 queue-full answer; an idle kept-
alive connection is closed after `idle_timeout_s`. Text over 256 tokens is truncated, or
with `truncate: false` refused as Ollama refuses it. Every vector is cached by text
(`cache=False` for throughput measurements), so a suite that ingests the same corpus twice
pays for it once. The fault-injecting stand-in (tests/support/ollama_standin.py) stays for faults.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support import minilm

BUSY_BODY = {"error": "server busy, please try again.  maximum pending requests exceeded"}
OVERFLOW_ERROR = "the input length exceeds the context length"
VERSION = "0.0.0-memhealth-minilm"
LOOPBACK = ("127.0.0.1", "::1")


class ModelServer:
    """The real model behind Ollama's embedding API on loopback; see the module docstring.

        with ModelServer() as server:
            OllamaClient(server.url, "all-minilm", 384).embed(["a two-way browser connection"])
    """

    def __init__(self, model: minilm.MiniLM | None = None, host: str = "127.0.0.1", port: int = 0,
                 models: tuple[str, ...] = (minilm.MODEL_NAME,), cache: bool = True,
                 cache_size: int = 50_000, max_body_bytes: int = 4 << 20, max_inputs: int = 512,
                 max_pending: int = 16, queue_timeout_s: float = 30.0, idle_timeout_s: float = 10.0):
        if host not in LOOPBACK:
            raise ValueError(f"the model server binds loopback only, not {host!r}")
        self.model = model or minilm.MiniLM.load()
        self.models = models
        self.cache = OrderedDict() if cache else None
        self.cache_size = cache_size
        self.max_body_bytes = max_body_bytes
        self.max_inputs = max_inputs
        self.max_pending = max_pending
        self.queue_timeout_s = queue_timeout_s
        self.embedded = 0          # texts run through the model (cache misses)
        self.requests = 0          # /api/embed and /api/embeddings requests answered
        self._run = threading.Lock()    # one batch at a time
        self._lock = threading.Lock()   # counters, cache, pending
        self._pending = 0
        self._started = time.time()
        handler = type("_BoundHandler", (_Handler,), {"timeout": idle_timeout_s})
        server_cls = _Server6 if ":" in host else _Server
        self._server = server_cls((host, port), handler)
        self._server.app = self
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the model ----------------------------------------------------------------------

    def _has(self, name: str) -> bool:
        bare = name[:-len(":latest")] if name.endswith(":latest") else name
        return bare in self.models

    def vectors(self, texts: list[str]) -> tuple[list[list[float]], int]:
        """(vectors, tokens counted) for `texts`, the model held for the cache misses only.
        TimeoutError when the model stays busy past queue_timeout_s."""
        found: dict[str, list[float]] = {}
        if self.cache is not None:
            with self._lock:
                for t in texts:
                    if t in self.cache:
                        self.cache.move_to_end(t)
                        found[t] = self.cache[t]
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            if not self._run.acquire(timeout=self.queue_timeout_s):
                raise TimeoutError("model busy")
            try:
                rows = self.model.embed(missing)
            finally:
                self._run.release()
            with self._lock:
                self.embedded += len(missing)
                for t, row in zip(missing, rows, strict=True):
                    vec = [float(x) for x in row]
                    found[t] = vec
                    if self.cache is not None:
                        self.cache[t] = vec
                        if len(self.cache) > self.cache_size:
                            self.cache.popitem(last=False)
        tokens = sum(self.model.tokens(t) for t in texts)
        return [found[t] for t in texts], tokens

    # -- the API ------------------------------------------------------------------------

    def handle(self, method: str, path: str, body) -> tuple[int, dict | bytes]:
        if method == "GET" and path == "/api/version":
            return 200, {"version": VERSION}
        if method == "GET" and path == "/api/tags":
            return 200, {"models": [self._tag(m) for m in self.models]}
        if method == "GET" and path == "/api/ps":
            return 200, {"models": [{**self._tag(m), "expires_at": "2099-01-01T00:00:00Z", "size_vram": 0,
                                     "context_length": minilm.MAX_TOKENS} for m in self.models]}
        if method == "GET" and path in ("/", "/api"):
            return 200, b"Ollama is running"
        if method != "POST" or path not in ("/api/show", "/api/embed", "/api/embeddings"):
            return 404, b"404 page not found"
        if not isinstance(body, dict):
            return 400, {"error": "missing request body"}
        name = str(body.get("model", ""))
        if not self._has(name):
            return 404, {"error": f"model '{name}' not found"}
        if path == "/api/show":
            return 200, {"details": {"family": "bert", "format": "safetensors", "parameter_size": "23M",
                                     "quantization_level": "F32"},
                         "model_info": {"general.architecture": "bert",
                                        "bert.embedding_length": minilm.DIM,
                                        "bert.context_length": minilm.MAX_TOKENS,
                                        "bert.block_count": minilm.LAYERS},
                         "capabilities": ["embedding"]}
        if path == "/api/embed":
            raw = body.get("input")
            texts = [raw] if isinstance(raw, str) else raw
        else:
            texts = [body.get("prompt")]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, {"error": "invalid input type"}
        if len(texts) > self.max_inputs:
            return 400, {"error": f"too many inputs: {len(texts)} > {self.max_inputs}"}
        if body.get("truncate") is False and any(self.model.overflows(t) for t in texts):
            return 400, {"error": OVERFLOW_ERROR}
        with self._lock:
            if self._pending >= self.max_pending:
                return 503, BUSY_BODY
            self._pending += 1
        t0 = time.monotonic()
        try:
            vectors, tokens = self.vectors(texts)
        except TimeoutError:
            return 503, BUSY_BODY
        finally:
            with self._lock:
                self._pending -= 1
                self.requests += 1
        if path == "/api/embeddings":
            return 200, {"embedding": vectors[0]}
        return 200, {"model": name, "embeddings": vectors, "total_duration": int((time.monotonic() - t0) * 1e9),
                     "load_duration": 0, "prompt_eval_count": tokens}

    def _tag(self, name: str) -> dict:
        full = name if ":" in name else f"{name}:latest"
        return {"name": full, "model": full, "modified_at": "2026-01-01T00:00:00Z", "size": 90868376,
                "digest": minilm.SAFETENSORS_SHA256,
                "details": {"family": "bert", "parameter_size": "23M", "quantization_level": "F32"}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    app: ModelServer


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as memhealth's bulk client expects
    disable_nagle_algorithm = True  # as Go's net/http: no delayed-ACK stall per answer

    def log_message(self, format, *args) -> None:  # noqa: A002 - stdlib signature
        pass

    def _serve(self, method: str) -> None:
        app = self.server.app
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > app.max_body_bytes:
            self.close_connection = True
            self._send(413, {"error": f"request body over {app.max_body_bytes} bytes"})
            return
        raw = self.rfile.read(length) if length else b""
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        status, payload = app.handle(method, self.path.split("?", 1)[0], body)
        self._send(status, payload)

    def _send(self, status: int, payload) -> None:
        if isinstance(payload, bytes):
            data, ctype = payload, "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload, separators=(",", ":")).encode("utf-8"), "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")


def configure_project(root: str, url: str, **extra) -> None:
    """Point a project's [embedding] at the real model: url, model all-minilm, dim 384,
    num_ctx 256 (its context), plus any other [embedding] key in `extra`."""
    path = os.path.join(str(root), ".memhealth", "config.toml")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    keys = {"url": url, "model": minilm.MODEL_NAME, "dim": minilm.DIM, "num_ctx": minilm.MAX_TOKENS, **extra}
    ours = [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    if "[embedding]" not in lines:
        lines += ["", "[embedding]"]
    start = lines.index("[embedding]") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
    # a key set before (by an earlier call) is replaced, not repeated: TOML refuses duplicates
    kept = [line for line in lines[start:end] if line.split("=", 1)[0].strip() not in keys]
    lines[start:end] = ours + kept
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.model_server",
                                     description="all-MiniLM-L6-v2 behind Ollama's embedding API on loopback")
    parser.add_argument("--host", default="127.0.0.1", choices=LOOPBACK)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-cache", action="store_true", help="embed every text (throughput runs)")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="exit after this long")
    args = parser.parse_args(argv)
    try:
        model = minilm.MiniLM.load()
    except minilm.Unavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ModelServer(model, host=args.host, port=args.port, cache=not args.no_cache) as server:
        print(server.url, flush=True)

        def watch_stdin() -> None:  # the parent went away: so do we
            try:
                sys.stdin.read()
            except (OSError, ValueError):
                return
            stop.set()

        if not sys.stdin.isatty():
            threading.Thread(target=watch_stdin, daemon=True).start()
        stop.wait(args.max_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
