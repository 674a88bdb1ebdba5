"""`promtool test rules` cases: what must fire, when, and what must stay silent.

    promtool_tests(runbook_url)   # {"alerts/tests/slo.test.yaml": {...}, ...}

Every expectation is written out here, labels and annotations as an operator would read them,
never rendered from the rule under test (a test that reads its expectation back from the rule
can only confirm itself). Only the runbook's base URL is a parameter: it is configurable at
generate time; the anchor after `#` is literal.
"""

from __future__ import annotations

from telemetry.artifacts.promql import le, m
from telemetry.catalog import EMBEDDING_STATES, GATE_STATUSES, HOOK_LATENCY_BUDGETS_S

BURN = "MemhealthHookErrorBudgetBurn"
LAT = "MemhealthHookLatencyBudgetBurn"
HB = "MemhealthHookHeartbeatMissing"
GATE = "MemhealthGateCheckRed"
DOWN = "MemhealthTargetDown"
PNS = "MemhealthProjectNotServed"

_BURN_TAIL = (" burn windows both exceed the objective's error rate, with at least 3 bad "
              "invocations in the long window.")
SUCCESS_SLO = ("Hook invocations that complete ok (error and killed count against the budget). "
               "Objective 99.9% over 30 days; the ")
LATENCY_SLO = ("Completed hook invocations within their hook's latency budget "
               "(HOOK_LATENCY_BUDGETS_S). Objective 99.0% over 30 days; the ")
PAGE_TIERS, TICKET_TIERS = "1h/5m at 14.4x or 6h/30m at 6x", "1d/2h at 3x or 3d/6h at 1x"

# (summary, description) per alert, as they must read for project p1
TEXT = {
    (BURN, "critical"): (
        "memhealth hook success is burning its error budget too fast on p1 (page)",
        SUCCESS_SLO + PAGE_TIERS + _BURN_TAIL),
    (BURN, "warning"): (
        "memhealth hook success is burning its error budget too fast on p1 (ticket)",
        SUCCESS_SLO + TICKET_TIERS + _BURN_TAIL),
    (LAT, "critical"): (
        "memhealth hook latency is burning its error budget too fast on p1 (page)",
        LATENCY_SLO + PAGE_TIERS + _BURN_TAIL),
    (LAT, "warning"): (
        "memhealth hook latency is burning its error budget too fast on p1 (ticket)",
        LATENCY_SLO + TICKET_TIERS + _BURN_TAIL),
    "MemhealthEmbeddingDown": (
        "Embedding server unreachable for p1",
        "The embedding probe cannot reach Ollama (nothing listens at [embedding].url, or what "
        "answers is not Ollama). Search runs BM25-only until it is back."),
    "MemhealthEmbeddingWedged": (
        "Embedding server wedged for p1",
        "Ollama accepts connections but neither the probe nor its warm-up retry got an answer, "
        "for ten minutes: past any cold start. Every embedding call on the hook path waits for "
        "its timeout until the circuit breaker opens."),
    "MemhealthEmbeddingModelMissing": (
        "Embedding model not installed for p1",
        "Ollama answers but does not have [embedding].model. Search runs BM25-only; it will not "
        "recover by itself."),
    "MemhealthEmbeddingMisconfigured": (
        "Embedding configuration mismatch (dimension_mismatch) for p1",
        "The model's vector width differs from [embedding].dim, or the fallback model is "
        "missing or has another width. Vectors of the wrong width are refused."),
    "MemhealthEmbeddingColdStart": (
        "Embedding model cold start on p1",
        "The probe saw a cold model that warmed up on its retry (cold is not dead). Hooks that "
        "waited for the warm-up were slow; latency burn alerts for this instance are inhibited "
        "while this is firing (30m after the cold start)."),
    (HB, "prompt"): (
        "The prompt hook left no successful heartbeat in an hour of active sessions on p1",
        "Turns are happening (its partner hook ran at least 3 times in the last hour: every "
        "turn starts with the prompt hook and ends with the stop hook) but the prompt hook did "
        "not complete once: it is unwired, failing, or killed by its timeout."),
    (HB, "stop"): (
        "The stop hook left no successful heartbeat in an hour of active sessions on p1",
        "Turns are happening (its partner hook ran at least 3 times in the last hour: every "
        "turn starts with the prompt hook and ends with the stop hook) but the stop hook did "
        "not complete once: it is unwired, failing, or killed by its timeout."),
    "MemhealthIngestStale": (
        "Ingest of transcripts is stale on p1",
        "The source's newest watermark is more than 3 days older than the latest hook "
        "activity: sessions ran but their material was not ingested. An idle project is never "
        "stale (the age is measured from the latest session, as the gate does)."),
    "MemhealthExporterDown": (
        "OTLP export stalled on p1",
        "An exporter ran before, its last success is more than an hour old, and spans are "
        "waiting in the outbox. Nothing is lost yet (the outbox keeps them for "
        "telemetry.retention_days), but traces are not reaching the collector."),
    DOWN: (
        "memhealth serve at 127.0.0.1:9464 cannot be scraped",
        "Prometheus has failed to scrape memhealth serve for 5 minutes: the process is dead, "
        "hung, or unreachable. Its metrics, its scheduled gate and its /alerts receiver (the "
        "alert budget) are gone with it, so this alert is routed to the receiver outside serve."),
    # -- serve --all: a registered project it does not serve
    "MemhealthProjectNotServed": (
        "Project lib is registered but not served by 127.0.0.1:9464",
        "memhealth serve --all could not read this registered project's store for 10 minutes: its "
        "directory or store is gone, unreadable or corrupt, or its config does not load "
        "(memhealth_project_state says which). Its hooks, gate and alerts are unwatched while it "
        "lasts. FIX: run the command serve prints for it: `curl -s http://127.0.0.1:9464/healthz` "
        "shows it under not_served.lib (or projects.lib.fix); it names the project's directory, "
        "which no label carries."),
    "MemhealthWatchdog": (
        "Alerting pipeline heartbeat (always firing)",
        "Always firing, so the path Prometheus -> Alertmanager -> receiver is proven end to end. "
        "It is routed to a dead man's switch outside memhealth serve; it is an incident when it "
        "stops arriving."),
}

