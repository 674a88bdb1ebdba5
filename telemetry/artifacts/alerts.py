"""Alerting rules: SLO burn rates, the embedding states, heartbeats, ingest, export, one rule
per gate check, the scrape target itself, and the Watchdog.

    for a in alerts(): print(a.name, a.severity, a.anchor)
    rule_groups("https://…/alerts/runbook.md")   # recording groups + the alert group

Every alert's `runbook_url` is `<runbook url>#<anchor>`; the anchors are headings of the
hand-written alerts/runbook.md (tests/telemetry/test_artifacts.py checks each one exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.artifacts.promql import BY, HOOK_SELECTOR, m, slo
from telemetry.artifacts.recording import (
    INVOCATIONS_1H,
    LATENCY,
    SUCCESS,
    SUCCESSES_1H,
    SliRules,
    recording_groups,
)
from telemetry.slo import (
    BURN_TIERS,
    COLD_HOLD,
    EXPORT_MAX_LAG_S,
    GATE_CHECK_LIST,
    GATE_CHECKS,
    HEARTBEAT_MIN_PARTNER_RUNS,
    HEARTBEAT_PAIRS,
    INGEST_MAX_AGE_DAYS,
    INGEST_MAX_LAG_S,
    MIN_BAD_EVENTS,
    SCRAPE_JOB,
    WINDOW_SECONDS,
)

GATE_CHECK_ALERT = "MemhealthGateCheckRed"
TARGET_DOWN_ALERT = "MemhealthTargetDown"
BUDGET_DOWN_ALERT = "MemhealthAlertBudgetDown"
DUPLICATE_MACHINE_ALERT = "MemhealthMachineLabelDuplicated"
BUDGET_JOB = "memhealth-alert-budget"  # compose/team/prometheus-central.yml's scrape of it
WATCHDOG_ALERT = "MemhealthWatchdog"
PROJECT_NOT_SERVED_ALERT = "MemhealthProjectNotServed"


@dataclass
class Alert:
    """One alerting rule. Several rules may share a name (the page and ticket burn tiers, the
    per-check gate rules); `anchor` is its runbook heading's id (default: the name, lowered,
    as kubernetes-mixin's runbookURLPattern does)."""

    name: str
    expr: str
    severity: str
    component: str
    summary: str
    description: str
    for_: str | None = None
    labels: dict = field(default_factory=dict)
    anchor: str = ""

    def __post_init__(self) -> None:
        self.anchor = self.anchor or self.name.lower()

    def all_labels(self) -> dict:
        return {"severity": self.severity, "component": self.component, **self.labels}

    def annotations(self, runbook_url: str) -> dict:
        return {"summary": self.summary, "description": self.description,
                "runbook_url": f"{runbook_url}#{self.anchor}"}

    def rule(self, runbook_url: str) -> dict:
        out: dict = {"alert": self.name, "expr": self.expr}
        if self.for_:
            out["for"] = self.for_
        out["labels"] = self.all_labels()
        out["annotations"] = self.annotations(runbook_url)
        return out


def _burn_expr(sli: SliRules, objective: float, tiers) -> str:
    budget = f"(1 - {objective:g})"
    clauses = []
    for _sev, long, short, burn in tiers:
        clauses.append(
            f"(\n  {sli.name('ratio', long)} > ({burn:g} * {budget})\n"
            f"  and {sli.name('ratio', short)} > ({burn:g} * {budget})\n"
            f"  and {sli.name('bad', long)} * {WINDOW_SECONDS[long]} >= {MIN_BAD_EVENTS}\n)")
    return "\nor\n".join(clauses)


def _burn_alerts(name: str, sli: SliRules, what: str) -> list[Alert]:
    objective = slo(sli.slo)
    out = []
    for severity in ("critical", "warning"):
        tiers = [t for t in BURN_TIERS if t[0] == severity]
        windows = " or ".join(f"{t[1]}/{t[2]} at {t[3]:g}x" for t in tiers)
        kind = "page" if severity == "critical" else "ticket"
        out.append(Alert(
            name, _burn_expr(sli, objective.objective, tiers), severity, "hooks",
            f"memhealth {what} is burning its error budget too fast on {{{{ $labels.instance }}}} ({kind})",
            f"{objective.description} Objective {objective.objective:.1%} over 30 days; the "
            f"{windows} burn windows both exceed the objective's error rate, with at least "
            f"{MIN_BAD_EVENTS} bad invocations in the long window.",
            labels={"slo": sli.slo}))
    return out


def _covers(check: str) -> dict:
    """The `check` label of a dedicated alert: the gate check it says more about. It lets
    Alertmanager mute that check's MemhealthGateCheckRed (alerts/alertmanager.yml)."""
    assert check in GATE_CHECKS, check
    return {"check": check}


