"""`memhealth inventory`: the components read from the code, listed and proposed for triage,
through the real CLI on a real git repository."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import rows, run_cli
from tests.memory_core.ingest.test_ingest_code import commit, git, write


@pytest.fixture
def proj(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "web/middleware/gzip.py", '"""Gzip compression of responses."""\n\n'
          'class GZipMiddleware:\n    """Compress responses when the client accepts gzip."""\n')
    write(root, "web/ratelimit.py", '"""Rate limiting per client."""\n\nclass RateLimiter:\n    """Token bucket."""\n')
    write(root, "web/app.py", "from web.middleware.gzip import GZipMiddleware\n"
          "from web.ratelimit import RateLimiter\nGZipMiddleware, RateLimiter\n")
    write(root, "web/views.py", "from web.middleware.gzip import GZipMiddleware\n")
    write(root, "web/util.py", "def helper():\n    return 1\n")
    commit(root, "code")
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    assert run_cli("ingest", "code", "--project", str(root)).returncode == 0
    return root


def inventory(root, *args):
    proc = run_cli("inventory", *args, "--json", "--project", str(root))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_inventory_lists_components_most_mentioned_first_and_no_plain_function(proj):
    data = inventory(proj)
    assert data["commit"] == git(proj, "rev-parse", "HEAD").strip()
    names = [c["name"] for c in data["components"]]
    assert names[0] == "GZipMiddleware"  # two other files mention it
    assert {"GZipMiddleware", "RateLimiter", "gzip", "ratelimit"} <= set(names)
    assert "helper" not in names and "util" not in names  # a function, an undocumented module
    gz = data["components"][0]
    assert (gz["path"], gz["line_start"], gz["rank"]) == ("web/middleware/gzip.py", 3, 2)
    assert gz["summary"] == "Compress responses when the client accepts gzip."
    assert gz["curated"] is False and gz["candidate"] is None
    text = run_cli("inventory", "--limit", "1", "--project", str(proj))
    assert text.returncode == 0
    assert "class     GZipMiddleware  web/middleware/gzip.py:3" in text.stdout
    assert "RateLimiter" not in text.stdout


def test_propose_queues_the_top_components_for_triage_once(proj):
    first = inventory(proj, "propose", "--limit", "2")
    assert [a["name"] for a in first["added"]] == ["GZipMiddleware", "gzip"]  # the two ranked 2
    again = inventory(proj, "propose", "--limit", "2")
    assert again["known"] == 2 and [a["name"] for a in again["added"]] == ["RateLimiter", "ratelimit"]
    listed = run_cli("triage", "--json", "--project", str(proj))
    assert listed.returncode == 0, listed.stderr
    (gz,) = [c for c in json.loads(listed.stdout)["candidates"] if c["title"] == "GZipMiddleware"]
    assert gz["kind"] == "subsystem"
    assert gz["statement"].startswith("class GZipMiddleware (class GZipMiddleware) at web/middleware/gzip.py:3")
    assert "read from the code at" in gz["statement"]


def test_confirm_retitle_and_reject_make_the_curated_inventory(proj):
    added = {a["name"]: a["id"] for a in inventory(proj, "propose", "--limit", "10")["added"]}
    gz, rl = added["GZipMiddleware"], added["RateLimiter"]
    assert run_cli("triage", "retitle", str(gz), "gzip middleware", "--project", str(proj)).returncode == 0
    proc = run_cli("triage", "confirm", str(gz), "--project", str(proj))
    assert proc.returncode == 0, proc.stderr
    rel = proc.stdout.split("→")[-1].strip()
    text = open(os.path.join(str(proj), rel), encoding="utf-8").read()
    assert "type: subsystem" in text and "path: web/middleware/gzip.py" in text
    assert "name: gzip middleware" in text and "source: web/middleware/gzip.py:3 (code)" in text
    # indexed at once as an inventory entry: the listing says curated, propose skips it
    assert rows(proj, "SELECT count(*) FROM chunks WHERE source = 'memory' AND kind = 'subsystem'") == [(1,)]
    listing = {c["name"]: c for c in inventory(proj)["components"]}
    assert listing["GZipMiddleware"]["curated"] is True
    assert run_cli("triage", "reject", str(rl), "--project", str(proj)).returncode == 0
    later = inventory(proj, "propose", "--limit", "10")
    # the curated entry covers its file: the class and the module it is in
    assert later["added"] == [] and later["curated"] == 2 and later["known"] == 2
    assert listing["RateLimiter"]["candidate"]["state"] == "pending"
    assert {c["name"]: c for c in inventory(proj)["components"]}["RateLimiter"]["candidate"]["state"] == "rejected"


def test_propose_before_the_code_is_indexed_says_what_to_run(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    assert run_cli("init", "--project", str(root), "--no-templates").returncode == 0
    proc = run_cli("inventory", "propose", "--project", str(root))
    assert proc.returncode == 2 and "memhealth ingest code" in proc.stderr
    listed = run_cli("inventory", "--project", str(root))
    assert listed.returncode == 0 and "not indexed yet" in listed.stdout
