"""Lineage threads: a chosen decision record that supersedes another (or is superseded) is
shown with its whole thread, newest first, read from the records' `supersedes:` /
`superseded_by:` links (written by `memhealth triage confirm ID --supersedes OTHER`).

    chosen = lineage.threads(conn, chosen, detail)   # arith["thread"]: the thread's rows
"""

from __future__ import annotations

from memory_core.delivery.entries import COLUMNS, attrs_of

MAX_THREAD = 8                     # decisions shown in one lineage thread


def links(row) -> tuple[str, str, str]:
    """A record's (candidate id, supersedes, superseded_by), each "" when unset."""
    attrs = attrs_of(row)
    return tuple(str(attrs.get(k) or "").strip() for k in ("candidate", "supersedes", "superseded_by"))


def threads(conn, chosen: list, detail: dict) -> list:
    """Attach its lineage thread (newest first) to each chosen decision record that links to
    another (`supersedes:` / `superseded_by:`, written by `memhealth triage confirm ID
    --supersedes OTHER`); a second chosen record of a thread already shown is dropped. The
    records are read only when a chosen one links: tens of rows by the (source, kind) index."""
    if not any(b == "thread" and any(links(r)[1:]) for _a, r, b, _e in chosen):
        return chosen
    by_id = {}
    for row in conn.execute(f"SELECT {COLUMNS} FROM chunks WHERE source = 'memory' AND kind = 'decision' "
                            "ORDER BY id"):
        cand = links(row)[0]
        if cand and cand not in by_id:  # a record's first chunk speaks for it
            by_id[cand] = row
    out, shown = [], set()
    for arith, row, block, evidence in chosen:
        cand, back, forward = links(row)
        if block != "thread" or not (back or forward) or cand not in by_id:
            out.append((arith, row, block, evidence))
            continue
        if cand in shown:
            continue
        newest, steps = cand, 0
        while links(by_id[newest])[2] in by_id and steps < MAX_THREAD:  # forward to the newest
            newest, steps = links(by_id[newest])[2], steps + 1
        thread, at = [], newest
        while at in by_id and at not in thread and len(thread) < MAX_THREAD:  # back, newest first
            thread.append(at)
            at = links(by_id[at])[1]
        shown.update(thread)
        arith = {**arith, "thread": [by_id[c] for c in thread]}
        detail.setdefault("lineage", []).append({"chunk_id": row[0], "thread": [int(c) if c.isdigit() else c
                                                                               for c in thread]})
        out.append((arith, row, block, evidence))
    return out