def _embedding_alerts() -> list[Alert]:
    state = m("memhealth_embedding_state")
    return [
        Alert("MemhealthEmbeddingDown",
              f'max by ({BY}) ({state}{{state="unreachable"}}) == 1',
              "critical", "embedding",
              "Embedding server unreachable for {{ $labels.instance }}",
              "The embedding probe cannot reach Ollama (nothing listens at [embedding].url, or "
              "what answers is not Ollama). Search runs BM25-only until it is back.",
              for_="5m", labels={"state": "unreachable", **_covers("embedding_path")}),
        Alert("MemhealthEmbeddingWedged",
              f'max by ({BY}) ({state}{{state="wedged"}}) == 1',
              "critical", "embedding",
              "Embedding server wedged for {{ $labels.instance }}",
              "Ollama accepts connections but neither the probe nor its warm-up retry got an "
              "answer, for ten minutes: past any cold start. Every embedding call on the hook "
              "path waits for its timeout until the circuit breaker opens.",
              for_="10m", labels={"state": "wedged", **_covers("embedding_path")}),
        Alert("MemhealthEmbeddingModelMissing",
              f'max by ({BY}) ({state}{{state="model_missing"}}) == 1',
              "warning", "embedding",
              "Embedding model not installed for {{ $labels.instance }}",
              "Ollama answers but does not have [embedding].model. Search runs BM25-only; "
              "it will not recover by itself.",
              for_="15m", labels={"state": "model_missing", **_covers("embedding_path")}),
        Alert("MemhealthEmbeddingMisconfigured",
              f'max by ({BY}, state) '
              f'({state}{{state=~"dimension_mismatch|fallback_mismatch"}}) == 1',
              "warning", "embedding",
              "Embedding configuration mismatch ({{ $labels.state }}) for {{ $labels.instance }}",
              "The model's vector width differs from [embedding].dim, or the fallback model is "
              "missing or has another width. Vectors of the wrong width are refused.",
              for_="15m", labels=_covers("embedding_path")),
        Alert("MemhealthEmbeddingColdStart",
              f'max by ({BY}) (max_over_time({state}{{state="cold"}}[{COLD_HOLD}])) == 1',
              "info", "embedding",
              "Embedding model cold start on {{ $labels.instance }}",
              "The probe saw a cold model that warmed up on its retry (cold is not dead). Hooks "
              "that waited for the warm-up were slow; latency burn alerts for this instance are "
              f"inhibited while this is firing ({COLD_HOLD} after the cold start).",
              labels={"state": "cold"}),
    ]


def _heartbeat_alert() -> Alert:
    hb_hooks = "|".join(HEARTBEAT_PAIRS)
    partners = "\n  or\n  ".join(
        f'label_replace({INVOCATIONS_1H}{{hook="{partner}"}} >= {HEARTBEAT_MIN_PARTNER_RUNS}, '
        f'"hook", "{hook}", "hook", "{partner}")'
        for hook, partner in HEARTBEAT_PAIRS.items())
    return Alert(
        "MemhealthHookHeartbeatMissing",
        f'({SUCCESSES_1H}{{hook=~"{hb_hooks}"}} == 0)\n'
        f"and on ({BY}, hook)\n(\n  {partners}\n)",
        "warning", "hooks",
        "The {{ $labels.hook }} hook left no successful heartbeat in an hour of active "
        "sessions on {{ $labels.instance }}",
        "Turns are happening (its partner hook ran at least "
        f"{HEARTBEAT_MIN_PARTNER_RUNS} times in the last hour: every turn starts with "
        "the prompt hook and ends with the stop hook) but the {{ $labels.hook }} hook did "
        "not complete once: it is unwired, failing, or killed by its timeout.",
        for_="10m", labels=_covers("hook_heartbeats"))


def _pipeline_alerts() -> list[Alert]:
    last_ok = m("memhealth_hook_last_success_timestamp_seconds")
    export_ts = m("memhealth_export_last_success_timestamp_seconds")
    return [
        Alert("MemhealthIngestStale",
              f"max by ({BY}, source) ({m('memhealth_ingest_watermark_age_seconds')})\n"
              f"- on ({BY}) group_left ()\n"
              f"  (time() - max by ({BY}) ({last_ok}{{{HOOK_SELECTOR}}}))\n"
              f"> {INGEST_MAX_LAG_S}",
              "warning", "ingest",
              "Ingest of {{ $labels.source }} is stale on {{ $labels.instance }}",
              f"The source's newest watermark is more than {INGEST_MAX_AGE_DAYS:g} days older "
              "than the latest hook activity: sessions ran but their material was not ingested. "
              "An idle project is never stale (the age is measured from the latest session, as "
              "the gate does).",
              for_="30m", labels=_covers("ingest_freshness")),
        Alert("MemhealthExporterDown",
              f"(time() - {export_ts} > {EXPORT_MAX_LAG_S})\n"
              f"and {export_ts} > 0\n"
              f"and {m('memhealth_outbox_backlog_spans')} > 0",
              "warning", "telemetry",
              "OTLP export stalled on {{ $labels.instance }}",
              "An exporter ran before, its last success is more than an hour old, and spans are "
              "waiting in the outbox. Nothing is lost yet (the outbox keeps them for "
              "telemetry.retention_days), but traces are not reaching the collector.",
              for_="15m", labels=_covers("telemetry_pipeline")),
    ]


