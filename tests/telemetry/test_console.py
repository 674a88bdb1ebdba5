"""The console in a real headless Chromium against a real `memhealth serve` on a store seeded
through real hooks: every page opens, a candidate is triaged by clicking (and one by the
keyboard), and a request with a foreign Host or without the CSRF token changes nothing.

Screenshots of every page go to the test's tmp dir, or to $MEMHEALTH_CONSOLE_SCREENSHOTS
(`MEMHEALTH_CONSOLE_SCREENSHOTS=docs/console pytest tests/telemetry/test_console.py` regenerates the
screenshots in docs/how-to/console.md)."""

from __future__ import annotations

import http.client
import json
import os
import re
from urllib.parse import urlencode, urlsplit

import pytest

from tests.conftest import REPO, clean_env, payload, rows, run_hook
from tests.memory_core.items.test_cues import PINNED, WAL, ingest, mem, tool
from tests.memory_core.records.test_triage import SESSION, capture
from tests.support.webdriver import Browser
from tests.telemetry.test_serve import ServeProcess

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these

PAGES = (("/", "Health"), ("/decisions", "Decisions"), ("/memory", "Memory"), ("/triage", "Triage"),
         ("/alerts-budget", "Alerts"))
LATEST = """---
name: where-we-are
type: project
---
## LATEST
Checkpoints move to a dedicated thread next; the busy-timeout change was reverted.
"""
PROMPTS = ("why does the WAL checkpoint stall the writer", "thanks, that works",
           "should we run checkpoints from a dedicated thread")


def shots_dir(tmp_path) -> str:
    target = os.environ.get("MEMHEALTH_CONSOLE_SCREENSHOTS")
    return os.path.join(REPO, target) if target and not os.path.isabs(target) else (target or str(tmp_path / "shots"))


@pytest.fixture
def seeded(project, tmp_path):
    """A project whose store was written by real hooks: a session start (gate run), prompts
    (decision rows; prompt text captured by opt-in), a session end whose detached capture
    worker proposed candidates, and alert decisions from the webhook."""
    env = clean_env(MEMHEALTH_INJECTION_CAPTURE_CONTENT="true", OTEL_SDK_DISABLED="true")
    mem(project, "wal", WAL)
    mem(project, "ids", PINNED)
    mem(project, "latest", LATEST)
    (project / "src" / "storage").mkdir(parents=True)
    (project / "src" / "storage" / "wal.py").write_text("def checkpoint_wal():\n    pass\n")
    ingest(project)
    start = run_hook("session-start", payload("session-start", project), cwd=str(project), env=env)
    assert start.returncode == 0, start.stderr
    assert "wal-checkpoint-stall" in tool(project, "Read", {"file_path": str(project / "src/storage/wal.py")},
                                          session="sess-1")
    for text in PROMPTS:
        run = run_hook("prompt", payload("prompt", project, prompt=text), cwd=str(project), env=env)
        assert run.returncode == 0, run.stderr
    capture(project, tmp_path / "session.jsonl", SESSION)
    assert len(rows(project, "SELECT id FROM capture_candidates WHERE state = 'pending'")) >= 3
    server = ServeProcess(project, env=env)
    try:
        alerts = {"receiver": "page", "alerts": [
            {"status": "firing", "labels": {"alertname": f"MemhealthHookFailing{i}", "severity": "critical"},
             "annotations": {"fix": "run memhealth gate"}, "fingerprint": f"fp{i}"} for i in range(4)]}
        code, _ = server.post("/alerts", json.dumps(alerts).encode())
        assert code == 200
        yield project, server
    finally:
        from tests.conftest import stop_process

        stop_process(server.proc)


def pending(project) -> dict[str, int]:
    """The first pending candidate of each kind."""
    first: dict[str, int] = {}
    for cid, kind in rows(project, "SELECT id, kind FROM capture_candidates WHERE state = 'pending' ORDER BY id"):
        first.setdefault(kind, cid)
    return first


def state(project, cid: int) -> str:
    return rows(project, "SELECT state FROM capture_candidates WHERE id = ?", (cid,))[0][0]


