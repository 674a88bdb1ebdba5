"""The single definition of every metric memhealth exports.

    for m in METRICS: print(m.name, m.type, m.labels)
    CATALOG["memhealth_hook_duration_seconds"].buckets

The Prometheus collector, the OTel metric export, the dashboard/alert generator and the
tests read this module; nothing else spells a metric name. Standard library only: the hook
path imports it for histogram buckets and label vocabularies.
"""

from __future__ import annotations

HOOKS = ("session-start", "prompt", "pre-tool", "post-tool", "pre-compact", "stop", "session-end")
# Heartbeat writers: the hooks, the gate, which leaves its own heartbeat on every run, and the
# detached capture worker SessionEnd hands its work to (memhealth.capture_worker).
HEARTBEATS = HOOKS + ("gate", "capture")
HOOK_OUTCOMES = ("ok", "error", "killed")
INJECTION_OUTCOMES = ("no_intent", "system_turn", "below_relevance", "capped", "injected",
                      "suppressed_ablation", "error")  # error: the cascade could not decide (store down)
GATE_STATUS_VALUES = {"green": 0, "note": 1, "red": 2}
GATE_STATUSES = tuple(GATE_STATUS_VALUES)  # the enum series' closed `status` vocabulary
EMBEDDING_STATES = ("ok", "cold", "unreachable", "model_missing", "wedged", "dimension_mismatch",
                    "fallback_mismatch", "not_configured", "not_ollama", "malformed_reply",
                    "server_error")  # an error reply at once is not a wedged server
ALERT_DECISIONS = ("paged", "folded", "deduped", "noted")
OUTBOX_DROP_REASONS = ("retention", "max_rows", "malformed")
CAPTURE_KINDS = ("decision", "dead_end", "correction")  # memory_core.records.extract.KINDS
TRIAGE_DECISIONS = ("confirmed", "rejected", "retitled", "merged")
# what triage decides on: the captured kinds, and components `memhealth inventory propose`
# queues from the code index (memory_core.records.inventory)
TRIAGE_KINDS = CAPTURE_KINDS + ("subsystem",)
CAPTURE_QUEUES = ("triage", "work")
MCP_TOOLS = ("search", "remember", "cues")  # memhealth.mcp_server: the agent's memory tools
MCP_OUTCOMES = ("ok", "error")
# Cue-anchored delivery (memory_core.delivery.cues): what fired each evaluation, and why not.
CUE_TRIGGERS = ("path", "symbol", "pinned", "event", "semantic")
CUE_OUTCOMES = ("fired", "no_match", "deduped", "expired", "over_budget", "ablation", "inactive")
NEUTRALIZED_KINDS = ("harness_tag", "tool_markup", "instruction")  # memhealth.neutralize.KINDS
# -- the transcript as a witness (probes.witness)
CLAUDE_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop",
                 "SessionEnd")  # the events memhealth is wired to, as Claude Code names them
WITNESS_KINDS = ("failed", "not_run", "lost")
# -- session cost and the HTTP hook transport ---------------------------------------------------
# What a hook put into Claude's context, by block kind (memory_core.outbox.costs.KINDS).
CONTEXT_KINDS = ("verdict", "pinned", "summary", "recall", "cue")
CONTEXT_HOOKS = ("session-start", "prompt", "pre-tool", "post-tool")  # hooks.CONTEXT_EVENTS
# HTTP hook requests `memhealth serve` refused (telemetry.hook_endpoint): no or a wrong
# project secret, or a request it could not read (no length, a body over the cap).
HOOK_HTTP_REJECTIONS = ("unauthorized", "bad_request")
CODE_FILE_STATUSES = ("ok", "failed", "skipped")  # code_files.status (memory_core.ingest.code)

