"""What the gate and the alerts agree on: SLO windows, thresholds and each gate check's alert.

    EXPORT_MAX_LAG_S                   # probes/checks_pipeline.py and the MemhealthExporterDown rule
    GATE_CHECKS["index_integrity"].severity   # "critical": the MemhealthGateCheckRed rule's label

One definition each, read by the gate (`probes/checks_pipeline.py`) and by
`telemetry/artifacts/` (the rules, runbook links and routing). The objectives and latency budgets themselves live in
`telemetry/catalog.py` beside the metrics they are computed from. Standard library only: the
probes layer imports it (tests/test_layering.py allows exactly this module beside the catalog).
"""

from __future__ import annotations

# -- burn-rate windows -------------------------------------------------------------------------

# SRE workbook "Alerting on SLOs" table (30 d period): (severity, long, short, burn factor).
# Short window = long / 12; page tiers spend 2 % / 5 % of the budget, ticket tiers 10 %.
BURN_TIERS = (
    ("critical", "1h", "5m", 14.4),
    ("critical", "6h", "30m", 6.0),
    ("warning", "1d", "2h", 3.0),
    ("warning", "3d", "6h", 1.0),
)
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
WINDOW_SECONDS = {"5m": 300, "30m": 1800, "1h": 3600, "2h": 7200, "6h": 21600, "1d": 86400,
                  "3d": 259200}
# Low-traffic guard: a personal tool runs tens of hooks an hour, so one failed hook is a
# 2-5 % error ratio and would page at 14.4x. Burn alerts also need this many bad events in
# the long window (the workbook's "low traffic" remedy; Sloth #133/#459 discuss the same).
MIN_BAD_EVENTS = 3

# -- thresholds the gate and the rules share ---------------------------------------------------

# Heartbeat pairing: every turn starts with UserPromptSubmit and ends with Stop, so this many
# runs of one of the pair in an hour mean turns are happening and the other must have run.
HEARTBEAT_PAIRS = {"prompt": "stop", "stop": "prompt"}
HEARTBEAT_MIN_PARTNER_RUNS = 3
# The default of [gate].ingest_max_age_days (memhealth/config.py; a test keeps them equal),
# measured from the latest session. Rules cannot read a project's config, so they use this.
INGEST_MAX_AGE_DAYS = 3.0
INGEST_MAX_LAG_S = int(INGEST_MAX_AGE_DAYS * 86400)
# An exporter that ran before must ship within this: the gate's telemetry_pipeline check
# bounds the oldest unexported span by it, the MemhealthExporterDown rule the last success.
EXPORT_MAX_LAG_S = 3600
# A cold start slows hooks for the warm-up; keep the info alert up for the latency tiers'
# short windows so Alertmanager can inhibit a burn alert the warm-up caused.
COLD_HOLD = "30m"
# Prometheus' scrape job for memhealth serve (compose/prometheus.yml, the e2e test): the
# target-down alert selects `up` by it.
SCRAPE_JOB = "memhealth"


# -- gate checks as alerts ---------------------------------------------------------------------

class GateCheck:
    """How a RED gate check alerts: severity (critical pages, warning is a ticket), how long
    it must stay RED, the component label, what RED means in one sentence, and the dedicated
    alerts that already say more about it (they carry `check=<name>` and inhibit this one).

        GateCheck("index_integrity", "critical", "5m", "store", "the index or the store ...")
    """

    __slots__ = ("name", "severity", "for_", "component", "means", "covered_by")

    def __init__(self, name: str, severity: str, for_: str, component: str, means: str,
                 covered_by: tuple[str, ...] = ()):
        self.name = name
        self.severity = severity
        self.for_ = for_
        self.component = component
        self.means = means
        self.covered_by = covered_by

    def __repr__(self) -> str:
        return f"GateCheck({self.name!r}, {self.severity!r})"


