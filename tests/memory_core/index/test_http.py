"""The small plain-http client the embedding client uses for http:// URLs: every way a
response can be framed, and every way a server can fail, against real sockets."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from memory_core.index.http import HttpError, request, split_url
from tests.support.ollama_standin import closed_url


class RawServer:
    """Answers each connection with fixed bytes (or hangs), on 127.0.0.1:0."""

    def __init__(self, answer: bytes | None, hang_s: float = 0.0):
        self.answer, self.hang_s = answer, hang_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536)
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                                   if h.lower().startswith(b"content-length")), 0)
                    while len(body) < length:
                        body += conn.recv(65536)
                except OSError:
                    continue
                self.requests.append(data)
                if self.answer is None:
                    self.stop.wait(self.hang_s)
                    continue
                conn.sendall(self.answer)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


BODY = json.dumps({"embeddings": [[0.1, 0.2]]}).encode()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY),
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n" + BODY[:5] + b"\r\n"
    + b"%x\r\n" % (len(BODY) - 5) + BODY[5:] + b"\r\n0\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY,  # read to close
])
def test_every_response_framing_yields_the_body(answer):
    with RawServer(answer) as server:
        status, body = request("POST", server.url + "/api/embed", {"model": "m", "input": ["a"]}, 0.5, 2.0)
    assert (status, json.loads(body)) == (200, {"embeddings": [[0.1, 0.2]]})
    sent = server.requests[0]
    assert sent.startswith(b"POST /api/embed HTTP/1.1\r\n") and b"Connection: close" in sent
    assert sent.endswith(b'{"model": "m", "input": ["a"]}')


def test_an_error_status_is_returned_not_raised():
    err = b'{"error":"model \'x\' not found"}'
    with RawServer(b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(err), err)) as server:
        assert request("GET", server.url + "/api/tags", None, 0.5, 2.0) == (404, err)


def test_a_refused_port_is_unreachable_at_once():
    with pytest.raises(HttpError) as info:
        request("GET", closed_url() + "/api/tags", None, 10.0, 10.0)
    # a refusal is an answer: "unreachable", not the connect timeout waited out
    assert info.value.kind == "unreachable"


def test_a_server_that_accepts_and_never_answers_costs_the_read_timeout():
    with RawServer(None, hang_s=15) as server:
        t0 = time.monotonic()
        with pytest.raises(HttpError) as info:
            request("POST", server.url + "/api/embed", {"x": 1}, 0.5, 0.3)
        elapsed = time.monotonic() - t0
    # "timeout", not the connection the 15 s hang ends with; and a socket timeout never fires early
    assert info.value.kind == "timeout" and 0.3 <= elapsed


def test_the_deadline_bounds_the_whole_call_even_with_a_long_read_timeout():
    with RawServer(None, hang_s=120) as server:
        with pytest.raises(HttpError) as info:
            request("GET", server.url + "/", None, 0.5, 3600.0, deadline=time.monotonic() + 0.3)
        # a timeout while the server hangs (120 s, then it closes) and the read timeout is an
        # hour: only the 0.3 s deadline can have ended it
        assert info.value.kind == "timeout"


@pytest.mark.parametrize("answer", [b"SSH-2.0-OpenSSH_9.2\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"])
def test_something_that_is_not_http_or_is_cut_short_is_a_protocol_error(answer):
    with RawServer(answer) as server, pytest.raises(HttpError) as info:
        request("GET", server.url + "/api/tags", None, 0.5, 2.0)
    assert info.value.kind == "protocol"


@pytest.mark.parametrize("url, parts", [
    ("http://127.0.0.1:11434/api/embed", ("127.0.0.1", 11434, "/api/embed")),
    ("http://ollama.lan", ("ollama.lan", 80, "/")),
    ("http://[::1]:11434/api/tags", ("::1", 11434, "/api/tags")),
])
def test_urls_split_into_host_port_and_path(url, parts):
    assert split_url(url) == parts
