"""The endpoint table (telemetry/endpoints.py) and the servers agree: every listed route is
answered (not 404) by the server it names, a path that is not listed is 404 from both, and
docs/reference/http.md is generated from the table. Real serve and serve --all processes."""

from __future__ import annotations

import urllib.error
import urllib.request
from urllib.parse import quote

import pytest

from telemetry.endpoints import ENDPOINTS, SERVE, SERVE_ALL
from tests.telemetry.test_serve import ServeProcess
from tests.telemetry.test_serve_all import ServeAll, _env, _init


def status(url: str, method: str) -> int:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None,
                                 headers={"Content-Type": "application/json"} if method == "POST" else {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=20) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("endpoints")
    env = _env(tmp / "xdg")
    root = tmp / "proj"
    _init(root, env)
    single = ServeProcess(root, "--no-probes", "--no-export", env=env)
    every = ServeAll(env, "--no-probes", "--no-export")
    yield {SERVE: single.url, SERVE_ALL: every.url}
    single.kill()
    every.stop()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_every_listed_endpoint_is_answered_by_each_server_it_names(servers, endpoint):
    for server in endpoint.servers:
        path = endpoint.path.replace("{name}", quote("proj"))
        code = status(servers[server] + path, endpoint.method)
        assert code != 404 and code < 500, f"{server}: {endpoint.method} {path} -> {code}"


@pytest.mark.parametrize("method, path", [("GET", "/nope"), ("POST", "/nope"), ("GET", "/p/proj/nope")])
def test_a_path_that_is_not_listed_is_404_from_both(servers, method, path):
    listed = {(e.method, e.path.replace("{name}", "proj")) for e in ENDPOINTS}
    assert (method, path) not in listed
    for url in servers.values():
        assert status(url + path, method) == 404


def test_the_http_reference_lists_every_endpoint():
    import os

    from tests.conftest import REPO

    with open(os.path.join(REPO, "docs", "reference", "http.md"), encoding="utf-8") as fh:
        text = fh.read()
    for e in ENDPOINTS:
        assert f"| {e.method} | `{e.path}` |" in text, e
