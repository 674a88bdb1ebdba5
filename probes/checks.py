"""The gate's checks that read only the store and the project's files, by family:

- probes.checks_ingest: ingest_freshness, capture_queue, lineage_freshness;
- probes.checks_memory: memory_files, cue_delivery;
- probes.checks_pipeline: integrations, telemetry_pipeline;
- here, the index itself: vector_coverage and index_integrity.

Each is one function over `Evidence` returning a `CheckResult`; each says in one line what it
decides; this module names them all for the gate (probes.gate). The heartbeat check lives in
`probes.heartbeats`, render novelty in `probes.novelty`, the embedding path in
`probes.embedding`. Thresholds come from config ([gate]) or, where the reference design fixed
them and config has no key, from the constants in each module.
"""

from __future__ import annotations

import re
import shlex
import sys
import time

from memory_core.index import docfreq
from memory_core.index import reads as index_reads
from memory_core.index.vectors import count_check, vector_count
from memory_core.store.db import sqlite3, write
from memory_core.store.meta import VECTORS_BACKFILL, get_meta, set_meta
from probes.checks_ingest import (  # noqa: F401  (the gate's table names them here)
    DAY,
    LINEAGE_FIX,
    capture_pending,
    capture_queue,
    ingest_freshness,
    lineage_freshness,
    refused_links,
)
from probes.checks_memory import (  # noqa: F401
    MEMORY_MAX_BYTES,
    MEMORY_MAX_LINES,
    cue_delivery,
    memory_files,
    memory_index_paths,
    teammate_memory,
)
from probes.checks_pipeline import (  # noqa: F401
    EXPORT_MAX_LAG_S,
    EXPORT_WATERMARK,
    exporter_configured,
    integrations,
    telemetry_pipeline,
)
from probes.result import OPERATOR, CheckResult, ago, green, note, red

FTS_FULL_CHECK_MAX_CHUNKS = 200_000  # above this, parity counts stand in for the full scan


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
    fts_fix = f"sqlite3 {shlex.quote(ev.db_path)} \"{index_reads.FTS_REBUILD_SQL}\""
    if ev.has_table(index_reads.FTS_DOCSIZE):
        if due:
            rows, indexed = index_reads.full_parity(conn)
            where = f"{rows} chunks"
        else:
            rows, indexed = index_reads.tail_parity(conn, TAIL_PARITY)
            where = f"the newest {rows} chunks"
        if indexed != rows:
            problems.append((f"full-text index holds {indexed} rows for {where}", fts_fix))
    if due and ev.has_table("chunk_counts"):
        actual = index_reads.rows_by_source(conn)
        kept = index_reads.kept_counts(conn)
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
                index_reads.fts_integrity_check(conn)
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
