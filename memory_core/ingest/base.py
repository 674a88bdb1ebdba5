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
from dataclasses import dataclass, field

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


@dataclass
class SourceReport:
    """Counts for one source in one run."""

    files_seen: int = 0
    files_changed: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    errors: int = 0
    malformed: int = 0          # lines that are not usable records (transcripts, ledgers)
    filtered: int = 0           # machine-generated turns and other non-memory text
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    summary: dict = field(default_factory=dict, repr=False)  # extra state for the "*" row
    extra: dict = field(default_factory=dict)  # a source's own counts (code: files, defs, ...)

    def to_dict(self) -> dict:
        return {"files_seen": self.files_seen, "files_changed": self.files_changed,
                "chunks_added": self.chunks_added, "chunks_removed": self.chunks_removed,
                "errors": self.errors, "malformed": self.malformed, "filtered": self.filtered,
                "notes": list(self.notes), "elapsed_s": round(self.elapsed_s, 4),
                **({"code": dict(self.extra)} if self.extra else {})}


@dataclass
class IngestReport:
    """The result of `run_ingest`: per-source counts, vectors, elapsed, budget."""

    sources: dict[str, SourceReport] = field(default_factory=dict)
    frequencies_recounted: int = 0  # kept word frequencies counted again (memory_core.index.docfreq)
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    budget_exhausted: bool = False
    vectors_embedded: int = 0
    vectors_pending: int = 0
    vectors_state: str = "not_configured"   # not_configured | ok | degraded | unavailable
    vectors_detail: str = ""
    vectors_backfill: str = ""              # after the vector phase: done | budget | degraded

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
