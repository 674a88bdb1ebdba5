"""The single definition of every span name and span attribute memhealth records.

    for a in SPAN_ATTRIBUTES.values(): print(a.name, a.type, a.meaning)
    SPANS["memhealth.hook {hook}"]

Code writes attribute names as string literals (the hook path imports nothing for them);
`tests/telemetry/test_span_catalog.py` reads every literal of that shape in the source and fails on
one that is not here, and on an entry here that no code writes. The reference page
`docs/reference/spans.md` is generated from this module. Standard library only.

Names follow the OpenTelemetry semantic conventions where one exists (`db.*`, `gen_ai.*`,
`server.*`, `service.*`, `session.id`, `error.type`); memhealth's own live under
`memhealth.*`. Prompt text is never an attribute unless `[injection].capture_content` is
on (CONTENT below).
"""

from __future__ import annotations


class SpanAttribute:
    """One attribute: name, value type, what it says, and whether it carries user content."""

    __slots__ = ("name", "type", "meaning", "content")

    def __init__(self, name: str, type: str, meaning: str, content: bool = False):
        self.name = name
        self.type = type
        self.meaning = meaning
        self.content = content

    def __repr__(self) -> str:
        return f"SpanAttribute({self.name!r})"


def _a(name, type, meaning, content=False):
    return SpanAttribute(name, type, meaning, content)


# Span names, with {placeholders} for the part that varies.
SPANS: dict[str, str] = {
    "memhealth.hook {hook}": "one hook invocation, the root of its trace (hook: session-start, prompt, ...)",
    "memhealth.gate": "one gate run, the root of its trace when run alone",
    "probe {check}": "one gate check inside a gate run",
    "memhealth {command}": "one CLI command that touches the store (ingest, search, embed, gate, ...)",
    "ingest": "one ingest run over its sources",
    "ingest {source}": "one source inside an ingest run",
    "ingest vectors": "the vector phase of an ingest run, after every source's text",
    "capture": "the capture worker's extraction over one transcript",
    "cue.evaluate": "cue evaluation inside a tool or prompt hook",
    "inject.system_turn": "the machine-turn exemption of the injection cascade",
    "inject.intent": "the intent step of the cascade",
    "inject.relevance": "the rare-word relevance step of the cascade",
    "inject.session_cap": "the per-session caps of the cascade",
    "inject.stale_claim": "the check of what memory claims against the tree",
    "inject.meaning": "agreement in meaning: the prompt's cosine to each block about to fire",
    "inject.meaning_rescue": "the opt-in rescue of a lexical miss by meaning",
    # ---- what exists, said from the code (memory_core.delivery.exists) ----
    "inject.code": "the code leg of the cascade: which indexed component a build prompt re-proposes",
    # ---- end code leg ----
    "memory.search": "a hybrid search (BM25 and vectors, fused)",
    "{operation} {collection}": "a store query (an OTel DB client span: SELECT chunks_fts, ...)",
    "embeddings {model}": "one embedding request (an OTel GenAI client span)",
    "tools/call {tool}": "one MCP tool call served by `memhealth mcp`",
}

# Families whose last part is data (a source or a kind): the prefix is the name.
SPAN_ATTRIBUTE_PREFIXES: dict[str, str] = {
    "memhealth.ingest.": "per-source counts of an ingest run: memhealth.ingest.<field> of its report",
    "memhealth.capture.added.": "candidates a capture added, by kind: memhealth.capture.added.<kind>",
}

