"""What `memhealth serve` and `serve --all` share on the wire: the bounded HTTP server, the
listen-address rule, the request handler's common answers and routes, and the thread
lifecycle.

    server = BoundedServer(("127.0.0.1", 0), handler, guard=OPEN)   # at most MAX_CONNECTIONS
    host, port = parse_listen("127.0.0.1:9464")                      # loopback unless allowed

`ServeHandler` answers what both serve the same way: /metrics, /healthz, /runbook and the
Alertmanager webhook at POST /alerts, each request body read under its limit
(`_read_body`), a bearer token checked before anything is read (`_admit`). Single-project
serve is telemetry/serve.py, serve --all telemetry/serve_all.py.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from telemetry.alert_intake import MAX_ALERT_BODY
from telemetry.errors import ListenError

REQUEST_SOCKET_TIMEOUT_S = 10.0  # a stalled client cannot hold a handler thread forever


REFUSED_BODY_DRAIN = 64 * 1024  # bytes of a refused request's body read (and dropped) before the 401
MAX_CONNECTIONS = 64  # concurrent connections; a slowloris crowd cannot grow threads without bound
HEADER_DEADLINE_S = 2.0  # a connection still sending headers after this yields its slot when all are taken
SLOT_WAIT_S = 2.0        # how long a new connection waits for the slot an eviction frees
EVICT_AT_ONCE = 8        # overdue connections closed per connection that found no slot


class BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most MAX_CONNECTIONS handler threads: a connection over
    the cap is closed at once (a hostile client costs a socket, not a thread), and each
    handler's socket times out after REQUEST_SOCKET_TIMEOUT_S."""

    request_queue_size = 128  # socketserver's 5 makes a burst of scrapes wait 1 s for SYN retries

    def __init__(self, *args, guard=None, **kwargs):
        from telemetry.serve_auth import OPEN

        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0
        # -- slowloris: connections still sending their headers, and when they started ------
        self.pending: dict = {}
        self._pending_lock = threading.Lock()
        self.guard = guard if guard is not None else OPEN
        super().__init__(*args, **kwargs)

    def finish_request(self, request, client_address):
        """With TLS, the handshake runs here, on the handler's thread and under its socket
        timeout: a client that never completes it holds one slot, never the accept loop."""
        ctx = self.guard.ssl_context
        if ctx is None:
            return super().finish_request(request, client_address)
        import ssl

        request.settimeout(REQUEST_SOCKET_TIMEOUT_S)
        try:
            tls = ctx.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            tls.do_handshake()
        except (ssl.SSLError, OSError):  # plain HTTP to the TLS port, an untrusted client, a stall
            self.guard.count("tls_handshake")
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            # every slot is taken: a connection whose headers are overdue gives its slot up,
            # so a scrape gets through a crowd trickling header bytes (it waits a moment for
            # the slot; a burst of real requests frees slots in milliseconds)
            evicted = self._evict_overdue()
            if not (evicted and self.slots.acquire(timeout=SLOT_WAIT_S)):
                self.refused += 1
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except Exception:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        with self._pending_lock:
            self.pending[request] = time.monotonic()
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.headers_done(request)
            self.slots.release()

    def headers_done(self, request) -> None:
        with self._pending_lock:
            self.pending.pop(request, None)

    def _evict_overdue(self) -> int:
        """Close up to EVICT_AT_ONCE connections whose headers are overdue; how many."""
        now = time.monotonic()
        with self._pending_lock:
            overdue = sorted((t, id(r), r) for r, t in self.pending.items() if now - t > HEADER_DEADLINE_S)
            for _t, _id, request in overdue[:EVICT_AT_ONCE]:
                self.pending.pop(request, None)
                self.refused += 1
                try:
                    request.shutdown(socket.SHUT_RDWR)  # its handler's read returns: the slot frees
                except OSError:
                    pass
            return len(overdue[:EVICT_AT_ONCE])
        # -- end slowloris ---------------------------------------------------------------------



