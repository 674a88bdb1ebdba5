"""Reads of the heartbeats table (written by memory_core.outbox.heartbeat, the journal and the
spill): one named question per function, plain tuples back.

    last_completed(conn, "prompt")            # (outcome, reason, detail, started_ns, id) | None
    outcomes_by_day(conn, since_ns)           # [(day, hook, outcome|'running', n)]

"Latest" is the row written last (rowid order), never the one whose clock said latest.
"""

from __future__ import annotations

from memory_core.store.reads import day

# the gate's own runs and the detached capture worker are not a session's hooks
SESSION_HOOKS = "hook NOT IN ('gate', 'capture')"


def newest_id(conn) -> int:
    """The id of the newest row (0 for none): what an acknowledgement covers."""
    return conn.execute("SELECT coalesce(max(id), 0) FROM heartbeats").fetchone()[0]


def last_activity_ns(conn, not_after_ns: int) -> int | None:
    """Start of the newest completed run other than the gate's own, ignoring rows dated after
    `not_after_ns` (a clock set back since)."""
    row = conn.execute(
        "SELECT max(started_ns) FROM heartbeats WHERE outcome IS NOT NULL AND hook != 'gate' "
        "AND started_ns <= ?", (not_after_ns,)).fetchone()
    return row[0] if row and row[0] is not None else None


def last_completed(conn, hook: str):
    """(outcome, reason, detail, started_ns, id) of the hook's last completed run, or None."""
    return conn.execute(
        "SELECT outcome, reason, detail, started_ns, id FROM heartbeats WHERE hook = ? AND "
        "outcome IS NOT NULL ORDER BY id DESC LIMIT 1", (hook,)).fetchone()


def failures_since(conn, hook: str, since_ns: int) -> list[tuple[str, int]]:
    """[(outcome, n)] of the hook's error and killed runs since `since_ns`, by outcome."""
    return conn.execute(
        "SELECT outcome, count(*) FROM heartbeats WHERE hook = ? AND started_ns >= ? AND "
        "outcome IN ('error', 'killed') GROUP BY outcome ORDER BY outcome", (hook, since_ns)).fetchall()


def prompts_in_session(conn, session_id: str, since_ns: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM heartbeats WHERE hook = 'prompt' AND session_id = ? AND "
        "started_ns >= ?", (session_id, since_ns)).fetchone()[0]


def first_session_start_ns(conn) -> int | None:
    return conn.execute("SELECT min(started_ns) FROM heartbeats WHERE hook = 'session-start'").fetchone()[0]


def sessions_without_start(conn, since_ns: int, after_ns: int) -> list[tuple[str, int]]:
    """[(session_id, newest prompt started_ns)] of sessions whose prompts were recorded but
    whose SessionStart never was, newest first."""
    return conn.execute(
        "SELECT p.session_id, max(p.started_ns) FROM heartbeats p WHERE p.hook = 'prompt' "
        "AND p.session_id IS NOT NULL AND p.started_ns >= ? AND p.started_ns > ? "
        "AND NOT EXISTS (SELECT 1 FROM heartbeats s WHERE s.hook = 'session-start' "
        "AND s.session_id = p.session_id) GROUP BY p.session_id ORDER BY 2 DESC",
        (since_ns, after_ns)).fetchall()


def future_rows(conn, after_ns: int) -> tuple[int, int | None]:
    """(count, newest started_ns) of rows dated after `after_ns`: clock skew."""
    return conn.execute("SELECT count(*), max(started_ns) FROM heartbeats WHERE started_ns > ?",
                        (after_ns,)).fetchone()


def runs_since(conn, since_ns: int) -> int:
    """Runs other than the gate's own since `since_ns`."""
    return conn.execute("SELECT count(*) FROM heartbeats WHERE started_ns >= ? AND hook != 'gate'",
                        (since_ns,)).fetchone()[0]


def last_ok_end_ns(conn, hook: str) -> int | None:
    """When the hook's newest successful run ended (by row order)."""
    row = conn.execute("SELECT ended_ns FROM heartbeats WHERE hook = ? AND outcome = 'ok' "
                       "ORDER BY id DESC LIMIT 1", (hook,)).fetchone()
    return row[0] if row else None


def newest_ok_end_ns(conn, hook: str) -> int | None:
    """The latest ended_ns among the hook's successful runs (by clock)."""
    row = conn.execute("SELECT max(ended_ns) FROM heartbeats WHERE hook = ? AND outcome = 'ok'",
                       (hook,)).fetchone()
    return row[0] if row and row[0] else None


def last_failure_since(conn, hook: str, since_ns: int):
    """(started_ns, outcome, reason) of the hook's newest error or killed run since `since_ns`."""
    return conn.execute("SELECT started_ns, outcome, reason FROM heartbeats WHERE hook = ? AND started_ns >= ? "
                        "AND outcome IN ('error', 'killed') ORDER BY id DESC LIMIT 1",
                        (hook, since_ns)).fetchone()


def refs_recorded(conn, refs: list[str]) -> set[tuple[str, str]]:
    """(hook, event_ref) of the rows carrying these event refs: one query per 500."""
    found: set[tuple[str, str]] = set()
    unique = sorted(set(refs))
    for i in range(0, len(unique), 500):
        part = unique[i:i + 500]
        found.update(conn.execute(
            f"SELECT hook, event_ref FROM heartbeats WHERE event_ref IN ({','.join('?' * len(part))})", part))
    return found


