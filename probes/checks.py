"""The gate's checks that read only the store and the project's files. Each is one function
over `Evidence` returning a `CheckResult`; each says in one line what it decides.

The heartbeat check lives in `probes.heartbeats`, render novelty in `probes.novelty`, the
embedding path in `probes.embedding`. Thresholds come from config ([gate]) or, where the
reference design fixed them and config has no key, from the constants below.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time

from memory_core.index import docfreq
from memory_core.index.vectors import count_check, vector_count
from memory_core.outbox import heartbeat_reads
from memory_core.store.db import sqlite3, write
from memory_core.store.meta import VECTORS_BACKFILL, get_meta, set_meta
from probes.result import OPERATOR, CheckResult, ago, green, note, red
from telemetry.slo import EXPORT_MAX_LAG_S  # shared with the MemhealthExporterDown rule

MEMORY_MAX_LINES = 280  # the reference harness's MEMORY.md size check
MEMORY_MAX_BYTES = 90_000
ANCHOR_MAX_AGE_S = 7 * 86400
FTS_FULL_CHECK_MAX_CHUNKS = 200_000  # above this, parity counts stand in for the full scan

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
    for (path,) in ev.conn.execute(
            "SELECT DISTINCT path FROM ingest_log WHERE ts_ns > ? AND reason = ? ORDER BY path LIMIT 200",
            (since, LINK_OUTSIDE)):
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
    rows = ev.conn.execute(
        "SELECT source, max(updated_ns), sum(path != '*') FROM watermarks GROUP BY source ORDER BY source"
    ).fetchall()
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


# -- 2 ---------------------------------------------------------------------------------------

_WIDTH = re.compile(r"\b(?:float|int8|bit)\[(\d+)\]", re.I)


def vec_table_width(conn) -> int | None:
    """The width the vector table was created with, read from its CREATE statement."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    if not row or not row[0]:
        return None
    match = _WIDTH.search(row[0])
    return int(match.group(1)) if match else None


def vector_coverage(ev) -> CheckResult:
    """NOTE without embeddings; RED when sqlite-vec cannot load, the table's width is not
    [embedding].dim, or fewer than gate.vector_coverage_min of the chunks have a vector —
    unless the last ingest's vector phase embedded some before its budget ran out, within
    gate.ingest_max_age_days: then a NOTE says how far along the backfill is (text first,
    vectors after: the lexical leg is whole meanwhile)."""
    emb = ev.cfg["embedding"]
    if not emb["url"]:
        return note("embeddings not configured: search is BM25-only",
                    fix='set [embedding].url (e.g. "http://127.0.0.1:11434") to add the vector leg',
                    audience=OPERATOR)
    from memory_core.store.db import load_vec, vec_unavailable_reason

    reason = "" if load_vec(ev.conn) else (vec_unavailable_reason() or "sqlite-vec failed to load")
    if reason:
        return red(f"sqlite-vec cannot load ({reason}): search is BM25-only",
                   f"{sys.executable} -m pip install pysqlite3-binary sqlite-vec "
                   "(an interpreter whose sqlite3 can load extensions)")
    width = vec_table_width(ev.conn)
    if width is not None and width != emb["dim"]:
        return red(f"chunks_vec holds {width}-d vectors but [embedding].dim = {emb['dim']}",
                   f"set [embedding].dim = {width} back in .memhealth/config.toml, or keep the new "
                   "model and re-embed every chunk at its width with `memhealth embed --rebuild`")
    chunks = docfreq.chunk_count(ev.conn)  # kept on write: no count(*) over the store
    if not chunks:
        return green("no chunks yet: nothing to embed")
    vectors = vector_count(ev.conn) or 0
    ratio = min(vectors, chunks) / chunks
    floor = ev.cfg["gate"]["vector_coverage_min"]
    detail = f"{min(vectors, chunks)}/{chunks} chunks have vectors ({ratio:.1%})"
    if ratio < floor:
        last = _backfill(ev)
        age_s = (time.time_ns() - int(last.get("ts_ns", 0))) / 1e9 if last else None
        if last and last.get("state") == "budget" and last.get("embedded") and age_s is not None \
                and age_s < ev.cfg["gate"]["ingest_max_age_days"] * DAY:
            # text first, vectors after: the lexical leg is whole and the vectors are on their
            # way; nothing to act on while ingest runs keep embedding within their budgets
            return note(f"vectors {min(vectors, chunks)}/{chunks} ({ratio:.1%}), backfilling: "
                        f"the last ingest, {ago(age_s)} ago, embedded {last['embedded']} before its "
                        "budget ran out; each `memhealth ingest` embeds more, BM25 serves meanwhile",
                        fix="memhealth embed (finishes the backfill now, without a budget)",
                        audience=OPERATOR)
        why = ""
        if last and last.get("state") == "degraded":
            why = f"; the last ingest's vector phase failed ({str(last.get('detail', ''))[:120]})"
        elif last and last.get("state") == "budget":
            why = (f"; the backfill is not moving (the last ingest, {ago(age_s)} ago, embedded "
                   f"{last.get('embedded', 0)} before its budget ran out)")
        return red(f"{detail}, below {floor:.0%}{why}", "memhealth embed (backfills missing vectors)")
    return green(detail)


