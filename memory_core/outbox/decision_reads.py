"""Reads of the decisions and degradations tables (written by memory_core.outbox.decisions):
one row per prompt's injection decision, one per degraded component.

    prompt_decisions_by_day(conn, since_ns)   # [(day, outcome, has_intent, retrieval_ms)]
    page(conn, limit, outcome=..., session_id=..., before_id=...)   # the console's keyset page
"""

from __future__ import annotations

from memory_core.store.reads import day


def prompt_decisions_by_day(conn, since_ns: int) -> list[tuple]:
    """[(day, outcome, whether an intent was found, retrieval_ms)] of prompt decisions since `since_ns`."""
    return conn.execute(
        f"SELECT {day('ts_ns')}, outcome, intent IS NOT NULL AND intent != '', retrieval_ms "
        "FROM decisions WHERE ts_ns >= ? AND hook = 'prompt'", (since_ns,)).fetchall()


def prompt_decisions_between(conn, lo_ns: int, hi_ns: int) -> list[tuple]:
    """[(ts_ns, session_id, outcome, detail)] of prompt decisions in [lo, hi)."""
    return conn.execute(
        "SELECT ts_ns, session_id, outcome, detail FROM decisions WHERE hook = 'prompt' "
        "AND ts_ns >= ? AND ts_ns < ?", (lo_ns, hi_ns)).fetchall()


def page(conn, limit: int, outcome: str = "", session_id: str = "", before_id: int | None = None) -> list[tuple]:
    """[(id, ts_ns, hook, session_id, prompt_hash, prompt_len, outcome, intent, retrieval_ms,
    trace_id, detail)] newest first, at most `limit`, optionally filtered, below an id."""
    where, args = [], []
    if outcome:
        where.append("outcome = ?")
        args.append(outcome)
    if session_id:
        where.append("session_id = ?")
        args.append(session_id)
    if before_id is not None:
        where.append("id < ?")
        args.append(before_id)
    return conn.execute(
        "SELECT id, ts_ns, hook, session_id, prompt_hash, prompt_len, outcome, intent, retrieval_ms, "
        "trace_id, detail FROM decisions" + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()


def every_decision(conn) -> list[tuple]:
    """[(outcome, intent, prompt_len, detail)] of every decision, oldest first."""
    return conn.execute("SELECT outcome, intent, prompt_len, detail FROM decisions ORDER BY id").fetchall()


def degradations_since(conn, since_ns: int) -> list[tuple]:
    """[(component, reason, n, newest ts_ns)] since `since_ns`, most first."""
    return conn.execute(
        "SELECT component, reason, count(*), max(ts_ns) FROM degradations WHERE ts_ns >= ? "
        "GROUP BY component, reason ORDER BY count(*) DESC", (since_ns,)).fetchall()


def component_failures(conn, components: tuple[str, ...], since_ns: int, until_ns: int) -> tuple:
    """(n, newest ts_ns, a detail) of these components' degradations in [since, until]."""
    marks = ",".join("?" * len(components))
    return conn.execute(
        f"SELECT count(*), max(ts_ns), detail FROM degradations WHERE component IN ({marks}) "
        "AND ts_ns >= ? AND ts_ns <= ?", (*components, since_ns, until_ns)).fetchone()
