"""PromQL building blocks every renderer shares: catalog-checked names, selectors, bounds.

    m("memhealth_hook_duration_seconds_bucket")   # the name, or KeyError if not in the catalog
    le(1.0)                                         # '1.0', the label client_python writes
"""

from __future__ import annotations

from telemetry.catalog import CATALOG, HOOKS, SLOS

# Hooks only: serve's scheduled gate leaves heartbeats as hook="gate" every probe interval, so
# an unfiltered selector would make an idle project look busy (and count the gate in the SLO).
HOOK_SELECTOR = 'hook=~"' + "|".join(HOOKS) + '"'
# Per-project aggregation level: one `memhealth serve` target per project.
LEVEL = "instance"
# The labels a team's Prometheus agents attach as external labels (compose/team/): on a central
# Prometheus every developer's serve is instance="127.0.0.1:9464", and two developers may both
# have a project `app`, so (instance, project) alone would sum two people's hooks into one
# series. A single machine has neither label, and an absent label groups as one value.
TOPOLOGY_LABELS = ("team", "machine")
# What rules aggregate by: the topology labels, the target and, under `serve --all` (one
# target, many projects), the `project` label; single-project serve has no such label.
BY = ", ".join((*TOPOLOGY_LABELS, LEVEL, "project"))


def m(name: str) -> str:
    """A catalog metric name; KeyError here means an expression names an unknown metric."""
    base = name
    for suffix in ("_bucket", "_count", "_sum"):
        if name.endswith(suffix) and name[: -len(suffix)] in CATALOG:
            base = name[: -len(suffix)]
    if base not in CATALOG:
        raise KeyError(f"{name} is not in telemetry.catalog")
    return name


def le(bound: float) -> str:
    """The `le` label value client_python writes for a bucket bound (floatToGoString)."""
    return repr(float(bound))


def slo(name: str):
    """The catalog SLO called `name`."""
    return next(s for s in SLOS if s.name == name)
