"""Recording rules: the two SLIs (hook success, hook latency within budget) per window, and
the per-hook hourly counts the heartbeat alert reads.

    recording_groups()     # [{"name": ..., "rules": [{"record": ..., "expr": ...}, ...]}, ...]
    SUCCESS.name("ratio", "1h")   # 'instance_project:memhealth_hook_failures_per_invocation:ratio_rate1h'
"""

from __future__ import annotations

from dataclasses import dataclass

from telemetry.artifacts.promql import BY, HOOK_SELECTOR, TOPOLOGY_LABELS, le, m
from telemetry.catalog import HOOK_LATENCY_BUDGETS_S, HOOKS
from telemetry.slo import WINDOWS

# the level part of a record name is its grouping labels joined by "_" (level:metric:operations),
# less the topology labels: kubernetes-mixin leaves its `cluster` label out of record names the
# same way, so the names stay those of a single machine (dashboards and runbooks keep working)
NAME_LEVEL = "_".join(label for label in BY.split(", ") if label not in TOPOLOGY_LABELS)
INVOCATIONS_1H = f"{NAME_LEVEL}_hook:memhealth_hook_invocations:increase1h"
SUCCESSES_1H = f"{NAME_LEVEL}_hook:memhealth_hook_successes:increase1h"


@dataclass
class SliRules:
    """Record names of one SLO: total and bad event rates and their ratio, per window."""

    slo: str
    total: str
    bad: str
    ratio: str

    def name(self, kind: str, window: str) -> str:
        metric = getattr(self, kind)
        op = f"ratio_rate{window}" if kind == "ratio" else f"rate{window}"
        return f"{NAME_LEVEL}:{metric}:{op}"


SUCCESS = SliRules("hook-success", "memhealth_hook_invocations", "memhealth_hook_failures",
                   "memhealth_hook_failures_per_invocation")
LATENCY = SliRules("hook-latency", "memhealth_hook_duration_seconds_count",
                   "memhealth_hook_over_budget", "memhealth_hook_over_budget_per_completion")


def _within_budget(window: str) -> str:
    """Completed hook runs within their own budget: one bucket per budget group, or'ed
    (series differ by hook and le, so `or` keeps them all)."""
    groups: dict[float, list[str]] = {}
    for hook in HOOKS:
        groups.setdefault(HOOK_LATENCY_BUDGETS_S[hook], []).append(hook)
    parts = [f'rate({m("memhealth_hook_duration_seconds_bucket")}{{hook=~"{"|".join(hooks)}",'
             f'le="{le(bound)}"}}[{window}])'
             for bound, hooks in sorted(groups.items())]
    return f"sum by ({BY}) (\n  " + "\n  or ".join(parts) + "\n)"


def recording_groups() -> list[dict]:
    """The rule groups of recording rules, in file order."""
    inv = m("memhealth_hook_invocations_total")
    count = m("memhealth_hook_duration_seconds_count")
    success, latency = [], []
    for w in WINDOWS:
        # numerator and denominator aggregated separately; the ratio divides the sums and
        # is empty (not NaN) when nothing ran: idle never compares a 0/0.
        success += [
            {"record": SUCCESS.name("total", w),
             "expr": f"sum by ({BY}) (rate({inv}{{{HOOK_SELECTOR}}}[{w}]))"},
            {"record": SUCCESS.name("bad", w),
             "expr": f'sum by ({BY}) (rate({inv}{{{HOOK_SELECTOR},outcome!="ok"}}[{w}]))'},
            {"record": SUCCESS.name("ratio", w),
             "expr": f"{SUCCESS.name('bad', w)}\n/ ({SUCCESS.name('total', w)} > 0)"},
        ]
        latency += [
            {"record": LATENCY.name("total", w),
             "expr": f"sum by ({BY}) (rate({count}{{{HOOK_SELECTOR}}}[{w}]))"},
            {"record": LATENCY.name("bad", w),
             "expr": f"{LATENCY.name('total', w)}\n- {_within_budget(w)}"},
            {"record": LATENCY.name("ratio", w),
             "expr": f"{LATENCY.name('bad', w)}\n/ ({LATENCY.name('total', w)} > 0)"},
        ]
    heartbeat = [
        {"record": INVOCATIONS_1H,
         "expr": f"sum by ({BY}, hook) (increase({inv}{{{HOOK_SELECTOR}}}[1h]))"},
        {"record": SUCCESSES_1H,
         "expr": f'sum by ({BY}, hook) (increase({inv}{{{HOOK_SELECTOR},outcome="ok"}}[1h]))'},
    ]
    return [
        {"name": "memhealth-slo-hook-success-recordings", "rules": success},
        {"name": "memhealth-slo-hook-latency-recordings", "rules": latency},
        {"name": "memhealth-heartbeat-recordings", "rules": heartbeat},
    ]


def recorded_names() -> set[str]:
    """Every series name a recording rule defines."""
    return {r["record"] for g in recording_groups() for r in g["rules"]}
