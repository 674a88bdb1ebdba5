"""The gate's record: one gate_runs row per run and its gate_checks rows, written in one
transaction by the gate (probes.gate) and read back by the report, the console, the collector
and `memhealth gate --ack`.

    run_id = record_run(conn, ts_ns, session_id, verdict_row, check_rows)   # inside write(conn)
    latest_run(conn)          # (id, ts_ns, total, green, red, verdict, duration_ms) | None
"""

from __future__ import annotations

from memory_core.store.reads import day

# -- writes ------------------------------------------------------------------------------------

def record_run(conn, ts_ns: int, session_id: str | None, total: int, green: int, red: int,
               verdict: str, duration_ms: float, checks: list[tuple]) -> int:
    """Insert a run and its checks [(name, status, state, detail, fix, duration_ms)]; return the
    run's id. The caller holds the transaction."""
    cur = conn.execute(
        "INSERT INTO gate_runs(ts_ns, session_id, total, green, red, verdict, duration_ms) "
        "VALUES (?,?,?,?,?,?,?)", (ts_ns, session_id, total, green, red, verdict, duration_ms))
    run_id = cur.lastrowid
    conn.executemany(
        "INSERT INTO gate_checks(run_id, name, status, state, detail, fix, duration_ms) "
        "VALUES (?,?,?,?,?,?,?)", [(run_id, *check) for check in checks])
    return run_id


# -- reads -------------------------------------------------------------------------------------

def latest_run_id(conn) -> int | None:
    return conn.execute("SELECT max(id) FROM gate_runs").fetchone()[0]


def latest_run(conn):
    """(id, ts_ns, total, green, red, verdict, duration_ms) of the newest run, or None."""
    return conn.execute("SELECT id, ts_ns, total, green, red, verdict, duration_ms FROM gate_runs "
                        "ORDER BY id DESC LIMIT 1").fetchone()


def recent_runs(conn, limit: int, since_ns: int | None = None) -> list[tuple]:
    """[(id, ts_ns, total, green, red, verdict)] newest first, optionally since `since_ns`."""
    if since_ns is None:
        return conn.execute("SELECT id, ts_ns, total, green, red, verdict FROM gate_runs ORDER BY id DESC "
                            "LIMIT ?", (limit,)).fetchall()
    return conn.execute("SELECT id, ts_ns, total, green, red, verdict FROM gate_runs WHERE ts_ns >= ? "
                        "ORDER BY id DESC LIMIT ?", (since_ns, limit)).fetchall()


def checks_of(conn, run_id: int) -> list[tuple]:
    """[(name, status, state, detail, fix, duration_ms)] of one run, REDs first, then notes."""
    return conn.execute(
        "SELECT name, status, state, detail, fix, duration_ms FROM gate_checks WHERE run_id = ? "
        "ORDER BY CASE status WHEN 'red' THEN 0 WHEN 'note' THEN 1 ELSE 2 END, name", (run_id,)).fetchall()


def check_states(conn, run_id: int) -> list[tuple[str, str, str]]:
    """[(name, status, state)] of one run, in insertion order."""
    return conn.execute("SELECT name, status, state FROM gate_checks WHERE run_id = ?", (run_id,)).fetchall()


def red_checks_of(conn, run_ids: list[int]) -> list[tuple[int, str]]:
    """[(run_id, check name)] of the RED checks of these runs, by name."""
    if not run_ids:
        return []
    marks = ",".join("?" * len(run_ids))
    return conn.execute(f"SELECT run_id, name FROM gate_checks WHERE status = 'red' AND "
                        f"run_id IN ({marks}) ORDER BY name", list(run_ids)).fetchall()


def verdicts_by_day(conn, since_ns: int) -> list[tuple[str, str, int]]:
    """[(day, verdict, n)] since `since_ns`."""
    return conn.execute(
        f"SELECT {day('ts_ns')} AS day, verdict, count(*) FROM gate_runs WHERE ts_ns >= ? "
        "GROUP BY day, verdict ORDER BY day", (since_ns,)).fetchall()


def red_counts_since(conn, since_ns: int) -> list[tuple[str, int]]:
    """[(check name, runs in which it was RED)] since `since_ns`, most first."""
    return conn.execute(
        "SELECT c.name, count(*) FROM gate_checks c JOIN gate_runs r ON r.id = c.run_id "
        "WHERE r.ts_ns >= ? AND c.status = 'red' GROUP BY c.name ORDER BY count(*) DESC", (since_ns,)).fetchall()


def verdicts_since(conn, since_ns: int) -> list[tuple[int, str]]:
    """[(ts_ns, verdict)] since `since_ns`, oldest first."""
    return conn.execute("SELECT ts_ns, verdict FROM gate_runs WHERE ts_ns >= ? ORDER BY ts_ns",
                        (since_ns,)).fetchall()


def last_red_detail(conn, check: str) -> str | None:
    """The detail of the check's newest RED, or None."""
    row = conn.execute("SELECT detail FROM gate_checks WHERE name = ? AND status = 'red' "
                       "ORDER BY run_id DESC LIMIT 1", (check,)).fetchone()
    return row[0] if row else None