def raw(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    """A plain HTTP request with exactly the headers given (Host included)."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def token_from(page: bytes) -> str:
    found = re.search(rb'name="csrf" value="([^"]+)"', page)
    assert found, "no CSRF token on the triage page"
    return found.group(1).decode()


def test_every_page_opens_in_a_browser_and_a_candidate_is_triaged_by_clicking(seeded, tmp_path):
    project, server = seeded
    shots = shots_dir(tmp_path)
    cands = pending(project)
    before = len(rows(project, "SELECT id FROM capture_candidates WHERE state = 'pending'"))
    with Browser() as b:
        for path, title in PAGES:
            b.open(server.url + path)
            assert b.find("h1").text == title
            assert b.find("nav a[aria-current=page]").text == title
            b.full_height()
            png = b.screenshot(os.path.join(shots, f"{title.lower()}.png"))
            assert png.startswith(b"\x89PNG") and len(png) > 10_000
            b.call("POST", "/window/rect", {"width": 1280, "height": 1000})

        # what the pages show comes from the hooks' rows
        b.open(server.url + "/")
        assert "MEMORY-HEALTH:" in b.find(".verdict").text
        assert "session-start" in b.find("main").text
        b.open(server.url + "/decisions")
        body = b.find("main").text
        assert PROMPTS[0] in body  # capture opted in: the prompt text, from its root span
        assert len(b.find_all("#decisions tbody tr")) == len(PROMPTS)
        assert "IDF sum" in body and "waived" in body  # the cascade's arithmetic (a small corpus here)
        fired = [r.text for r in b.find_all("#cue-audit tbody tr") if "wal-checkpoint-stall" in r.text]
        assert len(fired) == 1 and "fired" in fired[0] and "src/storage/wal.py" in fired[0]
        b.open(server.url + "/memory")
        b.find("a[href='/memory?counts=1']").click()
        counts = b.wait_text("#counts", "transcript")
        assert "memory" in counts
        items = b.find("main").text
        assert "wal-checkpoint-stall" in items and "path: src/storage/**" in items
        assert "ids-are-monotonic pinned" in items and "## LATEST" in items
        b.open(server.url + "/alerts-budget")
        assert "MemhealthHookFailing0" in b.find("main").text and "folded" in b.find("main").text

        # confirm by clicking
        b.open(server.url + "/triage")
        decision = cands["decision"]
        assert str(decision) in b.find(f"#c{decision} h3").text
        b.find(f"#c{decision} form[action='/triage/confirm'] button").click()
        b.wait_text(".flash", f"#{decision} confirmed")
        assert "/triage?done=" in b.url
        assert state(project, decision) == "confirmed"
        (record,) = rows(project, "SELECT record_path FROM capture_candidates WHERE id = ?", (decision,))
        assert os.path.isfile(os.path.join(str(project), record[0]))
        assert f"c{decision}" not in [a.attribute("id") for a in b.find_all("article.card")]
        assert len(b.find_all("article.card")) == before - 1

        # retitle by typing, reject with the keyboard alone
        dead_end = cands["dead_end"]
        field = b.find(f"#t{dead_end}")
        field.clear()
        field.type("Passive checkpoints do not unblock the writer")
        assert field.property("value") == "Passive checkpoints do not unblock the writer"
        b.find(f"#c{dead_end} form[action='/triage/retitle'] button").click()
        b.wait_text(".flash", f"#{dead_end} retitled")
        assert rows(project, "SELECT title FROM capture_candidates WHERE id = ?", (dead_end,)) == [
            ("Passive checkpoints do not unblock the writer",)]
        b.find(f"#c{dead_end} form[action='/triage/reject'] button").type("\ue007")  # Enter, no click
        b.wait_text(".flash", f"#{dead_end} rejected")
        assert state(project, dead_end) == "rejected"
        b.full_height()
        b.screenshot(os.path.join(shots, "triage-after.png"))

        # the confirmed record is memory now
        b.open(server.url + "/memory")
        assert "Confirmed records" in b.find("main").text and record[0] in b.find("main").text
        search = b.find("#m-q")
        search.type("checkpoints dedicated thread")
        b.find("form[role=search] button").click()
        b.wait_text("main h2", "Search:")
        assert record[0] in b.find("#hits").text  # the record is searchable memory at once
        b.full_height()
        b.screenshot(os.path.join(shots, "memory.png"))
        b.color_scheme("dark")
        b.open(server.url + "/")
        b.full_height()
        dark = b.screenshot(os.path.join(shots, "health-dark.png"))
        assert dark.startswith(b"\x89PNG")


def test_foreign_host_or_missing_token_is_refused_and_changes_nothing(seeded):
    project, server = seeded
    port = urlsplit(server.url).port
    host = {"Host": f"127.0.0.1:{port}"}
    cid = pending(project)["correction"]

    status, headers, page = raw(server, "GET", "/triage", headers=host)
    assert status == 200
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "form-action 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "script-src" not in csp and headers["X-Content-Type-Options"] == "nosniff"
    token = token_from(page)
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    # DNS rebinding: the page, and the action with a good token, under a foreign Host
    for foreign in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io", ""):
        status, _, _ = raw(server, "GET", "/", headers={"Host": foreign})
        assert status == 421, foreign
        status, _, _ = raw(server, "POST", "/triage/confirm", urlencode({"id": cid, "csrf": token}).encode(),
                           {"Host": foreign, **form})
        assert status == 421, foreign
    # no token, a forged token, a token from another serve process's secret, a cross-site Origin
    for body, extra in ((urlencode({"id": cid}), {}),
                        (urlencode({"id": cid, "csrf": token.split(".")[0] + ".00"}), {}),
                        (urlencode({"id": cid, "csrf": token}), {"Origin": "http://evil.example"}),
                        (urlencode({"id": cid, "csrf": token}), {"Sec-Fetch-Site": "cross-site"})):
        status, _, text = raw(server, "POST", "/triage/confirm", body.encode(), {**host, **form, **extra})
        assert status == 403, (body, extra, text)
    # no state change on GET
    status, headers, _ = raw(server, "GET", f"/triage/confirm?id={cid}&csrf={token}", headers=host)
    assert status == 405 and headers["Allow"] == "POST"
    # an oversized form is refused before it is read
    status, _, _ = raw(server, "POST", "/triage/reject", b"x" * (64 * 1024 + 1), {**host, **form})
    assert status == 413
    assert state(project, cid) == "pending"
    assert rows(project, "SELECT count(*) FROM capture_candidates WHERE state != 'pending'") == [(0,)]

    # the control: the same request, right Host and token, does change the store
    status, headers, _ = raw(server, "POST", "/triage/reject", urlencode({"id": cid, "csrf": token}).encode(),
                             {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}", **form})
    assert status == 303 and headers["Location"].startswith("/triage?done=")
    assert state(project, cid) == "rejected"
    # and a triage error is shown, not applied twice
    status, headers, _ = raw(server, "POST", "/triage/reject", urlencode({"id": cid, "csrf": token}).encode(),
                             {**host, **form})
    assert status == 303 and "error=" in headers["Location"]
    status, _, page = raw(server, "GET", headers["Location"], headers=host)
    assert b"is rejected" in page


def test_metrics_and_healthz_are_unchanged_by_the_console(seeded):
    _project, server = seeded
    code, body, _ = server.get("/healthz")
    assert code == 200 and json.loads(body)["status"] == "ok"
    code, body, _ = server.get("/metrics")
    assert code == 200 and b"memhealth_injection_decisions_total" in body


def test_store_text_is_escaped_on_every_page(seeded, tmp_path):
    project, server = seeded
    hostile = [("assistant", "We decided to render <img src=x onerror=alert(1)> titles as text instead of markup.")]
    capture(project, tmp_path / "hostile.jsonl", hostile, session="s2")
    host = {"Host": f"127.0.0.1:{urlsplit(server.url).port}"}
    status, _, page = raw(server, "GET", "/triage", headers=host)
    assert status == 200
    assert b"&lt;img src=x onerror=alert(1)&gt;" in page and b"<img src=x" not in page
    for path, _title in PAGES:
        status, _, page = raw(server, "GET", path, headers=host)
        assert status == 200 and b"<script" not in page and b"<img" not in page, path


def test_tokens_expire_and_are_bound_to_the_process_secret():
    from telemetry.console import TOKEN_TTL_S, Console

    class App:
        host, port = "127.0.0.1", 9464

    one, other = Console(App()), Console(App())
    t0 = 1_800_000_000
    token = one.token(now=t0)
    assert one.token_ok(token, now=t0 + 60)
    assert not one.token_ok(token, now=t0 + TOKEN_TTL_S + 1)  # stale
    assert not other.token_ok(token, now=t0 + 60)  # another serve process's secret
    assert not one.token_ok(token.replace(".", ".0", 1), now=t0 + 60)
    assert one.allowed_hosts() == {"127.0.0.1:9464", "localhost:9464", "[::1]:9464"}


def test_a_locked_store_fails_the_action_visibly_and_changes_nothing(seeded):
    from memory_core.store.db import sqlite3

    project, server = seeded
    host = {"Host": f"127.0.0.1:{urlsplit(server.url).port}"}
    _, _, page = raw(server, "GET", "/triage", headers=host)
    cid = pending(project)["decision"]
    holder = sqlite3.connect(os.path.join(str(project), ".memhealth", "memory.db"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the busy timeout
        status, headers, _ = raw(server, "POST", "/triage/confirm",
                                 urlencode({"id": cid, "csrf": token_from(page)}).encode(),
                                 {**host, "Content-Type": "application/x-www-form-urlencoded"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert status == 303 and "error=" in headers["Location"] and "locked" in headers["Location"]
    assert state(project, cid) == "pending"
    # confirm writes the record file first: with the decision unrecorded, the file must go too,
    # or the next ingest would make a pending candidate memory
    records = os.path.join(str(project), ".memhealth", "memory", "records")
    assert os.path.isdir(records)  # the file was written, then removed
    assert [f for f in os.listdir(records) if f.startswith(f"decision-{cid}-")] == []
    # and once the lock is gone the same form applies
    status, headers, _ = raw(server, "POST", "/triage/confirm", urlencode({"id": cid, "csrf": token_from(page)}).encode(),
                             {**host, "Content-Type": "application/x-www-form-urlencoded"})
    assert status == 303 and "done=" in headers["Location"] and state(project, cid) == "confirmed"
    assert [f for f in os.listdir(records) if f.startswith(f"decision-{cid}-")]
