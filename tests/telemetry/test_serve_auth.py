"""`memhealth serve` with TLS and a bearer token, as real processes on 127.0.0.1:0: a
non-loopback address is refused without both, the token file must be its owner's alone, and
every request without the token, with a wrong one, or over plain HTTP is refused, stores
nothing and is counted in memhealth_serve_refused_total. Certificates are made here
(tests/support/tls_certs.py, the `cryptography` package)."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from telemetry.errors import ListenError, ServeAuthError
from telemetry.serve import parse_listen
from telemetry.serve_auth import Guard, read_token
from tests.conftest import clean_env, run_cli
from tests.support.tls_certs import TestCA, write_secret
from tests.telemetry.test_alertmanager import alert, sink
from tests.telemetry.test_serve import ServeProcess

TOKEN = "k3y-" + "0123456789abcdef" * 2


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(CA path, server cert, server key) for 127.0.0.1."""
    ca = TestCA(tmp_path_factory.mktemp("ca"))
    cert, key = ca.issue("serve", ["127.0.0.1", "localhost"])
    return ca.cert_path, cert, key


def call(url: str, path: str, *, token: str | None = None, ca: str | None = None,
         body: bytes | None = None) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url.rstrip("/") + path, data=body, headers=headers)
    ctx = ssl.create_default_context(cafile=ca) if ca else None
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def refused(url: str, ca: str) -> dict[str, float]:
    status, body = call(url, "/metrics", token=TOKEN, ca=ca)
    assert status == 200
    return {s.labels["reason"]: s.value for f in text_string_to_metric_families(body.decode())
            for s in f.samples if s.name == "memhealth_serve_refused_total"}


def test_allow_remote_without_tls_and_a_token_exits_2_with_one_line(project, tmp_path, tls):
    _, cert, key = tls
    token = write_secret(tmp_path / "token", TOKEN)
    for extra in ([], ["--token-file", token], ["--tls-cert", cert, "--tls-key", key]):
        proc = run_cli("serve", "--project", str(project), "--listen", "0.0.0.0:9464",
                       "--allow-remote", "--no-probes", "--no-export", *extra, timeout=30)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "without TLS and a token" in lines[0], proc.stderr
        assert "--tls-cert" in lines[0] and "--token-file" in lines[0]
        assert "listening" not in proc.stdout