# Gate checks: (severity, component, `for` in minutes, what RED means), as each must alert.
GATE_CASES = {
    "ingest_freshness": ("warning", "ingest", 30,
                         "ingestion never ran, or a source fell behind the latest session by "
                         "more than [gate].ingest_max_age_days"),
    "vector_coverage": ("warning", "embedding", 30,
                        "sqlite-vec cannot load, the vector table's width differs from "
                        "[embedding].dim, or too few chunks have a vector and no ingest is "
                        "backfilling them (a backfill that moves is a NOTE)"),
    "hook_heartbeats": ("warning", "hooks", 15,
                        "a wired hook failed or was killed, missed prompts, left rows in the "
                        "spill file, or no hooks are wired"),
    # -- the HTTP hook transport (expectation written out, not read back from telemetry.slo)
    "hook_transport": ("warning", "hooks", 5,
                       "the settings send hook events over HTTP to a memhealth serve that does "
                       "not answer, refuses the project's secret, or serves another project"),
    "capture_queue": ("warning", "memory", 2880,
                      "more capture items wait for triage than [gate].capture_queue_max"),
    "lineage_freshness": ("warning", "ingest", 30,
                          "decision lineage was built before its records changed, longer ago "
                          "than the ingest budget"),
    "index_integrity": ("critical", "store", 5,
                        "the full-text or vector index is out of step with the chunks, or "
                        "SQLite's quick_check or the FTS5 integrity-check failed"),
    "memory_files": ("warning", "memory", 30,
                     "MEMORY.md outgrew what is read at every resume, or its LATEST resume "
                     "anchor is broken or stale while sessions ran"),
    "code_index": ("warning", "ingest", 30,
                   "the code index is behind a HEAD older than the ingest budget, was never "
                   "built, or most source files failed to parse"),
    "cue_delivery": ("warning", "memory", 15,
                     "the last compaction's SessionStart delivered fewer pinned items than "
                     "existed, or tool hooks completed without evaluating their cues"),
    "render_novelty": ("warning", "memory", 30,
                       "the same session-start render reached several sessions while its "
                       "inputs changed"),
    "embedding_path": ("warning", "embedding", 15,
                       "the embedding probe found Ollama unreachable, wedged, without the "
                       "model, or of the wrong width"),
    "integrations": ("warning", "alerts", 30,
                     "a configured integration (the alert webhook) is failing"),
    "telemetry_pipeline": ("warning", "telemetry", 15,
                           "an exporter ran before and the oldest span in the outbox is older "
                           "than the export lag budget"),
    # -- hooks that do not run (probes.wiring, probes.witness)
    "hook_wiring": ("warning", "hooks", 15,
                    "an event memhealth needs is in no settings file Claude Code reads, runs "
                    "another command, matches too few tools, or hooks are disabled"),
    "hook_witness": ("warning", "hooks", 15,
                     "a session's transcript shows events whose memhealth hook failed before it "
                     "ran or never ran"),
}


