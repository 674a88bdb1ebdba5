"""Embed the chunks an ingest run added, in batches, when [embedding].url is set.

    sink = VectorSink(conn, cfg, report, run)
    sink.add([(chunk_id, title, content), ...])   # embeds every full batch
    sink.flush()                                 # the rest

An embedding failure never fails ingest: the chunks are already committed, the failure is
recorded once as a degradation (component "embedding"), the rest of the run skips the
server, and `memhealth embed` backfills the missing vectors later. Vectors are written in
their own transaction, after the chunks, so a slow server never holds the write lock.
"""

from __future__ import annotations

from memory_core.errors import MemoryCoreError


def drop_vectors(conn, ids: list[int]) -> None:
    """Delete the vectors of chunks about to be deleted (inside the caller's transaction)."""
    try:
        from memory_core.index import vectors
    except ImportError:  # pragma: no cover - the vector module ships with memory_core
        return
    vectors.delete_for_chunks(conn, ids)


class VectorSink:
    """Batches (chunk id, title, content) triples into embedding calls and stores vectors."""

    def __init__(self, conn, cfg, report, run=None):
        self.conn = conn
        self.report = report
        self.run = run
        self.batch_size = int(cfg["embedding"]["batch_size"])
        self.dim = int(cfg["embedding"]["dim"])
        self.queue: list[tuple[int, str | None, str]] = []
        self.failed: str | None = None
        self.client = None
        self.table_ready = False
        try:
            from memory_core.index import vectors
            from memory_core.index.embed import OllamaClient

            self.client = OllamaClient.from_config(cfg, bulk=True,
                                                   pooled=True if run is None else run.pooled)
            self._vectors = vectors
        except ImportError as exc:  # pragma: no cover - defensive: a partial install
            self._degrade("unavailable", f"embedding modules missing: {exc}")
        except MemoryCoreError as exc:
            self._degrade(getattr(exc, "reason", "error"), str(exc))
        if self.failed is None:
            report.vectors_state = "ok"

    def add(self, items: list[tuple[int, str | None, str]]) -> None:
        self.queue.extend(items)
        while len(self.queue) >= self.batch_size:
            part, self.queue = self.queue[:self.batch_size], self.queue[self.batch_size:]
            self._embed(part)

    def flush(self) -> None:
        part, self.queue = self.queue, []
        if part:
            self._embed(part)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def _embed(self, items) -> None:
        if self.failed is not None or (self.run is not None and self.run.clock() >= self.run.deadline):
            # over budget or degraded: the chunks are in, `memhealth embed` backfills them
            self.report.vectors_pending += len(items)
            return
        vectors = self._vectors
        try:
            if not self.table_ready:
                if not vectors.ensure_vec_table(self.conn, self.dim):
                    from memory_core.store.db import vec_unavailable_reason

                    self._degrade("vector_unavailable", vec_unavailable_reason() or "sqlite-vec cannot load")
                    self.report.vectors_pending += len(items)
                    return
                self.table_ready = True
            got = self.client.embed([vectors.embed_text(title, content) for _id, title, content in items])
            stored, refused = vectors.store(self.conn, [(item[0], vec) for item, vec in
                                                        zip(items, got, strict=True)])
        except MemoryCoreError as exc:  # EmbedError, DimensionMismatch, StoreError
            self._degrade(getattr(exc, "reason", "error"), str(exc))
            self.report.vectors_pending += len(items)
            return
        except ValueError as exc:  # zip(strict=True): a server that answered too few vectors
            self._degrade("malformed", str(exc))
            self.report.vectors_pending += len(items)
            return
        self.report.vectors_embedded += stored
        self.report.vectors_pending += refused

    def _degrade(self, reason: str, detail: str) -> None:
        self.failed = reason
        self.report.vectors_state = "unavailable" if reason in ("unavailable", "vector_unavailable") else "degraded"
        self.report.vectors_detail = f"{reason}: {detail}"[:300]
        try:
            from memory_core.index.embed import log_degradation_once

            log_degradation_once(self.conn, reason, f"ingest: {detail}"[:500])
        except ImportError:  # pragma: no cover
            pass
