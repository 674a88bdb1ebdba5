"""The gate's checks of what ingest keeps current: the sources' watermarks and the links it
refused (ingest_freshness), the capture queue (capture_queue), decision lineage
(lineage_freshness). Each is one function over `Evidence` returning a `CheckResult`.
"""

from __future__ import annotations

import os
import shlex

from memory_core.index import reads as index_reads
from probes.result import CheckResult, ago, green, note, red

DAY = 86400.0


def _days(cfg_value: float) -> str:
    return f"{cfg_value:g} d"


# -- 1 ---------------------------------------------------------------------------------------

LINK_FINDINGS_WINDOW_S = 30 * DAY  # refusals older than this were re-listed since, or the file left


def refused_links(ev) -> list[tuple[str, str]]:
    """(path, target) of memory and docs files an ingest refused because a symbolic link
    takes them outside the project, and that still do (a removed link clears itself)."""
    from memory_core.ingest.filesource import LINK_OUTSIDE, escapes

    since = ev.now_ns - int(LINK_FINDINGS_WINDOW_S * 1e9)
    out = []
    for path in index_reads.refused_paths(ev.conn, since, LINK_OUTSIDE):
        target = escapes(ev.root, os.path.join(ev.root, path)) if path else None
        if target:
            out.append((path, target))
    return out


def ingest_freshness(ev) -> CheckResult:
    """RED when a memory or docs file is a link leading outside the project (refused, never
    read), when ingestion never ran, or when a source's newest watermark is older than the
    budget measured against the latest session activity (an idle project is not stale)."""
    links = refused_links(ev)
    if links:
        named = "; ".join(f"{path} → {target}" for path, target in links[:5])
        more = f" (and {len(links) - 5} more)" if len(links) > 5 else ""
        return red(f"refused {len(links)} symbolic link(s) leading outside the project, never read: {named}{more}",
                   "remove each link (its target is not touched): `rm "
                   + " ".join(shlex.quote(p) for p, _t in links) + "`, or put a copy of the file in its place; "
                   "then `memhealth ingest`")
    return _ingest_freshness(ev)


def _ingest_freshness(ev) -> CheckResult:
    # path '*' is the per-source run marker every ingest writes, files or not: a source with
    # only that row had nothing to read, and is not reported as "fresh"
    rows = index_reads.watermark_summary(ev.conn)
    if not rows:
        return red("ingestion never ran (no watermarks)", "memhealth ingest")
    budget_s = ev.cfg["gate"]["ingest_max_age_days"] * DAY
    activity = ev.last_activity_ns()
    reference_ns = ev.now_ns if activity is None else activity
    stale, idle = [], []
    for source, updated, _n in rows:
        lag_s = (reference_ns - updated) / 1e9
        if lag_s > budget_s:
            stale.append(f"{source} {ago(lag_s)} behind the latest session")
        elif (ev.now_ns - updated) / 1e9 > budget_s:
            idle.append(source)
    if activity is None and stale:
        return note("ingest watermarks are old but no session has run: " + ", ".join(s.split()[0] for s in stale),
                    fix="memhealth ingest")
    if stale:
        return red(f"stale ingest: {', '.join(stale)} (budget {_days(ev.cfg['gate']['ingest_max_age_days'])})",
                   "memhealth ingest " + " ".join(s.split()[0] for s in stale)
                   + "; if it errors, see `memhealth report`")
    fresh = [r[0] for r in rows if r[2]]
    empty = [r[0] for r in rows if not r[2]]
    detail = f"{len(fresh)} source(s) fresh: " + (", ".join(fresh) or "none")
    if empty:
        detail += f"; nothing found to ingest: {', '.join(empty)}"
    if idle:
        detail += f" (idle since the last session: {', '.join(idle)})"
    return green(detail)


# -- 4 ---------------------------------------------------------------------------------------

def capture_pending(ev) -> int:
    """Pending capture items: the `capture_queue` table's pending rows when it exists, else
    the integer the capture pipeline keeps in meta `capture.pending`, else 0."""
    if ev.has_table("capture_queue"):
        from memory_core.records.reads import external_queue_pending

        return external_queue_pending(ev.conn)
    raw = ev.meta("capture.pending")
    try:
        return max(int(raw), 0) if raw is not None else 0
    except ValueError:
        return 0


def capture_queue(ev) -> CheckResult:
    """RED when more capture items wait for triage than gate.capture_queue_max."""
    pending = capture_pending(ev)
    limit = ev.cfg["gate"]["capture_queue_max"]
    if pending > limit:
        # memhealth queues no captures itself: the pipeline that does keeps this count
        return red(f"{pending} capture items pending (max {limit})",
                   "triage the pending items in the capture pipeline that queues them (it keeps "
                   "the `capture_queue` table or meta `capture.pending`); the next gate re-reads the count")
    return green(f"{pending} pending")


# -- 5 ---------------------------------------------------------------------------------------

# `memhealth ingest` does not build lineage: the builder that writes the stamps must run
LINEAGE_FIX = ("re-run the decision-lineage builder that stamps meta `lineage.built_ns` and "
               "`lineage.source_ns` (`memhealth ingest` does not rebuild lineage)")


def lineage_freshness(ev) -> CheckResult:
    """RED when decision lineage was last built before its records changed, and the change
    is older than the ingest budget. The builder keeps meta `lineage.built_ns` and
    `lineage.source_ns` (newest record it should reflect)."""
    built, source = ev.meta("lineage.built_ns"), ev.meta("lineage.source_ns")
    if source is None:
        return green("no decision lineage to rebuild")
    try:
        built_ns = int(built) if built is not None else 0
        source_ns = int(source)
    except ValueError:
        return red(f"lineage stamps are not integers ({built!r}, {source!r})", LINEAGE_FIX)
    if source_ns <= built_ns:
        return green(f"decision lineage current (built {ago((ev.now_ns - built_ns) / 1e9)} ago)")
    lag_s = (ev.now_ns - source_ns) / 1e9
    budget = ev.cfg["gate"]["ingest_max_age_days"]
    if lag_s > budget * DAY:
        return red(f"decision lineage is behind its records by {ago(lag_s)} (budget {_days(budget)})",
                   LINEAGE_FIX)
    return green(f"decision lineage rebuild pending ({ago(lag_s)})")
