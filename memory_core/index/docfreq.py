"""Chunk counts and document frequencies for the prompt's relevance check, bounded in the
size of the store.

    n = chunk_count(conn, ("memory", "docs"))            # kept on write: one indexed read
    df = doc_freqs(conn, ["wal", "snapshot"], ("memory", "docs"))   # {'wal': 12, 'snapshot': 93102}
    joint_freq(conn, ["wal", "snapshot"], ("memory", "docs"))       # 3: chunks holding both

Counting is what grew with the store: `count(*)` over `chunks` was 26 ms at 1M chunks, over
the curated sources 59 ms, and an exact frequency is O(the word's frequency): 56 ms for a
word in 93 % of 1M chunks (benchmarks/bench_scale.py). So:

- chunk counts come from `chunk_counts`, kept by triggers in the writing transaction
  (schema migration 5);
- a word in fewer than COMMON chunks is counted exactly, reading at most COMMON postings;
- a common word's exact count is kept in `term_df` beside the scope's change counter
  (`chunk_counts.changes`: every insert, delete or content update adds one, and each moves any
  word's frequency by at most one). While the scope has changed by at most df/DRIFT since, the
  kept count is within 1/DRIFT of the truth (its IDF within ln(1/(1 - 1/DRIFT)) ≈ 0.05); after
  that it is counted again. A re-count costs O(df) and comes after df/DRIFT changes: O(DRIFT)
  per write, amortized. `refresh` does those re-counts after an ingest, off the hook path.

A store at a schema without these tables (opened without migrating) is counted the old way.
"""

from __future__ import annotations

import time

from memory_core.index import fts

COMMON = 2048  # postings read at most to call a word rare and know its exact frequency
DRIFT = 20     # a kept frequency is used while the scope changed by at most df / DRIFT
ALL = "*"      # the scope of every source

# One statement, with no " (" or ";" (a FIX line is one command, then its explanation): the kept counts recounted from the rows, a source left
# with no rows set to 0, and every change counter moved past any kept frequency's bound, so
# each is counted again before it is used.
RECOUNT_SQL = (
    "INSERT INTO chunk_counts(source, n, changes) SELECT source, n, 0 FROM"
    "(SELECT source, count(*) AS n FROM chunks GROUP BY source UNION ALL "
    "SELECT source, 0 FROM chunk_counts WHERE source NOT IN(SELECT source FROM chunks)) WHERE true "
    "ON CONFLICT(source) DO UPDATE SET n = excluded.n, changes = changes + 1000000000000")


def scope_key(sources) -> str:
    """The term_df scope of `sources` (None or empty: every source)."""
    return ",".join(sorted(set(sources))) if sources else ALL


def _kept(conn, column: str, sources) -> int:
    """sum(`column`) of chunk_counts over `sources` (every source when empty)."""
    if not sources:
        row = conn.execute(f"SELECT sum({column}) FROM chunk_counts").fetchone()
    else:
        marks = ",".join("?" * len(sources))
        row = conn.execute(f"SELECT sum({column}) FROM chunk_counts WHERE source IN ({marks})",
                           tuple(sources)).fetchone()
    return int(row[0] or 0)


def chunk_count(conn, sources=None) -> int:
    """Chunks in the store, or from `sources`: a read of the kept counts."""
    try:
        return _kept(conn, "n", sources)
    except conn.Error:  # a store not migrated here (read-only, older schema): count it
        return fts.chunk_count(conn, sources)


def counts_by_source(conn) -> list[tuple[str, int]]:
    """(source, chunks) for every source holding chunks, by name: the kept counts."""
    try:
        return [(s, int(n)) for s, n in conn.execute(
            "SELECT source, n FROM chunk_counts WHERE n > 0 ORDER BY source")]
    except conn.Error:
        return [(s, int(n)) for s, n in conn.execute(
            "SELECT source, count(*) FROM chunks GROUP BY source ORDER BY source")]


def _changes(conn, sources) -> int | None:
    """The change counter of `sources`; None on a store without kept counts."""
    try:
        return _kept(conn, "changes", sources)
    except conn.Error:
        return None


def _capped(conn, query: str, sources) -> tuple[int, int]:
    """(matches among the first COMMON postings, those from `sources`); the first below
    COMMON means both are exact. At most COMMON rowid lookups into chunks."""
    if not sources:
        (n,) = conn.execute("SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? "
                            "LIMIT ?)", (query, COMMON)).fetchone()
        return n, n
    marks = ",".join("?" * len(sources))
    # NOT INDEXED: each of the (at most COMMON) matching ids is a rowid lookup, never a scan of
    # the sources' index entries (linear in the curated corpus)
    n, mine = conn.execute(
        f"SELECT count(*), ifnull(sum(source IN ({marks})), 0) FROM chunks NOT INDEXED WHERE id IN "
        "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
        (*sources, query, COMMON)).fetchone()
    return n, mine


