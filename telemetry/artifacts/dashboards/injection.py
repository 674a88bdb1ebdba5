"""Injection decisions: the precision-gated cascade as a funnel."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import INST, Layout, dashboard, target
from telemetry.artifacts.promql import m

FUNNEL = (  # the injection cascade, cheapest gate first (memory_core/inject.py, hooks)
    ("prompts", ()),
    ("not a machine turn", ("system_turn",)),
    ("with intent", ("system_turn", "no_intent")),
    ("relevant (IDF gate)", ("system_turn", "no_intent", "below_relevance")),
    ("within session caps", ("system_turn", "no_intent", "below_relevance", "capped")),
)


def build() -> dict:
    L = Layout()
    dec = m("memhealth_injection_decisions_total")
    targets = []
    for stage, excluded in FUNNEL:
        matcher = f',outcome!~"{"|".join(excluded)}"' if excluded else ""
        targets.append(target(f"sum(increase({dec}{{{INST}{matcher}}}[$__range]))", stage,
                              instant=True))
    targets.append(target(f'sum(increase({dec}{{{INST},outcome="injected"}}[$__range]))',
                          "injected", instant=True))
    L.add("Injection cascade (funnel)", "bargauge", targets,
          "Prompts surviving each gate of the cascade, cheapest first: system-turn exemption, "
          "intent, IDF relevance, session caps, then injected (the rest of the last stage was "
          "suppressed by injection = \"off\").", w=24, h=9,
          options={"orientation": "horizontal", "displayMode": "basic", "showUnfilled": True,
                   "reduceOptions": {"calcs": ["lastNotNull"]}, "valueMode": "color"},
          defaults={"min": 0, "color": {"mode": "continuous-GrYlRd"}})
    L.add("Decisions by outcome", "timeseries", [target(
        f"sum by (outcome) (rate({dec}{{{INST}}}[$__rate_interval]))", "{{outcome}}")],
        "Every prompt writes one decision, injected or not (the denominator).", unit="ops",
        options={"legend": {"displayMode": "table"}},
        defaults={"custom": {"stacking": {"mode": "normal"}, "fillOpacity": 40}})
    L.add("Injected share of prompts (dashboard range)", "stat", [target(
        f'sum(increase({dec}{{{INST},outcome="injected"}}[$__range]))\n'
        f"/ (sum(increase({dec}{{{INST}}}[$__range])) > 0)", "injected", instant=True)],
        "Silence is the default: most prompts should inject nothing.", unit="percentunit",
        options={"reduceOptions": {"calcs": ["lastNotNull"]}})
    L.add("Agent memory tool calls (MCP)", "timeseries", [target(
        f"sum by (tool, outcome) (increase({m('memhealth_mcp_calls_total')}{{{INST}}}"
        f"[$__rate_interval]))", "{{tool}} {{outcome}}")],
        "What the agent asked for itself through `memhealth mcp` (search, remember, cues), "
        "beside what the hooks delivered unasked.", w=24, h=7)
    return dashboard("memhealth-injection", "memhealth / Injection decisions",
                      "The precision-gated injection cascade as a funnel.", L)
