"""`memhealth serve --all` does what single-project serve does, for every project: the
runbook every alert links to, each project's console under /p/<name>/ (in a real headless
Chromium too), POST /alerts routed by the `project` label to that project's alert budget,
and per-project gate and export runs, so one project whose embedding server or collector
hangs holds up no other. Real serve subprocesses, real HTTP, real stores."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from urllib.parse import quote, urlencode, urlsplit

import pytest
import yaml

from memory_core.store import registry
from tests.conftest import REPO, rows
from tests.memory_core.records.test_triage import SESSION, capture
from tests.support.ollama_standin import OllamaStandin
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.webdriver import Browser
from tests.telemetry.test_console import PAGES, raw, token_from
from tests.telemetry.test_prometheus_e2e import wait_for
from tests.telemetry.test_serve_all import ServeAll, _env, _init, _prompts

ODD_NAME = 'x<i>"&\'/ y'  # a hand-edited registry can hold any name: every byte of it is escaped


class Links(HTMLParser):
    """Every href and form action on a page."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if (tag, name) in (("a", "href"), ("form", "action")) and value:
                self.found.append(value)


def links(page: bytes) -> list[str]:
    parser = Links()
    parser.feed(page.decode("utf-8"))
    return parser.found


def fetch(url: str, data: bytes | None = None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, data=data, headers=headers or {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=20) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def set_config(root, section: str, **values) -> None:
    """Set keys under an existing [section] of the project's config.toml (init writes every
    section header with its keys commented out)."""
    path = root / ".memhealth" / "config.toml"
    text = path.read_text()
    lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
    assert f"\n[{section}]\n" in text
    path.write_text(text.replace(f"\n[{section}]\n", f"\n[{section}]\n{lines}", 1))


def alert(name: str, severity: str, **labels) -> dict:
    return {"status": "firing", "labels": {"alertname": name, "severity": severity, **labels},
            "annotations": {"fix": "run memhealth gate"}, "fingerprint": f"fp-{name}-{labels.get('project')}"}


@pytest.fixture
def three(tmp_path):
    """Three registered projects (two called `app`), 1, 2 and 3 prompts; the third (`lib`)
    has candidates waiting for triage."""
    env = _env(tmp_path / "xdg")
    roots = [tmp_path / "a" / "app", tmp_path / "b" / "app", tmp_path / "c" / "lib"]
    for n, root in enumerate(roots, start=1):
        _init(root, env)
        _prompts(root, env, n)
    capture(roots[2], tmp_path / "session.jsonl", SESSION)
    path = str(tmp_path / "xdg" / "memhealth" / "projects.json")
    names = {e.root: e.name for e in registry.read(path)}
    return env, roots, [names[str(r)] for r in roots]


# -- runbook, index, console under a prefix -------------------------------------------------------

def test_runbook_index_and_every_console_page_and_link_work_under_the_project_prefix(three):
    env, roots, names = three
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        # every alert's runbook_url (127.0.0.1:9464/runbook#...) resolves under serve --all
        code, _h, book = fetch(app.url + "/runbook")
        assert code == 200, book[:200]
        with open(os.path.join(REPO, "alerts", "memhealth.rules.yaml"), encoding="utf-8") as fh:
            rules = [r for g in yaml.safe_load(fh)["groups"] for r in g["rules"] if "alert" in r]
        anchors = {r["annotations"]["runbook_url"].split("#", 1)[1] for r in rules}
        missing = [a for a in anchors if f'id="{a}"'.encode() not in book]
        assert anchors and not missing, missing

        # the index links each project's console by its registered name, never its path
        code, headers, index = fetch(app.url + "/")
        assert code == 200 and "default-src 'none'" in headers["Content-Security-Policy"]
        hrefs = links(index)
        for name in names:
            assert f"/p/{quote(name, safe='')}/" in hrefs
        assert not any(str(r) in index.decode() for r in roots)

        # every page of every project, and every link on those pages, answers under its prefix
        seen: set[str] = set()
        for name, root in zip(names, roots, strict=True):
            base = f"/p/{quote(name, safe='')}"
            for path, title in PAGES:
                code, headers, page = fetch(app.url + base + path)
                assert code == 200, (base + path, page[:300])
                text = page.decode()
                assert f"<h1>{title}</h1>" in text and f"· {name}</title>" in text
                assert headers["X-Frame-Options"] == "DENY" and "form-action 'self'" in headers["Content-Security-Policy"]
                for link in links(page):
                    if link.startswith("/") and not link.startswith(("/p/", "/runbook")):
                        assert link == "/", (base + path, link)  # only "All projects" leaves the prefix
                    if link.startswith("/p/"):
                        assert link.startswith(base + "/"), (base + path, link)
                        seen.add(link.split("#", 1)[0])
            # each project's pages read its own store: 1, 2 and 3 prompts
            _c, _h, page = fetch(app.url + base + "/decisions")
            table = re.search(r'<table id="decisions">.*?<tbody>(.*?)</tbody>', page.decode(), re.S)
            prompts = names.index(name) + 1
            assert table and table.group(1).count("<tr") == prompts
            assert rows(root, "SELECT count(*) FROM decisions")[0][0] == prompts
        for link in sorted(seen):
            method_is_post = "/triage/" in link
            if method_is_post:
                continue  # actions: exercised below by POST
            code, _h, page = fetch(app.url + link)
            assert code == 200, (link, page[:200])

        # unknown project: 404, one line; a project without its slash is redirected to it
        code, headers, body = fetch(app.url + "/p/nope/memory")
        assert code == 404 and body.decode().count("\n") == 1 and "'nope'" in body.decode()
        code, headers, _b = fetch(app.url + f"/p/{names[2]}?x=1")
        assert code == 308 and headers["Location"] == f"/p/{names[2]}/?x=1"
        code, _h, body = fetch(app.url + f"/p/{names[2]}/nope")
        assert code == 404 and body.decode().count("\n") == 1
    finally:
        app.stop()


def test_a_triage_form_acts_on_its_own_project_only(three):
    env, roots, names = three
    lib, other = names[2], names[0]
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        port = urlsplit(app.url).port
        host = {"Host": f"127.0.0.1:{port}"}
        cid = rows(roots[2], "SELECT id FROM capture_candidates WHERE state = 'pending' ORDER BY id")[0][0]
        _code, _h, page = fetch(app.url + f"/p/{lib}/triage")
        assert f'action="/p/{lib}/triage/reject"' in page.decode()
        form = urlencode({"csrf": token_from(page), "id": cid}).encode()
        kind = {**host, "Content-Type": "application/x-www-form-urlencoded"}

        class Server:  # tests.telemetry.test_console.raw takes something with .url
            url = app.url

        # lib's token on another project's form: refused, nothing changes anywhere
        code, _h, body = raw(Server, "POST", f"/p/{other}/triage/reject", form, kind)
        assert code == 403 and b"token" in body
        assert rows(roots[2], "SELECT state FROM capture_candidates WHERE id = ?", (cid,)) == [("pending",)]
        # a foreign Host is refused before anything runs
        code, _h, _b = raw(Server, "POST", f"/p/{lib}/triage/reject", form,
                           {**kind, "Host": f"evil.example:{port}"})
        assert code == 421
        # on its own project: applied, and the redirect stays under the prefix
        code, headers, _b = raw(Server, "POST", f"/p/{lib}/triage/reject", form, kind)
        assert code == 303 and headers["Location"].startswith(f"/p/{lib}/triage?done=")
        assert rows(roots[2], "SELECT state FROM capture_candidates WHERE id = ?", (cid,)) == [("rejected",)]
        # a GET of an action changes nothing
        code, _h, _b = raw(Server, "GET", f"/p/{lib}/triage/confirm", None, host)
        assert code == 405
    finally:
        app.stop()


def test_names_from_a_hand_edited_registry_are_escaped_and_quoted(tmp_path):
    env = _env(tmp_path / "xdg")
    root = tmp_path / "odd"
    _init(root, env)
    path = tmp_path / "xdg" / "memhealth" / "projects.json"
    path.write_text(json.dumps({"version": 1, "projects": [{"name": ODD_NAME, "root": str(root), "added": 1.0}]}))
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        _c, _h, index = fetch(app.url + "/")
        text = index.decode()
        assert "<i>" not in text and "x&lt;i&gt;&quot;&amp;&#x27;/ y" in text
        base = "/p/" + quote(ODD_NAME, safe="")
        assert f'href="{base}/"' in text.replace("&amp;", "&")  # quoted: no & or quote left raw
        code, _h, page = fetch(app.url + base + "/memory")
        assert code == 200 and "<i>" not in page.decode() and "x&lt;i&gt;" in page.decode()
    finally:
        app.stop()


def test_a_console_page_under_the_prefix_in_a_real_browser(three, tmp_path):
    env, roots, names = three
    lib = names[2]
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        cid = rows(roots[2], "SELECT id FROM capture_candidates WHERE state = 'pending' ORDER BY id")[0][0]
        with Browser() as b:
            b.open(app.url + "/")
            b.find(f"a[href='/p/{lib}/']").click()
            assert b.find("h1").text == "Health" and b.url.endswith(f"/p/{lib}/")
            b.find("nav a[href$='/triage']").click()
            assert b.find("h1").text == "Triage" and b.url.endswith(f"/p/{lib}/triage")
            b.find(f"#c{cid} form[action='/p/{lib}/triage/confirm'] button").click()
            b.wait_text(".flash", f"#{cid} confirmed")
            assert f"/p/{lib}/triage?done=" in b.url
            b.find("nav a[href$='/memory']").click()
            assert b.find("h1").text == "Memory" and "Confirmed records" in b.find("main").text
            b.find("a[href='/runbook']").click()
            assert "runbook" in b.title.lower() and b.url.endswith("/runbook")
        assert rows(roots[2], "SELECT state FROM capture_candidates WHERE id = ?", (cid,)) == [("confirmed",)]
    finally:
        app.stop()


# -- POST /alerts, routed by project ----------------------------------------------------------------

def test_alerts_go_to_the_project_their_label_names_and_the_rest_are_kept_unrouted(three, tmp_path):
    env, roots, names = three
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        body = {"receiver": "page", "status": "firing", "alerts": [
            alert("MemhealthHookFailing", "critical", project=names[0]),
            alert("MemhealthIngestStale", "warning", project=names[2]),
            alert("MemhealthEmbeddingDown", "critical", project=names[2]),
            alert("MemhealthWatchdog", "none"),
            alert("MemhealthHookFailing", "critical", project="not-registered")]}
        code, _h, reply = fetch(app.url + "/alerts", json.dumps(body).encode(), {"Content-Type": "application/json"})
        reply = json.loads(reply)
        assert code == 200, reply
        assert reply["unrouted"] == 2 and set(reply["projects"]) == {names[0], names[2]}
        assert reply["projects"][names[2]]["decisions"] >= 2 and "named no served project" in reply["note"]

        # each project's store and sink hold its own alerts, decided by its budget
        stored = {n: rows(r, "SELECT alertname, decision FROM alert_decisions ORDER BY id")
                  for n, r in zip(names, roots, strict=True)}
        assert [a for a, _d in stored[names[0]]] == ["MemhealthHookFailing"]
        assert {a for a, _d in stored[names[2]]} >= {"MemhealthIngestStale", "MemhealthEmbeddingDown"}
        assert stored[names[1]] == []
        assert dict(stored[names[0]])["MemhealthHookFailing"] == "paged"
        sink = [json.loads(line) for line in (roots[2] / ".memhealth" / "alerts.ndjson").read_text().splitlines()]
        assert {r["alertname"] for r in sink} >= {"MemhealthIngestStale", "MemhealthEmbeddingDown"}
        assert not (roots[1] / ".memhealth" / "alerts.ndjson").exists()

        # the rest are kept beside the registry, with why; nothing is lost
        unrouted_path = tmp_path / "xdg" / "memhealth" / "alerts-unrouted.ndjson"
        kept = [json.loads(line) for line in unrouted_path.read_text().splitlines()]
        assert [(r["alertname"], r["reason"]) for r in kept] == [
            ("MemhealthWatchdog", "no project label"),
            ("MemhealthHookFailing", "project 'not-registered' is not served here")]
        assert oct(os.stat(unrouted_path).st_mode & 0o777) == "0o600"
        assert json.loads(fetch(app.url + "/healthz")[2])["alerts_unrouted"] == 2

        # the console of that project shows the decision
        _c, _h, page = fetch(app.url + f"/p/{names[0]}/alerts-budget")
        assert "MemhealthHookFailing" in page.decode()

        # a malformed body: 400, kept in the same sink
        code, _h, _b = fetch(app.url + "/alerts", b"{not json", {"Content-Type": "application/json"})
        assert code == 400
        last = json.loads(unrouted_path.read_text().splitlines()[-1])
        assert last["decision"] == "rejected" and last["raw"] == "{not json"
    finally:
        app.stop()


# -- per-project independence: a hung project holds up no other ---------------------------------------

def test_a_project_whose_embedding_server_hangs_delays_no_other_projects_gate(three):
    env, roots, names = three
    with OllamaStandin(mode="hung", hang_s=120) as ollama:
        # the first registered project (the first the old sequential loop reached) hangs: its
        # gate's embed probe and warm-up retry each wait out 45 s
        set_config(roots[0], "embedding", url=ollama.url, timeout_s=45.0, warmup_timeout_s=45.0)
        app = ServeAll({**env, "MEMHEALTH_SERVE_PROBE_INTERVAL_S": "1"}, "--no-export")
        try:
            def runs(root) -> int:
                return rows(root, "SELECT count(*) FROM gate_runs")[0][0]

            # the other two are probed again and again while the hung one's first run waits
            wait_for("three gate runs in each healthy project", lambda: all(runs(r) >= 3 for r in roots[1:]),
                     timeout=40)

            def healthz() -> dict:
                return json.loads(fetch(app.url + "/healthz")[2])

            # a run's row is written before serve counts it: the count can lag the row a moment
            wait_for("/healthz to count three runs in each healthy project", lambda: all(
                healthz()["projects"][n]["probe"]["runs"] >= 3 for n in names[1:]), timeout=20)
            health = healthz()
            hung = health["projects"][names[0]]["probe"]
            assert hung["runs"] == 0 and hung["running_for_s"] > 0, hung
            assert runs(roots[0]) == 0 and "/api/embed" in ollama.paths()
            # and a scrape still answers for all three
            code, _h, metrics = fetch(app.url + "/metrics")
            assert code == 200 and all(f'project="{n}"' in metrics.decode() for n in names)
        finally:
            app.stop()


def test_a_project_whose_collector_hangs_delays_no_other_projects_export(three):
    env, roots, names = three
    with OtlpReceiver() as good, OtlpReceiver() as wedged:
        wedged.mode = "hang"
        set_config(roots[0], "telemetry", otlp_endpoint=wedged.endpoint, export_timeout_s=60.0)
        for root in roots[1:]:
            set_config(root, "telemetry", otlp_endpoint=good.endpoint)
        app = ServeAll({**env, "MEMHEALTH_SERVE_EXPORT_INTERVAL_S": "1"}, "--no-probes")
        try:
            def exported() -> dict:
                projects = json.loads(fetch(app.url + "/healthz")[2])["projects"]
                return {n: projects[n]["export_runs"] for n in names}

            wait_for("two exports from each healthy project", lambda: all(
                exported()[n] >= 2 for n in names[1:]), timeout=40)
            assert exported()[names[0]] == 0 and wedged.requests  # still waiting on the wedged collector
            # both healthy projects' spans arrived, each under its own project id
            ids = {s.resource["memhealth.project.id"] for s in good.spans}
            assert len(ids) == 2, ids
        finally:
            app.stop()


def test_lanes_run_one_per_project_on_bounded_threads_and_free_a_stalled_slot():
    import threading

    from telemetry.serve_all import Lanes

    lanes = Lanes("lanetest", workers=2, stall_s=0.3, max_stalled=1)
    release = threading.Event()
    started: list[str] = []

    def job(key: str):
        return lambda: (started.append(key), release.wait(30))

    def threads() -> int:
        return sum(1 for t in threading.enumerate() if t.name == "memhealth-lanetest")

    try:
        assert lanes.submit("a", job("a")) and lanes.submit("b", job("b"))
        assert not lanes.submit("a", job("a2"))  # one run per project at a time
        assert not lanes.submit("c", job("c"))   # both workers taken
        # a and b run past stall_s: one of them (max_stalled=1) stops holding a worker, c runs
        wait_for("c to get the slot a stalled run freed", lambda: lanes.submit("c", job("c")), timeout=10)
        assert lanes.state() == {"running": 3, "stalled": 1, "workers": 2}
        # the stalled cap is reached: however long they hang, no fourth thread
        assert not lanes.submit("d", job("d")) and threads() == 3
    finally:
        release.set()
    lanes.wait(time.monotonic() + 10)
    wait_for("every run to end", lambda: lanes.state() == {"running": 0, "stalled": 0, "workers": 2})
    assert sorted(started) == ["a", "b", "c"]
    assert lanes.submit("d", job("d"))  # the slots came back
    lanes.wait(time.monotonic() + 10)


# -- one way to read a request body ----------------------------------------------------------------

def _post_raw(base_url: str, path: str, content_length: str) -> int:
    """POST with a hand-written Content-Length and no body: the status line's code."""
    import socket

    host, port = urlsplit(base_url).netloc.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {content_length}\r\n\r\n".encode())
        return int(sock.recv(256).split(b" ", 2)[1])


@pytest.mark.parametrize("content_length, status", [("99999999999", 413), ("-5", 400), ("lots", 400)])
def test_both_serves_answer_a_bad_or_oversized_alerts_body_alike(three, content_length, status):
    """serve and serve --all read request bodies one way: an oversized body is 413, a bad
    length 400, from either (they once disagreed: 413 from one, 400 from the other)."""
    from tests.telemetry.test_serve import ServeProcess

    env, roots, _names = three
    single = ServeProcess(roots[0], "--no-probes", "--no-export", env=env)
    every = ServeAll(env, "--no-probes", "--no-export")
    try:
        assert _post_raw(single.url, "/alerts", content_length) == status
        assert _post_raw(every.url, "/alerts", content_length) == status
    finally:
        single.kill()
        every.stop()
