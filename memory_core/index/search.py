"""Hybrid search: an FTS5 BM25 leg and a sqlite-vec KNN leg, fused with reciprocal rank.

    result = search(conn, "why does the WAL checkpoint stall", cfg, k=10, trace=trace)
    for hit in result.hits:
        print(hit.path, hit.line_start, hit.score, hit.legs)
    result.degraded        # None, or why the vector leg did not answer

Each leg fetches k*3 candidates; a chunk scores sum(1 / (60 + rank)) over the legs that
found it (RRF, k=60), times (1 + signal_weight / 100). The vector leg is skipped, and the
search is BM25-only, when embeddings are unconfigured, sqlite-vec cannot load, there are
no vectors, the circuit is open, or the embedding call fails; it never waits longer than
the client's connect + read timeout. Failures are recorded once per process and reason in
`degradations` (not for "not configured" or "no vectors", states the gate reports, nor
for "circuit open": the call that opened the circuit already wrote its row).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memory_core.index import fts
from memory_core.outbox.spans import db_span
from memory_core.store.db import sqlite3
from memory_core.text import clean, clip

RRF_K = 60
SNIPPET_CHARS = 240
MAX_QUERY_CHARS = 16384  # longer prompts are cut before tokenising/embedding
# degraded reasons that get no degradation row (see the module docstring)
_QUIET = frozenset({"not_configured", "no_vectors", "circuit_open"})


@dataclass
class Hit:
    """One chunk found by search, with the legs that found it ("bm25", "vector")."""

    chunk_id: int
    source: str
    path: str
    line_start: int | None
    line_end: int | None
    title: str | None
    content: str
    score: float
    legs: tuple[str, ...]
    signal_weight: float = 10.0
    bm25: float | None = None
    distance: float | None = None

    @property
    def snippet(self) -> str:
        return clip(" ".join(self.content.split()), SNIPPET_CHARS)

    @property
    def lines(self) -> str:
        if self.line_start is None:
            return ""
        if self.line_end is None or self.line_end == self.line_start:
            return str(self.line_start)
        return f"{self.line_start}-{self.line_end}"

    def as_dict(self) -> dict:
        return {"chunk_id": self.chunk_id, "source": self.source, "path": self.path,
                "line_start": self.line_start, "line_end": self.line_end, "title": self.title,
                "snippet": self.snippet, "score": self.score, "legs": list(self.legs),
                "signal_weight": self.signal_weight, "bm25": self.bm25, "distance": self.distance}


@dataclass
class SearchResult:
    """Hits best first, which legs answered, why the vector leg did not (or None), and
    per-phase timings in milliseconds."""

    hits: list[Hit] = field(default_factory=list)
    legs_answered: list[str] = field(default_factory=list)
    degraded: str | None = None
    degraded_detail: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    tokens: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"hits": [h.as_dict() for h in self.hits], "legs_answered": self.legs_answered,
                "degraded": self.degraded, "degraded_detail": self.degraded_detail,
                "timings_ms": self.timings, "tokens": self.tokens}


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def search(conn, query: str, cfg, k: int = 10, trace=None, use_vectors: bool = True, *,
           query_vector: list[float] | None = None, use_bm25: bool = True) -> SearchResult:
    """Top `k` chunks for `query`; never raises on bad text, a dead embedding server or a
    missing vector table (it degrades to BM25 and says why in `.degraded`).

    `query_vector` skips the embedding call (benchmarks, callers that already have one);
    `use_bm25=False` runs the vector leg alone."""
    t_start = time.perf_counter()
    result = SearchResult()
    k = max(1, int(k))
    fetch = k * 3
    text = clean(query or "")[:MAX_QUERY_CHARS]
    span = None
    if trace is not None:
        # the retrieval as a whole (internal); each store query below is a DB client span.
        # The k is ours: semconv's gen_ai.request.top_k is a sampling parameter.
        span = trace.span("memory.search", **{
            "memhealth.search.k": k, "memhealth.query.length": len(text)})
    try:
        ranked: dict[str, list[tuple[int, float]]] = {}
        toks = fts.tokens(text)
        result.tokens = toks
        if use_bm25:
            t0 = time.perf_counter()
            try:
                if toks:
                    with db_span(trace, "SELECT", "chunks_fts") as leg:
                        ranked["bm25"] = fts.bm25(conn, toks, limit=fetch)
                        leg.set("db.response.returned_rows", len(ranked["bm25"]))
                else:
                    ranked["bm25"] = []
                result.legs_answered.append("bm25")
            except sqlite3.Error as exc:  # a broken FTS index must not fail the prompt
                result.degraded_detail = f"bm25 leg failed: {exc}"
            result.timings["bm25_ms"] = _ms(t0)
        if use_vectors or query_vector is not None:
            found = _vector_leg(conn, text, cfg, fetch, trace, query_vector, result)
            if found is not None:
                ranked["vector"] = found
                result.legs_answered.append("vector")
        t0 = time.perf_counter()
        result.hits = _fuse(conn, ranked, k)
        result.timings["fuse_ms"] = _ms(t0)
        if result.degraded and result.degraded not in _QUIET:
            from memory_core.index.embed import log_degradation_once

            log_degradation_once(conn, result.degraded, result.degraded_detail)
    finally:
        result.timings["total_ms"] = _ms(t_start)
        if span is not None:
            span.update({"memhealth.search.legs": ",".join(result.legs_answered),
                         "memhealth.search.hits": len(result.hits),
                         "memhealth.search.degraded": result.degraded or "",
                         "memhealth.query.tokens": len(result.tokens)})
            span.end()
    return result


def _vector_leg(conn, text: str, cfg, fetch: int, trace, query_vector, result: SearchResult):
    """Ranked (chunk_id, distance) from the vector leg, or None with result.degraded set."""
    from memory_core.index import vectors

    if query_vector is None and not (cfg is not None and cfg["embedding"]["url"]):
        result.degraded = "not_configured"
        return None
    if not vectors.vec_ready(conn):
        result.degraded = "vector_unavailable"
        result.degraded_detail = "sqlite-vec cannot be loaded by this interpreter"
        return None
    stored_dim = vectors.table_dim(conn)
    if stored_dim is None:
        result.degraded = "no_vectors"
        return None
    if query_vector is None:
        want = int(cfg["embedding"]["dim"])
        if want != stored_dim:
            result.degraded = "dimension_mismatch"
            result.degraded_detail = (f"the vector table holds {stored_dim}-dim vectors but "
                                      f"[embedding].dim is {want}; {vectors.REBUILD_FIX}")
            return None
        if not text.strip():
            return []
        from memory_core.index.embed import EmbedError, OllamaClient

        t0 = time.perf_counter()
        try:
            with OllamaClient.from_config(cfg) as client:
                [query_vector] = client.embed([text], trace=trace)
        except EmbedError as exc:
            result.degraded = exc.reason
            result.degraded_detail = str(exc)
            return None
        finally:
            result.timings["embed_ms"] = _ms(t0)
    t0 = time.perf_counter()
    try:
        with db_span(trace, "SELECT", vectors.TABLE) as leg:
            found = vectors.knn(conn, query_vector, fetch)
            leg.set("db.response.returned_rows", len(found))
    except sqlite3.Error as exc:
        result.degraded = "vector_error"
        result.degraded_detail = f"knn failed: {exc}"
        return None
    finally:
        result.timings["knn_ms"] = _ms(t0)
    return found


def _fuse(conn, ranked: dict[str, list[tuple[int, float]]], k: int) -> list[Hit]:
    scores: dict[int, float] = {}
    legs: dict[int, list[str]] = {}
    raw: dict[int, dict[str, float]] = {}
    for leg, rows in ranked.items():
        for rank, (chunk_id, value) in enumerate(rows, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
            legs.setdefault(chunk_id, []).append(leg)
            raw.setdefault(chunk_id, {})[leg] = value
    if not scores:
        return []
    ids = list(scores)
    rows = {}
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        for row in conn.execute(
                "SELECT id, source, path, line_start, line_end, title, content, signal_weight "
                f"FROM chunks WHERE id IN ({','.join('?' * len(part))})", part):
            rows[row[0]] = row
    hits = []
    for chunk_id, rrf in scores.items():
        row = rows.get(chunk_id)
        if row is None:  # an orphan vector: its chunk was deleted
            continue
        weight = float(row[7] if row[7] is not None else 10.0)
        hits.append(Hit(chunk_id=chunk_id, source=row[1], path=row[2], line_start=row[3],
                        line_end=row[4], title=row[5], content=row[6],
                        score=rrf * (1.0 + weight / 100.0), legs=tuple(legs[chunk_id]),
                        signal_weight=weight, bm25=raw[chunk_id].get("bm25"),
                        distance=raw[chunk_id].get("vector")))
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits[:k]