def _backfill(ev) -> dict | None:
    """What ingest's last vector phase recorded (meta vectors.backfill), or None."""
    import json

    try:
        value = json.loads(get_meta(ev.conn, VECTORS_BACKFILL) or "null")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# -- 4 ---------------------------------------------------------------------------------------

def capture_pending(ev) -> int:
    """Pending capture items: the `capture_queue` table's pending rows when it exists, else
    the integer the capture pipeline keeps in meta `capture.pending`, else 0."""
    if ev.has_table("capture_queue"):
        try:
            return ev.conn.execute(
                "SELECT count(*) FROM capture_queue WHERE status = 'pending'").fetchone()[0]
        except sqlite3.OperationalError:  # an older queue without a status column
            return ev.conn.execute("SELECT count(*) FROM capture_queue").fetchone()[0]
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


# -- 6 ---------------------------------------------------------------------------------------

FULL_CHECK_KEY = "gate.integrity.full_ns"
FULL_CHECK_EVERY_S = 86400.0  # the O(size) scans run once a day; the bounded ones every time
TAIL_PARITY = 10_000  # every run compares the index with the newest this many chunk ids


def index_integrity(ev) -> CheckResult:
    """RED when the full-text or vector index is out of step with `chunks`, when the chunk
    counts kept on write disagree with the rows, or when SQLite's quick_check or the FTS5
    integrity-check fails. Every run is bounded: row parity over the newest TAIL_PARITY ids
    and the kept counts. Once a day (the last full check more than a day old) the O(size)
    scans run: parity over the whole index, the kept counts recounted, quick_check."""
    conn = ev.conn
    problems = []
    last_full = ev.meta(FULL_CHECK_KEY)
    full_age_s = (ev.now_ns - int(last_full)) / 1e9 if last_full and last_full.isdigit() else None
    due = full_age_s is None or not 0 <= full_age_s < FULL_CHECK_EVERY_S
    chunks = docfreq.chunk_count(conn)
    fts_fix = f"sqlite3 {shlex.quote(ev.db_path)} \"INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')\""
    if ev.has_table("chunks_fts_docsize"):
        if due:
            (rows,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
            (indexed,) = conn.execute("SELECT count(*) FROM chunks_fts_docsize").fetchone()
            where = f"{rows} chunks"
        else:
            (top,) = conn.execute("SELECT ifnull(max(id), 0) FROM chunks").fetchone()
            floor = top - TAIL_PARITY
            (rows,) = conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (floor,)).fetchone()
            (indexed,) = conn.execute("SELECT count(*) FROM chunks_fts_docsize WHERE id > ?",
                                      (floor,)).fetchone()
            where = f"the newest {rows} chunks"
        if indexed != rows:
            problems.append((f"full-text index holds {indexed} rows for {where}", fts_fix))
    if due and ev.has_table("chunk_counts"):
        actual = dict(conn.execute("SELECT source, count(*) FROM chunks GROUP BY source"))
        kept = {s: n for s, n in conn.execute("SELECT source, n FROM chunk_counts WHERE n != 0")}
        if actual != kept:
            off = sorted(set(actual) | set(kept))
            problems.append((
                "chunk counts kept on write disagree with the rows ("
                + ", ".join(f"{s}: {kept.get(s, 0)} kept, {actual.get(s, 0)} rows" for s in off
                            if kept.get(s, 0) != actual.get(s, 0)) + ")",
                f"sqlite3 {shlex.quote(ev.db_path)} \"{docfreq.RECOUNT_SQL}\""))
        chunks = sum(actual.values())
    vectors = vector_count(ev.conn)
    if vectors is not None and vectors > chunks:
        problems.append((f"{vectors - chunks} more vectors than chunks (vectors of deleted chunks)",
                         "memhealth embed (removes the vectors of deleted chunks, then backfills)"))
    full = due and not problems
    if full:
        verdict = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        if verdict != ["ok"]:
            return red(f"PRAGMA quick_check: {'; '.join(str(r) for r in verdict[:3])}",
                       f"restore {ev.db_path} from a backup, or move it aside and run `memhealth ingest` "
                       "(memory is rebuilt from its sources; history is lost)")
        vec_kept = count_check(conn)  # the kept vector count against the index's rows, counted
        if vec_kept is not None and vec_kept[0] != vec_kept[1]:
            problems.append((f"the kept vector count says {vec_kept[0]} but the vector index holds "
                             f"{vec_kept[1]} rows", "memhealth embed (prunes orphan vectors, then recounts)"))
        if chunks <= FTS_FULL_CHECK_MAX_CHUNKS:
            try:
                # rank 1: compare the index with the external content table, not only itself
                conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.Error as exc:  # the check reports corruption as a DatabaseError
                from memory_core.store.tx import failure_reason

                # the check is written as an INSERT: a read-only store refuses it, which says
                # nothing about the index (hook_heartbeats and the store check name the cause)
                if failure_reason(exc) != "db_readonly":
                    problems.append((f"FTS5 integrity-check: {exc}", fts_fix))
        if not problems:
            try:
                with write(conn):
                    set_meta(conn, FULL_CHECK_KEY, ev.now_ns)
            except Exception:  # a read-only store still gets its verdict; it re-checks next time
                pass
    if problems:
        return red("; ".join(p for p, _ in problems), problems[0][1])
    scans = "quick_check, counts and FTS integrity-check ok" if full else \
        f"full scans ok {ago(full_age_s or 0)} ago"
    return green(f"{scans}; parity ok ({chunks} chunks"
                 + (f", {vectors} vectors)" if vectors is not None else ")"))


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
    for path, attrs in ev.conn.execute(
            "SELECT path, attrs FROM chunks WHERE source = 'memory' AND attrs LIKE '%\"git\"%' "
            "GROUP BY path"):
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


