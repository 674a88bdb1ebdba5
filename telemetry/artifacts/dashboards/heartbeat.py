"""Hook heartbeats: per-hook success, last success age, killed hooks, the success SLO."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import (
    INST,
    KILLED,
    OK,
    WHO,
    Layout,
    dashboard,
    inv_sel,
    target,
    thresholds,
)
from telemetry.artifacts.promql import m, slo
from telemetry.artifacts.recording import SUCCESS


def build() -> dict:
    L = Layout()
    L.add("Success ratio per hook (dashboard range)", "stat", [target(
        f'sum by (hook) (increase({inv_sel(OK)}[$__range]))\n'
        f"/ (sum by (hook) (increase({inv_sel()}[$__range])) > 0)", "{{hook}}", instant=True)],
        "ok / all invocations per hook over the dashboard range; numerator and denominator are "
        "summed separately. No value = the hook did not run.", w=24, h=5, unit="percentunit",
        defaults={"min": 0, "max": 1, "decimals": 2,
                  "thresholds": thresholds(("red", None), ("orange", 0.99), ("green", 0.999))},
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background",
                 "textMode": "value_and_name"})
    L.add("Success ratio per hook", "timeseries", [target(
        f'sum by (hook) (rate({inv_sel(OK)}[$__rate_interval]))\n'
        f"/ (sum by (hook) (rate({inv_sel()}[$__rate_interval])) > 0)", "{{hook}}")],
        "ok / all invocations per hook; gaps are idle periods, not failures.", unit="percentunit",
        defaults={"min": 0, "max": 1})
    L.add("Invocations by outcome", "timeseries", [target(
        f"sum by (outcome) (rate({inv_sel()}[$__rate_interval]))", "{{outcome}}")],
        "Hook invocations per second; killed = started, never completed (timeout).", unit="ops",
        overrides=[{"matcher": {"id": "byName", "options": o},
                    "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": c}}]}
                   for o, c in (("ok", "green"), ("error", "orange"), ("killed", "red"))])
    L.add("Last success age", "stat", [target(
        f"time() - max by (hook) "
        f"({m('memhealth_hook_last_success_timestamp_seconds')}{{{INST}}})", "{{hook}}",
        instant=True)],
        "Seconds since each hook (and serve's scheduled gate) last succeeded. Old is fine while "
        "idle; MemhealthHookHeartbeatMissing fires only while turns are happening.", w=24, h=5,
        unit="s", options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value",
                           "textMode": "value_and_name"})
    L.add("Killed hooks", "timeseries", [target(
        f'sum by (hook) (increase({inv_sel(KILLED)}[$__rate_interval]))',
        "{{hook}}")],
        "Heartbeats that started and never completed (Claude Code killed the hook at its "
        "timeout), per hook.", unit="short", options={"legend": {"displayMode": "table"}})
    budget = 1 - slo("hook-success").objective
    L.add("Hook success SLO: failure ratio vs objective", "timeseries", [
        target(f"{SUCCESS.name('ratio', '1h')}{{{INST}}}", f"1h {WHO}"),
        target(f"{SUCCESS.name('ratio', '6h')}{{{INST}}}", f"6h {WHO}"),
        target(f"{SUCCESS.name('ratio', '3d')}{{{INST}}}", f"3d {WHO}")],
        f"Share of failed or killed hook runs (recording rules); the budget is "
        f"{budget:.1%}. Page tiers fire at 14.4x and 6x that, ticket tiers at 3x and 1x.",
        unit="percentunit",
        defaults={"custom": {"thresholdsStyle": {"mode": "line"}},
                  "thresholds": thresholds(("green", None), ("red", round(budget, 6)))})
    return dashboard("memhealth-heartbeat", "memhealth / Hook heartbeats",
                      "Per-hook success, last success age and killed hooks.", L)