# Seconds. Hook budgets are seconds to tens of seconds; the interesting region is 10 ms-3 s.
HOOK_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
RETRIEVAL_DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metric:
    """One exported metric: name, type (counter|gauge|histogram), unit, help, labels."""

    __slots__ = ("name", "type", "unit", "help", "labels", "buckets", "label_values")

    def __init__(self, name, type, unit, help, labels=(), buckets=None, label_values=None):
        self.name = name
        self.type = type
        self.unit = unit
        self.help = help
        self.labels = tuple(labels)
        self.buckets = buckets
        self.label_values = label_values or {}  # label -> closed vocabulary, exported as 0 when absent

    def __repr__(self) -> str:
        return f"Metric({self.name!r}, {self.type!r})"

    @property
    def otel_name(self) -> str:
        """The name in OTLP, the OTel way: dotted (namespace.subsystem.rest), no unit and no
        `_total` (the unit travels in metadata, monotonicity in the Sum). Prometheus's OTLP
        translation (dots to underscores, unit suffix, `_total` for monotonic sums) turns
        it back into `name`, so OTLP-shipped series match the scraped ones."""
        name = self.name
        if self.type == "counter" and name.endswith("_total"):
            name = name[:-len("_total")]
        suffix = _UNIT_SUFFIXES.get(self.unit)
        if suffix and name.endswith(suffix) and not (self.unit == "1" and self.type != "gauge"):
            name = name[:-len(suffix)]
        return ".".join(name.split("_", 2))


# Prometheus's unit suffixes for the catalog's units (UCUM "s", "By"; "1" only for gauges
# named _ratio): what otel_name strips because the OTLP unit brings it back.
_UNIT_SUFFIXES = {"s": "_seconds", "By": "_bytes", "1": "_ratio"}


