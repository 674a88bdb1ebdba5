"""The vector phase of an ingest run: after every source's text is in, embed what has no
vector yet, most useful first, within what is left of the run's budget.

    VectorPhase(conn, cfg, report, run).run()   # memory, ledger, git, docs, transcript
    backfill(conn, cfg, budget_s=55.0)          # the phase alone (serve's schedule)

Text first, vectors after: the lexical leg (BM25, the inventory's DO-NOT-REBUILD) needs
only the text, so one run indexes every source's text before it spends any of its budget
on an embedding server; a slow model can delay vectors, never the inventory. The phase is
a backfill, not a sink: it embeds every chunk without a vector (this run's and those an
earlier run left), so the next `memhealth ingest` (or `memhealth embed`, without a budget)
continues where this one stopped. Each request carries [embedding].batch_size texts, fewer
when the time per text measured on this run's earlier requests says they would not be back
before the deadline (the first request is a small probe): a slow model ends a phase on time
instead of one full batch past it.

An embedding failure never fails ingest: the chunks are already committed, the failure is
recorded once as a degradation (component "embedding"), the rest of the phase skips the
server. Vectors are written in their own transactions, so a slow server never holds the
write lock. How far the phase got is kept in meta `vectors.backfill` (state done | budget |
degraded, ts_ns, embedded, with_vector, chunks, detail) for the gate's vector_coverage
check ("vectors 960/2000, backfilling").
"""

from __future__ import annotations

import json
import time

from memory_core.errors import MemoryCoreError
from memory_core.store.meta import VECTORS_BACKFILL as META_KEY

# The injection cascade reads memory (the inventory, confirmed records) and ledgers first;
# transcripts are never offered, so their vectors come last.
PRIORITY: tuple[str, ...] = ("memory", "ledger", "git", "docs", "transcript")
FIRST_BATCH = 1  # the first request of a run measures the server before a full batch is sent


def drop_vectors(conn, ids: list[int]) -> None:
    """Delete the vectors of chunks about to be deleted (inside the caller's transaction)."""
    try:
        from memory_core.index import vectors
    except ImportError:  # pragma: no cover - the vector module ships with memory_core
        return
    vectors.delete_for_chunks(conn, ids)


def backfill(conn, cfg, budget_s: float):
    """The vector phase alone, outside an ingest run (serve's schedule): embed what has no
    vector within `budget_s`. Returns the IngestReport with the vectors_* fields set, or None
    when every chunk already has a vector (nothing written, not even the progress row)."""
    from memory_core.index import vectors
    from memory_core.ingest.base import IngestReport, Run

    if not vectors.missing(conn, 1, 0):
        return None
    report = IngestReport(budget_s=budget_s)
    run = Run(conn, "", cfg, budget_s)
    run.worked = True
    VectorPhase(conn, cfg, report, run).run()
    return report


