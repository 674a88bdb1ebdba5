"""Hostile HTTP clients against a real serve: a slowloris crowd, 100 MB bodies (declared
and chunked), random routes and random receivers. serve stays up, its memory and its
series count stay bounded, and it answers again once the crowd is gone."""

from __future__ import annotations

import json
import os
import random
import socket
import time

from tests.faults.helpers import wait_for
from tests.telemetry.test_serve import ServeProcess

MB = 1024 * 1024


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def series(app) -> int:
    status, body, _ = app.get("/metrics")
    assert status == 200
    return sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))


def _send_big(port: int, head: bytes, total: int) -> None:
    """Send `head` then up to `total` bytes of body until serve closes the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    chunk = b"x" * MB
    try:
        sock.sendall(head)
        sent = 0
        while sent < total:
            sock.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass  # refused mid-body: the point
    finally:
        sock.close()


def test_hostile_clients_leave_serve_bounded(project):
    app = ServeProcess(project, "--no-probes", "--no-export")
    port = int(app.url.rsplit(":", 1)[1].strip("/"))
    try:
        base_series, base_rss = series(app), rss_kib(app.proc.pid)
        crowd = []
        for _ in range(200):  # slowloris: headers that never end
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
            crowd.append(s)
        _send_big(port, b"POST /alerts HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (100 * MB), 100 * MB)
        _send_big(port, b"POST /alerts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 100 * MB)
        during_rss = rss_kib(app.proc.pid)
        for s in crowd:
            s.close()
        rng = random.Random(9)
        deadline = time.monotonic() + 30
        sent = 0
        while sent < 300 and time.monotonic() < deadline:
            path = "/" + "".join(rng.choice("abcdefghij/%?&=") for _ in range(rng.randint(1, 40)))
            try:
                if sent % 2:
                    app.get(path, timeout=5)
                else:
                    body = {"receiver": os.urandom(8).hex(), "status": "firing",
                            "alerts": [{"status": "firing", "labels": {"alertname": os.urandom(6).hex(),
                                                                       "severity": "warning"}}]}
                    app.post("/alerts", json.dumps(body).encode())
                sent += 1
            except OSError:
                time.sleep(0.05)  # still refusing while the crowd's sockets time out
        assert sent == 300
        wait_for(lambda: json.loads(app.get("/healthz")[1])["status"] == "ok", what="serve answering again")
        # the crowd cost sockets, not threads: everything past the connection cap was closed
        assert json.loads(app.get("/healthz")[1])["connections_refused"] >= 200 - 64
        after_series, after_rss = series(app), rss_kib(app.proc.pid)
    finally:
        app.kill()
    # 300 random routes and receivers add the closed `unknown` route's few series, not 300
    assert after_series - base_series <= 12, (base_series, after_series)
    assert max(during_rss, after_rss) - base_rss < 64 * 1024, (base_rss, during_rss, after_rss)
    assert (project / ".memhealth" / "alerts.ndjson").stat().st_size < 2 * MB


def test_scrapes_get_through_a_slowloris_crowd(project):
    """70 connections each trickling a header byte every second hold every slot; a scrape
    still gets through (a connection whose headers are overdue gives its slot up), and a
    burst of 50 scrapes beside the crowd is answered, not refused."""
    import threading

    from telemetry.serve import MAX_CONNECTIONS

    app = ServeProcess(project, "--no-probes", "--no-export")
    port = int(app.url.rsplit(":", 1)[1].strip("/"))
    stop = threading.Event()
    crowd = []
    try:
        for _ in range(MAX_CONNECTIONS + 6):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"G")
            crowd.append(s)

        def trickle():
            while not stop.wait(1.0):
                for s in crowd:
                    try:
                        s.sendall(b"E")
                    except OSError:
                        pass

        threading.Thread(target=trickle, daemon=True).start()
        time.sleep(2.5)  # the crowd's headers are overdue now
        answered = [app.get("/metrics", timeout=10)[0] for _ in range(8)]
        assert answered == [200] * 8, answered
        results = []

        def scrape():
            try:
                results.append(app.get("/healthz", timeout=15)[0])
            except OSError as exc:
                results.append(type(exc).__name__)

        burst = [threading.Thread(target=scrape) for _ in range(50)]
        for t in burst:
            t.start()
        for t in burst:
            t.join(30)
        assert results.count(200) == 50, results
    finally:
        stop.set()
        for s in crowd:
            s.close()
        app.kill()
