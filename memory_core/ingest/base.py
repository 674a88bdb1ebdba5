"""What one ingest run carries around: the store, the deadline, the per-source report.

    run = Run(conn, root, cfg, budget_s=55.0)
    if run.out_of_time():          # checked before each file; the first unit always runs
        ...

The deadline never stops the first unit of work of a run: with a budget smaller than one
file, a run that stopped before doing anything would stop there again next time, and the
corpus would never be ingested (the "skipped forever" failure in another form).
"""

from __future__ import annotations

import time

from memory_core.errors import MemoryCoreError

# Signal weights by source (default 10), as in the paper's reference harness.
SIGNAL_WEIGHTS: dict[str, float] = {"docs": 10.0, "memory": 40.0, "ledger": 30.0,
                                    "transcript": 10.0, "git": 15.0}
# `code` writes no chunks: it fills the code index (memory_core.ingest.code); it runs last,
# so a cold index of a large tree never holds up the memory a session reads.
SOURCES: tuple[str, ...] = ("docs", "memory", "ledger", "transcript", "git", "code")
# Config and CLI spell some sources in the plural; chunks and watermarks use the singular.
ALIASES: dict[str, str] = {"doc": "docs", "ledgers": "ledger", "transcripts": "transcript",
                           "commits": "git"}

# The per-source summary watermark row: last scan time, high-water mtime, paths at the
# boundary. No file can be called "*" in the path column (paths are relative or absolute).
SUMMARY_PATH = "*"


class _Counts:
    """Keyword-built counters compared by value (what the dataclasses these were gave, without
    importing `dataclasses`: see memory_core.ingest.chunking.Piece). FIELDS: (name, default
    factory) in order; REPR_SKIP: fields left out of repr."""

    FIELDS: tuple[tuple[str, type], ...] = ()
    REPR_SKIP: frozenset[str] = frozenset()
    __hash__ = None

    def __init__(self, **values):
        for name, factory in self.FIELDS:
            setattr(self, name, values.pop(name) if name in values else factory())
        if values:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) {', '.join(values)}")

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n, _f in self.FIELDS)

    def __repr__(self) -> str:
        shown = (f"{n}={getattr(self, n)!r}" for n, _f in self.FIELDS if n not in self.REPR_SKIP)
        return f"{type(self).__name__}({', '.join(shown)})"


class SourceReport(_Counts):
    """Counts for one source in one run: files_seen, files_changed, chunks_added,
    chunks_removed, errors, malformed (lines that are not usable records: transcripts,
    ledgers), filtered (machine-generated turns and other non-memory text), notes,
    elapsed_s, summary (extra state for the "*" row), extra (a source's own counts: code's
    files, defs, ...)."""

    FIELDS = (("files_seen", int), ("files_changed", int), ("chunks_added", int), ("chunks_removed", int),
              ("errors", int), ("malformed", int), ("filtered", int), ("notes", list), ("elapsed_s", float),
              ("summary", dict), ("extra", dict))
    REPR_SKIP = frozenset({"summary"})

    def to_dict(self) -> dict:
        return {"files_seen": self.files_seen, "files_changed": self.files_changed,
                "chunks_added": self.chunks_added, "chunks_removed": self.chunks_removed,
                "errors": self.errors, "malformed": self.malformed, "filtered": self.filtered,
                "notes": list(self.notes), "elapsed_s": round(self.elapsed_s, 4),
                **({"code": dict(self.extra)} if self.extra else {})}


class IngestReport(_Counts):
    """The result of `run_ingest`: per-source counts (sources), frequencies_recounted (kept
    word frequencies counted again: memory_core.index.docfreq), elapsed_s, budget_s,
    budget_exhausted, vectors_embedded, vectors_pending, vectors_state (not_configured | ok
    | degraded | unavailable), vectors_detail, vectors_backfill (after the vector phase:
    done | budget | degraded)."""

    FIELDS = (("sources", dict), ("frequencies_recounted", int), ("elapsed_s", float), ("budget_s", float),
              ("budget_exhausted", bool), ("vectors_embedded", int), ("vectors_pending", int),
              ("vectors_state", lambda: "not_configured"), ("vectors_detail", str), ("vectors_backfill", str))

    @property
    def errors(self) -> int:
        return sum(s.errors for s in self.sources.values())

    @property
    def chunks_added(self) -> int:
        return sum(s.chunks_added for s in self.sources.values())

    @property
    def chunks_removed(self) -> int:
        return sum(s.chunks_removed for s in self.sources.values())

    @property
    def files_changed(self) -> int:
        return sum(s.files_changed for s in self.sources.values())

    @property
    def files_seen(self) -> int:
        return sum(s.files_seen for s in self.sources.values())

    def to_dict(self) -> dict:
        return {
            "sources": {name: s.to_dict() for name, s in self.sources.items()},
            "files_seen": self.files_seen, "files_changed": self.files_changed,
            "chunks_added": self.chunks_added, "chunks_removed": self.chunks_removed,
            "errors": self.errors, "elapsed_s": round(self.elapsed_s, 4),
            "budget_s": self.budget_s, "budget_exhausted": self.budget_exhausted,
            "vectors": {"state": self.vectors_state, "embedded": self.vectors_embedded,
                        "pending": self.vectors_pending, "detail": self.vectors_detail,
                        "backfill": self.vectors_backfill},
        }


class UnknownSource(MemoryCoreError):
    """A source name that is not one of SOURCES (or an alias)."""

    reason = "usage"
    exit_code = 2


class BudgetExhausted(Exception):
    """Raised inside a source when the run's deadline passed; caught by run_ingest."""


class Run:
    """State shared by the sources of one run."""

    def __init__(self, conn, root: str, cfg, budget_s: float, progress=None, clock=time.monotonic):
        self.conn = conn
        self.root = root
        self.cfg = cfg
        self.budget_s = budget_s
        self.clock = clock
        self.started = clock()
        self.deadline = self.started + budget_s
        self.progress = progress
        self.worked = False
        self.now_ns = time.time_ns()
        self.pooled = True        # embed through httpx (many calls); False in a hook

    def out_of_time(self) -> bool:
        return self.worked and self.clock() >= self.deadline

    def remaining_s(self) -> float:
        return max(self.deadline - self.clock(), 0.0)

    def check(self) -> None:
        """Raise BudgetExhausted when the deadline passed (after the first unit of work)."""
        if self.out_of_time():
            raise BudgetExhausted()

    def tick(self, source: str, done: int, total: int) -> None:
        if self.progress is not None:
            try:
                self.progress(source, done, total)
            except Exception:  # a broken progress display must not fail the ingest
                self.progress = None
