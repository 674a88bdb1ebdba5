"""The HTTP hook transport's endpoint in `memhealth serve`: Claude Code POSTs a hook's JSON
payload here instead of starting a process per event.

    endpoint = HookEndpoint(project, runner)   # runner: memhealth.hook_server.HookRunner
    if endpoint.handles(path): endpoint.handle(request_handler)

Routes (under PREFIX, "/memhealth/hook/"):
- `POST /memhealth/hook/<event>` (prompt, pre-tool, post-tool, stop, ...): the payload, as a
  command hook reads it on stdin. The runner runs the same hook contract as `memhealth hook
  EVENT` and answers with the same JSON (or an empty body: Claude Code reads it as `{}`).
- `GET /memhealth/hook/ping`: whether this serve takes this project's hooks (SessionStart's
  check and the gate's `hook_transport` check); answers the project root and counts.

Every request carries `Authorization: Bearer <secret>`, the project's secret
(memory_core.store.secret, `.memhealth/hook-secret`, 0600), compared in constant time: any
local process can reach loopback, and a memory hook writes rows and feeds Claude's context.
No or a wrong secret is 401 and counted (memhealth_hook_http_rejected_total), and the body
is never read.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections import deque

from memory_core.store import secret

PREFIX = "/memhealth/hook/"
PING = PREFIX + "ping"
MAX_BODY_BYTES = 16 * 1024 * 1024  # memhealth.hooks.MAX_STDIN_BYTES: the same cap as stdin
MAX_CHUNK_LINE = 64
HANDLED_KEPT = 1000  # events whose serve-side time GET .../ping summarises


class HookEndpoint:
    """Authenticates and reads hook requests, hands them to `runner`, answers them.

    `runner` has `run(event, raw, out, truncated)` (writes the context through `out(bytes)`,
    never raises) and `rejected(reason)` (counts a refused request in the store)."""

    def __init__(self, project, runner):
        self.project = project
        self.runner = runner
        self.started_at = time.time()
        self.counts = {"ok": 0, "unauthorized": 0, "bad_request": 0}
        # serve-side time of the latest events (request read to answer sent): what the client's
        # wait is beyond the network and its own scheduling
        self.handled_ms: deque[float] = deque(maxlen=HANDLED_KEPT)
        self._lock = threading.Lock()

    def handles(self, path: str) -> bool:
        return path.split("?", 1)[0].startswith(PREFIX)

    def close(self) -> None:
        close = getattr(self.runner, "close", None)
        if close is not None:
            close()

    # -- requests -------------------------------------------------------------------------

    def handle(self, req) -> None:
        """Answer one request on `req` (a BaseHTTPRequestHandler) completely."""
        try:  # headers and body leave as written: Nagle would hold the body for the client's delayed ACK
            req.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (OSError, AttributeError):
            pass
        path = req.path.split("?", 1)[0]
        if not secret.matches(self.project.state_dir, req.headers.get("Authorization")):
            self._reject(req, 401, "unauthorized",
                         "this serve takes hooks only with the project's secret (Authorization: Bearer "
                         "<.memhealth/hook-secret>); `memhealth init --transport http` writes it into "
                         "the settings")
            return
        if req.command in ("GET", "HEAD"):
            if path != PING:
                _answer(req, 405, _json({"error": f"{path} takes POST"}))
                return
            with self._lock:
                counts = dict(self.counts)
                handled = sorted(self.handled_ms)
            _answer(req, 200, _json({"project": self.project.root, "pid": os.getpid(),
                                     "uptime_s": round(time.time() - self.started_at, 3),
                                     "requests": counts,
                                     "handled_ms": {"n": len(handled), "p50": _q(handled, 50),
                                                    "p99": _q(handled, 99)}}))
            return
        if path == PING:
            _answer(req, 405, _json({"error": f"{PING} takes GET"}))
            return
        raw, truncated, problem = read_body(req)
        if problem is not None:
            self._reject(req, 400, "bad_request", problem)
            return
        event = path[len(PREFIX):]
        t0 = time.perf_counter()
        sent: list[bool] = []

        def out(data: bytes) -> None:
            _answer(req, 200, data)  # an OSError here is the hook's "reader went away"
            sent.append(True)

        self.runner.run(event, raw, out, truncated)
        with self._lock:
            self.counts["ok"] += 1
        if not sent:
            _answer(req, 200, b"")  # nothing to say: Claude Code reads an empty body as {}
        with self._lock:
            self.handled_ms.append((time.perf_counter() - t0) * 1000)
        if truncated:
            req.close_connection = True  # the rest of the body is still on the socket

    def _reject(self, req, code: int, reason: str, message: str) -> None:
        with self._lock:
            self.counts[reason] += 1
        try:
            self.runner.rejected(reason)
        except Exception:  # noqa: BLE001 - a count that cannot be written never costs the answer
            pass
        req.close_connection = True  # the body stays unread: never parse it as a request
        _answer(req, code, _json({"error": message}))


def read_body(req) -> tuple[bytes, bool, str | None]:
    """(body, truncated, problem): Content-Length or chunked, at most MAX_BODY_BYTES."""
    if "chunked" in (req.headers.get("Transfer-Encoding") or "").lower():
        return _read_chunked(req.rfile)
    length_text = req.headers.get("Content-Length")
    try:
        length = int(length_text)
    except (TypeError, ValueError):
        return b"", False, f"need a Content-Length (got {length_text!r})"
    if length < 0:
        return b"", False, f"bad Content-Length {length_text!r}"
    take = min(length, MAX_BODY_BYTES)
    return req.rfile.read(take), length > take, None


def _read_chunked(rfile) -> tuple[bytes, bool, str | None]:
    chunks, total = [], 0
    while True:
        line = rfile.readline(MAX_CHUNK_LINE)
        try:
            size = int(line.split(b";", 1)[0].strip() or b"x", 16)
        except ValueError:
            return b"", False, "malformed chunked body"
        if size == 0:
            rfile.readline(MAX_CHUNK_LINE)
            return b"".join(chunks), False, None
        if total + size > MAX_BODY_BYTES:
            chunks.append(rfile.read(MAX_BODY_BYTES - total))
            return b"".join(chunks), True, None
        chunks.append(rfile.read(size))
        total += size
        rfile.readline(MAX_CHUNK_LINE)


def _q(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return round(ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))], 3)


def _json(obj) -> bytes:
    return (json.dumps(obj) + "\n").encode("utf-8")


def _answer(req, code: int, body: bytes) -> None:
    req.send_response(code)
    req.send_header("Content-Type", "application/json")
    req.send_header("Content-Length", str(len(body)))
    req.send_header("Cache-Control", "no-store")
    req.end_headers()
    if req.command != "HEAD" and body:
        req.wfile.write(body)
    req.wfile.flush()
