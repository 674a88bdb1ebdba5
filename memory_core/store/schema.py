"""Numbered schema migrations. Append only: a committed migration is never edited.

The schema version is `PRAGMA user_version`. An old database opens with new code: every
migration above its version runs in one BEGIN IMMEDIATE transaction. A database newer than
this code is refused rather than guessed at.

The vector index (`chunks_vec`, sqlite-vec) is not created here: its width comes from
config and the extension may be missing; see `memory_core.index.vectors`. The plain table of
exact vectors and its maintained count are (6).
"""

from __future__ import annotations

from memory_core.errors import StoreError

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial store", """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- memory: what ingesters produce and search reads
CREATE TABLE chunks (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,      -- docs | memory | ledger | transcript | git
    path          TEXT NOT NULL,      -- project-relative where possible
    line_start    INTEGER,
    line_end      INTEGER,
    kind          TEXT,               -- heading, memory type, role, commit
    title         TEXT,
    content       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    signal_weight REAL NOT NULL DEFAULT 10,
    attrs         TEXT,               -- JSON object
    created_ns    INTEGER NOT NULL
);
CREATE INDEX chunks_by_path ON chunks(source, path);
CREATE UNIQUE INDEX chunks_dedup ON chunks(source, path, content_hash, ifnull(line_start, -1));

CREATE VIRTUAL TABLE chunks_fts USING fts5(
    title, content, content='chunks', content_rowid='id', tokenize='porter unicode61'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, content) VALUES (new.id, new.title, new.content);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, content)
    VALUES ('delete', old.id, old.title, old.content);
END;
CREATE TRIGGER chunks_au AFTER UPDATE OF title, content ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, content)
    VALUES ('delete', old.id, old.title, old.content);
    INSERT INTO chunks_fts(rowid, title, content) VALUES (new.id, new.title, new.content);
END;