class VectorPhase:
    """Embeds the chunks without a vector, by source in PRIORITY order, until the deadline."""

    def __init__(self, conn, cfg, report, run, sources: tuple[str, ...] | None = None):
        self.conn = conn
        # the sources whose chunks this phase embeds: an ingest of some sources (`memhealth
        # remember` re-reads memory) embeds theirs, not the whole store's backlog
        self.sources = tuple(s for s in PRIORITY if sources is None or s in sources)
        self.report = report
        self.run_ = run
        self.batch_size = int(cfg["embedding"]["batch_size"])
        self.dim = int(cfg["embedding"]["dim"])
        self.failed: str | None = None
        self.stopped = False          # the deadline came before every chunk had a vector
        self.client = None
        try:
            from memory_core.index import vectors
            from memory_core.index.embed import OllamaClient

            self._vectors = vectors
            self.client = OllamaClient.from_config(cfg, bulk=True, pooled=run.pooled)
        except ImportError as exc:  # pragma: no cover - defensive: a partial install
            self._degrade("unavailable", f"embedding modules missing: {exc}")
        except MemoryCoreError as exc:
            self._degrade(getattr(exc, "reason", "error"), str(exc))
        if self.failed is None:
            report.vectors_state = "ok"

    def run(self) -> None:
        try:
            if self.failed is None:
                self._run()
        finally:
            if self.client is not None:
                self.client.close()
            self._finish()

    def _run(self) -> None:
        vectors, run = self._vectors, self.run_
        try:
            ready = vectors.ensure_vec_table(self.conn, self.dim)
        except MemoryCoreError as exc:  # DimensionMismatch, StoreError
            self._degrade(getattr(exc, "reason", "error"), str(exc))
            return
        if not ready:
            from memory_core.store.db import vec_unavailable_reason

            self._degrade("vector_unavailable", vec_unavailable_reason() or "sqlite-vec cannot load")
            return
        per_text = None  # seconds per text, measured on this run's batches
        for source in self.sources:
            after = 0
            while True:
                left = run.deadline - run.clock()
                size = self._batch(per_text, left)
                if size == 0:
                    # the next batch would not fit: stop between batches, the next run resumes
                    self.stopped = any(vectors.missing(self.conn, 1, 0, s) for s in self.sources)
                    return
                ids = vectors.missing(self.conn, size, after, source)
                if not ids:
                    break
                after = ids[-1]  # forward only: a refused chunk is not retried in this run
                t0 = run.clock()
                if not self._embed(ids):
                    return
                took = (run.clock() - t0) / len(ids)
                per_text = took if per_text is None else 0.5 * per_text + 0.5 * took

    def _batch(self, per_text: float | None, left: float) -> int:
        """How many texts the next request may carry: [embedding].batch_size, fewer when the
        time per text measured so far says more would not be back before the deadline; the
        first request is a small probe (FIRST_BATCH) that measures it; 0 when none fits."""
        if left <= 0:
            return 0
        if per_text is None:
            return min(self.batch_size, FIRST_BATCH)
        fits = int(left / per_text) if per_text > 0 else self.batch_size
        return max(min(self.batch_size, fits), 0)

    def _embed(self, ids: list[int]) -> bool:
        vectors = self._vectors
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT id, title, content FROM chunks WHERE id IN ({marks}) "
                                 "ORDER BY id", ids).fetchall()
        try:
            got = self.client.embed([vectors.embed_text(title, content) for _id, title, content in rows])
            stored, _refused = vectors.store(self.conn, [(row[0], vec) for row, vec in
                                                         zip(rows, got, strict=True)])
        except MemoryCoreError as exc:  # EmbedError, DimensionMismatch, StoreError
            self._degrade(getattr(exc, "reason", "error"), str(exc))
            return False
        except ValueError as exc:  # zip(strict=True): a server that answered too few vectors
            self._degrade("malformed", str(exc))
            return False
        self.report.vectors_embedded += stored
        return True

    def _finish(self) -> None:
        """Pending = chunks still without a vector; the phase's state goes to meta."""
        from memory_core.errors import StoreError
        from memory_core.store.db import write
        from memory_core.store.meta import set_meta

        try:
            with_vector, total = self._vectors.coverage(self.conn)
        except Exception:  # noqa: BLE001 - no vector module or an unreadable table
            total = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            with_vector = 0
        self.report.vectors_pending = total - with_vector
        state = "degraded" if self.failed else "budget" if self.stopped else "done"
        self.report.vectors_backfill = state
        value = {"state": state, "ts_ns": time.time_ns(), "embedded": self.report.vectors_embedded,
                 "with_vector": with_vector, "chunks": total}
        if self.failed:
            value["detail"] = self.report.vectors_detail
        try:
            with write(self.conn):
                set_meta(self.conn, META_KEY, json.dumps(value, separators=(",", ":")))
        except StoreError:
            pass  # a locked or read-only store: the gate reads coverage alone

    def _degrade(self, reason: str, detail: str) -> None:
        self.failed = reason
        self.report.vectors_state = "unavailable" if reason in ("unavailable", "vector_unavailable") else "degraded"
        self.report.vectors_detail = f"{reason}: {detail}"[:300]
        try:
            from memory_core.index.embed import log_degradation_once

            log_degradation_once(self.conn, reason, f"ingest: {detail}"[:500])
        except ImportError:  # pragma: no cover
            pass