# In probes.gate.CHECKS order (a test keeps the two lists equal). The fix of a RED depends on
# its cause (each check has several), so the alert points at the check's runbook section and
# at `memhealth gate`, which prints the fix for the cause at hand. `for` covers at least two
# runs of serve's scheduled gate (60 s) and, for a covered check, the dedicated alert's own
# `for`, so the specific alert fires first and mutes the general one.
GATE_CHECK_LIST: tuple[GateCheck, ...] = (
    GateCheck("ingest_freshness", "warning", "30m", "ingest",
              "ingestion never ran, or a source fell behind the latest session by more than "
              "[gate].ingest_max_age_days", ("MemhealthIngestStale",)),
    GateCheck("vector_coverage", "warning", "30m", "embedding",
              "sqlite-vec cannot load, the vector table's width differs from [embedding].dim, "
              "or too few chunks have a vector and no ingest is backfilling them (a backfill "
              "that moves is a NOTE)"),
    # warning, not critical: one failed hook turns it RED, and the burn alerts' low-traffic
    # guard exists so that one failure never pages
    GateCheck("hook_heartbeats", "warning", "15m", "hooks",
              "a wired hook failed or was killed, missed prompts, left rows in the spill file, "
              "or no hooks are wired", ("MemhealthHookHeartbeatMissing",)),
    # -- the HTTP hook transport: serve down means Claude Code skips those events
    GateCheck("hook_transport", "warning", "5m", "hooks",
              "the settings send hook events over HTTP to a memhealth serve that does not "
              "answer, refuses the project's secret, or serves another project"),
    # days, not minutes: a queue is a backlog of reading, never urgent
    GateCheck("capture_queue", "warning", "2d", "memory",
              "more capture items wait for triage than [gate].capture_queue_max"),
    GateCheck("lineage_freshness", "warning", "30m", "ingest",
              "decision lineage was built before its records changed, longer ago than the "
              "ingest budget"),
    # the only page: a corrupt or inconsistent store loses memory while it keeps being written
    GateCheck("index_integrity", "critical", "5m", "store",
              "the full-text or vector index is out of step with the chunks, or SQLite's "
              "quick_check or the FTS5 integrity-check failed"),
    GateCheck("memory_files", "warning", "30m", "memory",
              "MEMORY.md outgrew what is read at every resume, or its LATEST resume anchor is "
              "broken or stale while sessions ran"),
    GateCheck("code_index", "warning", "30m", "ingest",
              "the code index is behind a HEAD older than the ingest budget, was never built, "
              "or most source files failed to parse"),
    GateCheck("cue_delivery", "warning", "15m", "memory",
              "the last compaction's SessionStart delivered fewer pinned items than existed, or "
              "tool hooks completed without evaluating their cues"),
    GateCheck("render_novelty", "warning", "30m", "memory",
              "the same session-start render reached several sessions while its inputs changed"),
    GateCheck("embedding_path", "warning", "15m", "embedding",
              "the embedding probe found Ollama unreachable, wedged, without the model, or of "
              "the wrong width",
              ("MemhealthEmbeddingDown", "MemhealthEmbeddingWedged",
               "MemhealthEmbeddingModelMissing", "MemhealthEmbeddingMisconfigured")),
    GateCheck("integrations", "warning", "30m", "alerts",
              "a configured integration (the alert webhook) is failing"),
    GateCheck("telemetry_pipeline", "warning", "15m", "telemetry",
              "an exporter ran before and the oldest span in the outbox is older than the "
              "export lag budget", ("MemhealthExporterDown",)),
    # -- hooks that do not run (probes.wiring, probes.witness): they alert like hook_heartbeats
    GateCheck("hook_wiring", "warning", "15m", "hooks",
              "an event memhealth needs is in no settings file Claude Code reads, runs another "
              "command, matches too few tools, or hooks are disabled"),
    GateCheck("hook_witness", "warning", "15m", "hooks",
              "a session's transcript shows events whose memhealth hook failed before it ran "
              "or never ran"),
)
GATE_CHECKS: dict[str, GateCheck] = {c.name: c for c in GATE_CHECK_LIST}
