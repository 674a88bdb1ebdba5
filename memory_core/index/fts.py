"""Full-text leg: tokenising, safe MATCH queries, BM25 search, document frequency and IDF.

    toks = tokens("Why does the WAL checkpoint stall?")   # ['wal', 'checkpoint', 'stall']
    rows = bm25(conn, toks, limit=30)                       # [(chunk_id, score), ...]

No raw user text ever reaches MATCH: a query is built only from tokens that are runs of
letters and digits, each quoted, joined with OR, and bounded in count.
"""

from __future__ import annotations

import math
import re

MAX_QUERY_TERMS = 64
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each else
even ever every few for from further get gets got had has have having he her here hers him
his how i if in into is it its itself just let like made make many may me might more most
much must my no nor not now of off on once only or other our ours out over own please
really said same say says see she should so some such than that the their theirs them then
there these they this those through to too under until up upon us use used using very want
was we were what when where which while who whom why will with would yes yet you your
yours thing things something anything way ok okay still well need needs going go make
""".split())


def tokens(text: str, min_len: int = 3, limit: int = MAX_QUERY_TERMS,
           keep: frozenset = frozenset()) -> list[str]:
    """Lowercased word tokens in first-seen order: no stopwords, no duplicates, at most `limit`."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        tok = match.group(0)
        if tok in seen or tok in STOPWORDS:
            continue
        if len(tok) < min_len and tok not in keep:
            continue
        if tok.isdigit() and len(tok) < 3:
            continue
        seen[tok] = None
        if len(seen) >= limit:
            break
    return list(seen)


def match_query(toks: list[str], op: str = "OR") -> str:
    """An FTS5 MATCH expression over sanitized tokens ('' when there are none)."""
    safe = [t for t in toks if _WORD.fullmatch(t)][:MAX_QUERY_TERMS]
    return f" {op} ".join(f'"{t}"' for t in safe)


def bm25(conn, toks: list[str], limit: int = 30,
         sources: tuple[str, ...] | list[str] | None = None) -> list[tuple[int, float]]:
    """Top chunks by BM25 (higher is better) for any of `toks`, optionally only from `sources`."""
    query = match_query(toks)
    if not query:
        return []
    if sources:
        rows = conn.execute(sourced_bm25_sql(len(sources)), (query, *sources, limit)).fetchall()
    else:
        rows = conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT ?", (query, limit)).fetchall()
    return [(rowid, -score) for rowid, score in rows]


def sourced_bm25_sql(n_sources: int) -> str:
    """BM25 restricted to some sources. CROSS JOIN pins the loop order: the FTS match drives
    and chunks is a primary-key lookup. A plain JOIN let the planner scan chunks by source
    and run MATCH once per row: more than 30 s for one prompt on a 20k-chunk store."""
    marks = ",".join("?" * n_sources)
    return ("SELECT chunks_fts.rowid, bm25(chunks_fts) FROM chunks_fts "
            "CROSS JOIN chunks ON chunks.id = chunks_fts.rowid WHERE chunks_fts MATCH ? "
            f"AND chunks.source IN ({marks}) ORDER BY bm25(chunks_fts) LIMIT ?")


def chunk_count(conn, sources: tuple[str, ...] | list[str] | None = None) -> int:
    """Chunks in the index, or only those from `sources` (read through the (source, path) index)."""
    if not sources:
        return conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    marks = ",".join("?" * len(sources))
    return conn.execute(f"SELECT count(*) FROM chunks WHERE source IN ({marks})", tuple(sources)).fetchone()[0]


def doc_freq(conn, token: str, sources: tuple[str, ...] | list[str] | None = None) -> int:
    """How many chunks contain `token` (porter-stemmed, as the index sees it), or only chunks
    from `sources` (sourced_doc_freq_sql)."""
    query = match_query([token])
    if not query:
        return 0
    if not sources:
        return conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (query,)).fetchone()[0]
    return conn.execute(sourced_doc_freq_sql(len(sources)), (*sources, query)).fetchone()[0]


def sourced_doc_freq_sql(n_sources: int) -> str:
    """Chunks from some sources containing a match. The (source, path) covering index is
    scanned and each id probed in the match's rowid set: no row is read (a join reading each
    matching row was 3x slower on 20k chunks). INDEXED BY pins it: with ANALYZE statistics
    the planner chose a primary-key lookup per matching row instead, 711 ms for a common word
    at 1M chunks against ~60 ms (benchmarks/bench_scale.py)."""
    marks = ",".join("?" * n_sources)
    return (f"SELECT count(*) FROM chunks INDEXED BY chunks_by_path WHERE source IN ({marks}) "
            "AND id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)")


def idf(n_docs: int, df: int) -> float:
    """Smoothed inverse document frequency, never negative: ln((N+1)/(df+1))."""
    return max(math.log((n_docs + 1) / (df + 1)), 0.0)
