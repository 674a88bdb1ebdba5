"""STALE-CLAIM from the code index: a memory naming a symbol the code no longer defines
arrives as STALE-CLAIM, never DO-NOT-REBUILD; after a rename it names the new place; and a
symbol cue follows its symbol to the file that now defines it. Real git repositories, the
real `memhealth ingest`, hooks as subprocesses."""

from __future__ import annotations

import json

import pytest

from tests.conftest import payload, rows, run_cli, run_hook
from tests.support.code_eval import git

CODE = '''"""Response compression for the API."""


class GZipper:
    """Gzips response bodies above a minimum size."""

    def __init__(self, app, minimum_size=500):
        self.app = app
        self.minimum_size = minimum_size
'''
OTHER = '''"""Response compression for the API."""


class Brotlier:
    """Brotli-compresses response bodies."""
'''
MEMORY = """---
name: response compression
type: subsystem
path: app/compress.py
symbols: GZipper
description: response bodies are gzipped by GZipper in app/compress.py
---
Responses above 500 bytes are gzipped by `GZipper`; extend it rather than adding a second compressor.
"""
PROMPT = "let's build response compression that gzips large bodies"


def ingest(root) -> None:
    proc = run_cli("ingest", "--project", str(root), "memory", "code")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def commit(root, message: str) -> str:
    git(str(root), "add", "-A", "app")
    git(str(root), "commit", "-q", "-m", message)
    return git(str(root), "rev-parse", "HEAD").strip()


def prompt(root, session: str) -> str:
    run = run_hook("prompt", payload("UserPromptSubmit", root, prompt=PROMPT, session_id=session), cwd=str(root))
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    return run.context()


def read(root, rel: str, session: str) -> str | None:
    run = run_hook("pre-tool", payload("PreToolUse", root, session_id=session, tool_name="Read",
                                       tool_input={"file_path": str(root / rel)}), cwd=str(root))
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    return json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"] if run.stdout else None


@pytest.fixture
def repo(project):
    (project / "app").mkdir()
    (project / "app" / "compress.py").write_text(CODE)
    (project / ".memhealth" / "memory").mkdir(parents=True, exist_ok=True)
    (project / ".memhealth" / "memory" / "compression.md").write_text(MEMORY)
    git(str(project), "init", "-q", "-b", "main")
    commit(project, "compression")
    ingest(project)
    return project


def test_while_the_code_has_the_symbol_the_entry_is_do_not_rebuild(repo):
    text = prompt(repo, "s1")
    assert 'DO-NOT-REBUILD? "response compression" may already exist (lives in app/compress.py)' in text, text
    assert "STALE-CLAIM" not in text


def test_a_memory_naming_a_symbol_deleted_from_the_code_arrives_as_stale_claim(repo):
    (repo / "app" / "compress.py").write_text(OTHER)
    head = commit(repo, "replace gzip with brotli")
    ingest(repo)
    text = prompt(repo, "s2")
    assert "DO-NOT-REBUILD" not in text, text
    assert (f'STALE-CLAIM: "response compression" (a subsystem inventory entry) — `GZipper` is no longer '
            f"defined anywhere in the code (read from the code at {head[:12]})") in text, text
    [(detail,)] = rows(repo, "SELECT detail FROM decisions WHERE session_id = 's2'")
    assert json.loads(detail)["stale_claim"][0]["instead_of"] == "dnr"


def test_after_a_rename_the_stale_claim_names_the_new_place(repo):
    git(str(repo), "mv", "app/compress.py", "app/gzipping.py")
    head = commit(repo, "rename the compression module")
    ingest(repo)
    text = prompt(repo, "s3")
    assert "DO-NOT-REBUILD" not in text, text
    assert ("— app/compress.py no longer exists; `GZipper` is now defined at app/gzipping.py:4 "
            f"(read from the code at {head[:12]})") in text, text


def test_a_symbol_cue_follows_its_symbol_to_the_renamed_file(repo):
    # the memory names GZipper as a symbol cue: a Read of the file defining it delivers it
    first = read(repo, "app/compress.py", "r1")
    assert first is not None and "response compression" in first, first
    git(str(repo), "mv", "app/compress.py", "app/gzipping.py")
    commit(repo, "rename the compression module")
    ingest(repo)
    after = read(repo, "app/gzipping.py", "r2")
    assert after is not None and "response compression" in after, after
    audit = rows(repo, "SELECT trigger, outcome, detail FROM cue_audit WHERE session_id = 'r2'")
    assert ("symbol", "fired", "GZipper defined at app/gzipping.py:4") in audit, audit


def test_a_memory_naming_no_code_file_is_not_judged_by_the_index(repo):
    # an entry whose `path:` is a doc names library words in passing: never refuted by the index
    (repo / ".memhealth" / "memory" / "compression.md").write_text(
        MEMORY.replace("path: app/compress.py\nsymbols: GZipper\n", "path: README.md\n"))
    (repo / "README.md").write_text("# demo\n")
    ingest(repo)
    text = prompt(repo, "s4")
    assert "STALE-CLAIM" not in text and 'DO-NOT-REBUILD? "response compression"' in text, text


def test_a_path_and_line_the_symbol_left_names_where_it_is_now(repo):
    # the entry says where GZipper is, to the line; the file grew a header above it
    (repo / ".memhealth" / "memory" / "compression.md").write_text(
        MEMORY.replace("path: app/compress.py\n", "path: app/compress.py:4\n"))
    ingest(repo)
    assert "STALE-CLAIM" not in prompt(repo, "s5")
    (repo / "app" / "compress.py").write_text('"""Response compression for the API."""\n\nimport gzip\n\n' + CODE)
    head = commit(repo, "import gzip")
    ingest(repo)
    text = prompt(repo, "s6")
    assert "DO-NOT-REBUILD" not in text, text
    assert ("— `GZipper` is no longer at app/compress.py:4; it is defined at app/compress.py:8 "
            f"(read from the code at {head[:12]})") in text, text


def test_a_library_identifier_in_the_description_is_not_a_claim(repo):
    # prose naming a library's function is not a claim about this project's code
    (repo / ".memhealth" / "memory" / "compression.md").write_text(
        MEMORY.replace("description: response bodies are gzipped by GZipper in app/compress.py",
                       "description: response bodies are gzipped by GZipper, with functools.lru_cache and zlib_level"))
    ingest(repo)
    text = prompt(repo, "s7")
    assert "STALE-CLAIM" not in text and 'DO-NOT-REBUILD? "response compression"' in text, text


def test_an_entry_named_by_its_identifier_claims_it(repo):
    # the way `memhealth inventory propose` writes an entry: named by the component
    (repo / ".memhealth" / "memory" / "compression.md").write_text(
        MEMORY.replace("name: response compression", "name: GZipper").replace("symbols: GZipper\n", ""))
    (repo / "app" / "compress.py").write_text(OTHER)
    commit(repo, "replace gzip with brotli")
    ingest(repo)
    run = run_hook("prompt", payload("UserPromptSubmit", repo, prompt="let's build a GZipper for large bodies",
                                     session_id="s8"), cwd=str(repo))
    text = run.context()
    assert '`GZipper` is no longer defined anywhere in the code' in text and "DO-NOT-REBUILD" not in text, text
