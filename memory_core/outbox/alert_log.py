"""The alert budget's record (probes.budget): one alert_decisions row per alert decided
(paged, folded, deduped, noted, digest), written by the budget and read back by it, the
report and the console.

    record(conn, ts_ns, route, alertname, fingerprint, severity, status, decision, detail)
    pages(conn, route, start_ns, end_ns, exclude=META)    # pages sent in the window
"""

from __future__ import annotations

# -- writes ------------------------------------------------------------------------------------

def record(conn, ts_ns: int, route: str, alertname: str, fingerprint: str, severity: str,
           status: str, decision: str, detail: str) -> None:
    conn.execute(
        "INSERT INTO alert_decisions(ts_ns, route, alertname, fingerprint, severity, status, decision, "
        "detail) VALUES (?,?,?,?,?,?,?,?)",
        (ts_ns, route, alertname, fingerprint, severity, status, decision, detail))


def prune(conn, keep_rows: int) -> None:
    """Keep the newest `keep_rows` rows besides pages (pages always stay: budgets count them)."""
    conn.execute("DELETE FROM alert_decisions WHERE decision != 'paged' AND "
                 "id <= (SELECT max(id) FROM alert_decisions) - ?", (keep_rows,))


# -- reads -------------------------------------------------------------------------------------

def pages(conn, route: str, start_ns: int, end_ns: int, exclude: str, alertname: str | None = None) -> int:
    """Pages on `route` in [start, end], alert `exclude` left out, optionally of one alert."""
    sql = ("SELECT count(*) FROM alert_decisions WHERE route = ? AND decision = 'paged' AND "
           "alertname != ? AND ts_ns >= ? AND ts_ns <= ?")
    params: list = [route, exclude, start_ns, end_ns]
    if alertname is not None:
        sql += " AND alertname = ?"
        params.append(alertname)
    return conn.execute(sql, params).fetchone()[0]


def folded_by_alertname(conn, route: str, start_ns: int, end_ns: int) -> list[tuple[str, int]]:
    """[(alertname, folds)] on `route` in [start, end), the noisiest first."""
    return conn.execute(
        "SELECT alertname, count(*) FROM alert_decisions WHERE route = ? AND decision = 'folded' "
        "AND ts_ns >= ? AND ts_ns < ? GROUP BY alertname ORDER BY count(*) DESC, alertname",
        (route, start_ns, end_ns)).fetchall()


def noisiest(conn, route: str, start_ns: int, end_ns: int, exclude: str):
    """(alertname, pages and folds) of the noisiest alert on `route` in [start, end], or None."""
    return conn.execute(
        "SELECT alertname, count(*) FROM alert_decisions WHERE route = ? AND decision IN "
        "('paged', 'folded') AND alertname != ? AND ts_ns >= ? AND ts_ns <= ? GROUP BY alertname "
        "ORDER BY count(*) DESC, alertname LIMIT 1", (route, exclude, start_ns, end_ns)).fetchone()


def last_fold_before(conn, route: str, before_ns: int) -> int | None:
    return conn.execute(
        "SELECT max(ts_ns) FROM alert_decisions WHERE route = ? AND decision = 'folded' AND ts_ns < ?",
        (route, before_ns)).fetchone()[0]


def fired_recently(conn, route: str, fingerprint: str, after_ns: int) -> bool:
    """Whether a firing alert with this fingerprint was decided (not deduped) after `after_ns`."""
    return conn.execute(
        "SELECT 1 FROM alert_decisions WHERE route = ? AND fingerprint = ? AND status = 'firing' "
        "AND decision != 'deduped' AND ts_ns > ? LIMIT 1", (route, fingerprint, after_ns)).fetchone() is not None


def decided_since(conn, route: str, alertname: str, since_ns: int) -> bool:
    return conn.execute(
        "SELECT 1 FROM alert_decisions WHERE route = ? AND alertname = ? AND ts_ns >= ? LIMIT 1",
        (route, alertname, since_ns)).fetchone() is not None


def counts_since(conn, since_ns: int) -> list[tuple[str, str, int]]:
    """[(route, decision, n)] since `since_ns`."""
    return conn.execute(
        "SELECT route, decision, count(*) FROM alert_decisions WHERE ts_ns >= ? "
        "GROUP BY route, decision ORDER BY route, decision", (since_ns,)).fetchall()


def recent_digests(conn, limit: int = 10) -> list[tuple[int, str, str]]:
    """[(ts_ns, route, detail)] of the newest digests."""
    return conn.execute("SELECT ts_ns, route, detail FROM alert_decisions WHERE decision = 'digest' "
                        "ORDER BY id DESC LIMIT ?", (limit,)).fetchall()


def page_of_decisions(conn, limit: int, decision: str = "", before_id: int | None = None) -> list[tuple]:
    """[(id, ts_ns, route, alertname, severity, status, decision, detail)] newest first, at most
    `limit`, optionally of one decision and below an id (the console's paging)."""
    where, args = [], []
    if decision:
        where.append("decision = ?")
        args.append(decision)
    if before_id is not None:
        where.append("id < ?")
        args.append(before_id)
    return conn.execute("SELECT id, ts_ns, route, alertname, severity, status, decision, detail FROM alert_decisions"
                        + (" WHERE " + " AND ".join(where) if where else "")
                        + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()