# -- 10 --------------------------------------------------------------------------------------

def integrations(ev) -> CheckResult:
    """NOTE for optional integrations never configured; RED only for a configured one that
    is failing (the alert webhook's recorded delivery failures)."""
    configured, notes, reds = [], [], []
    webhook = ev.cfg.get("alerts", {}).get("webhook_url", "")
    if webhook:
        configured.append("alert webhook")
        window_ns = int(ev.cfg["alerts"]["window_h"] * 3600e9)
        # past deliveries: an acknowledgement (`memhealth gate --ack integrations`) clears
        # the failures up to it, so a repaired receiver need not wait for the window to pass
        since = max(ev.now_ns - window_ns, ev.acked_ns("integrations") + 1)
        row = ev.conn.execute(
            "SELECT count(*), max(ts_ns), detail FROM degradations WHERE component IN "
            "('alerts', 'webhook', 'alert_webhook') AND ts_ns >= ? AND ts_ns <= ?",
            (since, ev.now_ns)).fetchone()
        if row[0]:
            reds.append((f"alert webhook failed {row[0]} time(s) in {ev.cfg['alerts']['window_h']:g} h, "
                         f"last {ago((ev.now_ns - row[1]) / 1e9)} ago ({(row[2] or '')[:120]})",
                         "check [alerts].webhook_url and that the receiver answers; once it does, "
                         "`memhealth gate --ack integrations` acknowledges the past failures"))
    else:
        notes.append("alert webhook not configured ([alerts].webhook_url)")
    if ev.cfg.get("ingest", {}).get("git"):
        if os.path.exists(os.path.join(ev.root, ".git")):
            configured.append("git history")
        else:
            notes.append("git ingest is on but the project is not a git repository")
    if reds:
        return red("; ".join(d for d, _ in reds), reds[0][1])
    if notes:
        return note("optional, not wired: " + "; ".join(notes)
                    + (f" (wired: {', '.join(configured)})" if configured else ""))
    return green("wired: " + ", ".join(configured))


