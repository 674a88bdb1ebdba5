"""The transcript witness's record (probes.witness): witness_marks, where each transcript was
read up to, and witness_findings, the events no heartbeat recorded. The witness writes both;
its gate check and the report read the findings back.

    mark(conn, path)                       # (ino, head, offset, state, updated_ns) | None
    record_finding(conn, ts_ns, session_id, event, kind, n, ...)   # inside write(conn)
    summary_since(conn, acked_ns)          # [(event, kind, n, newest last_ns, sessions)]
"""

from __future__ import annotations

from memory_core.store.reads import day

# -- marks -------------------------------------------------------------------------------------


def mark(conn, path: str):
    """(ino, head, offset, state, updated_ns) of the transcript's mark, or None."""
    return conn.execute("SELECT ino, head, offset, state, updated_ns FROM witness_marks WHERE path = ?",
                        (path,)).fetchone()


def mark_position(conn, path: str):
    """(offset, updated_ns) of the mark, or None: what a concurrent reconciler compares."""
    return conn.execute("SELECT offset, updated_ns FROM witness_marks WHERE path = ?", (path,)).fetchone()


def set_mark(conn, path: str, ino: int, head: str | None, offset: int, state: str, updated_ns: int) -> None:
    conn.execute(
        "INSERT INTO witness_marks(path, ino, head, offset, state, updated_ns) VALUES (?,?,?,?,?,?) "
        "ON CONFLICT(path) DO UPDATE SET ino = excluded.ino, head = excluded.head, "
        "offset = excluded.offset, state = excluded.state, updated_ns = excluded.updated_ns",
        (path, ino, head, offset, state, updated_ns))


def marked_paths(conn) -> list[str]:
    return [p for (p,) in conn.execute("SELECT path FROM witness_marks")]


def drop_mark(conn, path: str) -> None:
    conn.execute("DELETE FROM witness_marks WHERE path = ?", (path,))


# -- findings ----------------------------------------------------------------------------------

def record_finding(conn, ts_ns: int, session_id: str | None, event: str, kind: str, n: int,
                   exit_code: int | None, stderr: str | None, first_ns: int, last_ns: int,
                   transcript: str, detail: str | None) -> None:
    conn.execute(
        "INSERT INTO witness_findings(ts_ns, session_id, event, kind, n, exit_code, stderr, first_ns, "
        "last_ns, transcript, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (ts_ns, session_id, event, kind, n, exit_code, stderr, first_ns, last_ns, transcript, detail))


def finding_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM witness_findings").fetchone()[0]


def keep_newest_findings(conn, keep: int) -> None:
    """Delete all but the newest `keep` findings."""
    conn.execute("DELETE FROM witness_findings WHERE id <= (SELECT id FROM witness_findings "
                 "ORDER BY id DESC LIMIT 1 OFFSET ?)", (keep,))


def summary_since(conn, after_ns: int) -> list[tuple]:
    """[(event, kind, sum n, newest last_ns, sessions)] recorded after `after_ns`, newest first."""
    return conn.execute(
        "SELECT event, kind, sum(n), max(last_ns), count(DISTINCT session_id) FROM witness_findings "
        "WHERE ts_ns > ? GROUP BY event, kind ORDER BY max(last_ns) DESC", (after_ns,)).fetchall()


def latest_finding(conn, event: str, kind: str, after_ns: int):
    """(session_id, exit_code, stderr, detail) of the newest such finding recorded after `after_ns`."""
    return conn.execute(
        "SELECT session_id, exit_code, stderr, detail FROM witness_findings WHERE event = ? AND kind = ? "
        "AND ts_ns > ? ORDER BY last_ns DESC, id DESC LIMIT 1", (event, kind, after_ns)).fetchone()


def finding_details(conn, event: str, kind: str, after_ns: int) -> list[str | None]:
    return [r[0] for r in conn.execute(
        "SELECT detail FROM witness_findings WHERE event = ? AND kind = ? AND ts_ns > ?",
        (event, kind, after_ns))]


def findings_by_day(conn, since_ns: int) -> list[tuple]:
    """[(day, event, kind, exit_code, stderr, n, sessions)] of findings whose last event is
    since `since_ns`."""
    return conn.execute(
        f"SELECT {day('last_ns')} AS day, event, kind, exit_code, stderr, sum(n), "
        "count(DISTINCT session_id) FROM witness_findings WHERE last_ns >= ? "
        "GROUP BY day, event, kind, exit_code, stderr ORDER BY day, event", (since_ns,)).fetchall()
