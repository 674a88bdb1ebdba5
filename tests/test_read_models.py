"""The read models: SQL against the schema lives in memory_core, beside each table's writer.

probes/, telemetry/ and memhealth/ speak in the read models' names (`latest_run(conn)`,
`outcomes_by_day(conn, since_ns)`, ...); a string literal there that reads or writes a schema
table by name is a query that escaped its model. The tables are taken from a store created by
the current code, so a new table is covered the day it is added.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

from tests.conftest import REPO

CALLERS = ("probes", "telemetry", "memhealth")

# path -> {table: why it may name that table in SQL}. Keep it short; every entry says why.
ALLOWED = {
    # every hook, the prompt hook included, looks up the ablation schedule before it runs;
    # the prompt hook's import budget (tests/test_cli.py) admits no memory_core.store.meta,
    # so that one indexed key read stays inline (memory_core.delivery.ablation writes it)
    "memhealth/handlers.py": {"meta": "the ablation lookup on the prompt hook's import budget"},
}

SQL_VERB = r"(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)"


def schema_tables(tmp_path_factory) -> set[str]:
    from memory_core.store.db import connect

    path = tmp_path_factory.mktemp("schema") / "memory.db"
    conn = connect(str(path))
    try:
        return {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> set[str]:
    found = schema_tables(tmp_path_factory)
    assert {"heartbeats", "decisions", "spans", "gate_runs", "chunks"} <= found  # the store we mean
    return found


def literals(tree: ast.AST):
    """(line, text) of every string literal; an f-string's literal parts are joined with a
    placeholder, so `f"SELECT x FROM spans WHERE id IN ({marks})"` reads as one statement."""
    inside = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str)
                                       else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def sql_naming_tables(source: str, tables: set[str]) -> list[str]:
    """`line: table` for each SQL verb in a literal of `source` followed by a schema table."""
    pattern = re.compile(SQL_VERB + r"\s+(?:IF NOT EXISTS\s+)?\"?([a-z_][a-z0-9_]*)\"?")
    found = []
    for line, text in literals(ast.parse(source)):
        for name in pattern.findall(text):
            if name in tables:
                found.append(f"{line}: {name}")
    return found


def caller_modules():
    for package in CALLERS:
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, name), REPO)


@pytest.mark.parametrize("path", list(caller_modules()))
def test_callers_speak_in_the_read_models_names_not_sql(path, tables):
    allowed = ALLOWED.get(path, {})
    with open(os.path.join(REPO, path), encoding="utf-8") as fh:
        found = [f for f in sql_naming_tables(fh.read(), tables) if f.split(": ")[1] not in allowed]
    assert found == [], f"{path} embeds SQL against the schema; move it to a read model in memory_core"


def test_every_allowed_entry_still_names_its_table(tables):
    """An entry whose module no longer runs that SQL is stale: remove it."""
    for path, entries in ALLOWED.items():
        with open(os.path.join(REPO, path), encoding="utf-8") as fh:
            named = {f.split(": ")[1] for f in sql_naming_tables(fh.read(), tables)}
        assert set(entries) <= named, f"{path}: allowed {sorted(set(entries) - named)} but no longer runs that SQL"


@pytest.mark.parametrize("source, expected", [
    ('q = "SELECT count(*) FROM heartbeats WHERE hook = ?"', ["1: heartbeats"]),
    ('q = ("SELECT a.x FROM cue_audit a "\n     "LEFT JOIN memory_items m ON m.id = a.item_id")',
     ["1: cue_audit", "1: memory_items"]),
    ('q = f"SELECT trace_id FROM spans WHERE trace_id IN ({marks})"', ["1: spans"]),
    ('q = "INSERT INTO gate_runs(ts_ns) VALUES (?)"', ["1: gate_runs"]),
    ('q = "UPDATE decisions SET x = 1"', ["1: decisions"]),
    ('q = "SELECT 1 FROM sqlite_master WHERE name = ?"', []),      # the catalog, not a table
    ('doc = "the gate reads heartbeats from the store"', []),         # prose names a table freely
    ('q = "SELECT 1 FROM not_a_table"', []),
])
def test_the_rule_sees_sql_naming_a_table_wherever_it_is_written(source, expected, tables):
    """A test of the test: implicit concatenation, f-strings, joins and writes are all seen."""
    assert sql_naming_tables(source, tables) == expected