def parse_listen(listen: str, allow_remote: bool = False, secured: bool = False) -> tuple[str, int]:
    """"host:port" (or "[v6]:port") → (host, port); non-loopback refused unless allowed, and
    allowed only when `secured` (TLS and a bearer token, telemetry/serve_auth.py)."""
    text = listen.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.lstrip(":")
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            raise ListenError(f"listen address {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:9464")
    try:
        port = int(port_text)
    except ValueError:
        raise ListenError(f"listen address {listen!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ListenError(f"listen address {listen!r}: port out of range")
    host = host or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"  # IPv4 literal: localhost may resolve to ::1 first
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise ListenError(f"listen address {listen!r}: {host!r} is not an IP address") from None
    if not loopback and not allow_remote:
        raise ListenError(f"refusing to bind {host}: /metrics and /alerts are unauthenticated; "
                          "bind a loopback address or pass --allow-remote")
    if not loopback and not secured:
        raise ListenError(f"refusing to serve {host} without TLS and a token: --allow-remote needs "
                          "--tls-cert, --tls-key and --token-file (every request then needs the "
                          "bearer token)")
    return host, port


def runbook_page() -> tuple[int, bytes]:
    """The alert runbook as HTML: where every alert's runbook_url points by default (one
    runbook for every project, so serve --all serves the same page)."""
    from telemetry import runbook

    try:
        return 200, runbook.render(runbook.load())
    except OSError as exc:  # an install without the packaged runbook: say where it is
        return 404, f"runbook not installed ({exc.strerror}); see alerts/runbook.md\n".encode()


def stderr_line(line: str) -> None:
    import sys

    print(line, file=sys.stderr, flush=True)


class ServeThreads:
    """What Serve and MultiServe share: the HTTP server on its address, the background
    threads (http, probe, export), and a bounded stop. Needs host, port, cfg, probe,
    export_enabled, guard, stopping, _server, _threads, _probe_loop and _export_loop."""

    @property
    def scheme(self) -> str:
        return "https" if self.guard.tls else "http"

    def _listen(self, handler) -> None:
        server_cls = BoundedServer
        if ":" in self.host:
            class V6Server(BoundedServer):
                address_family = socket.AF_INET6

            server_cls = V6Server
        self._server = server_cls((self.host, self.port), handler, guard=self.guard)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._spawn("http", self._server.serve_forever, 0.1)
        if self.probe is not None:
            self._spawn("probe", self._probe_loop)
        if self.export_enabled:
            self._spawn("export", self._export_loop)

    def _spawn(self, name, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=f"memhealth-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _stop_threads(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        budget = float(self.cfg["telemetry"]["export_timeout_s"]) * 2 + 2.0
        deadline = time.monotonic() + budget
        for thread in self._threads:
            if thread.name in ("memhealth-probe", "memhealth-vectors"):
                continue  # a hung probe or embed is abandoned (daemon thread), never waited on
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- what both answer the same way --------------------------------------------------------

    def metrics(self, accept: str | None) -> tuple[bytes, str]:
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept or "")
        return encoder(self._registry), content_type

    def runbook(self) -> tuple[int, bytes]:
        return runbook_page()


class ServeHandler(BaseHTTPRequestHandler):
    """What serve's and serve --all's request handlers share: no access log, a socket
    timeout, and one way to answer (a body with its length; none for HEAD)."""

    server_version = "memhealth"
    timeout = REQUEST_SOCKET_TIMEOUT_S

    def log_message(self, *args):
        pass

    def parse_request(self) -> bool:
        ok = super().parse_request()
        headers_done = getattr(self.server, "headers_done", None)
        if headers_done is not None:  # the request line and headers are in: never evicted now
            headers_done(self.request)
        return ok

    def _send(self, code: int, body: bytes, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj) -> None:
        self._send(code, (json.dumps(obj, default=str) + "\n").encode("utf-8"))

    def _admit(self) -> bool:
        """Whether this request carries the bearer token serve requires (always, without one).
        A refusal answers 401 before any body is read, stores nothing, and is counted."""
        reason = self.server.guard.admit(self.headers.get("Authorization"))
        if reason is None:
            return True
        self.close_connection = True  # an unread body must not be parsed as the next request
        try:  # a small body is read and dropped: closing on unread bytes resets the connection,
            # and the client would see a reset instead of the 401
            length = int(self.headers.get("Content-Length") or 0)
            if 0 < length <= REFUSED_BODY_DRAIN:
                self.rfile.read(length)
        except (ValueError, OSError):
            pass
        self._send(401, (json.dumps({"error": "a bearer token is required" if reason == "no_credentials"
                                     else "wrong bearer token"}) + "\n").encode("utf-8"),
                   headers={"WWW-Authenticate": 'Bearer realm="memhealth"'})
        return False

    def _read_body(self, limit: int) -> tuple[bytes | None, int]:
        """(the request body, 200), or (None, 400) for a missing or bad Content-Length and
        (None, 413) for one over `limit`. A refused body is never read, so the connection
        closes after the answer: its bytes must not be parsed as the next request."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > limit:
            self.close_connection = True
            return None, 400 if length < 0 else 413
        return self.rfile.read(length), 200

    def _console(self, result: tuple[int, dict, bytes]) -> None:
        code, headers, body = result
        headers = dict(headers)
        self._send(code, body, headers.pop("Content-Type"), headers)


    # -- the routes serve and serve --all answer alike ----------------------------------------

    def _shared_get(self, app, path: str) -> bool:
        """Answer GET /metrics, /healthz or /runbook from `app` (a Serve or MultiServe);
        False when the path is none of them."""
        if path == "/metrics":
            body, content_type = app.metrics(self.headers.get("Accept"))
            self._send(200, body, content_type)
        elif path == "/healthz":
            self._json(200, app.health())
        elif path == "/runbook":
            code, body = app.runbook()
            self._send(code, body, "text/html; charset=utf-8" if code == 200 else "text/plain")
        else:
            return False
        return True

    def _post_alerts(self, app) -> None:
        """POST /alerts: the body under MAX_ALERT_BODY to app.alerts(); a missing, bad or
        oversized length is answered 400/413 and still written to app.sink, marked rejected."""
        body, status = self._read_body(MAX_ALERT_BODY)
        if body is None:
            app.sink.append({"ts": time.time(), "decision": "rejected",
                             "error": f"bad Content-Length {self.headers.get('Content-Length')!r}"})
            self._json(status, {"error": "bad or oversized body"})
            return
        code, obj = app.alerts(body)
        self._json(code, obj)

    def _post_form(self, console, action: str) -> None:
        """A console form POST: the body under the console's form limit to console.post()."""
        from telemetry.console import MAX_FORM_BODY

        body, status = self._read_body(MAX_FORM_BODY)
        if body is None:
            self._send(status, b"bad or oversized form\n", "text/plain")
            return
        self._console(console.post(action, body, self.headers))