SPAN_ATTRIBUTE_LIST: tuple[SpanAttribute, ...] = (
    # -- OpenTelemetry semantic conventions --------------------------------------------------
    _a("session.id", "string", "Claude Code's session id"),
    _a("error.type", "string", "the failure's class when a span ends in error"),
    _a("db.system.name", "string", "always sqlite (DB client spans)"),
    _a("db.operation.name", "string", "SELECT, INSERT, ... (DB client spans)"),
    _a("db.collection.name", "string", "the table or FTS index queried"),
    _a("db.response.returned_rows", "int", "rows a store query returned"),
    _a("gen_ai.operation.name", "string", "embeddings, or execute_tool for an MCP call"),
    _a("gen_ai.provider.name", "string", "the embedding server's kind (ollama)"),
    _a("gen_ai.request.model", "string", "the embedding model asked for"),
    _a("gen_ai.embeddings.dimension.count", "int", "the width of the vectors returned"),
    _a("gen_ai.usage.input_tokens", "int", "tokens the embedding server reports it read"),
    _a("gen_ai.tool.name", "string", "the MCP tool called"),
    _a("server.address", "string", "the embedding server's host"),
    _a("server.port", "int", "the embedding server's port"),
    _a("service.name", "string", "resource: memhealth, or [telemetry].service_name"),
    _a("service.version", "string", "resource: memhealth's version"),
    _a("service.instance.id", "string", "resource: this machine's exporter identity (a UUID in the per-user state dir)"),
    # -- the hook and the prompt ---------------------------------------------------------------
    _a("memhealth.hook", "string", "the hook of the invocation (session-start, prompt, ...)"),
    _a("memhealth.project.id", "string", "resource: the project's store id"),
    _a("memhealth.hook.transport", "string", "how the hook was delivered: command, or http to serve"),
    _a("memhealth.transport.autostart", "string", "SessionStart's start of serve for the HTTP hooks: "
       "started, running, failed, or off"),
    _a("memhealth.transport.autostart_ms", "double", "how long that start took"),
    _a("memhealth.prompt.hash", "string", "a hash of the prompt, to join rows without its text"),
    _a("memhealth.prompt.length", "int", "the prompt's length in characters"),
    _a("memhealth.prompt.text", "string", "the prompt itself: only with [injection].capture_content",
       content=True),
    _a("memhealth.system_turn", "bool", "the prompt was a machine turn (exempt from injection)"),
    _a("memhealth.intent", "string", "the intent the prompt was read as (build, decide, ...)"),
    _a("memhealth.intent.match", "string", "the phrase that decided the intent"),
    _a("memhealth.neutralized", "string", "text in delivered memory neutralized at the emit point, by kind "
       "(kind=count, ...): instruction-like text, tool-call or harness markup"),
    _a("memhealth.ablation.arm", "string", "the ablation arm in force (ablated or baseline)"),
    _a("memhealth.deliveries.reset", "int", "cue deliveries re-armed by a compaction"),
    _a("memhealth.reread.path", "string", "the file a re-read cue asked for"),
    _a("memhealth.reread.bytes", "int", "bytes of that file delivered"),
    # -- retrieval and the cascade ---------------------------------------------------------------
    _a("memhealth.query.length", "int", "the search query's length in characters"),
    _a("memhealth.query.tokens", "int", "query words used for retrieval"),
    _a("memhealth.search.k", "int", "results asked for"),
    _a("memhealth.search.hits", "int", "results returned"),
    _a("memhealth.search.legs", "string", "the legs that answered (bm25, vector)"),
    _a("memhealth.search.degraded", "string", "why a leg was left out (timeout, unreachable, ...)"),
    _a("memhealth.relevance.passed", "bool", "the relevance gate let a hit through"),
    _a("memhealth.relevance.dnr_passed", "bool", "an inventory entry passed for DO-NOT-REBUILD"),
    _a("memhealth.relevance.inventory", "int", "inventory entries scored"),
    _a("memhealth.relevance.matched", "int", "distinctive words the prompt shares with the best hit"),
    _a("memhealth.relevance.idf_sum", "double", "the summed IDF of those words"),
    _a("memhealth.relevance.threshold", "double", "the IDF sum needed ([injection].idf_sum_threshold)"),
    _a("memhealth.relevance.max_idf", "double", "the rarest matched word's IDF"),
    _a("memhealth.relevance.max_prompt_idf", "double", "the rarest prompt word's IDF"),
    _a("memhealth.relevance.small_corpus", "bool", "the store is too small for IDF: overlap counts"),
    _a("memhealth.meaning.items", "int", "blocks the meaning gate was asked about"),
    _a("memhealth.meaning.embedded_items", "int", "of those, items embedded now (no stored vector)"),
    _a("memhealth.meaning.threshold", "double", "the cosine an item needs ([injection].meaning_threshold)"),
    _a("memhealth.meaning.kept", "int", "blocks whose item agrees with the prompt in meaning"),
    _a("memhealth.meaning.status", "string", "checked, rescued, or degraded (the lexical decision stands)"),
    _a("memhealth.meaning.reason", "string", "why the embedding call failed (timeout, unreachable, ...)"),
    _a("memhealth.cap.offered", "int", "blocks the caps were offered"),
    _a("memhealth.cap.kept", "int", "blocks the caps kept"),
    _a("memhealth.stale.checked", "int", "claims checked against the tree"),
    _a("memhealth.stale.found", "int", "claims the tree refutes"),
    # ---- the code leg (inject.code) ----
    _a("memhealth.code.candidates", "int", "code index definitions the prompt's words found"),
    _a("memhealth.code.matched", "bool", "a component of the code was named: a DO-NOT-REBUILD from the code"),
    # ---- end code leg ----
    # -- cues ----------------------------------------------------------------------------------
    _a("memhealth.cue.event", "string", "the event evaluated (pre-tool, prompt, session-start, ...)"),
    _a("memhealth.cue.trigger", "string", "the trigger that fired (path, symbol, pinned, ...)"),
    _a("memhealth.cue.outcome", "string", "fired, or why not (deduped, expired, ...)"),
    _a("memhealth.cue.fired", "int", "items delivered by this evaluation"),
    _a("memhealth.cue.count", "int", "cues evaluated"),
    _a("memhealth.cue.epoch", "int", "the compaction epoch deliveries are deduplicated within"),
    _a("memhealth.cues.items", "int", "items an MCP cues call listed"),
    _a("memhealth.memory.item_id", "int", "the memory item an MCP remember call wrote"),
    # -- ingest, embed, capture ------------------------------------------------------------------
    _a("memhealth.ingest.sources", "string", "the sources an ingest run read"),
    _a("memhealth.ingest.budget_s", "double", "the run's wall-clock budget"),
    _a("memhealth.ingest.budget_exhausted", "bool", "the budget ran out (run again to continue)"),
    _a("memhealth.ingest.chunks_added", "int", "chunks the run added"),
    _a("memhealth.ingest.errors", "int", "files or records the run could not read"),
    _a("memhealth.embed.inputs", "int", "texts in one embedding request"),
    _a("memhealth.embed.stored", "int", "vectors an embed run stored"),
    _a("memhealth.embed.refused", "int", "texts the server refused"),
    _a("memhealth.capture.work_id", "int", "the capture work row the worker leased"),
    _a("memhealth.capture.worker_pid", "int", "the worker's process id"),
    _a("memhealth.capture.resumed_pid", "int", "the dead worker whose lease this one took over"),
    _a("memhealth.capture.items_done", "int", "work items finished"),
    _a("memhealth.capture.pending_work", "int", "work items left"),
    _a("memhealth.capture.bytes_read", "int", "transcript bytes read"),
    _a("memhealth.capture.stopped", "string", "why the worker stopped early (budget, lock, ...)"),
    # -- the gate ------------------------------------------------------------------------------
    _a("memhealth.gate.total", "int", "checks run"),
    _a("memhealth.gate.red", "int", "checks RED"),
    _a("memhealth.check", "string", "the check of a probe span"),
    _a("memhealth.check.status", "string", "green, note or red"),
    _a("memhealth.check.state", "string", "the check's finer state (cold, wedged, ...)"),
    _a("memhealth.check.detail", "string", "what the check found, as the gate prints it"),
)
SPAN_ATTRIBUTES: dict[str, SpanAttribute] = {a.name: a for a in SPAN_ATTRIBUTE_LIST}
CONTENT = frozenset(a.name for a in SPAN_ATTRIBUTE_LIST if a.content)