def _series(metric: str, values: str, **labels) -> dict:
    if metric != "up":  # Prometheus' own scrape health, the one series not in the catalog
        m(metric)
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


def _gate_state(instance: str, check: str, status: str, minutes: int, then: str | None = None,
                then_for: int = 0) -> list[dict]:
    """memhealth_gate_check_state as serve exports it: for each status a 0/1 series, 1 for
    `status` during `minutes`, then (optionally) 1 for `then` during `then_for`."""
    out = []
    for value in GATE_STATUSES:
        samples = f"{int(value == status)}x{minutes}"
        if then is not None:
            samples += f" {int(value == then)}x{then_for}"
        out.append(_series("memhealth_gate_check_state", samples, instance=instance, check=check,
                           status=value))
    return out


def _inv(hook: str, outcome: str, values: str, instance: str = "p1") -> dict:
    return _series("memhealth_hook_invocations_total", values, instance=instance, hook=hook,
                   outcome=outcome)


def _test(name: str, series: list[dict], checks: list[tuple], interval: str = "1m") -> dict:
    return {"name": name, "interval": interval, "input_series": series,
            "alert_rule_test": [{"eval_time": t, "alertname": alert, "exp_alerts": exp}
                                for t, alert, exp in checks]}


def promtool_tests(runbook_url: str) -> dict[str, dict]:
    """alerts/tests/<file>.yaml → content. Every file says what must fire and what must not."""

    def exp(key, anchor: str, **labels) -> dict:
        summary, description = TEXT[key]
        return {"exp_labels": labels,
                "exp_annotations": {"summary": summary, "description": description,
                                    "runbook_url": f"{runbook_url}#{anchor}"}}

    def burn(name: str, severity: str, slo: str) -> dict:
        return exp((name, severity), name.lower(), severity=severity, component="hooks",
                   slo=slo, instance="p1")

    crit = burn(BURN, "critical", "hook-success")
    ticket = burn(BURN, "warning", "hook-success")
    slo_tests = [
        # 60 prompts a minute for 2.5 h, then 5 % errors: the 1 h ratio crosses 14.4 x 0.1 %
        # = 1.44 % after about 17 minutes (workbook: detection in ~20 min). The slow tiers
        # open a ticket first; Alertmanager's critical-inhibits-warning rule mutes it.
        _test("5 % error burst pages within 20 minutes, not at 15", [
            # (2.5 h of history keeps the 6 h/30 m tier from reading the burst as 6x early)
            _inv("prompt", "ok", "0+60x150 9057+57x20"),
            _inv("prompt", "error", "0x150 3+3x20"),
            _inv("prompt", "killed", "0x170"),
        ], [("150m", BURN, []), ("165m", BURN, [ticket]), ("170m", BURN, [crit, ticket])]),
        _test("idle: flat counters and serve's own gate heartbeats never page", [
            _inv("prompt", "ok", "500x180"),
            _inv("prompt", "error", "2x180"),
            _inv("stop", "ok", "500x180"),
            # the gate runs every minute inside serve, and fails here: not a hook, not activity
            _inv("gate", "ok", "0+1x180"),
            _inv("gate", "error", "0+1x180"),
        ], [("1h", BURN, []), ("3h", BURN, []), ("3h", LAT, []), ("3h", HB, [])]),
        _test("one killed hook among few does not page (low-traffic guard)", [
            _inv("session-start", "ok", "0x10 1x110"),
            _inv("prompt", "ok", "0+1x120"),
            _inv("prompt", "killed", "0x30 1x90"),
        ], [("35m", BURN, []), ("2h", BURN, [])]),
        _test("a slow trickle of failures opens a ticket, not a page", [
            # 0.5 % errors: 5x the 0.1 % budget rate, under the 6x page tier
            _inv("prompt", "ok", "0+199x180"),
            _inv("prompt", "error", "0+1x180"),
        ], [("3h", BURN, [ticket])]),
    ]
    # latency: prompt budget 1.0 s; every prompt slower than budget for half an hour
    fast, slow = le(HOOK_LATENCY_BUDGETS_S["prompt"]), "2.5"
    lat_series = [
        _series("memhealth_hook_duration_seconds_bucket", "0+60x60 3600+0x60", instance="p1",
                hook="prompt", le=fast),
        _series("memhealth_hook_duration_seconds_bucket", "0+60x120", instance="p1",
                hook="prompt", le=slow),
        _series("memhealth_hook_duration_seconds_count", "0+60x120", instance="p1", hook="prompt"),
    ]
    cold = exp("MemhealthEmbeddingColdStart", "memhealthembeddingcoldstart", severity="info",
               component="embedding", state="cold", instance="p1")
    latency_tests = [
        _test("prompts over their 1 s budget page on the latency SLO", lat_series,
              [("60m", LAT, []),
               ("70m", LAT, [burn(LAT, "critical", "hook-latency"),
                             burn(LAT, "warning", "hook-latency")])]),
        _test("cold start: one slow session-start is info, never a page", [
            _series("memhealth_embedding_state", "0x10 1x2 0x100", instance="p1", state="cold"),
            _series("memhealth_embedding_state", "1x10 0x2 1x100", instance="p1", state="ok"),
            _series("memhealth_embedding_state", "0x112", instance="p1", state="unreachable"),
            _series("memhealth_embedding_state", "0x112", instance="p1", state="wedged"),
            _series("memhealth_hook_duration_seconds_bucket", "0x11 0x100", instance="p1",
                    hook="session-start", le=le(HOOK_LATENCY_BUDGETS_S["session-start"])),
            _series("memhealth_hook_duration_seconds_count", "0x11 1x100", instance="p1",
                    hook="session-start"),
            _series("memhealth_hook_duration_seconds_bucket", "0+2x112", instance="p1",
                    hook="prompt", le=fast),
            _series("memhealth_hook_duration_seconds_count", "0+2x112", instance="p1", hook="prompt"),
        ], [("15m", "MemhealthEmbeddingColdStart", [cold]),
            ("15m", LAT, []), ("15m", "MemhealthEmbeddingDown", []),
            ("15m", "MemhealthEmbeddingWedged", []),
            ("50m", "MemhealthEmbeddingColdStart", [])]),
    ]
    states = {s: "0x40" for s in EMBEDDING_STATES}

    def embedding_case(state: str) -> list[dict]:
        vals = dict(states, **{state: "1x40"})
        return [_series("memhealth_embedding_state", v, instance="p1", state=s)
                for s, v in vals.items()]

    def embedding(name: str, severity: str, state: str) -> dict:
        return exp(name, name.lower(), severity=severity, component="embedding", state=state,
                   check="embedding_path", instance="p1")

    embedding_tests = [
        _test("unreachable pages after 5 minutes, not at 3", embedding_case("unreachable"), [
            ("3m", "MemhealthEmbeddingDown", []),
            ("6m", "MemhealthEmbeddingDown",
             [embedding("MemhealthEmbeddingDown", "critical", "unreachable")]),
            ("6m", "MemhealthEmbeddingWedged", []), ("6m", "MemhealthEmbeddingColdStart", [])]),
        _test("wedged pages only after 10 minutes (a long cold load is not wedged)",
              embedding_case("wedged"), [
                  ("9m", "MemhealthEmbeddingWedged", []),
                  ("11m", "MemhealthEmbeddingWedged",
                   [embedding("MemhealthEmbeddingWedged", "critical", "wedged")]),
                  ("11m", "MemhealthEmbeddingDown", [])]),
        _test("model missing is a ticket after 15 minutes", embedding_case("model_missing"), [
            ("14m", "MemhealthEmbeddingModelMissing", []),
            ("16m", "MemhealthEmbeddingModelMissing",
             [embedding("MemhealthEmbeddingModelMissing", "warning", "model_missing")]),
            ("16m", "MemhealthEmbeddingDown", [])]),
        _test("dimension mismatch is a ticket naming the state", embedding_case("dimension_mismatch"), [
            ("16m", "MemhealthEmbeddingMisconfigured",
             [embedding("MemhealthEmbeddingMisconfigured", "warning", "dimension_mismatch")])]),
        _test("not configured (BM25-only) and ok never alert", embedding_case("not_configured"), [
            ("30m", name, []) for name in ("MemhealthEmbeddingDown", "MemhealthEmbeddingWedged",
                                           "MemhealthEmbeddingModelMissing",
                                           "MemhealthEmbeddingMisconfigured",
                                           "MemhealthEmbeddingColdStart")]),
    ]

    def heartbeat(hook: str) -> dict:
        return exp((HB, hook), "memhealthhookheartbeatmissing", severity="warning",
                   component="hooks", check="hook_heartbeats", instance="p1", hook=hook)

    heartbeat_tests = [
        _test("prompt hook silent while turns end: fires after an hour plus 10 minutes", [
            # a session with a turn every 5 minutes; the prompt hook was unwired at minute 30
            _inv("stop", "ok", "0+1x150"),
            _inv("prompt", "ok", "0+1x30 30x120"),
            _inv("prompt", "error", "0x150"),
            _inv("session-start", "ok", "1x150"),
        ], [("85m", HB, []), ("105m", HB, [heartbeat("prompt")])], interval="1m"),
        _test("stop hook killed every turn while prompts arrive: fires for stop", [
            _inv("prompt", "ok", "0+1x100"),
            _inv("stop", "ok", "0x100"),
            _inv("stop", "killed", "0+1x100"),
        ], [("80m", HB, [heartbeat("stop")])]),
        _test("idle after a session never fires, however long", [
            _inv("prompt", "ok", "0+1x20 20x160"),
            _inv("stop", "ok", "0+1x20 20x160"),
            _inv("gate", "ok", "0+1x180"),
        ], [("90m", HB, []), ("3h", HB, [])]),
        _test("one long autonomous turn (tool hooks only) is not a missing heartbeat", [
            _inv("prompt", "ok", "1x180"),
            _inv("stop", "ok", "0x180"),
            _inv("pre-tool", "ok", "0+2x180"),
            _inv("post-tool", "ok", "0+2x180"),
        ], [("2h", HB, []), ("3h", HB, [])]),
    ]
    ts_ok = "memhealth_hook_last_success_timestamp_seconds"
    misc_tests = [
        _test("ingest stale only when sessions ran after the watermark", [
            # watermark 4 days old and growing; a session 1 hour ago → 3 d 23 h behind it
            _series("memhealth_ingest_watermark_age_seconds", "345600+60x100", instance="p1",
                    source="transcripts"),
            _series(ts_ok, "2400x100", instance="p1", hook="prompt"),
            _series("memhealth_ingest_watermark_age_seconds", "345600+60x100", instance="p2",
                    source="transcripts"),
            # p2: the latest session was 4 days ago too: idle, not stale
            _series(ts_ok, "-345600x100", instance="p2", hook="prompt"),
            # the gate's heartbeat is not a session
            _series(ts_ok, "0+60x100", instance="p2", hook="gate"),
        ], [("20m", "MemhealthIngestStale", []),
            ("45m", "MemhealthIngestStale",
             [exp("MemhealthIngestStale", "memhealthingeststale", severity="warning",
                  component="ingest", check="ingest_freshness", instance="p1",
                  source="transcripts")])]),
        _test("exporter down only with a backlog and an earlier success", [
            _series("memhealth_export_last_success_timestamp_seconds", "60x200", instance="p1"),
            _series("memhealth_outbox_backlog_spans", "0+1x200", instance="p1"),
            # p2: never exported (no exporter configured): a NOTE in the gate, not an alert
            _series("memhealth_export_last_success_timestamp_seconds", "0x200", instance="p2"),
            _series("memhealth_outbox_backlog_spans", "0+1x200", instance="p2"),
            # p3: collector down but idle: nothing waits, nothing to say
            _series("memhealth_export_last_success_timestamp_seconds", "60x200", instance="p3"),
            _series("memhealth_outbox_backlog_spans", "0x200", instance="p3"),
        ], [("70m", "MemhealthExporterDown", []),
            ("80m", "MemhealthExporterDown",
             [exp("MemhealthExporterDown", "memhealthexporterdown", severity="warning",
                  component="telemetry", check="telemetry_pipeline", instance="p1")])]),
        _test("serve down: the target-down alert fires after 5 minutes, not at 4", [
            # serve answers for 10 minutes, then every scrape fails
            _series("up", "1x10 0x20", job="memhealth", instance="127.0.0.1:9464"),
            # another job's dead target is not memhealth's business; a live serve never fires
            _series("up", "0x30", job="node", instance="127.0.0.1:9100"),
            _series("up", "1x30", job="memhealth", instance="127.0.0.1:9465"),
        ], [("9m", DOWN, []), ("14m", DOWN, []),
            ("16m", DOWN, [exp(DOWN, "memhealthtargetdown", severity="critical",
                               component="serve", job="memhealth",
                               instance="127.0.0.1:9464")])]),
        # -- serve --all: lib lost for 20 minutes, then its FIX; app served throughout; old
        # unregistered after 5 minutes lost (its series ends: nothing fires)
        _test("a lost project fires after 10 minutes, not at 9, and resolves when it is served", [
            _series("memhealth_project_up", "0x20 1x10", instance="127.0.0.1:9464", project="lib"),
            _series("memhealth_project_up", "1x30", instance="127.0.0.1:9464", project="app"),
            _series("memhealth_project_up", "0x5", instance="127.0.0.1:9464", project="old"),
        ], [("9m", PNS, []),
            ("15m", PNS, [exp(PNS, "memhealthprojectnotserved", severity="warning",
                              component="serve", instance="127.0.0.1:9464", project="lib")]),
            ("25m", PNS, [])]),
        _test("watchdog always fires", [], [
            ("0m", "MemhealthWatchdog",
             [exp("MemhealthWatchdog", "memhealthwatchdog", severity="none", component="meta")]),
            ("3h", "MemhealthWatchdog",
             [exp("MemhealthWatchdog", "memhealthwatchdog", severity="none", component="meta")])]),
    ]
    gate_tests = []
    for check, (severity, component, minutes, means) in GATE_CASES.items():
        expected = {"exp_labels": {"severity": severity, "component": component, "check": check,
                                   "instance": "p1"},
                    "exp_annotations": {
                        "summary": f"Gate check {check} is RED on p1",
                        "description": f"The health gate reports {check} RED: {means}. FIX: "
                                       f"run `memhealth gate` in the project; its RED {check} "
                                       "line names the cause and the command that fixes it "
                                       "(the runbook lists every cause).",
                        "runbook_url": f"{runbook_url}#gate-check-{check}"}}
        span = minutes + 10
        gate_tests.append(_test(
            f"{check} RED pages or tickets after {minutes} minutes; NOTE, GREEN and a short "
            "RED never do", [
                *_gate_state("p1", check, "red", span),
                # p2: a NOTE (green with a remark) for as long; p3: green
                *_gate_state("p2", check, "note", span),
                *_gate_state("p3", check, "green", span),
                # p4: RED for less than its `for`, then green again
                *_gate_state("p4", check, "red", minutes - 2, then="green", then_for=12),
            ], [(f"{minutes - 1}m", GATE, []), (f"{minutes + 1}m", GATE, [expected])]))
    files = {"slo": slo_tests + latency_tests, "embedding": embedding_tests,
             "heartbeat": heartbeat_tests, "misc": misc_tests, "gate": gate_tests}
    return {f"alerts/tests/{name}.test.yaml":
            {"rule_files": ["../memhealth.rules.yaml"], "evaluation_interval": "1m", "tests": tests}
            for name, tests in files.items()}