METRICS: tuple[Metric, ...] = (
    Metric("memhealth_hook_invocations_total", "counter", "1",
           "Hook invocations by hook and outcome (killed = started, never completed).",
           ("hook", "outcome"), label_values={"hook": HEARTBEATS, "outcome": HOOK_OUTCOMES}),
    Metric("memhealth_hook_duration_seconds", "histogram", "s",
           "Wall time of completed hook invocations.", ("hook",), buckets=HOOK_DURATION_BUCKETS,
           label_values={"hook": HEARTBEATS}),
    Metric("memhealth_hook_last_success_timestamp_seconds", "gauge", "s",
           "Unix time of the last successful invocation of each hook.", ("hook",)),
    # -- the transcript as a witness (probes.witness)
    Metric("memhealth_witness_findings_total", "counter", "1",
           "Events a session transcript showed that no memhealth row recorded, by Claude Code event "
           "and kind (failed: a hook failure before memhealth ran; not_run: no memhealth hook ran; "
           "lost: memhealth ran, its row is missing).",
           ("event", "kind"), label_values={"event": CLAUDE_EVENTS, "kind": WITNESS_KINDS}),
    Metric("memhealth_gate_check_status", "gauge", "1",
           "Latest status of each gate check: 0 green, 1 note, 2 red.", ("check",)),
    # The enum convention beside the 0/1/2 code above (kept: the DESIGN contract): one series
    # per status, 1 for the current one, so a rule reads `{status="red"} == 1` and
    # `sum by (status)` counts checks per status.
    Metric("memhealth_gate_check_state", "gauge", "1",
           "1 for each gate check's latest status (green, note, red), 0 for the others.",
           ("check", "status"), label_values={"status": GATE_STATUSES}),
    Metric("memhealth_gate_runs_total", "counter", "1",
           "Gate runs by verdict.", ("verdict",), label_values={"verdict": ("green", "red")}),
    Metric("memhealth_embedding_state", "gauge", "1",
           "1 for the embedding path's current state, 0 for the others.", ("state",),
           label_values={"state": EMBEDDING_STATES}),
    Metric("memhealth_embedding_probe_duration_seconds", "gauge", "s",
           "Wall time of the latest embedding probe."),
    Metric("memhealth_embedding_warmup_seconds", "gauge", "s",
           "Warm-up time of the latest cold start seen by the probe (0 when warm)."),
    Metric("memhealth_injection_decisions_total", "counter", "1",
           "Prompt injection decisions by cascade outcome (every prompt writes one).", ("outcome",),
           label_values={"outcome": INJECTION_OUTCOMES}),
    Metric("memhealth_retrieval_duration_seconds", "histogram", "s",
           "Wall time of memory retrieval on the prompt path.", buckets=RETRIEVAL_DURATION_BUCKETS),
    Metric("memhealth_ingest_watermark_age_seconds", "gauge", "s",
           "Age of the newest ingest watermark per source.", ("source",)),
    # The same freshness as a timestamp (naming practice: `…_timestamp_seconds`): PromQL
    # derives the age as `time() - x`, and the value stays right when a scrape is late.
    Metric("memhealth_ingest_last_timestamp_seconds", "gauge", "s",
           "Unix time of the newest ingest watermark per source.", ("source",)),
    Metric("memhealth_chunks", "gauge", "1", "Chunks in the store per source.", ("source",)),
    # ---- the code index (memory_core.ingest.code; the gate's code_index check) ----
    Metric("memhealth_code_files", "gauge", "1",
           "Source files in the code index by status: ok, failed (to parse), skipped (too large, "
           "generated).", ("status",), label_values={"status": CODE_FILE_STATUSES}),
    Metric("memhealth_code_definitions", "gauge", "1", "Definitions in the code index."),
    Metric("memhealth_code_components", "gauge", "1",
           "Definitions the code index counts as components (what DO-NOT-REBUILD can cite)."),
    Metric("memhealth_code_index_last_timestamp_seconds", "gauge", "s",
           "Unix time the code index last finished reading a commit (0 = never)."),
    # ---- end code index ----
    Metric("memhealth_vector_coverage_ratio", "gauge", "1",
           "Share of chunks that have a vector (1 when there are no chunks)."),
    Metric("memhealth_degradations_total", "counter", "1",
           "Degradations (fallbacks taken) by component and reason.", ("component", "reason")),
    Metric("memhealth_alert_decisions_total", "counter", "1",
           "Alert budget decisions by route and decision.", ("route", "decision"),
           label_values={"decision": ALERT_DECISIONS}),
    Metric("memhealth_alert_budget_remaining", "gauge", "1",
           "Pages left in the current budget window per route.", ("route",)),
    # Anti-recurrence capture (memory_core.records.queue, memory_core.records.triage).
    Metric("memhealth_capture_candidates_total", "counter", "1",
           "Candidates proposed by the session-end extraction, by kind.", ("kind",),
           label_values={"kind": CAPTURE_KINDS}),
    Metric("memhealth_triage_decisions_total", "counter", "1",
           "Triage decisions on candidates, by kind and decision.", ("kind", "decision"),
           label_values={"kind": TRIAGE_KINDS, "decision": TRIAGE_DECISIONS}),
    Metric("memhealth_capture_queue_depth", "gauge", "1",
           "Capture queues: candidates pending triage (triage) and session boundaries not "
           "captured yet (work).", ("queue",)),
    # -- what the emit point neutralized in injected text (memhealth/neutralize.py) --
    Metric("memhealth_injection_neutralized_total", "counter", "1",
           "Findings neutralized in injected memory before Claude read it: harness_tag / "
           "tool_markup = markup that could speak as the harness or a tool (its `<` broken), "
           "instruction = text addressing the agent as an instruction (quoted and labelled).",
           ("kind",), label_values={"kind": NEUTRALIZED_KINDS}),
    Metric("memhealth_cue_evaluations_total", "counter", "1",
           "Cue evaluations by trigger and outcome (fired, or the reason it was skipped); every "
           "tool call, prompt and session start writes at least one.", ("trigger", "outcome"),
           label_values={"trigger": CUE_TRIGGERS, "outcome": CUE_OUTCOMES}),
    Metric("memhealth_cue_deliveries_total", "counter", "1",
           "Memory items delivered into Claude's context by a cue, by trigger.", ("trigger",),
           label_values={"trigger": CUE_TRIGGERS}),
    Metric("memhealth_compaction_rereads_total", "counter", "1",
           "Files read again after a compaction boundary of the same session (same_content: the "
           "file had not changed since the read before the boundary).", ("same_content",),
           label_values={"same_content": ("true", "false")}),
    Metric("memhealth_compaction_reread_bytes_total", "counter", "By",
           "Bytes of file content read again after a compaction boundary (what compaction cost)."),
    # -- session cost: what memory put into Claude's context (memory_core.outbox.costs) --------
    Metric("memhealth_context_blocks_total", "counter", "1",
           "Blocks of context hooks emitted into Claude's context, by hook and kind.",
           ("hook", "kind"), label_values={"hook": CONTEXT_HOOKS, "kind": CONTEXT_KINDS}),
    Metric("memhealth_context_chars_total", "counter", "1",
           "Characters hooks emitted into Claude's context (after cleaning and the cap), by hook "
           "and kind.", ("hook", "kind"), label_values={"hook": CONTEXT_HOOKS, "kind": CONTEXT_KINDS}),
    Metric("memhealth_context_tokens_estimated_total", "counter", "1",
           "Estimated tokens of that context (characters / 4, rounded up per block: an estimate, "
           "Claude's tokenizer is not public), by hook and kind.", ("hook", "kind"),
           label_values={"hook": CONTEXT_HOOKS, "kind": CONTEXT_KINDS}),
    # -- the HTTP hook transport (telemetry.hook_endpoint) -------------------------------------
    Metric("memhealth_hook_http_rejected_total", "counter", "1",
           "HTTP hook requests `memhealth serve` refused, by reason (unauthorized: no or a wrong "
           "project secret; bad_request: no Content-Length or a body over the cap). Accepted "
           "requests are hook invocations (memhealth_hook_invocations_total).", ("reason",),
           label_values={"reason": HOOK_HTTP_REJECTIONS}),
    # The agent's own use of memory (memhealth.mcp_server), beside what the hooks deliver.
    Metric("memhealth_mcp_calls_total", "counter", "1",
           "MCP tool calls the agent made (`memhealth mcp`), by tool and outcome.",
           ("tool", "outcome"), label_values={"tool": MCP_TOOLS, "outcome": MCP_OUTCOMES}),
    Metric("memhealth_mcp_call_duration_seconds", "histogram", "s",
           "Wall time of MCP tool calls, by tool.", ("tool",), buckets=HOOK_DURATION_BUCKETS,
           label_values={"tool": MCP_TOOLS}),
    # The telemetry pipeline itself (telemetry.export, telemetry.serve).
    Metric("memhealth_outbox_backlog_spans", "gauge", "1",
           "Spans recorded in the outbox and not yet exported over OTLP."),
    Metric("memhealth_outbox_dropped_spans_total", "counter", "1",
           "Outbox spans dropped before export (retention = older than telemetry.retention_days; "
           "max_rows = beyond telemetry.outbox_max_rows).",
           ("reason",), label_values={"reason": OUTBOX_DROP_REASONS}),
    Metric("memhealth_exported_spans_total", "counter", "1",
           "Spans the OTLP exporter has shipped (acknowledged by the collector)."),
    Metric("memhealth_export_last_success_timestamp_seconds", "gauge", "s",
           "Unix time of the last successful OTLP export (0 = never)."),
    Metric("memhealth_scrape_errors_total", "counter", "1",
           "Scrapes of this serve process that could not read the store and served the last good values."),
    Metric("memhealth_build_info", "gauge", "1",
           "Always 1: the memhealth, Python, SQLite and sqlite-vec versions serving these metrics, "
           "and the serving user's instance id on this machine (service.instance.id, a random "
           "UUID kept in its state dir: two ids under one `machine` label are two machines).",
           ("version", "python", "sqlite", "sqlite_vec", "instance_id")),
)

