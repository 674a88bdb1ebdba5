"""Session-start render novelty: a render frozen across sessions while its own inputs
moved is a failure (curation stuck, a cache never invalidated), even though every query
succeeds.

    sig = inputs_signature(conn)
    record_render(conn, session_id, rendered_text, sig, now_ns)   # SessionStart
    render_novelty(ev)                                            # the check

The signature covers what the render is built from (pinned items, decisions, standing
feedback, the resume anchor: `memory_core.delivery.render.render_inputs`), not the whole corpus: a
doc edit and a re-ingest leave the render's inputs alone, and an identical render is then
correct. Rows are tagged "in:" so rows from before (whole-corpus signatures) never compare.
"""

from __future__ import annotations

try:  # the builtin module: hashlib would load OpenSSL on the session-start path
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

from memory_core.outbox import novelty_log
from memory_core.store.db import write
from probes.result import OPERATOR, CheckResult, green, note, red

REPEATS = 3  # the same render in this many distinct sessions (the reference harness's render-repeat check)
WINDOW = 200  # rows of history the check looks at
KEEP = 1000  # rows kept in the table


SIG_PREFIX = "in:"


def inputs_signature(conn) -> str:
    """A fingerprint of the session-start render's inputs, as the render would print them."""
    from memory_core.delivery.render import render_inputs

    text = "\n".join(render_inputs(conn))
    return SIG_PREFIX + _blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def render_hash(text: str) -> str:
    return _blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def record_render(conn, session_id: str | None, text: str, corpus_sig: str, now_ns: int) -> str:
    """Store one session-start render's hash beside its inputs' signature (the column keeps
    its old name, corpus_sig); return the hash."""
    digest = render_hash(text)
    with write(conn):
        novelty_log.record(conn, now_ns, session_id, digest, corpus_sig, KEEP)
    return digest


def render_novelty(ev) -> CheckResult:
    """RED when the latest session-start render repeats across REPEATS distinct sessions
    while the render's own inputs moved underneath it (the render did not follow them)."""
    rows = novelty_log.latest(ev.conn, ev.now_ns, WINDOW)
    if not rows:
        return green("no session-start renders recorded yet")
    if all(not sid for sid, _, _ in rows[:REPEATS]) and len(rows) >= REPEATS:
        return note(f"disarmed: the last {REPEATS} renders carry no session id",
                    fix="Claude Code should pass session_id to the SessionStart hook", audience=OPERATOR)
    latest = rows[0][1]
    same = [(sid, sig) for sid, h, sig in rows if h == latest and (sig or "").startswith(SIG_PREFIX)]
    sessions = {sid for sid, _ in same if sid}
    sigs = {sig for _, sig in same}
    if len(sessions) >= REPEATS and len(sigs) > 1:
        return red(f"the same session-start render appeared in {len(sessions)} sessions while its "
                   f"inputs (pinned items, decisions, resume anchor) changed {len(sigs) - 1} time(s)",
                   "something serves a stale render (a cache, a wrapper around `memhealth hook "
                   "session-start`): remove it; the next session start renders from the store and clears this")
    if len(sessions) >= REPEATS:
        return green(f"render unchanged across {len(sessions)} sessions, and so are its inputs")
    return green(f"render {latest[:8]} seen in {len(sessions)} session(s)")
