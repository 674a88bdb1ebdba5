"""STALE-CLAIM: memory that is wrong is as harmful as memory that is missing. An item whose
claim about the tree can be checked cheaply (one os.stat per path it names, never a walk)
and fails is delivered as a warning naming what changed, never as DO-NOT-REBUILD.

    claims.stale_claim(root, "subsystem", {"path": "src/gone.py"})  # "src/gone.py no longer exists"
    claims.recorded_at("2026-02-28")                                 # (1772323200.0, "2026-02-28")

An inventory entry whose `path:` is gone, a confirmed record whose file changed after its
`recorded:` date, and (with the code index) a symbol no file defines any more are stale.
"""

from __future__ import annotations

import os
import re

from memory_core.delivery import exists
from memory_core.delivery.entries import DNR_KINDS, RECORD_KINDS, attrs_of, confirmed

MAX_CLAIMED_PATHS = 3              # a `path:` listing more is checked on its first three
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?")
_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?$")


def _epoch(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (calendar.timegm without importing
    calendar, datetime and locale on the hook path)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def recorded_at(value) -> tuple[float, str] | None:
    """A record's `recorded:` as (seconds since the epoch, its day). A bare date means the end
    of that day (UTC): a change later that day is not provably after the record; a timestamp
    is written to the second, so a change within that second is not after it either."""
    match = _DATE.match(str(value or "").strip())
    if not match:
        return None
    y, mo, d, hh, mm, ss = match.groups()
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31):
        return None
    days = _epoch(int(y), int(mo), int(d))
    at = days * 86400 + (int(hh) * 3600 + int(mm) * 60 + int(ss or 0) + 1 if hh else 86400)
    return float(at), f"{y}-{mo}-{d}"


def claimed_paths(root: str, value, transcript_ok: bool = True) -> list[str]:
    """The project files an item names (a `path:` value, or a record's `source:`), relative to
    `root`: comma- or space-separated, backticks and a `:line` suffix dropped; a word with
    neither a slash nor a dot is commentary, not a path. A glob, a URL, a
    path outside the project and (with `transcript_ok` false) a transcript (`.jsonl`: appended
    to as the session goes on, and the record is about what was said in it) name nothing the
    tree can refute."""
    out = []
    for raw in re.split(r"[,\s]+", str(value or "")):
        rel = _LINE_SUFFIX.sub("", raw.strip("`'\"()[]<>;.").rstrip(":")) if raw else ""
        if not rel or "://" in rel or any(c in rel for c in "*?[{$~") or rel.startswith("-"):
            continue
        if "/" not in rel and "." not in rel:  # a word of commentary ("(SOCKS5)"), not a path
            continue
        if not transcript_ok and rel.endswith(".jsonl"):
            continue
        full = os.path.normpath(os.path.join(root, rel))
        if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
            continue
        rel = os.path.relpath(full, root)
        if rel not in out:
            out.append(rel)
        if len(out) >= MAX_CLAIMED_PATHS:
            break
    return out


def stale_claim(root: str, kind: str | None, attrs: dict | None, conn=None) -> str | None:
    """What makes an item's claim stale, or None. An inventory entry claims its `path:` exists;
    a confirmed record naming a project file (`path:`, else a `source:` that is a project file)
    claims it as it was when `recorded:`: the file gone, or changed since (mtime), refutes it.
    One os.stat per named path; an item naming nothing checkable is never stale. With `conn`
    the code index also judges the symbols it names (`exists.code_claim`): one no file
    defines any more, or one that moved, and where it lives now."""
    kind, attrs = (kind or "").lower(), attrs or {}
    root = os.path.abspath(root)
    if kind in DNR_KINDS:
        paths, since = claimed_paths(root, attrs.get("path")), None
    elif kind in RECORD_KINDS and confirmed(attrs):
        # a source is "where:line (session, time, speaker)": only its first word is a place
        source = (str(attrs.get("source") or "").split() or [""])[0]
        paths = claimed_paths(root, attrs.get("path")) or claimed_paths(root, source, transcript_ok=False)
        since = recorded_at(attrs.get("recorded"))
    else:
        return None
    why = None
    for rel in paths:
        try:
            st = os.stat(os.path.join(root, rel))
        except OSError:
            why = f"{rel} no longer exists"
            break
        if since is not None and not os.path.isdir(os.path.join(root, rel)) and st.st_mtime >= since[0]:
            why = f"{rel} changed after this was recorded on {since[1]}"
            break
    code = exists.code_claim(conn, attrs, paths, gone=why is not None) if conn is not None else None
    return "; ".join(w for w in (why, code) if w) or None


def check(root: str, chosen: list, detail: dict, trace, conn=None) -> list:
    """Re-block each chosen item whose claim the tree refutes as "stale_claim" (it was counted
    against its own block's per-session cap: the same item, told truthfully)."""
    out, stale = [], []
    with trace.span("inject.stale_claim") as span:
        for arith, row, block, evidence in chosen:
            if block == "code":  # read from the code itself: nothing to refute
                out.append((arith, row, block, evidence))
                continue
            why = stale_claim(root, row[5], attrs_of(row), conn)
            if why is None:
                out.append((arith, row, block, evidence))
                continue
            arith = {**arith, "stale": why, "instead_of": block}
            stale.append({"chunk_id": row[0], "instead_of": block, "why": why})
            out.append((arith, row, "stale_claim", []))
        span.update({"memhealth.stale.checked": len(chosen), "memhealth.stale.found": len(stale)})
    if stale:
        detail["stale_claim"] = stale
    return out
