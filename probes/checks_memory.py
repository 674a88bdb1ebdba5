"""The gate's checks of what memory delivers: the MEMORY.md index and its resume anchor,
teammates' memory files (memory_files), and cue-anchored delivery (cue_delivery). Each is one
function over `Evidence` returning a `CheckResult`.
"""

from __future__ import annotations

import os
import re

from memory_core.index import reads as index_reads
from memory_core.items import reads as item_reads
from memory_core.outbox import delivery_reads, heartbeat_reads
from probes.result import OPERATOR, CheckResult, ago, green, note, red

MEMORY_MAX_LINES = 280  # the reference harness's MEMORY.md size check
MEMORY_MAX_BYTES = 90_000
ANCHOR_MAX_AGE_S = 7 * 86400


# -- 7 ---------------------------------------------------------------------------------------

_ANCHOR = re.compile(r"^#{1,4}\s*.*LATEST.*$", re.M)
_HEADING = re.compile(r"^#{1,6}\s", re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def memory_index_paths(ev) -> list[str]:
    """Where a MEMORY.md index may live: the project root, .memhealth/memory, .claude/memory,
    and every [ingest].memory directory."""
    places = [ev.root, os.path.join(ev.state_dir, "memory"), os.path.join(ev.root, ".claude", "memory")]
    for entry in ev.cfg.get("ingest", {}).get("memory", []):
        places.append(os.path.join(ev.root, entry))
    seen, out = set(), []
    for place in places:
        path = os.path.normpath(place if place.endswith(".md") else os.path.join(place, "MEMORY.md"))
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


TEAMMATE_NAMED = 5  # memory files named by the teammates' note; the rest are counted


def teammate_memory(ev) -> list[tuple[str, str, str]]:
    """(path, author, commit) of memory files last changed by someone else (a commit whose
    author email is not this user's `user.email`, both read at ingest) since this machine's
    last session ended; every teammate's file when no session ended here yet. Newest first."""
    import json
    from datetime import datetime

    from memory_core.store.meta import get_meta

    me = (get_meta(ev.conn, "git.user_email") or "").strip().lower()
    since_ns = heartbeat_reads.newest_ok_end_ns(ev.conn, "session-end") or 0
    out = []
    for path, attrs in index_reads.memory_git_attrs(ev.conn):
        try:
            info = json.loads(attrs).get("git") or {}
            when_ns = int(datetime.fromisoformat(info["date"]).timestamp() * 1e9)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        # a commit's date has whole seconds: one made in the second the session ended is after it
        if str(info.get("email") or "").strip().lower() == me or when_ns // 10**9 < since_ns // 10**9:
            continue
        out.append((when_ns, path, str(info.get("author") or "?"), str(info.get("commit") or "")))
    return [(p, a, c) for _, p, a, c in sorted(out, reverse=True)]


def memory_files(ev) -> CheckResult:
    """RED when the memory index outgrows what is read at every resume (280 lines or 90,000
    bytes), or its resume anchor is broken or went stale while sessions kept running. NOTE
    naming the memory files a teammate added or changed (by git) since this machine's last
    session: what every agent here will now be told, for a person to review."""
    found = [p for p in memory_index_paths(ev) if os.path.isfile(p)]
    teammates = teammate_memory(ev)
    if teammates:
        named = ", ".join(f"{p} ({' '.join(a.split())[:40]}, {c[:8]})" for p, a, c in teammates[:TEAMMATE_NAMED])
        more = f" and {len(teammates) - TEAMMATE_NAMED} more" if len(teammates) > TEAMMATE_NAMED else ""
        teammate_note = (f"{len(teammates)} memory file(s) changed by others since this machine's last "
                         f"session, delivered to the agent from now on: {named}{more}")
    else:
        teammate_note = None
    if not found:
        return note((f"{teammate_note}; " if teammate_note else "")
                    + "no MEMORY.md index (looked in the project root, .memhealth/memory, "
                    ".claude/memory, [ingest].memory)", fix="create MEMORY.md: one line per memory, a `## LATEST` resume anchor",
                    audience=OPERATOR)
    reds, notes, details = [], [], []
    activity = ev.last_activity_ns()
    for path in found:
        rel = os.path.relpath(path, ev.root)
        with open(path, "rb") as fh:
            data = fh.read(MEMORY_MAX_BYTES * 4)
        size = os.path.getsize(path)
        text = data.decode("utf-8", "replace")
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        if lines > MEMORY_MAX_LINES or size > MEMORY_MAX_BYTES:
            reds.append((f"{rel} has {lines} lines / {size} bytes (max {MEMORY_MAX_LINES} / "
                         f"{MEMORY_MAX_BYTES})",
                         f"trim {rel}: move detail into topic files, keep one line per memory"))
        heading = _ANCHOR.search(text)
        if heading is None:
            notes.append(f"{rel} has no resume anchor (a `## LATEST` heading with a link)")
            continue
        nxt = _HEADING.search(text, heading.end())
        link = _LINK.search(text, heading.end(), nxt.start() if nxt else len(text))
        if link is None:
            reds.append((f"{rel}: the LATEST anchor has no link", f"link the current resume file under "
                         f"`{heading.group(0).strip()}` in {rel}"))
            continue
        target = link.group(1).split("#", 1)[0]
        if "://" in target or not target:
            details.append(f"{rel} anchor → {link.group(1)}")
            continue
        target_path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        try:
            mtime_ns = os.stat(target_path).st_mtime_ns
        except OSError:
            reds.append((f"{rel}: the LATEST anchor links to a missing file ({target})",
                         f"point the LATEST link in {rel} at the current resume file"))
            continue
        age_s = (ev.now_ns - mtime_ns) / 1e9
        behind_s = ((activity or 0) - mtime_ns) / 1e9
        if behind_s > ANCHOR_MAX_AGE_S:
            reds.append((f"{rel}: resume anchor {target} is {ago(age_s)} old while sessions ran",
                         f"update {target} (the resume anchor) and its `LATEST` link in {rel}"))
        elif age_s > ANCHOR_MAX_AGE_S:
            notes.append(f"{rel}: resume anchor {ago(age_s)} old (no sessions since)")
        else:
            details.append(f"{rel}: {lines} lines, anchor {ago(age_s)} old")
    if reds:
        return red("; ".join(d for d, _ in reds + ([(teammate_note, "")] if teammate_note else [])),
                   reds[0][1])
    if teammate_note:
        notes.insert(0, teammate_note)
    if notes:
        return note("; ".join(notes), audience=OPERATOR if teammate_note else None)
    return green("; ".join(details) or f"{len(found)} index file(s) ok")


# -- cue-anchored delivery ---------------------------------------------------------------------

CUE_WINDOW_S = 86400.0       # tool calls looked at for "cues stopped being evaluated"
CUE_MISSING_MIN = 3          # a blip (one crashed evaluation) is not a RED
CUE_MISSING_SHARE = 0.10


def cue_delivery(ev) -> CheckResult:
    """RED when the latest compaction's SessionStart delivered fewer pinned items than
    existed, or when tool hooks complete but their cues were not evaluated (no audit row)."""
    if not ev.has_table("cue_audit"):
        return note("cue tables missing (store older than this memhealth)", fix="memhealth ingest")
    conn = ev.conn
    reds: list[tuple[str, str]] = []
    details: list[str] = []
    acked = ev.acked_ns("cue_delivery")  # both findings are about past events
    last = delivery_reads.last_compaction_pins(conn, acked)
    if last is not None:
        trace_id, ts_ns, session = last
        counts = delivery_reads.pinned_outcomes(conn, trace_id)
        existed = item_reads.pinned_live_at(conn, ts_ns)
        changed = item_reads.changed_after(conn, ts_ns)
        delivered = counts.get("fired", 0)
        when = ago((ev.now_ns - ts_ns) / 1e9)
        if counts.get("ablation"):
            details.append(f"last compaction {when} ago: ablation ([injection].mode = off), "
                           f"{counts['ablation']} pinned item(s) would have been delivered")
        elif delivered < existed and not changed:
            skipped = ", ".join(f"{n} {r}" for r, n in sorted(counts.items()) if r not in ("fired", "no_match"))
            reds.append((f"the last compaction's SessionStart ({when} ago, session {(session or '-')[:12]}) "
                         f"delivered {delivered} of {existed} pinned items" + (f" ({skipped})" if skipped else ""),
                         "shorten or unpin pinned items so they fit the session-start budget (`memhealth cues` "
                         "lists them; set `pinned: false` in a file, then `memhealth ingest memory`; or "
                         "`memhealth forget ID`); to accept what that compaction dropped: "
                         "`memhealth gate --ack cue_delivery`"))
        else:
            details.append(f"last compaction {when} ago: {delivered}/{existed} pinned items delivered")
    since = ev.meta("cues.since_ns")
    try:
        since_ns = int(since) if since else 0
    except ValueError:
        since_ns = 0
    cutoff = max(ev.now_ns - int(CUE_WINDOW_S * 1e9), since_ns, acked + 1)
    total, missing = heartbeat_reads.tool_calls_without_cue_audit(conn, cutoff)
    if missing >= CUE_MISSING_MIN and missing > CUE_MISSING_SHARE * total:
        reds.append((f"cues stopped being evaluated: {missing} of {total} tool calls in the last "
                     f"{ago(CUE_WINDOW_S)} left no cue audit row",
                     "`memhealth cues audit` shows the last evaluation; the hook's stderr (and its "
                     "heartbeat detail in `memhealth report`) says why; once tool calls are evaluated "
                     "again: `memhealth gate --ack cue_delivery`"))
    elif total:
        details.append(f"cues evaluated on {total - missing}/{total} tool calls in the last {ago(CUE_WINDOW_S)}")
    if reds:
        return red("; ".join(d for d, _ in reds), reds[0][1])
    pinned = item_reads.pinned_count(conn)
    n_cues = item_reads.cue_count(conn)
    return green("; ".join(details + [f"{pinned} pinned item(s), {n_cues} cue(s)"]))