# -- serve --all: a registered project it does not serve (telemetry.serve_projects) -----------
def _project_alert() -> Alert:
    return Alert(
        PROJECT_NOT_SERVED_ALERT,
        f"max by ({BY}) ({m('memhealth_project_up')}) == 0",
        "warning", "serve",
        "Project {{ $labels.project }} is registered but not served by {{ $labels.instance }}",
        "memhealth serve --all could not read this registered project's store for 10 minutes: its "
        "directory or store is gone, unreadable or corrupt, or its config does not load "
        "(memhealth_project_state says which). Its hooks, gate and alerts are unwatched while it "
        "lasts. FIX: run the command serve prints for it: `curl -s http://{{ $labels.instance }}/healthz` "
        "shows it under not_served.{{ $labels.project }} (or projects.{{ $labels.project }}.fix); "
        "it names the project's directory, which no label carries.",
        for_="10m")
# -- end serve --all projects


def gate_check_alerts() -> list[Alert]:
    """One rule per gate check, so each has its own severity, `for` and runbook section."""
    # the enum series: `status="red"` says what it means, where `== 2` needed the code table
    state = m("memhealth_gate_check_state")
    out = []
    for check in GATE_CHECK_LIST:
        out.append(Alert(
            GATE_CHECK_ALERT,
            f'max by ({BY}, check) ({state}{{check="{check.name}",status="red"}}) == 1',
            check.severity, check.component,
            f"Gate check {check.name} is RED on {{{{ $labels.instance }}}}",
            f"The health gate reports {check.name} RED: {check.means}. FIX: run `memhealth "
            f"gate` in the project; its RED {check.name} line names the cause and the command "
            "that fixes it (the runbook lists every cause).",
            for_=check.for_, labels={"check": check.name},
            anchor=f"gate-check-{check.name}"))
    return out


def alerts() -> list[Alert]:
    """Every alerting rule, in file order."""
    out: list[Alert] = []
    out += _burn_alerts("MemhealthHookErrorBudgetBurn", SUCCESS, "hook success")
    out += _burn_alerts("MemhealthHookLatencyBudgetBurn", LATENCY, "hook latency")
    out += _embedding_alerts()
    out.append(_heartbeat_alert())
    out += _pipeline_alerts()
    out += gate_check_alerts()
    out.append(_project_alert())
    out += [
        Alert(TARGET_DOWN_ALERT, f'up{{job="{SCRAPE_JOB}"}} == 0', "critical", "serve",
              "memhealth serve at {{ $labels.instance }} cannot be scraped",
              "Prometheus has failed to scrape memhealth serve for 5 minutes: the process is "
              "dead, hung, or unreachable. Its metrics, its scheduled gate and its /alerts "
              "receiver (the alert budget) are gone with it, so this alert is routed to the "
              "receiver outside serve.",
              for_="5m"),
        Alert(WATCHDOG_ALERT, "vector(1)", "none", "meta",
              "Alerting pipeline heartbeat (always firing)",
              "Always firing, so the path Prometheus -> Alertmanager -> receiver is proven end to "
              "end. It is routed to a dead man's switch outside memhealth serve; it is an "
              "incident when it stops arriving."),
    ]
    return out


def central_alerts() -> list[Alert]:
    """The team topology's central side only (compose/team/central.rules.yaml): every central
    receiver is the alert budget, so while it is down no team is paged, and nothing else
    says so."""
    return [
        Alert(BUDGET_DOWN_ALERT,
              f'up{{job="{BUDGET_JOB}"}} == 0 or absent(up{{job="{BUDGET_JOB}"}})',
              "critical", "alert-budget",
              "the team's central alert budget cannot be scraped: no team can be paged",
              "Every receiver of the central Alertmanager is the alert budget (a memhealth serve "
              "of its own). While it is down, deliveries to it fail and every team's pages are "
              "lost, so this alert is routed to the receiver outside it (the serve-down check).",
              for_="2m"),
        # two instance ids (each user's state-dir UUID) under one (team, machine): two agents
        # set the same MEMHEALTH_MACHINE, and their series merge as one machine's
        Alert(DUPLICATE_MACHINE_ALERT,
              f'count by (team, machine) (count by (team, machine, instance_id) '
              f'(memhealth_build_info{{job="{SCRAPE_JOB}"}})) > 1',
              "warning", "topology",
              "two machines report the same machine label: their series merge",
              "More than one memhealth instance id is reported under one team and machine label: "
              "two agents were started with the same MEMHEALTH_MACHINE, so rules and dashboards add "
              "two developers' projects into one machine's, and one machine's alerts can be muted "
              "or resolved by the other's series.",
              for_="5m"),
    ]


def central_rule_groups(runbook_url: str) -> list[dict]:
    """compose/team/central.rules.yaml: loaded by the central Prometheus beside the rules file."""
    return [{"name": "memhealth-central", "rules": [a.rule(runbook_url) for a in central_alerts()]}]


def rule_groups(runbook_url: str) -> list[dict]:
    """The whole rules file: recording groups, then the alert group."""
    return recording_groups() + [
        {"name": "memhealth-alerts", "rules": [a.rule(runbook_url) for a in alerts()]}]