# -- The serve process's own metrics (not read from a store) ----------------------------------
# Served by `memhealth serve` and `serve --all` beside the store's series, once per process
# (no `project` label); a store never holds them, so they are not in METRICS.
SERVE_REFUSAL_REASONS = ("no_credentials", "bad_credentials", "tls_handshake")  # telemetry.serve_auth
SERVE_METRICS: tuple[Metric, ...] = (
    Metric("memhealth_serve_refused_total", "counter", "1",
           "Requests and connections this serve refused: no_credentials / bad_credentials = no "
           "or a wrong bearer token (nothing was read or stored), tls_handshake = a connection "
           "that did not complete TLS (plain HTTP to the TLS port, an untrusted client).",
           ("reason",), label_values={"reason": SERVE_REFUSAL_REASONS}),
)

# -- serve --all: what became of each registered project (telemetry.serve_projects) ------------
# One series per registered project (the registry's size bounds the `project` label), so a
# project that is deleted, unreadable or corrupt reads 0 instead of leaving /metrics.
# served: this scrape read its store; no_root: the project directory is gone; no_store: its
# .memhealth/memory.db is missing; unreadable: permissions, a link, not a file, an I/O error;
# corrupt: not a database, or malformed; locked: the read waited out its lock or deadline;
# config_error: its config does not load; error: anything else.
PROJECT_STATES = ("served", "no_root", "no_store", "unreadable", "corrupt", "locked", "config_error",
                  "error")
