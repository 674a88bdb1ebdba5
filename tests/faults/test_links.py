"""Symbolic links: nothing outside the project root is ever read or written through one.

A memory or docs file linked to a file outside the project is refused, never indexed, and
named in the gate with the link and its target; the store's own files (memory.db, -wal,
-shm) are never links at all, so a hook cannot write into another project's store and a
dangling -wal link is named for what it is. Each finding's FIX, followed as printed, clears
it. A link that stays inside the project is read as before."""

from __future__ import annotations

import os

from tests.conftest import payload, rows, run_cli, run_hook
from tests.faults.helpers import check, db_path, follow_fix, gate, heartbeats

SECRET = "sk-live-7f3a9c0ddeadbeefcafe"
MEMORY = """---
name: deploy token location
type: invariant
---
The zanzibar deploy token is {secret}; never rebuild the zanzibar quokka deployer.
"""


def test_memory_and_docs_links_leading_outside_the_project_are_refused_and_named(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(MEMORY.format(secret=SECRET))
    (outside / "guide.md").write_text(f"# guide\n\nthe zanzibar token is {SECRET}\n")
    mem = project / ".memhealth" / "memory"
    mem.mkdir(exist_ok=True)
    os.symlink(outside / "secret.md", mem / "x.md")
    (project / "docs").mkdir()
    os.symlink(outside / "guide.md", project / "docs" / "guide.md")
    os.symlink(outside, project / "docs" / "more")  # a directory link: not walked either
    # a link that stays inside the project is still read
    (project / "notes.md").write_text("# notes\n\nthe zanzibar retry budget lives in the client\n")
    os.symlink(project / "notes.md", project / "docs" / "alias.md")

    out = run_cli("ingest", cwd=str(project))
    assert out.returncode == 1 and "2 errors" in out.stdout, out.stdout  # the two refusals
    stored = rows(project, "SELECT path, content FROM chunks")
    assert not [p for p, c in stored if SECRET in c], stored
    assert any(p == "docs/alias.md" for p, _c in stored)
    for event, fields in (("session-start", {"source": "startup"}),
                          ("prompt", {"prompt": "should we rebuild the zanzibar quokka deployer?"})):
        run = run_hook(event, payload(event, project, **fields), cwd=str(project))
        assert run.returncode == 0 and SECRET.encode() not in run.stdout

    verdict = gate(project)
    finding = check(verdict, "ingest_freshness")
    assert finding["status"] == "red", finding
    assert ".memhealth/memory/x.md" in finding["detail"] and "docs/guide.md" in finding["detail"]
    assert str(outside / "secret.md") in finding["detail"] and "outside the project" in finding["detail"]
    follow_fix(finding["fix"], project)
    assert not os.path.lexists(mem / "x.md") and not os.path.lexists(project / "docs" / "guide.md")
    assert (outside / "secret.md").exists()  # the fix removes the link, never its target
    assert check(gate(project), "ingest_freshness")["status"] == "green"


def _other_store(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    assert run_cli("init", "--project", str(other), "--no-templates").returncode == 0
    assert run_hook("stop", payload("stop", other), cwd=str(other)).returncode == 0
    return other


def test_a_store_linked_to_another_projects_store_is_never_written(project, tmp_path):
    other = _other_store(tmp_path)
    before = heartbeats(other)
    for suffix in ("", "-wal", "-shm"):
        if os.path.lexists(db_path(project) + suffix):
            os.unlink(db_path(project) + suffix)
    os.symlink(db_path(other), db_path(project))
    run = run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project))
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    assert b"symbolic link" in run.stderr
    assert heartbeats(other) == before  # nothing was written through the link

    verdict = gate(project)
    assert verdict["exit"] == 1
    reds = [c for c in verdict["checks"] if c["status"] == "red"]
    assert reds and "memory.db is a symbolic link" in reds[0]["detail"]
    assert str(db_path(other)) in reds[0]["detail"]
    assert heartbeats(other) == before
    follow_fix(reds[0]["fix"], project)
    assert os.path.exists(db_path(other))  # the other project's store is untouched
    assert run_cli("init", "--project", str(project), "--no-templates").returncode == 0
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    after = gate(project)
    assert "symbolic link" not in " ".join(c["detail"] for c in after["checks"] if c["status"] == "red")
    assert heartbeats(other) == before


def test_a_dangling_wal_link_is_named_as_a_link_with_a_fix_that_works(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    wal = db_path(project) + "-wal"
    if os.path.lexists(wal):
        os.unlink(wal)
    os.symlink("/nonexistent/memory.db-wal", wal)
    run = run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project))
    assert run.returncode == 0
    verdict = gate(project)
    reds = [c for c in verdict["checks"] if c["status"] == "red"]
    assert reds and "memory.db-wal is a symbolic link" in reds[0]["detail"], reds
    assert "chmod" not in reds[0]["fix"]
    follow_fix(reds[0]["fix"], project)
    assert not os.path.lexists(wal)
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    after = gate(project)
    assert "symbolic link" not in " ".join(c["detail"] for c in after["checks"] if c["status"] == "red")
    assert ("prompt", "error", "db_symlink") in [h[:3] for h in heartbeats(project, "prompt")]
