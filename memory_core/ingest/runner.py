"""One ingest run over the enabled sources, under a budget: text first, vectors after
(the package docstring, memory_core.ingest, says how a run behaves)."""

from __future__ import annotations

import json
import time

from memory_core.delivery import exists
from memory_core.errors import StoreError
from memory_core.index import docfreq
from memory_core.ingest import store, watermark
from memory_core.ingest.base import (
    ALIASES,
    SOURCES,
    BudgetExhausted,
    IngestReport,
    Run,
    SourceReport,
    UnknownSource,
)
from memory_core.ingest.code import ingest_code
from memory_core.ingest.docs import ingest_docs
from memory_core.ingest.git import ingest_git
from memory_core.ingest.ledgers import ingest_ledgers
from memory_core.ingest.memory import ingest_memory
from memory_core.ingest.transcripts import META_TRANSCRIPT_DIR, ingest_transcripts  # noqa: F401 (memory_core.ingest exports it)
from memory_core.store.db import write

DOCFREQ_REFRESH_S = 2.0  # at most this of an ingest's budget re-counts stale word frequencies

INGESTERS = {"docs": ingest_docs, "memory": ingest_memory, "ledger": ingest_ledgers,
             "transcript": ingest_transcripts, "git": ingest_git, "code": ingest_code}

def resolve_sources(names, cfg=None) -> list[str]:
    """Canonical source names, in ingest order; all enabled sources when `names` is empty."""
    if not names:
        return [s for s in SOURCES if (s != "git" or cfg is None or cfg["ingest"]["git"])
                and (s != "code" or cfg is None or cfg["ingest"]["code"])]
    wanted = set()
    for name in names:
        canonical = ALIASES.get(name.lower(), name.lower())
        if canonical not in SOURCES:
            raise UnknownSource(f"unknown source {name!r}; known: {', '.join(SOURCES)}")
        wanted.add(canonical)
    return [s for s in SOURCES if s in wanted]


def run_ingest(conn, project_root: str, cfg, sources: list[str] | None = None,
               budget_s: float | None = None, progress=None, trace=None,
               pooled: bool = True) -> IngestReport:
    """Ingest `sources` (default: all enabled) under a wall-clock budget; never raises for
    one bad file. Raises UnknownSource for a bad name and StoreError when the store fails.

    `progress(source, done, total)` is called as files are processed; `trace` (a
    memory_core.outbox.spans.Trace) gets an `ingest` span with one child per source. `pooled=False`
    embeds through the small client, for a hook's short run (memory_core.index.embed: the rule)."""
    names = resolve_sources(sources, cfg)
    budget = float(cfg["ingest"]["budget_s"] if budget_s is None else budget_s)
    run = Run(conn, project_root, cfg, budget, progress)
    run.pooled = pooled
    report = IngestReport(budget_s=budget)
    root_span = trace.span("ingest", **{"memhealth.ingest.sources": ",".join(names),
                                        "memhealth.ingest.budget_s": budget}) if trace else None
    stopped_at = None
    for name in names:
        rep = report.sources[name] = SourceReport()
        if stopped_at is not None:
            continue
        span = trace.span(f"ingest {name}", parent=root_span) if trace else None
        t0 = run.clock()
        try:
            INGESTERS[name](run, rep)
            if name == "code":  # what the prompt hook's code leg would count per prompt
                exists.refresh_common(conn)
        except BudgetExhausted:
            stopped_at = name
        rep.elapsed_s = run.clock() - t0
        if span is not None:
            span.update({f"memhealth.ingest.{k}": v for k, v in rep.to_dict().items()
                         if isinstance(v, (int, float))})
            # a source's own counts (the code index: files parsed, failed, definitions, the
            # commit read), e.g. memhealth.ingest.code.failed
            span.update({f"memhealth.ingest.{name}.{k}": v for k, v in rep.extra.items()
                         if isinstance(v, (int, float, str)) and not isinstance(v, bool)})
            span.end()
        if stopped_at is None:
            _finish_source(conn, name, rep)
    if stopped_at is not None:
        report.budget_exhausted = True
        not_reached = names[names.index(stopped_at) + 1:]
        store.log(conn, stopped_at, None, "budget", "budget",
                  {"budget_s": budget, "stopped_in": stopped_at, "not_reached": not_reached},
                  report.sources[stopped_at].chunks_added)
    elif report.chunks_added or report.chunks_removed:
        # common words' kept frequencies these writes made stale are counted again here, off
        # the prompt path (memory_core.index.docfreq); within what is left of the budget
        left = budget - (run.clock() - run.started)
        if left > 0:
            try:
                report.frequencies_recounted = docfreq.refresh(conn, min(left, DOCFREQ_REFRESH_S))
            except StoreError:
                pass  # locked or read-only: the next prompt counts them
    if cfg["embedding"]["url"]:
        # text first, vectors after: only now, with what is left of the budget; the sources
        # asked for, and a run of every enabled source takes on the whole backlog
        _vector_phase(conn, cfg, report, run, trace, root_span,
                      None if set(names) >= set(resolve_sources(None, cfg)) else names)
    report.elapsed_s = run.clock() - run.started
    if root_span is not None:
        root_span.update({"memhealth.ingest.chunks_added": report.chunks_added,
                          "memhealth.ingest.errors": report.errors,
                          "memhealth.ingest.budget_exhausted": report.budget_exhausted})
        if report.errors:
            root_span.fail(f"{report.errors} file(s) failed", "ingest_error")
        root_span.end()
    return report


def _vector_phase(conn, cfg, report, run, trace, parent, sources=None) -> None:
    """After the text: embed what has no vector within the rest of the budget (a text phase
    that used it all leaves the vectors to the next run, or to `memhealth embed`)."""
    from memory_core.ingest.vectorize import VectorPhase

    span = trace.span("ingest vectors", parent=parent) if trace else None
    t0 = run.clock()
    VectorPhase(conn, cfg, report, run, None if sources is None else tuple(sources)).run()
    if span is not None:
        span.update({"memhealth.ingest.vectors_embedded": report.vectors_embedded,
                     "memhealth.ingest.vectors_pending": report.vectors_pending,
                     "memhealth.ingest.vectors_backfill": report.vectors_backfill,
                     "memhealth.ingest.elapsed_s": round(run.clock() - t0, 4)})
        span.end()


def _finish_source(conn, name: str, rep: SourceReport) -> None:
    """One 'ok' log row per source per run and its summary watermark (last complete scan)."""
    detail = {k: v for k, v in rep.to_dict().items() if k not in ("notes", "elapsed_s") and v}
    with write(conn):
        watermark.save_summary(conn, name, {"files": rep.files_seen, **rep.summary})
        conn.execute(
            "INSERT INTO ingest_log(ts_ns, source, path, outcome, reason, detail, chunks) "
            "VALUES (?,?,?,?,?,?,?)",
            (time.time_ns(), name, None, "ok", None,
             json.dumps(detail, separators=(",", ":"), default=str) if detail else None,
             rep.chunks_added))