# -- 11 --------------------------------------------------------------------------------------

EXPORT_WATERMARK = "export.spans.last_id"  # written by telemetry.export after each batch


def exporter_configured(ev) -> str | None:
    """How an OTLP exporter is configured, or None: [telemetry].otlp_endpoint, an
    OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT in the environment, or an exporter that ran before
    (`memhealth serve` / `export --once` left its watermark)."""
    if ev.cfg.get("telemetry", {}).get("otlp_endpoint", "").strip():
        return "[telemetry].otlp_endpoint"
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if os.environ.get(name, "").strip():
            return name
    if ev.meta(EXPORT_WATERMARK) is not None:
        return "an exporter that ran before"
    return None


def telemetry_pipeline(ev) -> CheckResult:
    """Speaks only when an exporter is configured and failing: RED when the oldest span
    still waiting is older than the export lag budget. With no exporter the outbox is
    bounded by age and rows (pruned by the gate) and this check is GREEN."""
    tel = ev.cfg.get("telemetry", {})
    bounds = f"bounded to {tel.get('retention_days', 14.0):g} d / {tel.get('outbox_max_rows', 20000)} spans"
    how = exporter_configured(ev)
    if how is None:
        return green(f"no exporter configured: the span outbox is kept locally, {bounds}")
    last = ev.meta(EXPORT_WATERMARK)
    try:
        last_id = int(last) if last is not None else 0
    except ValueError:
        last_id = 0
    backlog, oldest = ev.conn.execute(
        "SELECT count(*), min(end_ns) FROM spans WHERE id > ?", (last_id,)).fetchone()
    if not backlog:
        return green(f"outbox empty: the exporter ({how}) is caught up")
    age_s = (ev.now_ns - oldest) / 1e9
    budget_s = max(EXPORT_MAX_LAG_S, 4 * ev.cfg.get("serve", {}).get("export_interval_s", 15.0))
    if age_s > budget_s:
        error = (ev.meta("export.last_error") or "").strip()
        state = "the exporter never ran" if last is None else (
            f"last export error: {error[:160]}" if error else "the exporter is not running")
        return red(f"exporter behind ({how}): {backlog} span(s) in the outbox, oldest {ago(age_s)} old "
                   f"(budget {ago(budget_s)}); {state}",
                   "check the OTLP collector the exporter points at, then run `memhealth export --once` "
                   "(a running memhealth serve also ships the backlog on its own)")
    return green(f"{backlog} span(s) queued for the exporter ({how}), oldest {ago(age_s)} old; {bounds}")


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
    last = conn.execute(
        "SELECT trace_id, ts_ns, session_id FROM cue_audit WHERE event = 'session-start' AND trigger = 'pinned' "
        "AND detail = 'pinned at compact' AND ts_ns > ? ORDER BY id DESC LIMIT 1", (acked,)).fetchone()
    if last is not None:
        trace_id, ts_ns, session = last
        counts = dict(conn.execute(
            "SELECT coalesce(reason, outcome), count(*) FROM cue_audit WHERE trace_id = ? AND trigger = 'pinned' "
            "GROUP BY 1", (trace_id,)).fetchall())
        existed = conn.execute(
            "SELECT count(*) FROM memory_items WHERE pinned = 1 AND updated_ns <= ? "
            "AND (expires_ns IS NULL OR expires_ns > ?)", (ts_ns, ts_ns)).fetchone()[0]
        changed = conn.execute("SELECT count(*) FROM memory_items WHERE updated_ns > ?", (ts_ns,)).fetchone()[0]
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
    pinned = conn.execute("SELECT count(*) FROM memory_items WHERE pinned = 1").fetchone()[0]
    n_cues = conn.execute("SELECT count(*) FROM cues").fetchone()[0]
    return green("; ".join(details + [f"{pinned} pinned item(s), {n_cues} cue(s)"]))
