"""Gate and probes: check status over time, the embedding state timeline (cold vs dead), ingest,
the telemetry pipeline."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import INST, Layout, dashboard, target, thresholds
from telemetry.artifacts.promql import m
from telemetry.catalog import EMBEDDING_STATES, GATE_STATUS_VALUES


def build() -> dict:
    L = Layout()
    mappings = [{"type": "value", "options": {
        str(v): {"text": k, "color": {"green": "green", "note": "blue", "red": "red"}[k], "index": v}
        for k, v in GATE_STATUS_VALUES.items()}}]
    L.add("Gate check status over time", "state-timeline", [target(
        f"max by (check) ({m('memhealth_gate_check_status')}{{{INST}}})", "{{check}}")],
        "Latest status of each gate check: green, note (green with a remark) or red.", w=24,
        h=10, defaults={"mappings": mappings, "color": {"mode": "thresholds"},
                        "thresholds": thresholds(("green", None), ("blue", 1), ("red", 2))},
        options={"showValue": "never", "mergeValues": True})
    L.add("Gate checks by status now", "stat", [target(
        f"sum by (status) (max by (check, status) ({m('memhealth_gate_check_state')}{{{INST}}}))",
        "{{status}}", instant=True)],
        "How many checks are green, note and red in the latest gate run (the enum series: one "
        "0/1 series per status and check).", w=24, h=4,
        overrides=[{"matcher": {"id": "byName", "options": status},
                    "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": color}}]}
                   for status, color in (("green", "green"), ("note", "blue"), ("red", "red"))],
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "value_and_name",
                 "colorMode": "background"})
    colors = {"ok": "green", "cold": "blue", "not_configured": "text"}
    L.add("Embedding state timeline (cold vs dead)", "state-timeline", [target(
        f"max by (state) ({m('memhealth_embedding_state')}{{{INST}}}) == 1", "{{state}}")],
        "The probe's current state. cold (blue) = warmed on the retry, not an outage; "
        "unreachable, wedged, model_missing and the mismatches (red) are dead.", w=24, h=7,
        defaults={"color": {"mode": "fixed", "fixedColor": "red"},
                  "mappings": [{"type": "value", "options": {"1": {"text": "current"}}}]},
        overrides=[{"matcher": {"id": "byName", "options": s},
                    "properties": [{"id": "color", "value": {
                        "mode": "fixed", "fixedColor": colors.get(s, "red")}}]}
                   for s in EMBEDDING_STATES],
        options={"showValue": "never", "mergeValues": True})
    L.add("Gate runs by verdict", "timeseries", [target(
        f"sum by (verdict) (increase({m('memhealth_gate_runs_total')}{{{INST}}}[$__rate_interval]))",
        "{{verdict}}")], "Session-start and scheduled gate runs.", w=8)
    L.add("Ingest watermark age", "timeseries", [target(
        f"time() - max by (source) ({m('memhealth_ingest_last_timestamp_seconds')}{{{INST}}})",
        "{{source}}")], "Age of each source's newest complete scan (from its timestamp, right "
        "even between scrapes); old is fine while idle.",
        w=8, unit="s")
    L.add("Chunks and vector coverage", "timeseries", [
        target(f"sum by (source) ({m('memhealth_chunks')}{{{INST}}})", "{{source}}"),
        target(f"min({m('memhealth_vector_coverage_ratio')}{{{INST}}})", "vector coverage")],
        "Chunks per source; coverage on the right axis.", w=8,
        overrides=[{"matcher": {"id": "byName", "options": "vector coverage"},
                    "properties": [{"id": "unit", "value": "percentunit"},
                                   {"id": "custom.axisPlacement", "value": "right"}]}])
    _code_index(L)
    L.add("Degradations", "timeseries", [target(
        f"sum by (component, reason) (increase({m('memhealth_degradations_total')}{{{INST}}}"
        f"[$__rate_interval]))", "{{component}} {{reason}}")],
        "Fallbacks taken (BM25 instead of vectors, spilled rows, ...).", w=8)
    L.add("Telemetry pipeline", "timeseries", [
        target(f"max({m('memhealth_outbox_backlog_spans')}{{{INST}}})", "outbox backlog"),
        target(f"sum(rate({m('memhealth_exported_spans_total')}{{{INST}}}[$__rate_interval]))",
                "exported/s"),
        target(f"sum by (reason) (increase({m('memhealth_outbox_dropped_spans_total')}"
                f"{{{INST}}}[$__rate_interval]))", "dropped {{reason}}")],
        "Spans waiting for the OTLP exporter, shipped and dropped.", w=8)
    L.add("Last OTLP export and scrape errors", "stat", [
        target(f"time() - max({m('memhealth_export_last_success_timestamp_seconds')}{{{INST}}} > 0)",
                "since last export", instant=True),
        target(f"sum({m('memhealth_scrape_errors_total')}{{{INST}}})", "scrape errors",
                instant=True)],
        "Seconds since the last successful export (no value = never exported) and scrapes that "
        "served stale values.", w=8, unit="s",
        overrides=[{"matcher": {"id": "byName", "options": "scrape errors"},
                    "properties": [{"id": "unit", "value": "short"}]}],
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "value_and_name"})
    return dashboard("memhealth-gate", "memhealth / Gate and probes",
                      "Gate check status over time, the embedding state timeline (cold vs dead), "
                      "ingest and the telemetry pipeline.", L)


def _code_index(L: Layout) -> None:
    """The code index: what it holds, what failed to parse, how long since it read a commit."""
    files = m("memhealth_code_files")
    L.add("Code index: files by status", "timeseries", [
        target(f"max by (status) ({files}{{{INST}}})", "{{status}}")],
        "Source files in the code index: ok, failed (a syntax error or a grammar that would not "
        "load; `memhealth gate` names them) and skipped (too large, generated).", w=8)
    L.add("Code index: definitions and components", "timeseries", [
        target(f"max({m('memhealth_code_definitions')}{{{INST}}})", "definitions"),
        target(f"max({m('memhealth_code_components')}{{{INST}}})", "components")],
        "Definitions read from the code, and the components among them (what DO-NOT-REBUILD "
        "can cite).", w=8,
        overrides=[{"matcher": {"id": "byName", "options": "components"},
                    "properties": [{"id": "custom.axisPlacement", "value": "right"}]}])
    L.add("Code index age", "stat", [target(
        f"time() - max({m('memhealth_code_index_last_timestamp_seconds')}{{{INST}}} > 0)",
        "since the code was read", instant=True)],
        "Seconds since the code index last finished reading a commit (no value = never). Old is "
        "fine while nothing is committed; the gate's code_index check compares it with HEAD.",
        w=8, unit="s", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "value_and_name"})