def session_started(conn, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM heartbeats WHERE hook = 'session-start' AND session_id = ? LIMIT 1",
                        (session_id,)).fetchone() is not None


def unreferenced_ids(conn, hook: str, session_id: str, lo_ns: int, hi_ns: int, limit: int,
                     with_ref: bool = False) -> list[int]:
    """Ids of the hook's rows in the session (or with no session) started in [lo, hi], oldest
    first; only rows without an event ref unless `with_ref`."""
    ref_clause = "" if with_ref else " AND event_ref IS NULL"
    return [hb_id for (hb_id,) in conn.execute(
        "SELECT id FROM heartbeats WHERE hook = ? AND (session_id = ? OR session_id IS NULL) "
        f"AND started_ns BETWEEN ? AND ?{ref_clause} ORDER BY started_ns LIMIT ?",
        (hook, session_id, lo_ns, hi_ns, limit))]


def outcomes_by_day(conn, since_ns: int) -> list[tuple]:
    """[(day, hook, outcome or 'running', n)] since `since_ns`."""
    return conn.execute(
        f"SELECT {day('started_ns')} AS day, hook, ifnull(outcome, 'running'), count(*) "
        "FROM heartbeats WHERE started_ns >= ? GROUP BY day, hook, outcome ORDER BY day, hook",
        (since_ns,)).fetchall()


def outcomes_and_reasons_by_day(conn, since_ns: int) -> list[tuple]:
    """[(day, hook, outcome or 'open', reason, n)] since `since_ns`, newest day first."""
    return conn.execute(
        f"SELECT {day('started_ns')} AS day, hook, ifnull(outcome, 'open'), "
        "reason, count(*) FROM heartbeats WHERE started_ns >= ? GROUP BY day, hook, outcome, reason "
        "ORDER BY day DESC, hook", (since_ns,)).fetchall()


def failures_by_day(conn, since_ns: int) -> list[tuple]:
    """[(day, hook, reason, n)] of error and killed runs since `since_ns`."""
    return conn.execute(
        f"SELECT {day('started_ns')} AS day, hook, reason, count(*) FROM heartbeats "
        "WHERE started_ns >= ? AND outcome IN ('error', 'killed') "
        "GROUP BY day, hook, reason ORDER BY day, hook, count(*) DESC", (since_ns,)).fetchall()


def killed_since(conn, since_ns: int) -> list[tuple[str, int, int]]:
    """[(hook, n, newest started_ns)] of killed runs since `since_ns`, most first."""
    return conn.execute(
        "SELECT hook, count(*), max(started_ns) FROM heartbeats "
        "WHERE started_ns >= ? AND outcome = 'killed' GROUP BY hook ORDER BY count(*) DESC",
        (since_ns,)).fetchall()


def failure_starts(conn, lo_ns: int, hi_ns: int) -> list[int]:
    """started_ns of every error or killed run (not the gate's) in [lo, hi)."""
    return [ts for (ts,) in conn.execute(
        "SELECT started_ns FROM heartbeats WHERE hook != 'gate' AND outcome IN "
        "('error', 'killed') AND started_ns >= ? AND started_ns < ?", (lo_ns, hi_ns))]


def session_hook_wall_ms(conn, lo_ns: int, hi_ns: int) -> list[tuple[int, float]]:
    """[(started_ns, wall ms)] of the session hooks' completed runs in [lo, hi)."""
    return conn.execute(
        f"SELECT started_ns, (ended_ns - started_ns) / 1e6 FROM heartbeats WHERE {SESSION_HOOKS} "
        "AND ended_ns IS NOT NULL AND started_ns >= ? AND started_ns < ?", (lo_ns, hi_ns)).fetchall()


def session_hook_runs(conn, lo_ns: int, hi_ns: int) -> list[tuple]:
    """[(hook, session_id, started_ns, ended_ns)] of the session hooks' completed runs in [lo, hi)."""
    return conn.execute(
        f"SELECT hook, session_id, started_ns, ended_ns FROM heartbeats WHERE {SESSION_HOOKS} AND "
        "started_ns >= ? AND started_ns < ? AND ended_ns IS NOT NULL", (lo_ns, hi_ns)).fetchall()


def runs_and_running(conn, hook: str) -> tuple[int, int]:
    """(all rows, rows still running) of one hook."""
    return conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE outcome IS NULL) FROM heartbeats "
        "WHERE hook = ?", (hook,)).fetchone()


def tool_calls_without_cue_audit(conn, since_ns: int) -> tuple[int, int]:
    """(successful pre-tool runs since `since_ns`, how many of them left no cue audit row)."""
    return conn.execute(
        "SELECT count(*), coalesce(sum(NOT EXISTS (SELECT 1 FROM cue_audit a WHERE a.trace_id = h.trace_id)), 0) "
        "FROM heartbeats h WHERE h.hook = 'pre-tool' AND h.started_ns >= ? AND h.outcome = 'ok'",
        (since_ns,)).fetchone()
