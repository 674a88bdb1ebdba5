"""Reads of what cue-anchored delivery recorded: cue_audit (one row per cue evaluation) and
file_reads (one row per file a session read, by compaction epoch). Both are written by
memory_core.delivery.cues on the hook path; these are the report's, the console's, the gate's
and the demo's questions about them.

    outcomes_since(conn, since_ns)      # {reason or outcome: n}
    evaluations_of(conn, trace_ids)     # [(trace_id, trigger, item name, outcome, reason)]
"""

from __future__ import annotations


def outcomes_since(conn, since_ns: int) -> dict[str, int]:
    return dict(conn.execute(
        "SELECT coalesce(reason, outcome), count(*) FROM cue_audit WHERE ts_ns >= ? GROUP BY 1 ORDER BY 1",
        (since_ns,)).fetchall())


def evaluations_of(conn, trace_ids: list[str]) -> list[tuple]:
    """[(trace_id, trigger, item name, outcome, reason)] of these traces' evaluations, in order."""
    if not trace_ids:
        return []
    marks = ",".join("?" * len(trace_ids))
    return conn.execute(
        "SELECT a.trace_id, a.trigger, m.name, a.outcome, a.reason FROM cue_audit a LEFT JOIN memory_items m "
        f"ON m.id = a.item_id WHERE a.trace_id IN ({marks}) ORDER BY a.id", list(trace_ids)).fetchall()


def page(conn, limit: int, session_id: str = "", outcome: str = "", before_id: int | None = None) -> list[tuple]:
    """[(id, ts_ns, session_id, event, trigger, item name, outcome, reason, epoch, detail)]
    newest first, at most `limit`, optionally of one session or outcome, below an id."""
    where, args = [], []
    if session_id:
        where.append("a.session_id = ?")
        args.append(session_id)
    if outcome:
        where.append("a.outcome = ?")
        args.append(outcome)
    if before_id is not None:
        where.append("a.id < ?")
        args.append(before_id)
    return conn.execute(
        "SELECT a.id, a.ts_ns, a.session_id, a.event, a.trigger, m.name, a.outcome, a.reason, a.epoch, a.detail "
        "FROM cue_audit a LEFT JOIN memory_items m ON m.id = a.item_id"
        + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY a.id DESC LIMIT ?",
        [*args, limit]).fetchall()


def every_evaluation(conn) -> list[tuple]:
    """[(event, trigger, item name or '-', outcome, reason, epoch, detail)] oldest first."""
    return conn.execute(
        "SELECT a.event, a.trigger, coalesce(m.name, '-'), a.outcome, coalesce(a.reason, ''), a.epoch, "
        "coalesce(a.detail, '') FROM cue_audit a LEFT JOIN memory_items m ON m.id = a.item_id ORDER BY a.id"
    ).fetchall()


def last_compaction_pins(conn, after_ns: int):
    """(trace_id, ts_ns, session_id) of the newest SessionStart after a compaction that
    evaluated pinned items, recorded after `after_ns`; or None."""
    return conn.execute(
        "SELECT trace_id, ts_ns, session_id FROM cue_audit WHERE event = 'session-start' AND trigger = 'pinned' "
        "AND detail = 'pinned at compact' AND ts_ns > ? ORDER BY id DESC LIMIT 1", (after_ns,)).fetchone()


def pinned_outcomes(conn, trace_id: str) -> dict[str, int]:
    """{reason or outcome: n} of one invocation's pinned-item evaluations."""
    return dict(conn.execute(
        "SELECT coalesce(reason, outcome), count(*) FROM cue_audit WHERE trace_id = ? AND trigger = 'pinned' "
        "GROUP BY 1", (trace_id,)).fetchall())


def rereads_by_session(conn, since_ns: int, limit: int = 20) -> list[tuple]:
    """[(session_id, compactions, files read again, same content, bytes re-read)] of the
    sessions that re-read files since `since_ns`, most bytes first."""
    return conn.execute(
        "SELECT session_id, max(epoch), sum(reread), sum(same_content), sum(CASE WHEN reread THEN bytes "
        "ELSE 0 END) FROM file_reads WHERE ts_ns >= ? GROUP BY session_id HAVING sum(reread) > 0 "
        "ORDER BY 5 DESC LIMIT ?", (since_ns, limit)).fetchall()


def reread_totals(conn, since_ns: int) -> tuple[int, int, int]:
    """(files read again, of them with the same content, bytes) since `since_ns`."""
    return conn.execute(
        "SELECT count(*), coalesce(sum(same_content), 0), coalesce(sum(bytes), 0) FROM file_reads "
        "WHERE ts_ns >= ? AND reread = 1", (since_ns,)).fetchone()


# -- the hook path's own questions (post-tool, pre-compact): stdlib only, imported when run ----

def read_before(conn, session_id: str, path: str, epoch: int) -> bool:
    """Whether the session already read `path` in this compaction epoch."""
    return conn.execute("SELECT 1 FROM file_reads WHERE session_id = ? AND path = ? AND epoch = ?",
                        (session_id, path, epoch)).fetchone() is not None


def reset_deliveries(conn, session_id: str) -> int:
    """Forget what was delivered to the session (a compaction boundary: it leaves the context);
    return the rows removed. The caller holds the transaction. The one write here: its
    neighbour is the writer in memory_core.delivery.caps, where it can move."""
    return conn.execute("DELETE FROM deliveries WHERE session_id = ?", (session_id,)).rowcount
