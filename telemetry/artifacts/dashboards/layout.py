"""What every memhealth dashboard shares: the data source, the project variable, targets,
panels laid out on Grafana's grid, and the dashboard shell (Grafana classic JSON, schema 39).

    L = Layout()
    L.add("Title", "timeseries", [target("sum(rate(x[$__rate_interval]))", "x")], "What it shows.")
    dashboard("memhealth-x", "memhealth / X", "Description.", L)
"""

from __future__ import annotations

from telemetry.artifacts.promql import HOOK_SELECTOR, m

DS = {"type": "prometheus", "uid": "${datasource}"}
# every panel selects by every variable; single-project serve has no `project` label, a single
# machine no `team` or `machine` (the team topology's agents add them), and the all value `.*`
# matches an absent label, so the same dashboards serve every topology
INST = 'team=~"$team",machine=~"$machine",instance=~"$instance",project=~"$project"'
REF_IDS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# a legend naming one project's series: Grafana leaves an absent label empty, so a single
# machine reads "127.0.0.1:9464 app" and a central Prometheus "alice 127.0.0.1:9464 app"
WHO = "{{machine}} {{instance}} {{project}}"


def target(expr: str, legend: str = "", ref: str | None = None, instant: bool = False) -> dict:
    """One PromQL query of a panel; `ref` pins its refId, otherwise the layout assigns one."""
    return {"datasource": DS, "refId": ref, "expr": expr, "legendFormat": legend or "__auto",
            "range": not instant, "instant": instant}


class Layout:
    """Panels in reading order on Grafana's 24-column grid, ids unique per dashboard."""

    def __init__(self):
        self.panels: list[dict] = []
        self.x = self.y = self.row_h = 0

    def add(self, title: str, kind: str, targets: list[dict], description: str, *, w: int = 12,
            h: int = 8, unit: str = "short", options: dict | None = None,
            defaults: dict | None = None, overrides: list | None = None) -> None:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        # a pinned refId is kept (a panel's transformations or overrides may name it); the
        # others take the first letters not pinned
        pinned = [t["refId"] for t in targets if t["refId"]]
        if len(set(pinned)) != len(pinned):
            raise ValueError(f"{title}: refId pinned twice: {pinned}")
        free = iter(r for r in REF_IDS if r not in pinned)
        for t in targets:
            if not t["refId"]:
                t["refId"] = next(free)
        field_defaults = {"unit": unit, **(defaults or {})}
        self.panels.append({
            "id": len(self.panels) + 1, "type": kind, "title": title, "description": description,
            "datasource": DS, "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
            "targets": targets,
            "fieldConfig": {"defaults": field_defaults, "overrides": overrides or []},
            "options": options or {},
        })
        self.x += w
        self.row_h = max(self.row_h, h)


def dashboard(uid: str, title: str, description: str, layout: Layout) -> dict:
    """The dashboard shell around a layout: fixed uid, data source and project variables."""
    return {
        "uid": uid, "title": title, "description": description, "tags": ["memhealth"],
        "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1,
        "time": {"from": "now-6h", "to": "now"}, "timezone": "", "refresh": "1m",
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "links": [{"title": "memhealth", "type": "dashboards", "tags": ["memhealth"],
                   "asDropdown": True, "includeVars": True, "keepTime": True}],
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "refresh": 1, "regex": "",
             "includeAll": False, "multi": False},
            # the team topology (a central Prometheus fed by developers' agents): which team,
            # whose machine; empty on a single machine, where All (`.*`) matches the absence
            _variable("team", "Team", "memhealth_build_info", "", "team"),
            _variable("machine", "Machine", "memhealth_build_info", 'team=~"$team"', "machine"),
            _variable("instance", "Project (serve instance)", "memhealth_hook_invocations_total",
                      'team=~"$team",machine=~"$machine"', "instance"),
            # serve --all: one target, many projects, told apart by the `project` label
            _variable("project", "Project (serve --all)", "memhealth_build_info",
                      'team=~"$team",machine=~"$machine",instance=~"$instance"', "project"),
        ]},
        "panels": layout.panels,
    }


def _variable(name: str, label: str, metric: str, selector: str, of: str) -> dict:
    """A multi-value query variable over one label, All = `.*` (which matches an absent one)."""
    series = m(metric) + (f"{{{selector}}}" if selector else "")
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": f"label_values({series}, {of})",
            "query": {"query": f"label_values({series}, {of})",
                      "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "current": {}, "hide": 0, "includeAll": True, "allValue": ".*", "multi": True,
            "refresh": 2, "regex": "", "sort": 1}


def thresholds(*steps) -> dict:
    """Absolute thresholds from (color, value) steps; the first value is None (base)."""
    return {"mode": "absolute",
            "steps": [{"color": c, "value": v} for c, v in steps]}


OK, KILLED = ',outcome="ok"', ',outcome="killed"'


def inv_sel(extra: str = "") -> str:
    """Hook invocations of the selected projects, hooks only (not serve's gate)."""
    return f"{m('memhealth_hook_invocations_total')}{{{INST},{HOOK_SELECTOR}{extra}}}"