def test_a_token_file_others_can_read_is_refused_with_the_chmod_that_fixes_it(project, tmp_path):
    token = write_secret(tmp_path / "token", TOKEN, mode=0o644)
    proc = run_cli("serve", "--project", str(project), "--listen", "127.0.0.1:0",
                   "--token-file", token, "--no-probes", "--no-export", timeout=30)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert f"chmod 600 {token}" in line and "0644" in line
    # the printed fix, followed, clears it
    import os
    import subprocess

    subprocess.run(["chmod", "600", token], check=True)
    assert read_token(token) == TOKEN
    assert oct(os.stat(token).st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("content,why", [("short", "at least"), ("two words here-and-there", "one word"),
                                         ("", "at least")])
def test_a_weak_or_malformed_token_is_refused(tmp_path, content, why):
    with pytest.raises(ServeAuthError, match=why):
        read_token(write_secret(tmp_path / "t", content))


def test_a_non_loopback_address_needs_allow_remote_and_then_tls_and_a_token():
    with pytest.raises(ListenError, match="--allow-remote"):
        parse_listen("0.0.0.0:9464")
    with pytest.raises(ListenError, match="without TLS and a token"):
        parse_listen("10.0.0.5:9464", allow_remote=True, secured=False)
    assert parse_listen("0.0.0.0:9464", allow_remote=True, secured=True) == ("0.0.0.0", 9464)
    assert parse_listen("127.0.0.1:0", secured=False) == ("127.0.0.1", 0)  # loopback: as before


def test_the_token_is_compared_in_full_whatever_the_scheme_case():
    guard = Guard(token=TOKEN)
    assert guard.admit(f"Bearer {TOKEN}") is None
    assert guard.admit(f"bearer {TOKEN}") is None
    assert guard.admit(f"Bearer {TOKEN[:-1]}") == "bad_credentials"
    assert guard.admit(f"Bearer {TOKEN}x") == "bad_credentials"
    assert guard.admit("Bearer ünïcode") == "bad_credentials"
    assert guard.admit(f"Basic {TOKEN}") == "no_credentials"
    assert guard.admit(None) == "no_credentials"
    assert guard.snapshot() == {"no_credentials": 2, "bad_credentials": 3, "tls_handshake": 0}


def test_with_tls_and_a_token_every_refusal_is_counted_and_stores_nothing(project, tmp_path, tls):
    ca, cert, key = tls
    token = write_secret(tmp_path / "token", TOKEN)
    app = ServeProcess(project, "--no-probes", "--no-export", "--tls-cert", cert, "--tls-key", key,
                       "--token-file", token, env=clean_env())
    try:
        assert app.url.startswith("https://127.0.0.1:")
        body = json.dumps({"receiver": "page", "status": "firing", "alerts": [
            alert("MemhealthEmbeddingDown", "critical") | {"status": "firing"}]}).encode()
        # no token, a wrong token: 401, and the webhook body is never read or kept
        assert call(app.url, "/alerts", ca=ca, body=body)[0] == 401
        assert call(app.url, "/alerts", ca=ca, body=body, token=TOKEN[::-1])[0] == 401
        assert call(app.url, "/metrics", ca=ca)[0] == 401
        assert call(app.url, "/healthz", ca=ca, token="wrong-token-of-some-length")[0] == 401
        assert sink(project) == []
        # plain HTTP to the TLS port: the handshake fails, no HTTP answer at all
        with pytest.raises((urllib.error.URLError, ConnectionError, http_errors())):
            urllib.request.urlopen(app.url.replace("https://", "http://") + "/metrics", timeout=10)
        # a client that does not trust the certificate: refused by the client, counted by serve
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(app.url + "/metrics", timeout=10,
                                   context=ssl.create_default_context())
        # with the token over TLS: the alert is decided and stored
        status, reply = call(app.url, "/alerts", ca=ca, body=body, token=TOKEN)
        assert status == 200 and json.loads(reply)["decisions"] == 1
        assert [r["decision"] for r in sink(project)] == ["paged"]
        assert refused(app.url, ca) == {"no_credentials": 2.0, "bad_credentials": 2.0,
                                        "tls_handshake": 2.0}
        health = json.loads(call(app.url, "/healthz", ca=ca, token=TOKEN)[1])
        assert health["requests_refused"]["tls_handshake"] == 2
    finally:
        app.kill()


def test_a_tls_client_that_never_finishes_the_handshake_does_not_block_others(project, tmp_path, tls):
    ca, cert, key = tls
    token = write_secret(tmp_path / "token", TOKEN)
    app = ServeProcess(project, "--no-probes", "--no-export", "--tls-cert", cert, "--tls-key", key,
                       "--token-file", token, env=clean_env())
    stalled = []
    try:
        port = int(app.url.rsplit(":", 1)[1].strip("/"))
        for _ in range(3):  # connect, send nothing: the handshake waits on its own thread
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            stalled.append(s)
        assert call(app.url, "/metrics", token=TOKEN, ca=ca)[0] == 200
    finally:
        for s in stalled:
            s.close()
        app.kill()


def http_errors():
    import http.client

    return http.client.HTTPException


def test_serve_detach_refuses_tls_and_token_flags_with_one_line(project, tmp_path, tls):
    _, cert, key = tls
    token = write_secret(tmp_path / "token", TOKEN)
    proc = run_cli("serve", "--project", str(project), "--listen", "127.0.0.1:19464", "--detach",
                   "--tls-cert", cert, "--tls-key", key, "--token-file", token, timeout=30)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "--detach" in line and "--token-file" in line
