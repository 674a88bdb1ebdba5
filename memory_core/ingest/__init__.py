"""Ingesters: docs, memory files, ledgers, transcripts, git history and the code index.

    report = run_ingest(conn, project_root, cfg)                  # every source
    report = run_ingest(conn, root, cfg, sources=["transcript"], budget_s=5.0)
    report.to_dict()   # {"sources": {"docs": {"files_seen", "files_changed", "chunks_added",
                       #   "chunks_removed", "errors", "malformed", "filtered", "notes",
                       #   "elapsed_s"}, ...}, "elapsed_s", "budget_exhausted", "vectors": {...}}

Incremental: each file has a watermark (stat and hash for documents, a byte offset for
append-only files) saved in the transaction that writes its chunks. A run has a wall-clock
budget; past it the run stops between files (or between steps of a large file), logs an
ingest_log row with outcome "budget", and the next run resumes. A file that fails is
logged (outcome "error", reason family, detail) and retried next run: its watermark is not
advanced.

Text first, vectors after: when [embedding].url is set, the run embeds only once every
source's text is in, with what is left of its budget (memory_core.ingest.vectorize: memory
and ledgers first, resumable, every chunk without a vector, not only this run's). A slow
embedding server delays vectors, never the lexical index; an embedding failure is a
recorded degradation, never an ingest failure.

The package itself imports nothing: the gate reads one helper of `filesource` and must not
pay for every ingester (the code index's parser, subprocess, dataclasses) to get it. The
run's API is resolved on first use from `memory_core.ingest.runner`.
"""

from __future__ import annotations

__all__ = ["META_TRANSCRIPT_DIR", "SOURCES", "IngestReport", "SourceReport", "UnknownSource",
           "resolve_sources", "run_ingest"]


def __getattr__(name: str):
    """`from memory_core.ingest import run_ingest` and the rest of __all__, imported when first
    asked for (PEP 562); any other name is a submodule or does not exist."""
    if name in __all__:
        from memory_core.ingest import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'memory_core.ingest' has no attribute {name!r}")
