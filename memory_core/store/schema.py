"""Bring a store's schema to the latest version: the runner of the numbered migrations
(their DDL: memory_core.store.migrations).

The schema version is `PRAGMA user_version`. An old database opens with new code: every
migration above its version runs in one BEGIN IMMEDIATE transaction. A database newer than
this code is refused rather than guessed at. A store already at LATEST costs one pragma:
the DDL is not imported and sqlite_master is not read (SQLite parses the schema itself on
the first statement that needs it).
"""

from __future__ import annotations

from memory_core.errors import StoreError

# The number of the last migration in memory_core.store.migrations (tests/memory_core/store/test_store.py
# keeps them equal): kept here so that opening a current store never imports the DDL.
LATEST = 11


def __getattr__(name: str):
    """`from memory_core.store.schema import MIGRATIONS` still works (PEP 562)."""
    if name == "MIGRATIONS":
        from memory_core.store.migrations import MIGRATIONS

        return MIGRATIONS
    raise AttributeError(f"module 'memory_core.store.schema' has no attribute {name!r}")


def ensure_schema(conn) -> int:
    """Bring `conn`'s database to LATEST; return the version it had before."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version == LATEST:
        return version
    if version > LATEST:
        raise StoreError(
            f"database schema v{version} is newer than this memhealth (v{LATEST}); upgrade memhealth"
        )
    if version == 0:
        conn.execute("PRAGMA journal_mode = WAL")
    from memory_core.store.migrations import MIGRATIONS

    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()  # another process may have won
        for number, _title, sql in MIGRATIONS:
            if number > version:
                for statement in _split(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:  # re-raised: whatever stopped the migration, nothing half-applied stays
        conn.execute("ROLLBACK")
        raise
    return version


def _split(sql: str) -> list[str]:
    """Split a migration into statements (executescript would COMMIT our transaction)."""
    from memory_core.store.db import sqlite3

    statements, buf = [], ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
