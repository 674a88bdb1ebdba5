"""Session-start render novelty: a render frozen across sessions while memory moved is a
failure (curation stuck, a cache never invalidated), even though every query succeeds.

    sig = corpus_signature(conn)
    record_render(conn, session_id, rendered_text, sig, now_ns)   # SessionStart
    render_novelty(ev)                                            # the check
"""

from __future__ import annotations

try:  # the builtin module: hashlib would load OpenSSL on the session-start path
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

from memory_core.db import write
from probes.result import CheckResult, green, note, red

REPEATS = 3  # the same render in this many distinct sessions (REFERENCE §4.1 check 9)
WINDOW = 200  # rows of history the check looks at
KEEP = 1000  # rows kept in the table


def corpus_signature(conn) -> str:
    """A cheap fingerprint of what memory holds: chunk count and newest id, watermark count,
    newest update and total size. Moves whenever an ingest changes anything."""
    chunks = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM chunks").fetchone()
    marks = conn.execute(
        "SELECT count(*), coalesce(max(updated_ns), 0), coalesce(sum(size), 0) FROM watermarks").fetchone()
    text = f"chunks:{chunks[0]}:{chunks[1]}|watermarks:{marks[0]}:{marks[1]}:{marks[2]}"
    return _blake2b(text.encode(), digest_size=8).hexdigest()


def render_hash(text: str) -> str:
    return _blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def record_render(conn, session_id: str | None, text: str, corpus_sig: str, now_ns: int) -> str:
    """Store one session-start render's hash beside the corpus signature; return the hash."""
    digest = render_hash(text)
    with write(conn):
        cur = conn.execute(
            "INSERT INTO novelty(ts_ns, session_id, render_hash, corpus_sig) VALUES (?,?,?,?)",
            (now_ns, session_id, digest, corpus_sig))
        if cur.lastrowid and cur.lastrowid % 100 == 0:
            conn.execute("DELETE FROM novelty WHERE id <= ?", (cur.lastrowid - KEEP,))
    return digest


def render_novelty(ev) -> CheckResult:
    """RED when the latest session-start render repeats across REPEATS distinct sessions
    while the corpus signature moved underneath it."""
    rows = ev.conn.execute(
        "SELECT session_id, render_hash, corpus_sig FROM novelty WHERE ts_ns <= ? "
        "ORDER BY id DESC LIMIT ?", (ev.now_ns, WINDOW)).fetchall()
    if not rows:
        return green("no session-start renders recorded yet")
    if all(not sid for sid, _, _ in rows[:REPEATS]) and len(rows) >= REPEATS:
        return note(f"disarmed: the last {REPEATS} renders carry no session id",
                    fix="Claude Code should pass session_id to the SessionStart hook")
    latest = rows[0][1]
    same = [(sid, sig) for sid, h, sig in rows if h == latest]
    sessions = {sid for sid, _ in same if sid}
    sigs = {sig for _, sig in same}
    if len(sessions) >= REPEATS and len(sigs) > 1:
        return red(f"the same session-start render appeared in {len(sessions)} sessions while the "
                   f"corpus changed {len(sigs) - 1} time(s)",
                   "the render ignores new memory: check what session-start selects "
                   "(`memhealth search`), then re-ingest with `memhealth ingest`")
    if len(sessions) >= REPEATS:
        return green(f"render unchanged across {len(sessions)} sessions, but so is the corpus")
    return green(f"render {latest[:8]} seen in {len(sessions)} session(s)")
