"""The session-start render's record (probes.novelty): one novelty row per render, its hash
beside the signature of its inputs, kept bounded.

    record(conn, ts_ns, session_id, render_hash, inputs_sig, keep)   # inside write(conn)
    latest(conn, not_after_ns, limit)    # [(session_id, render_hash, inputs_sig)] newest first
"""

from __future__ import annotations


def record(conn, ts_ns: int, session_id: str | None, render_hash: str, inputs_sig: str, keep: int) -> None:
    """Insert one render (the column keeps its old name, corpus_sig); every 100th insert trims
    the table to its newest `keep` rows. The caller holds the transaction."""
    cur = conn.execute(
        "INSERT INTO novelty(ts_ns, session_id, render_hash, corpus_sig) VALUES (?,?,?,?)",
        (ts_ns, session_id, render_hash, inputs_sig))
    if cur.lastrowid and cur.lastrowid % 100 == 0:
        conn.execute("DELETE FROM novelty WHERE id <= ?", (cur.lastrowid - keep,))


def latest(conn, not_after_ns: int, limit: int) -> list[tuple]:
    return conn.execute(
        "SELECT session_id, render_hash, corpus_sig FROM novelty WHERE ts_ns <= ? "
        "ORDER BY id DESC LIMIT ?", (not_after_ns, limit)).fetchall()