def matches_upto(conn, token: str, cap: int) -> int:
    """How many chunks hold `token`, counting no further than `cap` postings."""
    query = fts.match_query([token])
    if not query:
        return 0
    (n,) = conn.execute("SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? "
                        "LIMIT ?)", (query, cap)).fetchone()
    return n


def joint_freq(conn, tokens, sources=None) -> int | None:
    """How many chunks from `sources` (None: every source) hold every one of `tokens`: one
    MATCH of the words joined by AND, reading at most COMMON postings of the result (as
    `doc_freqs` does for one word). None when COMMON or more chunks hold them all (then only
    "at least that many" is known), 0 for no usable token."""
    query = fts.match_query(list(tokens), "AND")
    if not query:
        return 0
    n, mine = _capped(conn, query, sources)
    return mine if n < COMMON else None


def fresh(df: int, then: int, now: int) -> bool:
    """A frequency `df` counted at change counter `then` still holds at `now` (within 1/DRIFT)."""
    return 0 <= now - then <= df // DRIFT


def doc_freqs(conn, tokens, sources=None, overall: dict | None = None) -> dict[str, int]:
    """Each token's document frequency over `sources` (None: every source): exact for a word
    in fewer than COMMON chunks, kept within 1/DRIFT for a common one (module docstring).
    A common word counted here is kept for the next prompt when the store takes the write at
    once; it never waits for the lock. `overall`, when given, gets each token's frequency in
    the whole index capped at COMMON (what a full-text query on it would read, up to COMMON)."""
    scope = scope_key(sources)
    now = _changes(conn, sources)
    kept: dict[str, tuple[int, int]] = {}
    if now is not None and tokens:
        marks = ",".join("?" * len(tokens))
        kept = {t: (df, ch) for t, df, ch in conn.execute(
            f"SELECT term, df, changes FROM term_df WHERE scope = ? AND term IN ({marks})",
            (scope, *tokens))}
    out: dict[str, int] = {}
    counted: list[tuple[str, int]] = []
    for tok in tokens:
        if tok in out:
            continue
        hit = kept.get(tok)
        if hit is not None and fresh(hit[0], hit[1], now):
            out[tok] = hit[0]
            if overall is not None:
                overall[tok] = COMMON  # kept only once counted common in the whole index
            continue
        query = fts.match_query([tok])
        if not query:
            out[tok] = 0
            if overall is not None:
                overall[tok] = 0
            continue
        n, mine = _capped(conn, query, sources)
        if overall is not None:
            overall[tok] = n
        if n < COMMON:
            out[tok] = mine
            continue
        out[tok] = fts.doc_freq(conn, tok, sources)  # common: the O(df) count, then kept
        counted.append((tok, out[tok]))
    if counted and now is not None:
        _keep(conn, scope, counted, now)
    return out


def _keep(conn, scope: str, counted, changes: int) -> None:
    """Store common words' counts without waiting: a held lock or a read-only store skips it
    (the next prompt counts again), and never fails the prompt."""
    if conn.in_transaction:
        return
    now_ns = time.time_ns()
    try:
        (timeout,) = conn.execute("PRAGMA busy_timeout").fetchone()
        conn.execute("PRAGMA busy_timeout = 0")
    except conn.Error:
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR REPLACE INTO term_df(scope, term, df, changes, at_ns) "
                         "VALUES (?, ?, ?, ?, ?)",
                         [(scope, t, df, changes, now_ns) for t, df in counted])
        conn.execute("COMMIT")
    except conn.Error:
        try:
            conn.execute("ROLLBACK")
        except conn.Error:
            pass
    finally:
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout)}")
        except conn.Error:
            pass


def refresh(conn, budget_s: float = 2.0) -> int:
    """Re-count kept frequencies the writes since made stale, oldest first, within `budget_s`
    (an ingest calls this after it commits, so the next prompt finds them fresh). Returns how
    many were re-counted."""
    try:
        rows = conn.execute("SELECT scope, term, df, changes FROM term_df ORDER BY at_ns").fetchall()
    except conn.Error:
        return 0
    deadline = time.monotonic() + budget_s
    now_by_scope: dict[str, int | None] = {}
    done = 0
    from memory_core.store.tx import write

    for scope, term, df, then in rows:
        if time.monotonic() > deadline:
            break
        sources = None if scope == ALL else tuple(scope.split(","))
        if scope not in now_by_scope:
            now_by_scope[scope] = _changes(conn, sources)
        now = now_by_scope[scope]
        if now is None or fresh(df, then, now):
            continue
        query = fts.match_query([term])
        common = bool(query) and _capped(conn, query, sources)[0] >= COMMON
        count = fts.doc_freq(conn, term, sources) if common else 0
        with write(conn):
            if common:
                conn.execute("INSERT OR REPLACE INTO term_df(scope, term, df, changes, at_ns) "
                             "VALUES (?, ?, ?, ?, ?)", (scope, term, count, now, time.time_ns()))
            else:  # no longer common: counted exactly on the prompt path from now on
                conn.execute("DELETE FROM term_df WHERE scope = ? AND term = ?", (scope, term))
        done += 1
    return done