PROJECT_METRICS: tuple[Metric, ...] = (
    Metric("memhealth_project_up", "gauge", "1",
           "`serve --all` only: 1 when this scrape read the registered project's store, 0 when the "
           "project is registered but not served or its store could not be read (its other series "
           "then hold their last good values, or are absent).", ("project",)),
    Metric("memhealth_project_state", "gauge", "1",
           "`serve --all` only: 1 for each registered project's current state (served, or why not: "
           "no_root, no_store, unreadable, corrupt, locked, config_error, error), 0 for the others.",
           ("project", "state"), label_values={"state": PROJECT_STATES}),
)
# -- end serve --all projects -------------------------------------------------------------------

CATALOG: dict[str, Metric] = {m.name: m for m in METRICS + SERVE_METRICS + PROJECT_METRICS}


# -- Service-level objectives ------------------------------------------------------------------
# Read by telemetry/artifacts/, which derives the recording rules, the multiwindow burn-rate
# alerts and the SLO dashboard panels from them (nothing else spells an objective).

# Latency budget per hook, seconds. Each is a bound of HOOK_DURATION_BUCKETS, so "within
# budget" is one bucket counter and the SLI stays a ratio of counters. Claude Code kills a hook
# at its settings timeout (10 s, SessionEnd 5 s as `memhealth init` writes them); the budgets
# sit inside that: the prompt and tool hooks delay every turn, session-start carries the gate
# and a possible embedding warm-up. session-end only records a boundary and spawns the capture
# worker (0.12-0.17 s on a 50 MB transcript); its 5 s budget predates that and could be 1.0.
HOOK_LATENCY_BUDGETS_S = {"session-start": 5.0, "prompt": 1.0, "pre-tool": 0.5, "post-tool": 0.5,
                          "pre-compact": 2.5, "stop": 1.0, "session-end": 5.0}


class SLO:
    """One objective over catalog counters: `objective` is the good share over 30 days.

        SLO("hook-success", 0.999, "hook invocations that complete ok")
    """

    __slots__ = ("name", "objective", "description")

    def __init__(self, name: str, objective: float, description: str):
        self.name = name
        self.objective = objective
        self.description = description

    def __repr__(self) -> str:
        return f"SLO({self.name!r}, {self.objective!r})"


SLOS: tuple[SLO, ...] = (
    # 99.9 %: the workbook's 5 % burst then pages within about 20 minutes (1 h at 14.4x).
    SLO("hook-success", 0.999,
        "Hook invocations that complete ok (error and killed count against the budget)."),
    # 99 %: a shared laptop has slow moments that are not outages.
    SLO("hook-latency", 0.99,
        "Completed hook invocations within their hook's latency budget (HOOK_LATENCY_BUDGETS_S)."),
)
