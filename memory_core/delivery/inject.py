"""The injection cascade's entry point: the prompt hook calls `decide` once per prompt with
build, decision or investigation intent.

    result = decide(conn, prompt, "build", cfg, session_id, trace, root=project_root)
    result.outcome   # below_relevance | capped | injected | suppressed_ablation
    result.detail    # {"tokens": 7, "matched": 3, "idf_sum": 9.4, "threshold": 7.0, ...}

Silence is the default; every step records its arithmetic. The cascade lives in
memory_core.delivery, one module per concern:

- prompt: one reading of the prompt (tokens, stems, identifiers, clauses), computed once;
- entries: what an item is to the cascade (its block, attributes, name, words);
- naming: whether the prompt names an entry, or asks for a new member of its category;
- relevance: rarity over the store, the entry and lineage gates, BM25 retrieval;
- cascade: `decide`, the sequence of named steps;
- caps: per-session caps; claims: STALE-CLAIM; lineage: decision threads;
- blocks: the rendered text, each item framed with its provenance.

Retrieval here is the BM25 leg only: the prompt path must not wait on an embedding server
(no inline embedding call on the lineage path). Candidates come only from curated sources
(`injection.sources`: memory files, docs, ledgers by default): raw transcripts would echo the
session's own words back at it. Relevance needs rare words shared on word boundaries: at
least `min_matches` prompt tokens found in the item, their summed IDF at least
`idf_sum_threshold`, and one of them at least `distinctive_idf`. IDF is counted over those
curated sources too once they hold 50 chunks: each re-proposal of a dead end is ingested as
a transcript chunk, and counted there it would make the dead end's words commoner exactly as
it recurs (fewer curated chunks: over the whole index). Below 50 chunks in all IDF says
little, so only the overlap count applies (as in the paper's reference harness).

What may be DO-NOT-REBUILD or DEAD-END is decided by the item, not the intent
(`entries.entry_block`): subsystem inventory entries (memory of kind `subsystem`) are
DO-NOT-REBUILD, dead-end records with `status: confirmed` are DEAD-END ("was tried and
ruled out", the statement once, where it was said), on build or decision intent; a
confirmed decision stays lineage. Their leg runs first and scores every entry
directly (an inventory is tens of entries): an entry is relevant when the prompt names it
(`relevance.entry_relevance`) or shares rare words with it, and one entry — the best named —
is rendered, with where it lives. A doc or changelog section is never the subsystem: on
build intent it speaks only as evidence, a "mentioned in" line under the entry's block; on
decide or investigate intent it may still be a lineage block. An index file (kind `index`)
is never offered. Thresholds and rules were set on real text (tests/fixtures/realcorpus,
benchmarks/bench_dnr.py), not only on synthetic corpora.

Two readings refine naming (memory_core.delivery.naming): a code identifier the entry lists
(`verify=`, `follow_redirects`, `DigestAuth`), written in the prompt or spelled in words,
names it; a prompt asking for a new member of an entry's category ("a request-id
middleware", "a custom middleware") is new work, and then only a written identifier still
names an entry (`new_instance`).

What the tree refutes is never DO-NOT-REBUILD (`claims.stale_claim`): given the project
root, each item kept is checked with one os.stat per path it names — an inventory entry
whose `path:` is gone, a confirmed record whose file changed after its `recorded:` date —
and delivered as a STALE-CLAIM block naming what changed.
"""

from __future__ import annotations

from memory_core.delivery.cascade import InjectResult, decide

__all__ = ["InjectResult", "decide"]
