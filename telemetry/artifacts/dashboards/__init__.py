"""The Grafana dashboards, one module each over a shared layout helper (`layout.py`).

    dashboards()["gate"]["uid"]     # 'memhealth-gate'
"""

from __future__ import annotations

from telemetry.artifacts.dashboards import alert_budget, gate, heartbeat, injection, latency


def dashboards() -> dict[str, dict]:
    """File stem (dashboards/<stem>.json) → dashboard JSON, in a fixed order."""
    return {"heartbeat": heartbeat.build(), "latency": latency.build(),
            "injection": injection.build(), "gate": gate.build(),
            "alert-budget": alert_budget.build()}
