"""What memory put into Claude's context, per hook invocation and block kind.

    blocks = attribute([("verdict", v), ("summary", s)], emitted_chars=len(text))
    with write(conn):
        record(conn, "session-start", "s1", trace_id, blocks, now_ns)

A hook's output is several blocks joined (the verdict, the pinned items, the session
summary; recalled memory and cues). The emitter cleans and caps the whole text; `attribute`
charges each emitted character to the block it came from, in order, so the kinds always sum
to what Claude received (a block cut by the 10,000-character cap is charged what survived).
Rows go in the invocation's own transaction (heartbeat.finish), with counter rollups.
Standard library only: the hook path imports this.
"""

from __future__ import annotations

from memory_core.outbox.rollups import bump

KINDS = ("verdict", "pinned", "summary", "recall", "cue")
# Characters per token for the estimate. Claude's tokenizer is not public; ~4 characters per
# token is the common rule of thumb for English prose and code (OpenAI's tokenizer guide says
# "one token generally corresponds to ~4 characters of text for common English text"). It is
# an estimate, labelled as one wherever it is shown; the characters are exact.
CHARS_PER_TOKEN = 4.0
SEPARATORS = {"\n", "\n\n"}


def estimate_tokens(chars: int) -> int:
    """Estimated tokens for `chars` characters (rounded up; 0 for 0)."""
    return -(-int(chars) // int(CHARS_PER_TOKEN)) if chars > 0 else 0


def attribute(parts: list[tuple[str, str]], emitted_chars: int, joiner: str = "\n") -> list[tuple[str, int]]:
    """[(kind, chars)] for the parts in emission order, charging `emitted_chars` in total:
    each part its length plus the joiner before it, the last one what is left (cleaning and
    the cap change lengths; the sum is always exactly what was emitted)."""
    out: dict[str, int] = {}
    left = max(0, int(emitted_chars))
    present = [(k, t) for k, t in parts if t]
    for i, (kind, text) in enumerate(present):
        if left <= 0:
            break
        want = len(text) + (len(joiner) if i else 0)
        take = left if i == len(present) - 1 else min(want, left)
        out[kind] = out.get(kind, 0) + take
        left -= take
    if left > 0 and present:  # cleaning made the text longer than its parts: the last kind
        kind = present[-1][0]
        out[kind] = out.get(kind, 0) + left
    return [(k, n) for k, n in out.items() if n > 0]


def record(conn, hook: str, session_id: str | None, trace_id: str | None,
           blocks: list[tuple[str, int]], ts_ns: int) -> None:
    """One context_blocks row per (kind, chars), and the catalog counters (call inside a
    write transaction)."""
    for kind, chars in blocks:
        conn.execute("INSERT INTO context_blocks(ts_ns, session_id, hook, trace_id, kind, chars) "
                     "VALUES (?,?,?,?,?,?)", (ts_ns, session_id, hook, trace_id, kind, int(chars)))
        labels = {"hook": hook, "kind": kind}
        bump(conn, "memhealth_context_blocks_total", labels)
        bump(conn, "memhealth_context_chars_total", labels, chars)
        bump(conn, "memhealth_context_tokens_estimated_total", labels, estimate_tokens(chars))
