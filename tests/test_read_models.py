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
    # the prompt hook's import budget (tests/memhealth/test_cli.py) admits no memory_core.store.meta,
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


# -- the read models answer what their callers relied on ---------------------------------------

@pytest.fixture
def conn(tmp_path):
    from memory_core.store.db import connect

    c = connect(str(tmp_path / "memory.db"))
    yield c
    c.close()


def test_the_latest_run_is_the_row_written_last_not_the_one_whose_clock_said_latest(conn):
    from memory_core.outbox import heartbeat_reads
    from memory_core.store.tx import write

    with write(conn):
        conn.execute("INSERT INTO heartbeats(hook, started_ns, ended_ns, outcome) VALUES ('prompt', 900, 901, 'ok')")
        conn.execute("INSERT INTO heartbeats(hook, started_ns, ended_ns, outcome, reason) "
                     "VALUES ('prompt', 100, 101, 'error', 'db_locked')")  # written later, clock behind
        conn.execute("INSERT INTO heartbeats(hook, started_ns) VALUES ('prompt', 1000)")  # still running
    outcome, reason, _detail, started, _id = heartbeat_reads.last_completed(conn, "prompt")
    assert (outcome, reason, started) == ("error", "db_locked", 100)
    assert heartbeat_reads.last_completed(conn, "stop") is None
    assert heartbeat_reads.newest_id(conn) == 3
    assert heartbeat_reads.runs_and_running(conn, "prompt") == (3, 1)


def test_a_gate_run_reads_back_with_its_reds_first(conn):
    from memory_core.outbox import gate_log
    from memory_core.store.tx import write

    with write(conn):
        run = gate_log.record_run(conn, 5, "s1", 3, 1, 1, "red", 2.5, [
            ("b_check", "green", "", "fine", None, 0.1),
            ("a_check", "note", "", "idle", None, 0.1),
            ("z_check", "red", "", "broken", "do this", 0.2)])
    assert gate_log.latest_run(conn) == (run, 5, 3, 1, 1, "red", 2.5)
    assert [c[0] for c in gate_log.checks_of(conn, run)] == ["z_check", "a_check", "b_check"]
    assert gate_log.red_checks_of(conn, [run]) == [(run, "z_check")]
    assert gate_log.red_checks_of(conn, []) == []
    assert gate_log.last_red_detail(conn, "z_check") == "broken"
    assert gate_log.last_red_detail(conn, "b_check") is None


def test_the_keyset_pages_filter_and_stop_at_their_limit(conn):
    from memory_core.outbox import alert_log, decision_reads
    from memory_core.store.tx import write

    with write(conn):
        for i in range(5):
            conn.execute("INSERT INTO decisions(ts_ns, hook, session_id, outcome) VALUES (?, 'prompt', ?, ?)",
                         (i, "s1" if i % 2 else "s2", "injected" if i < 3 else "no_intent"))
            alert_log.record(conn, i, "default", f"A{i}", f"fp{i}", "page", "firing",
                             "paged" if i % 2 else "folded", "")
    assert [r[0] for r in decision_reads.page(conn, 10)] == [5, 4, 3, 2, 1]
    assert [r[0] for r in decision_reads.page(conn, 2)] == [5, 4]
    assert [r[0] for r in decision_reads.page(conn, 10, outcome="injected", before_id=3)] == [2, 1]
    assert [r[0] for r in decision_reads.page(conn, 10, session_id="s1")] == [4, 2]
    assert [r[0] for r in alert_log.page_of_decisions(conn, 10, "folded")] == [5, 3, 1]
    assert [r[0] for r in alert_log.page_of_decisions(conn, 1, before_id=5)] == [4]
    assert alert_log.pages(conn, "default", 0, 10, exclude="A1") == 1  # A3 only
    assert alert_log.folded_by_alertname(conn, "default", 0, 10) == [("A0", 1), ("A2", 1), ("A4", 1)]


def test_the_read_models_keep_their_callers_import_light():
    """The gate, the report, the collector, the console and the exporter import the read
    models at module level: none may drag the ingest package (every source) in with it."""
    import subprocess
    import sys

    code = ("import sys, probes.gate, telemetry.report, telemetry.collector, telemetry.console, "
            "telemetry.export, telemetry.session_cost; "
            "print(sorted(m for m in sys.modules if m == 'memory_core.ingest' or m.startswith('memory_core.ingest.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
