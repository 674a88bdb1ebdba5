"""`memhealth init` ships the conventions as files, never overwriting what exists."""

from __future__ import annotations

import json

from tests.conftest import rows, run_cli

FILES = (".memhealth/memory/MEMORY.md", ".memhealth/memory/resume.md", ".memhealth/memory/invariants.md",
         ".memhealth/ledgers/decisions.ndjson", ".memhealth/CONSTITUTION.md")


def gate_check(root, name: str) -> dict:
    proc = run_cli("gate", "--json", cwd=str(root))
    return next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == name)


def test_a_fresh_init_installs_the_conventions_and_passes_the_memory_file_check(tmp_path):
    proc = run_cli("init", "--project", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    for rel in FILES:
        assert (tmp_path / rel).is_file(), rel
        assert f"wrote {tmp_path / rel}" in proc.stdout
    index = (tmp_path / FILES[0]).read_text()
    assert "## LATEST" in index and "[resume.md](resume.md)" in index
    constitution = (tmp_path / FILES[4]).read_text()
    hierarchy = constitution[constitution.index("## Ground-truth hierarchy"):]
    assert hierarchy.index("Running code and live output") < hierarchy.index("training knowledge")
    assert "without re-deriving" in hierarchy and "Verify before building" in hierarchy
    check = gate_check(tmp_path, "memory_files")
    assert check["status"] == "green", check
    # the memory files are memory, and the ledger is read by the ledger source
    with open(tmp_path / FILES[3], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": "2026-12-01", "decision": "checkpoints run on their own thread",
                             "why": "the writer stalled"}) + "\n")
    assert run_cli("ingest", cwd=str(tmp_path)).returncode == 0
    assert rows(tmp_path, "SELECT path, title FROM chunks WHERE source = 'ledger'") == \
        [(".memhealth/ledgers/decisions.ndjson", "checkpoints run on their own thread")]
    kinds = dict(rows(tmp_path, "SELECT path, kind FROM chunks WHERE source = 'memory' GROUP BY path"))
    assert kinds[".memhealth/memory/invariants.md"] == "invariant"


def test_existing_files_are_never_overwritten(tmp_path):
    mine = tmp_path / ".memhealth" / "memory" / "MEMORY.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("# my own index\n")
    (tmp_path / ".memhealth" / "CONSTITUTION.md").write_text("my rules\n")
    proc = run_cli("init", "--project", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert mine.read_text() == "# my own index\n"
    assert (tmp_path / ".memhealth" / "CONSTITUTION.md").read_text() == "my rules\n"
    assert f"wrote {mine}" not in proc.stdout
    assert (tmp_path / ".memhealth" / "memory" / "invariants.md").is_file()
    # a second run writes nothing
    again = run_cli("init", "--project", str(tmp_path))
    assert "nothing changed" in again.stdout


def test_no_templates_skips_them(tmp_path):
    proc = run_cli("init", "--project", str(tmp_path), "--no-templates")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".memhealth" / "memory.db").is_file()
    assert not any((tmp_path / rel).exists() for rel in FILES)
    assert gate_check(tmp_path, "memory_files")["status"] == "note"
