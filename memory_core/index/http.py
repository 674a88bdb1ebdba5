"""A small HTTP/1.1 client for JSON calls to a plain-http embedding server.

    status, body = request("POST", "http://127.0.0.1:11434/api/embed", {"model": "m"},
                           connect_s=0.5, read_s=2.0)

Why not httpx everywhere: importing it costs 40-55 ms, two to three times the interpreter's own
start-up, and the embedding probe runs inside every SessionStart. Ollama speaks plain HTTP on
loopback or a LAN; that needs a socket, a request line, and a response parser that knows
Content-Length, chunked encoding and read-to-close. The rule (memory_core.index.embed.OllamaClient):
a process that makes one call and pays the import (the hooks, `memhealth gate`, `search`,
serve's scheduled probe) uses this client; bulk embedding (`ingest`, `embed`: many calls,
one kept-alive connection) and every https:// URL (TLS) go through httpx.

Errors are `HttpError` with `kind`: `connect_timeout`, `unreachable` (refused, reset, no
route), `timeout` (no answer within the read timeout or the deadline), `protocol` (what
answered is not HTTP). memory_core.index.embed maps each kind to an embedding failure reason.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

from memory_core.errors import MemoryCoreError

MAX_BODY_BYTES = 256 * 1024 * 1024  # a batch of embeddings is a few MB; this bounds a runaway
KINDS = ("connect_timeout", "unreachable", "timeout", "protocol")


class HttpError(MemoryCoreError):
    """A transport failure; `.kind` is one of KINDS."""

    reason = "http"

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path with query) of an http:// URL; IPv6 literals without brackets."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an http:// URL: {url!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


class _Reader:
    """Buffered reads from a socket, each bounded by the read timeout and the deadline."""

    def __init__(self, sock, read_s: float, deadline: float):
        self.sock, self.read_s, self.deadline = sock, read_s, deadline
        self.buf = b""

    def _fill(self) -> bool:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise HttpError("timeout", "no complete answer within the call's deadline")
        self.sock.settimeout(min(self.read_s, left))
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            raise HttpError("timeout", f"no answer within {min(self.read_s, left):.2f}s") from None
        except OSError as exc:
            raise HttpError("unreachable", f"connection failed while reading ({exc})") from None
        if not chunk:
            return False
        self.buf += chunk
        if len(self.buf) > MAX_BODY_BYTES:
            raise HttpError("protocol", f"response larger than {MAX_BODY_BYTES} bytes")
        return True

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if len(self.buf) > 65536:
                raise HttpError("protocol", "header line too long")
            if not self._fill():
                raise HttpError("protocol", "connection closed inside the response head")
        head, _, self.buf = self.buf.partition(b"\r\n")
        return head

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise HttpError("protocol", f"connection closed after {len(self.buf)} of {n} body bytes")
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def rest(self) -> bytes:
        while self._fill():
            pass
        out, self.buf = self.buf, b""
        return out


def request(method: str, url: str, body: dict | None, connect_s: float, read_s: float,
            deadline: float | None = None) -> tuple[int, bytes]:
    """Send one request (Connection: close); return (status, body bytes)."""
    host, port, path = split_url(url)
    deadline = deadline if deadline is not None else time.monotonic() + connect_s + read_s
    payload = b"" if body is None else json.dumps(body).encode("utf-8")
    hosthdr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    head = (f"{method} {path} HTTP/1.1\r\nHost: {hosthdr}\r\nUser-Agent: memhealth\r\n"
            f"Accept: application/json\r\nConnection: close\r\n"
            + (f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n" if body is not None else "")
            + "\r\n").encode("ascii")
    try:
        sock = socket.create_connection((host, port), timeout=max(min(connect_s, deadline - time.monotonic()), 0.001))
    except TimeoutError:
        raise HttpError("connect_timeout", f"connect timeout after {connect_s:g}s") from None
    except OSError as exc:
        raise HttpError("unreachable", f"{exc.strerror or exc}") from None
    try:
        sock.settimeout(max(min(read_s, deadline - time.monotonic()), 0.001))
        try:
            sock.sendall(head + payload)
        except TimeoutError:
            raise HttpError("timeout", "the request could not be sent within the read timeout") from None
        except OSError as exc:
            raise HttpError("unreachable", f"connection failed while sending ({exc})") from None
        reader = _Reader(sock, read_s, deadline)
        status_line = reader.line()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise HttpError("protocol", f"not an HTTP response: {status_line[:80]!r}")
        status = int(parts[1])
        headers = {}
        while True:
            line = reader.line()
            if not line:
                break
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return status, b""
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            out = []
            while True:
                size_line = reader.line().split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise HttpError("protocol", f"bad chunk size {size_line[:20]!r}") from None
                if size == 0:
                    break
                out.append(reader.exactly(size))
                reader.exactly(2)  # the CRLF after each chunk
            return status, b"".join(out)
        if b"content-length" in headers:
            try:
                length = int(headers[b"content-length"])
            except ValueError:
                raise HttpError("protocol", "bad Content-Length") from None
            if length > MAX_BODY_BYTES:
                raise HttpError("protocol", f"response larger than {MAX_BODY_BYTES} bytes")
            return status, reader.exactly(length)
        return status, reader.rest()
    finally:
        sock.close()
