"""Alert budget: what serve's budget did with Alertmanager's notifications."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import INST, Layout, dashboard, target, thresholds
from telemetry.artifacts.promql import m


def build() -> dict:
    L = Layout()
    dec = m("memhealth_alert_decisions_total")
    L.add("Pages left in this window", "stat", [target(
        f"min by (route) ({m('memhealth_alert_budget_remaining')}{{{INST}}})", "{{route}}",
        instant=True)],
        "Per route: pages the budget still allows in the current window (default 2 per 12 h).",
        w=8, h=6, defaults={"thresholds": thresholds(("red", None), ("orange", 1), ("green", 2))},
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background",
                 "textMode": "value_and_name"})
    L.add("Decisions in range", "bargauge", [target(
        f"sum by (decision) (increase({dec}{{{INST}}}[$__range]))", "{{decision}}",
        instant=True)],
        "paged, folded (over budget, into the digest), deduped, noted (tickets, info, resolved).",
        w=8, h=6, options={"orientation": "horizontal", "displayMode": "basic",
                           "reduceOptions": {"calcs": ["lastNotNull"]}})
    L.add("Watchdog deliveries in range", "stat", [target(
        f'sum(increase({dec}{{{INST},route="watchdog"}}[$__range]))', "watchdog", instant=True)],
        "MemhealthWatchdog notifications serve received: zero means the alerting pipeline is "
        "not delivering.", w=8, h=6,
        defaults={"thresholds": thresholds(("red", None), ("green", 1))},
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"})
    L.add("Decisions by route", "timeseries", [target(
        f"sum by (route, decision) (increase({dec}{{{INST}}}[$__rate_interval]))",
        "{{route}} {{decision}}")], "Every alert serve's /alerts received, and its fate.", w=24,
        options={"legend": {"displayMode": "table", "placement": "right"}})
    return dashboard("memhealth-alert-budget", "memhealth / Alert budget",
                      "What the alert budget did with Alertmanager's notifications.", L)
