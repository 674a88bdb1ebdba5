"""Latency: hook duration quantiles against each hook's budget, retrieval latency, the probe."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import INST, WHO, Layout, dashboard, target, thresholds
from telemetry.artifacts.promql import m, slo
from telemetry.artifacts.recording import LATENCY
from telemetry.catalog import HOOK_LATENCY_BUDGETS_S, HOOKS


def build() -> dict:
    L = Layout()
    bucket = m("memhealth_hook_duration_seconds_bucket")
    for hook in HOOKS:
        budget = HOOK_LATENCY_BUDGETS_S[hook]
        sel = f'{bucket}{{{INST},hook="{hook}"}}'
        L.add(f"{hook}: duration vs {budget:g} s budget", "timeseries", [
            target(f"histogram_quantile({q}, sum by (le) (rate({sel}[$__rate_interval])))",
                    f"p{int(q * 100)}") for q in (0.5, 0.95, 0.99)],
            f"Quantiles of completed {hook} hook runs; the red line is the latency SLO budget.",
            w=8, unit="s",
            defaults={"custom": {"thresholdsStyle": {"mode": "line"}},
                      "thresholds": thresholds(("green", None), ("red", budget))})
    error_budget = 1 - slo("hook-latency").objective
    L.add("Hook latency SLO: share of runs over budget", "timeseries", [
        target(f"{LATENCY.name('ratio', '1h')}{{{INST}}}", f"1h {WHO}"),
        target(f"{LATENCY.name('ratio', '6h')}{{{INST}}}", f"6h {WHO}"),
        target(f"{LATENCY.name('ratio', '3d')}{{{INST}}}", f"3d {WHO}")],
        f"Completed hook runs over their budget (recording rules); the budget is "
        f"{error_budget:.0%}. A cold embedding start inhibits these alerts.", w=8,
        unit="percentunit",
        defaults={"custom": {"thresholdsStyle": {"mode": "line"}},
                  "thresholds": thresholds(("green", None), ("red", round(error_budget, 6)))})
    rsel = f"{m('memhealth_retrieval_duration_seconds_bucket')}{{{INST}}}"
    L.add("Retrieval latency (prompt path)", "timeseries", [
        target(f"histogram_quantile({q}, sum by (le) (rate({rsel}[$__rate_interval])))",
                f"p{int(q * 100)}") for q in (0.5, 0.95, 0.99)],
        "Memory search on the prompt hook: BM25, vector or hybrid.", unit="s")
    L.add("Retrievals per second", "timeseries", [target(
        f"sum(rate({m('memhealth_retrieval_duration_seconds_count')}{{{INST}}}[$__rate_interval]))",
        "retrievals")], "How often the prompt path searched (intent-bearing prompts).", w=6,
        unit="ops")
    L.add("Embedding probe and warm-up", "timeseries", [
        target(f"max({m('memhealth_embedding_probe_duration_seconds')}{{{INST}}})", "probe"),
        target(f"max({m('memhealth_embedding_warmup_seconds')}{{{INST}}})", "warm-up")],
        "Latest probe wall time and the warm-up of the latest cold start (0 when warm).", w=6,
        unit="s")
    return dashboard("memhealth-latency", "memhealth / Latency",
                      "Hook duration quantiles against each hook's budget; retrieval latency.", L)
