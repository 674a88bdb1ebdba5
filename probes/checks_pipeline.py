"""The gate's checks of the optional integrations (integrations: the alert webhook, git)
and of the telemetry pipeline (telemetry_pipeline: the span outbox against its exporter).
Each is one function over `Evidence` returning a `CheckResult`.
"""

from __future__ import annotations

import os

from memory_core.outbox import decision_reads, span_reads
from probes.result import CheckResult, ago, green, note, red
from telemetry.slo import EXPORT_MAX_LAG_S  # shared with the MemhealthExporterDown rule

# -- 10 --------------------------------------------------------------------------------------

def integrations(ev) -> CheckResult:
    """NOTE for optional integrations never configured; RED only for a configured one that
    is failing (the alert webhook's recorded delivery failures)."""
    configured, notes, reds = [], [], []
    webhook = ev.cfg.get("alerts", {}).get("webhook_url", "")
    if webhook:
        configured.append("alert webhook")
        window_ns = int(ev.cfg["alerts"]["window_h"] * 3600e9)
        # past deliveries: an acknowledgement (`memhealth gate --ack integrations`) clears
        # the failures up to it, so a repaired receiver need not wait for the window to pass
        since = max(ev.now_ns - window_ns, ev.acked_ns("integrations") + 1)
        row = decision_reads.component_failures(ev.conn, ("alerts", "webhook", "alert_webhook"), since, ev.now_ns)
        if row[0]:
            reds.append((f"alert webhook failed {row[0]} time(s) in {ev.cfg['alerts']['window_h']:g} h, "
                         f"last {ago((ev.now_ns - row[1]) / 1e9)} ago ({(row[2] or '')[:120]})",
                         "check [alerts].webhook_url and that the receiver answers; once it does, "
                         "`memhealth gate --ack integrations` acknowledges the past failures"))
    else:
        notes.append("alert webhook not configured ([alerts].webhook_url)")
    if ev.cfg.get("ingest", {}).get("git"):
        if os.path.exists(os.path.join(ev.root, ".git")):
            configured.append("git history")
        else:
            notes.append("git ingest is on but the project is not a git repository")
    if reds:
        return red("; ".join(d for d, _ in reds), reds[0][1])
    if notes:
        return note("optional, not wired: " + "; ".join(notes)
                    + (f" (wired: {', '.join(configured)})" if configured else ""))
    return green("wired: " + ", ".join(configured))


# -- 11 --------------------------------------------------------------------------------------

EXPORT_WATERMARK = "export.spans.last_id"  # written by telemetry.export after each batch


def exporter_configured(ev) -> str | None:
    """How an OTLP exporter is configured, or None: [telemetry].otlp_endpoint, an
    OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT in the environment, or an exporter that ran before
    (`memhealth serve` / `export --once` left its watermark)."""
    if ev.cfg.get("telemetry", {}).get("otlp_endpoint", "").strip():
        return "[telemetry].otlp_endpoint"
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        if os.environ.get(name, "").strip():
            return name
    if ev.meta(EXPORT_WATERMARK) is not None:
        return "an exporter that ran before"
    return None


def telemetry_pipeline(ev) -> CheckResult:
    """Speaks only when an exporter is configured and failing: RED when the oldest span
    still waiting is older than the export lag budget. With no exporter the outbox is
    bounded by age and rows (pruned by the gate) and this check is GREEN."""
    tel = ev.cfg.get("telemetry", {})
    bounds = f"bounded to {tel.get('retention_days', 14.0):g} d / {tel.get('outbox_max_rows', 20000)} spans"
    how = exporter_configured(ev)
    if how is None:
        return green(f"no exporter configured: the span outbox is kept locally, {bounds}")
    last = ev.meta(EXPORT_WATERMARK)
    try:
        last_id = int(last) if last is not None else 0
    except ValueError:
        last_id = 0
    backlog, oldest = span_reads.waiting(ev.conn, last_id)
    if not backlog:
        return green(f"outbox empty: the exporter ({how}) is caught up")
    age_s = (ev.now_ns - oldest) / 1e9
    budget_s = max(EXPORT_MAX_LAG_S, 4 * ev.cfg.get("serve", {}).get("export_interval_s", 15.0))
    if age_s > budget_s:
        error = (ev.meta("export.last_error") or "").strip()
        state = "the exporter never ran" if last is None else (
            f"last export error: {error[:160]}" if error else "the exporter is not running")
        return red(f"exporter behind ({how}): {backlog} span(s) in the outbox, oldest {ago(age_s)} old "
                   f"(budget {ago(budget_s)}); {state}",
                   "check the OTLP collector the exporter points at, then run `memhealth export --once` "
                   "(a running memhealth serve also ships the backlog on its own)")
    return green(f"{backlog} span(s) queued for the exporter ({how}), oldest {ago(age_s)} old; {bounds}")
