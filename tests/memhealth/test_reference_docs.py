"""The reference docs are generated from the code and cover everything a user can name:
every command and subcommand, config key, metric and gate check (datasette's test_docs.py
way: an undocumented item fails here)."""

from __future__ import annotations

import os
import re

import pytest

from memhealth.reference import _subcommands, reference_docs
from tests.conftest import REPO, run_cli


def committed(name: str) -> str:
    with open(os.path.join(REPO, "docs", "reference", name), encoding="utf-8") as fh:
        return fh.read()


def commands(parser, prefix="memhealth"):
    for name, sub, _help in _subcommands(parser):
        yield f"{prefix} {name}", sub
        yield from commands(sub, f"{prefix} {name}")


def test_generate_check_covers_the_reference_docs():
    proc = run_cli("generate", "--check", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert set(reference_docs()) == {f"docs/reference/{n}" for n in
                                     ("cli.md", "config.md", "metrics.md", "gate-checks.md", "spans.md", "schema.md", "json.md", "http.md")}


def test_a_stale_reference_page_fails_the_check(tmp_path):
    """A test of the check: a page that lost a line is reported by name."""
    from telemetry import artifacts

    artifacts.write(str(tmp_path), extra=reference_docs())
    page = tmp_path / "docs" / "reference" / "config.md"
    page.write_text(page.read_text().replace("`busy_timeout_s`", "`busy_timeout`"))
    assert artifacts.stale(str(tmp_path), extra=reference_docs()) == [
        "docs/reference/config.md: differs from the generator's output"]


def test_every_command_and_option_is_in_the_cli_reference():
    from memhealth.cli import build_parser

    text = committed("cli.md")
    found = list(commands(build_parser()))
    assert len(found) >= 17
    for path, parser in found:
        assert f"`{path}`" in text, f"{path} is not in docs/reference/cli.md"
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in text, f"{path} {flag} is not in docs/reference/cli.md"


def test_every_config_key_is_in_the_config_reference():
    from memhealth.config import SCHEMA

    text = committed("config.md")
    for section, keys in SCHEMA.items():
        assert f"## [{section}]" in text, section
        for key in keys:
            assert f"`MEMHEALTH_{section.upper()}_{key.upper()}`" in text, f"[{section}].{key}"


def test_every_metric_is_in_the_metrics_reference():
    from telemetry.catalog import CATALOG

    text = committed("metrics.md")
    for name in CATALOG:
        assert re.search(rf"^\| `{re.escape(name)}` \|", text, re.M), name


def test_every_table_of_a_fresh_store_is_in_the_schema_reference(tmp_path):
    from memory_core.store.db import connect
    from memory_core.store.schema import LATEST

    text = committed("schema.md")
    assert f"schema version {LATEST}" in text
    conn = connect(str(tmp_path / "memory.db"))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts_%'")]
    finally:
        conn.close()
    assert tables
    for name in tables:
        assert f"### `{name}`" in text, name


def test_every_gate_check_is_in_the_gate_checks_reference():
    from probes.gate import CHECKS

    text = committed("gate-checks.md")
    names = [name for name, _check in CHECKS]
    assert names
    for name in names:
        assert f"| `{name}` |" in text, name


@pytest.mark.parametrize("page", ["cli.md", "config.md", "metrics.md", "gate-checks.md", "spans.md",
                                  "schema.md", "json.md", "http.md"])
def test_the_readme_links_every_reference_page(page):
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        assert f"docs/reference/{page}" in fh.read()


def test_the_readme_is_a_landing_page():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
        assert len(fh.read().splitlines()) <= 250


def markdown_files():
    yield os.path.join(REPO, "README.md")
    yield os.path.join(REPO, "CHANGELOG.md")
    for dirpath, _dirs, files in os.walk(os.path.join(REPO, "docs")):
        for name in files:
            if name.endswith(".md"):
                yield os.path.join(dirpath, name)


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = []
    for path in markdown_files():
        with open(path, encoding="utf-8") as fh:
            text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^(https?:|mailto:|#)", target):
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            if not os.path.exists(resolved):
                broken.append(f"{os.path.relpath(path, REPO)} -> {target}")
    assert broken == []


def test_every_test_file_the_docs_name_exists():
    """A test named in the docs (or in a module's docstring) is where a reader goes to see a
    claim proven: a test moved or renamed must take its mentions with it. A name under one of
    our test folders must exist; a bare `tests/test_x.py` is flagged when a test of that name
    lives elsewhere in the tree (moved), since sample projects and fixtures name tests of their
    own. The changelog keeps the names a test had then."""
    named = re.compile(r"(?<![\w/])tests/(?:[\w]+/)*test_\w+\.py")
    ours = {"memory_core", "probes", "telemetry", "memhealth", "faults", "e2e", "support"}
    moved = {}
    for dirpath, _dirs, files in os.walk(os.path.join(REPO, "tests")):
        for name in files:
            if name.startswith("test_") and name.endswith(".py"):
                moved.setdefault(name, os.path.relpath(os.path.join(dirpath, name), REPO))
    stale = []
    for dirpath, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        if os.path.relpath(dirpath, REPO).split(os.sep)[:2] == ["tests", "fixtures"]:
            continue
        for name in files:
            if name == "CHANGELOG.md" or not (name.endswith((".py", ".md", ".toml", ".yml", ".yaml"))
                                              or name == "Makefile"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for target in set(named.findall(fh.read())):
                    parts = target.split("/")
                    if os.path.exists(os.path.join(REPO, target)):
                        continue
                    if (len(parts) > 2 and parts[1] in ours) or (len(parts) == 2 and parts[1] in moved):
                        stale.append(f"{os.path.relpath(path, REPO)} -> {target}")
    assert sorted(stale) == []


def test_nothing_in_the_repository_cites_a_document_outside_it():
    """The project stands alone: cite a public source by its title (a paper, Claude Code's
    docs, an RFC) or the project's own docs, never a file a clone does not contain."""
    outside = re.compile("|".join([r"\bREFER" + r"ENCE\b", r"DESI" + r"GN\.md", r"STY" + r"LE\.md",
                                   r"\bpaper §", r"\bissue \d+", "REFER" + "ENCE\\.md"]))
    found = []
    for dirpath, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        if os.path.relpath(dirpath, REPO).startswith(os.path.join("tests", "fixtures")):
            continue  # third parties' text (real repositories, corpora), kept as it is
        for name in files:
            if name == "CHANGELOG.md" or not name.endswith((".py", ".md", ".yaml", ".yml", ".toml", ".scm")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    if outside.search(line):
                        found.append(f"{os.path.relpath(path, REPO)}:{n}: {line.strip()[:80]}")
    assert found == []
