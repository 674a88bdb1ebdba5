"""The store: WAL, migrations, old databases opening with new code, owner-only files."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from memory_core.errors import StoreCorrupt, StoreError
from memory_core.store.db import connect, sqlite3, write
from memory_core.store.schema import LATEST, MIGRATIONS
from tests.conftest import FIXTURES


def test_a_new_store_is_wal_at_the_latest_schema_and_readable_only_by_its_owner(tmp_path):
    path = tmp_path / "memory.db"
    conn = connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA user_version").fetchone() == (LATEST,)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_migrations_are_numbered_one_up_without_gaps():
    numbers = [m[0] for m in MIGRATIONS]
    assert numbers == list(range(1, numbers[-1] + 1))


def test_latest_names_the_last_migration_and_a_current_store_opens_without_the_ddl(tmp_path):
    """schema.LATEST is written out so that opening a current store never imports the DDL
    module (every hook opens the store); it must name the last migration there."""
    import subprocess
    import sys

    from memory_core.store import migrations

    assert LATEST == migrations.MIGRATIONS[-1][0]
    connect(tmp_path / "memory.db").close()  # born: every migration ran
    probe = ("import sys; from memory_core.store.db import connect; "
             f"connect({str(tmp_path / 'memory.db')!r}).execute('SELECT count(*) FROM heartbeats').fetchone(); "
             "print('memory_core.store.migrations' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "False"), out.stderr


def test_an_old_database_file_opens_with_current_code_and_keeps_its_rows(tmp_path):
    copy = tmp_path / "memory.db"
    shutil.copy(os.path.join(FIXTURES, "memory-v1.db"), copy)
    raw = sqlite3.connect(copy)
    assert raw.execute("PRAGMA user_version").fetchone() == (1,)
    raw.close()
    conn = connect(copy)
    assert conn.execute("PRAGMA user_version").fetchone() == (LATEST,)
    assert conn.execute("SELECT path, title FROM chunks").fetchall() == [("docs/arch.md", "Architecture")]
    assert conn.execute("SELECT hook, outcome FROM heartbeats").fetchall() == [("prompt", "ok")]
    # the FTS index still answers for the old row
    hits = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH '\"writer\"'").fetchall()
    assert hits == [(1,)]


def test_a_database_from_a_newer_memhealth_is_refused_with_a_clear_error(tmp_path):
    path = tmp_path / "memory.db"
    connect(path).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {LATEST + 1}")
    raw.close()
    with pytest.raises(StoreError, match="newer than this memhealth"):
        connect(path)


def test_a_corrupt_file_raises_store_corrupt(tmp_path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"garbage" * 1000)
    with pytest.raises(StoreCorrupt):
        connect(path)


def test_fts_stays_in_sync_through_insert_update_and_delete(tmp_path):
    conn = connect(tmp_path / "memory.db")
    with write(conn):
        conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                     "VALUES ('docs', 'a.md', 'alpha bravo', 'h', 0)")
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'alpha'").fetchone() == (1,)
    with write(conn):
        conn.execute("UPDATE chunks SET content = 'charlie delta'")
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'alpha'").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'charlie'").fetchone() == (1,)
    with write(conn):
        conn.execute("DELETE FROM chunks")
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'charlie'").fetchone() == (0,)
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")


def test_a_failed_write_transaction_rolls_back(tmp_path):
    conn = connect(tmp_path / "memory.db")
    with pytest.raises(RuntimeError):
        with write(conn):
            conn.execute("INSERT INTO meta(key, value) VALUES ('k', 'v')")
            raise RuntimeError("boom")
    assert conn.execute("SELECT count(*) FROM meta WHERE key = 'k'").fetchone() == (0,)