-- ingest: one watermark per (source, file); one log row per failure or run
CREATE TABLE watermarks (
    source     TEXT NOT NULL,
    path       TEXT NOT NULL,
    mtime_ns   INTEGER,
    size       INTEGER,
    offset     INTEGER,               -- byte offset for append-only files
    state      TEXT,                  -- JSON, source-specific
    updated_ns INTEGER NOT NULL,
    PRIMARY KEY (source, path)
);
CREATE TABLE ingest_log (
    id      INTEGER PRIMARY KEY,
    ts_ns   INTEGER NOT NULL,
    source  TEXT NOT NULL,
    path    TEXT,
    outcome TEXT NOT NULL,            -- ok | error | budget
    reason  TEXT,
    detail  TEXT,
    chunks  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX ingest_log_by_ts ON ingest_log(ts_ns);

-- reliability: a heartbeat row per hook invocation, written before work
CREATE TABLE heartbeats (
    id         INTEGER PRIMARY KEY,
    hook       TEXT NOT NULL,         -- session-start | prompt | ... | gate
    session_id TEXT,
    pid        INTEGER,
    trace_id   TEXT,
    started_ns INTEGER NOT NULL,
    ended_ns   INTEGER,               -- NULL while running (or killed)
    outcome    TEXT,                  -- NULL while running; ok | error | killed
    reason     TEXT,                  -- failure family
    detail     TEXT
);
CREATE INDEX heartbeats_by_hook ON heartbeats(hook, started_ns);
CREATE INDEX heartbeats_open ON heartbeats(started_ns) WHERE outcome IS NULL;
CREATE INDEX heartbeats_by_started ON heartbeats(started_ns);

-- rollups kept current on write, so a scrape never scans raw rows. Counters and
-- histogram parts (name_bucket with an "le" label, name_sum, name_count) accumulate;
-- gauges are set. labels is canonical JSON (sorted keys).
CREATE TABLE rollups (
    metric TEXT NOT NULL,
    labels TEXT NOT NULL,
    value  REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (metric, labels)
) WITHOUT ROWID;

-- injection: a decision row for every prompt (the denominator)
CREATE TABLE decisions (
    id            INTEGER PRIMARY KEY,
    ts_ns         INTEGER NOT NULL,
    hook          TEXT NOT NULL,
    session_id    TEXT,
    prompt_id     TEXT,
    trace_id      TEXT,
    prompt_hash   TEXT,
    prompt_len    INTEGER,
    outcome       TEXT NOT NULL,      -- no_intent | system_turn | below_relevance | capped | injected | suppressed_ablation
    intent        TEXT,
    retrieval_ms  REAL,
    detail        TEXT                -- JSON: the gate arithmetic
);
CREATE INDEX decisions_by_ts ON decisions(ts_ns);
CREATE INDEX decisions_by_session ON decisions(session_id, ts_ns);

-- per-session delivery caps and dedup
CREATE TABLE deliveries (
    session_id  TEXT NOT NULL,
    key         TEXT NOT NULL,        -- thread:<id> | dnr | stale | chunk:<id> | cue:<id>
    count       INTEGER NOT NULL DEFAULT 0,
    first_ns    INTEGER NOT NULL,
    last_ns     INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
);

-- telemetry outbox: spans recorded by short-lived processes, exported later
CREATE TABLE spans (
    id             INTEGER PRIMARY KEY,
    trace_id       TEXT NOT NULL,
    span_id        TEXT NOT NULL,
    parent_span_id TEXT,
    name           TEXT NOT NULL,
    kind           TEXT NOT NULL DEFAULT 'internal',
    start_ns       INTEGER NOT NULL,
    end_ns         INTEGER NOT NULL,
    status_code    TEXT NOT NULL DEFAULT 'unset',   -- unset | ok | error
    status_message TEXT,
    attributes     TEXT,                            -- JSON object
    events         TEXT                             -- JSON list
);

-- degradations: logged once per process and reason
CREATE TABLE degradations (
    id        INTEGER PRIMARY KEY,
    ts_ns     INTEGER NOT NULL,
    component TEXT NOT NULL,
    reason    TEXT NOT NULL,
    detail    TEXT,
    pid       INTEGER
);
CREATE INDEX degradations_by_ts ON degradations(ts_ns);

-- the gate: one row per run, one per check
CREATE TABLE gate_runs (
    id          INTEGER PRIMARY KEY,
    ts_ns       INTEGER NOT NULL,
    session_id  TEXT,
    total       INTEGER NOT NULL,
    green       INTEGER NOT NULL,
    red         INTEGER NOT NULL,
    verdict     TEXT NOT NULL,        -- green | red
    duration_ms REAL
);
CREATE TABLE gate_checks (
    run_id      INTEGER NOT NULL references gate_runs(id),
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,        -- green | note | red
    state       TEXT,
    detail      TEXT,
    fix         TEXT,
    duration_ms REAL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE novelty (
    id          INTEGER PRIMARY KEY,
    ts_ns       INTEGER NOT NULL,
    session_id  TEXT,
    render_hash TEXT NOT NULL,
    corpus_sig  TEXT NOT NULL
);

-- the alert budget: one row per decision
CREATE TABLE alert_decisions (
    id          INTEGER PRIMARY KEY,
    ts_ns       INTEGER NOT NULL,
    route       TEXT NOT NULL,
    alertname   TEXT NOT NULL,
    fingerprint TEXT,
    severity    TEXT,
    status      TEXT,                 -- firing | resolved
    decision    TEXT NOT NULL,        -- paged | folded | deduped | noted
    detail      TEXT
);
CREATE INDEX alert_decisions_by_route ON alert_decisions(route, ts_ns);
"""),
    (2, "capture: session boundaries, the worker lease, candidates awaiting triage", """
-- one row per SessionEnd: the transcript bytes the session wrote, captured by a detached
-- worker (or the next SessionStart / `memhealth ingest` when the worker did not finish)
CREATE TABLE capture_work (
    id           INTEGER PRIMARY KEY,
    session_id   TEXT,
    transcript   TEXT NOT NULL,       -- absolute path
    start_offset INTEGER NOT NULL,    -- the capture watermark when the session ended
    end_offset   INTEGER NOT NULL,    -- the file size when the session ended
    created_ns   INTEGER NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending',   -- pending | done | failed
    attempts     INTEGER NOT NULL DEFAULT 0,
    done_ns      INTEGER,
    detail       TEXT
);
CREATE INDEX capture_work_pending ON capture_work(created_ns) WHERE status = 'pending';

-- leases: one holder at a time per name (pid + expiry; a dead pid or a passed expiry frees it)
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    pid        INTEGER NOT NULL,
    token      TEXT NOT NULL,
    expires_ns INTEGER NOT NULL
);

-- candidates proposed by extraction; triage confirms (a memory file), rejects (kept, so the
-- statement is never proposed again), retitles or merges them
CREATE TABLE capture_candidates (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,        -- decision | dead_end | correction
    statement   TEXT NOT NULL,
    title       TEXT NOT NULL,
    norm        TEXT NOT NULL,        -- normalized statement: the never-again key
    transcript  TEXT NOT NULL,
    line        INTEGER NOT NULL,
    session_id  TEXT,
    ts          TEXT,
    role        TEXT,                 -- human | assistant
    origin      TEXT NOT NULL DEFAULT 'pattern',   -- pattern | llm (which pass proposed it)
    state       TEXT NOT NULL DEFAULT 'pending',   -- pending | confirmed | rejected | merged
    merged_into INTEGER,
    record_path TEXT,                 -- the memory file a confirmed record lives in
    created_ns  INTEGER NOT NULL,
    decided_ns  INTEGER
);
CREATE UNIQUE INDEX capture_candidates_origin ON capture_candidates(transcript, line, norm);
CREATE INDEX capture_candidates_norm ON capture_candidates(norm);
CREATE INDEX capture_candidates_state ON capture_candidates(state, id);
"""),
    (3, "cue-anchored delivery", """
-- one row per memory file: what a cue delivers, compiled at ingest (the hook never reads files)
CREATE TABLE memory_items (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,  -- project-relative memory file
    line        INTEGER,               -- where the body starts (provenance)
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL,         -- gotcha | invariant | decision | feedback | ...
    scope       TEXT,
    pinned      INTEGER NOT NULL DEFAULT 0,
    expires_ns  INTEGER,               -- from expires: or recorded + ttl_days; NULL = never
    recorded_ns INTEGER NOT NULL,
    body        TEXT NOT NULL,         -- the delivered text, clipped at compile time
    errors      TEXT,                  -- JSON list of [key, message] for malformed frontmatter
    source_hash TEXT NOT NULL,         -- the file's ingest hash: recompile only on change
    updated_ns  INTEGER NOT NULL
);
CREATE INDEX memory_items_pinned ON memory_items(pinned) WHERE pinned = 1;

-- triggers, indexed so a PreToolUse lookup is a few B-tree probes, never a scan:
-- path globs by one literal key (basename b:, extension e:, directory prefix p:, or * for
-- a glob with no literal part) and by their literal leading directory; symbols by token
CREATE TABLE cues (
    id        INTEGER PRIMARY KEY,
    item_id   INTEGER NOT NULL,
    trigger   TEXT NOT NULL,           -- path | symbol | event | semantic
    key       TEXT NOT NULL,
    prefix    TEXT,                    -- path: the glob's literal leading directory
    pattern   TEXT NOT NULL,           -- as written in the frontmatter
    compiled  TEXT                     -- path: anchored regex; symbol: regex when not a bare token
);
CREATE INDEX cues_by_key ON cues(trigger, key);
CREATE INDEX cues_by_prefix ON cues(trigger, prefix) WHERE prefix IS NOT NULL;
CREATE INDEX cues_by_item ON cues(item_id);

-- delivery epochs: PreCompact (and a clear/compact SessionStart) starts a new one, re-arming
-- every cue of the session
CREATE TABLE cue_sessions (
    session_id TEXT PRIMARY KEY,
    epoch      INTEGER NOT NULL DEFAULT 0,
    pending    INTEGER NOT NULL DEFAULT 0,  -- a PreCompact started this epoch; its SessionStart has not run
    updated_ns INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE cue_deliveries (
    session_id TEXT NOT NULL,
    item_id    INTEGER NOT NULL,
    epoch      INTEGER NOT NULL,
    trigger    TEXT NOT NULL,
    ts_ns      INTEGER NOT NULL,
    PRIMARY KEY (session_id, item_id, epoch)
) WITHOUT ROWID;
CREATE INDEX cue_deliveries_by_ts ON cue_deliveries(ts_ns);

-- a row per evaluation: fired, or skipped with a reason
CREATE TABLE cue_audit (
    id         INTEGER PRIMARY KEY,
    ts_ns      INTEGER NOT NULL,
    session_id TEXT,
    trace_id   TEXT,                   -- the hook invocation (heartbeats.trace_id)
    event      TEXT NOT NULL,          -- session-start | prompt | pre-tool | post-tool | stop
    trigger    TEXT NOT NULL,          -- path | symbol | pinned | event | semantic
    item_id    INTEGER,
    outcome    TEXT NOT NULL,          -- fired | skipped
    reason     TEXT,                   -- no_match | deduped | expired | over_budget | ablation | inactive
    epoch      INTEGER,
    detail     TEXT                    -- what was touched, the source of a session start
);
CREATE INDEX cue_audit_by_ts ON cue_audit(ts_ns);
CREATE INDEX cue_audit_by_session ON cue_audit(session_id, ts_ns);
CREATE INDEX cue_audit_by_trace ON cue_audit(trace_id);

-- what compaction costs: files read per session and epoch (PostToolUse Read)
CREATE TABLE file_reads (
    session_id   TEXT NOT NULL,
    path         TEXT NOT NULL,
    epoch        INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,
    content_hash TEXT,
    reread       INTEGER NOT NULL DEFAULT 0,  -- read before a compaction boundary of this session
    same_content INTEGER NOT NULL DEFAULT 0,  -- ... and the content had not changed since
    ts_ns        INTEGER NOT NULL,
    PRIMARY KEY (session_id, path, epoch)
) WITHOUT ROWID;
CREATE INDEX file_reads_by_ts ON file_reads(ts_ns);

-- when cue evaluation began in this store: tool calls before it were never evaluated
INSERT OR REPLACE INTO meta(key, value)
VALUES ('cues.since_ns', CAST(CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER) AS TEXT));
"""),
    (4, "rollup exemplars: the latest trace id per histogram bucket", """
-- one row per histogram bucket rollup (metric is name_bucket, labels as in rollups, with
-- "le"): the latest observation's trace id, value and time, served as the OpenMetrics
-- exemplar of that bucket. Written in the transaction that writes the observation.
CREATE TABLE rollup_exemplars (
    metric   TEXT NOT NULL,
    labels   TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    value    REAL NOT NULL,
    ts_ns    INTEGER NOT NULL,
    PRIMARY KEY (metric, labels)
) WITHOUT ROWID;
"""),
    (5, "chunk counts kept on write, and a cache of common words' document frequencies", """
-- chunks per source, kept by triggers in the transaction that writes the chunk, so nothing
-- on the hook path or the gate counts the store (a count(*) was 26 ms at 1M chunks).
-- `changes` only grows: every insert, delete and content update adds one, and each moves
-- any word's document frequency by at most one (term_df uses that bound).
CREATE TABLE chunk_counts (
    source  TEXT PRIMARY KEY,
    n       INTEGER NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO chunk_counts(source, n, changes) SELECT source, count(*), count(*) FROM chunks GROUP BY source;
CREATE TRIGGER chunk_counts_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_counts(source, n, changes) VALUES (new.source, 1, 1)
    ON CONFLICT(source) DO UPDATE SET n = n + 1, changes = changes + 1;
END;
CREATE TRIGGER chunk_counts_ad AFTER DELETE ON chunks BEGIN
    UPDATE chunk_counts SET n = n - 1, changes = changes + 1 WHERE source = old.source;
END;
CREATE TRIGGER chunk_counts_au AFTER UPDATE OF source, title, content ON chunks BEGIN
    UPDATE chunk_counts SET n = n - 1, changes = changes + 1 WHERE source = old.source;
    INSERT INTO chunk_counts(source, n, changes) VALUES (new.source, 1, 1)
    ON CONFLICT(source) DO UPDATE SET n = n + 1, changes = changes + 1;
END;

-- the entry leg's inventory (memory_core.delivery.entries.load: subsystems and dead ends, tens of
-- rows) read through an index holding only them, not by scanning every memory and ledger
-- chunk. The query repeats this WHERE word for word, so SQLite can use the partial index.
CREATE INDEX chunks_entries ON chunks(source, kind) WHERE kind IN ('dead-end', 'dead_end', 'subsystem');

-- document frequencies of common words (memory_core.index.docfreq): a word in at least
-- docfreq.COMMON chunks costs O(its frequency) to count; its count is kept here with the
-- scope's `changes` when counted, and re-counted once the scope has changed by more than a
-- small fraction of it. scope: '*' (every source) or the sorted curated sources, comma-joined.
CREATE TABLE term_df (
    scope    TEXT NOT NULL,
    term     TEXT NOT NULL,
    df       INTEGER NOT NULL,
    changes  INTEGER NOT NULL,
    at_ns    INTEGER NOT NULL,
    PRIMARY KEY (scope, term)
) WITHOUT ROWID;
"""),
    (6, "vector count kept on write", """
-- the exact float32 vectors (memory_core.index.vectors keeps the bit index `chunks_vec` beside them
-- when sqlite-vec loads). A plain table: created here, so the count's triggers have a table
-- in every store, with or without the extension; empty until something is embedded.
CREATE TABLE IF NOT EXISTS chunk_vectors (
    chunk_id  INTEGER PRIMARY KEY,
    embedding BLOB NOT NULL
);
-- how many rows chunk_vectors holds, kept by triggers in the transaction that writes them, so
-- the gate's vector checks and knn's exact-or-quantized choice never count the store (a
-- count(*) over the vectors reads every row: ~40 ms at 100k). Writers upsert rather than
-- INSERT OR REPLACE: a REPLACE deletes without firing the delete trigger.
CREATE TABLE vector_counts (
    name TEXT PRIMARY KEY,
    n    INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO vector_counts(name, n) SELECT 'chunk_vectors', count(*) FROM chunk_vectors;
CREATE TRIGGER chunk_vectors_count_ai AFTER INSERT ON chunk_vectors BEGIN
    UPDATE vector_counts SET n = n + 1 WHERE name = 'chunk_vectors';
END;
CREATE TRIGGER chunk_vectors_count_ad AFTER DELETE ON chunk_vectors BEGIN
    UPDATE vector_counts SET n = n - 1 WHERE name = 'chunk_vectors';
END;
"""),
    # -- the transcript as a witness (probes.witness) -----------------------------------------
    (7, "the transcript as a witness: the id of the event a hook ran for, findings, offsets", """
-- the id Claude Code gave the event a hook ran for: tool_use_id (pre-tool, post-tool),
-- prompt_id (prompt); NULL for other events and for rows written before this migration
ALTER TABLE heartbeats ADD COLUMN event_ref TEXT;
CREATE INDEX heartbeats_by_event_ref ON heartbeats(event_ref) WHERE event_ref IS NOT NULL;
-- what a session's transcript showed that no heartbeat recorded (probes.witness): an event
-- that fired whose memhealth hook failed before it ran (kind 'failed', with the exit code
-- and stderr Claude Code kept) or never ran at all (kind 'not_run'); one row per session,
-- event, kind and failure per reconciliation
CREATE TABLE witness_findings (
    id          INTEGER PRIMARY KEY,
    ts_ns       INTEGER NOT NULL,      -- when the witness recorded it
    session_id  TEXT,
    event       TEXT NOT NULL,         -- Claude Code's name: PreToolUse, UserPromptSubmit, ...
    kind        TEXT NOT NULL,         -- failed | not_run
    n           INTEGER NOT NULL,      -- how many events of this session
    exit_code   INTEGER,
    stderr      TEXT,                  -- the first line Claude Code kept, clipped
    first_ns    INTEGER,               -- transcript timestamps of the first and last event
    last_ns     INTEGER,
    transcript  TEXT,
    detail      TEXT                   -- tool names, the command that failed
);
CREATE INDEX witness_findings_by_ts ON witness_findings(ts_ns);
-- how far the witness has read each transcript (complete lines only, as the transcripts
-- ingester's watermark), and the events still waiting for their hook's row
CREATE TABLE witness_marks (
    path        TEXT PRIMARY KEY,
    ino         INTEGER,
    head        TEXT,
    offset      INTEGER NOT NULL,
    state       TEXT,
    updated_ns  INTEGER NOT NULL
) WITHOUT ROWID;
"""),
    # -- end of the transcript witness ------------------------------------------------------
    # -- session cost (what memory costs a session) -------------------------------------------
    (8, "what memory put into Claude's context: one row per block a hook emitted", """
-- one row per block of context a hook invocation emitted (the verdict, the pinned items,
-- the session summary, recalled memory, cue deliveries), in characters as emitted: after
-- cleaning and the 10,000-character cap. heartbeats.trace_id joins it to the invocation.
CREATE TABLE context_blocks (
    id         INTEGER PRIMARY KEY,
    ts_ns      INTEGER NOT NULL,
    session_id TEXT,
    hook       TEXT NOT NULL,
    trace_id   TEXT,
    kind       TEXT NOT NULL,          -- verdict | pinned | summary | recall | cue
    chars      INTEGER NOT NULL
);
CREATE INDEX context_blocks_by_session ON context_blocks(session_id, ts_ns);
CREATE INDEX context_blocks_by_ts ON context_blocks(ts_ns);
"""),
    (9, "the code index: files by git blob, their definitions, the files that mention each name", """
-- memory_core.ingest.code writes these from the tree at HEAD (the commit is meta code.commit);
-- memory_core.index.code reads them. A file is parsed again only when its blob changes.
-- status: ok | failed (error says why; ingest went on) | skipped (too large, generated).
-- refs_blob: the blob whose mentions code_refs holds for this path (NULL: not counted yet).
CREATE TABLE code_files (
    path       TEXT PRIMARY KEY,
    blob       TEXT NOT NULL,
    lang       TEXT,
    status     TEXT NOT NULL,
    error      TEXT,
    n_defs     INTEGER NOT NULL DEFAULT 0,
    indexed_ns INTEGER NOT NULL,
    refs_blob  TEXT
) WITHOUT ROWID;
-- kind: module | package | class | function | method | type | interface | trait | struct | enum.
-- component: what a reader means by a subsystem (docs/concepts/code-index.md); rank: how
-- many other files mention the name (code_refs). words: the name split into lower-case words
-- (GZipMiddleware -> "gzip middleware"), for matching a prompt's words.
CREATE TABLE code_defs (
    id         INTEGER PRIMARY KEY,
    path       TEXT NOT NULL,
    name       TEXT NOT NULL,
    qualname   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end   INTEGER NOT NULL,
    signature  TEXT,
    doc        TEXT,
    exported   INTEGER NOT NULL DEFAULT 0,
    component  INTEGER NOT NULL DEFAULT 0,
    rank       REAL NOT NULL DEFAULT 0,
    words      TEXT
);
CREATE INDEX code_defs_name ON code_defs(name);
CREATE INDEX code_defs_path ON code_defs(path, line_start);
CREATE INDEX code_defs_components ON code_defs(rank DESC) WHERE component = 1;
-- how many times each defined name occurs in each file (identifier tokens)
CREATE TABLE code_refs (
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    n    INTEGER NOT NULL,
    PRIMARY KEY (name, path)
) WITHOUT ROWID;
CREATE INDEX code_refs_path ON code_refs(path);
-- the names whose mentions code_refs holds in every counted file (a name defined for the
-- first time is searched for in the files that did not change)
CREATE TABLE code_names (
    name TEXT PRIMARY KEY
) WITHOUT ROWID;
-- the components' words and docs, for a prompt's words to find them without scanning
-- code_defs; kept by triggers in the transaction that writes the definition
CREATE VIRTUAL TABLE code_fts USING fts5(words, doc, tokenize='porter unicode61');
CREATE TRIGGER code_defs_fts_ai AFTER INSERT ON code_defs WHEN new.component = 1 BEGIN
    INSERT INTO code_fts(rowid, words, doc) VALUES (new.id, new.words, new.doc);
END;
CREATE TRIGGER code_defs_fts_ad AFTER DELETE ON code_defs WHEN old.component = 1 BEGIN
    DELETE FROM code_fts WHERE rowid = old.id;
END;
"""),
    (10, "the code's documented public functions, for a build prompt to find what exists", """
-- memory_core.delivery.exists reads this beside code_fts: a Go middleware (Compress,
-- Throttle) or a JavaScript helper (toFormData) is an exported, documented function, not a
-- component, and still what a prompt proposing to build it re-proposes. A function named as
-- its exported module counts as exported (`export default formDataToJSON;` in
-- formDataToJSON.js). Kept by triggers in the transaction that writes the definition (a
-- file's module row is written before its functions); methods are left out (their class
-- speaks).
CREATE VIRTUAL TABLE code_api_fts USING fts5(words, doc, tokenize='porter unicode61');
INSERT INTO code_api_fts(rowid, words, doc)
    SELECT id, words, doc FROM code_defs AS d
    WHERE component = 0 AND kind = 'function' AND coalesce(doc, '') != '' AND (exported = 1 OR EXISTS (
        SELECT 1 FROM code_defs m WHERE m.path = d.path AND m.kind = 'module' AND m.name = d.name
        AND m.exported = 1));
CREATE TRIGGER code_defs_api_ai AFTER INSERT ON code_defs
    WHEN new.component = 0 AND new.kind = 'function' AND coalesce(new.doc, '') != '' AND (new.exported = 1
        OR EXISTS (SELECT 1 FROM code_defs m WHERE m.path = new.path AND m.kind = 'module'
                   AND m.name = new.name AND m.exported = 1))
BEGIN
    INSERT INTO code_api_fts(rowid, words, doc) VALUES (new.id, new.words, new.doc);
END;
CREATE TRIGGER code_defs_api_ad AFTER DELETE ON code_defs WHEN old.component = 0 AND old.kind = 'function' BEGIN
    DELETE FROM code_api_fts WHERE rowid = old.id;
END;
"""),
    # -- fault-run fixes: a cue delivery counts once its text was written ---------------------
    (11, "cue deliveries confirmed once their output was written", """
-- a delivery row is a claim (pid of the hook that made it, confirmed 0) until that hook has
-- written its context to Claude Code; a claim whose process is gone was never delivered, so
-- the next touch delivers again. Rows from before this migration count as delivered.
ALTER TABLE cue_deliveries ADD COLUMN pid INTEGER;
ALTER TABLE cue_deliveries ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1;
"""),
    # -- end fault-run fixes -------------------------------------------------------------------
]

LATEST = MIGRATIONS[-1][0]


def ensure_schema(conn) -> int:
    """Bring `conn`'s database to LATEST; return the version it had before."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version == LATEST:
        return version
    if version > LATEST:
        raise StoreError(
            f"database schema v{version} is newer than this memhealth (v{LATEST}); upgrade memhealth"
        )
    if version == 0:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()  # another process may have won
        for number, _title, sql in MIGRATIONS:
            if number > version:
                for statement in _split(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:  # re-raised: whatever stopped the migration, nothing half-applied stays
        conn.execute("ROLLBACK")
        raise
    return version


def _split(sql: str) -> list[str]:
    """Split a migration into statements (executescript would COMMIT our transaction)."""
    from memory_core.store.db import sqlite3

    statements, buf = [], ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements
