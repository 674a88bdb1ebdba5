"""The shipped artifacts derived from the metric catalog, and the driver that writes them.

    files = artifacts()                    # {"alerts/memhealth.rules.yaml": "...", ...}
    write(repo_root)                       # what `memhealth generate` does
    stale(repo_root)                       # ["alerts/memhealth.rules.yaml: differs ...", ...]
    artifacts(Options(runbook_url="https://git.example.com/memhealth/-/blob/main/alerts/runbook.md"))

One module per artifact, the kubernetes-mixin and sloth way: `recording` (SLI recording
rules), `alerts` (alerting rules), `alertmanager` (routing), `promtool` (rule unit tests),
`dashboards/` (one module per dashboard over `dashboards/layout.py`), with selectors in
`promql` and the windows and thresholds shared with the gate in `telemetry/slo.py`.

Generated (and checked for freshness): dashboards/*.json, alerts/memhealth.rules.yaml,
alerts/tests/*.test.yaml, alerts/alertmanager.yml, compose/alertmanager.yml, and the team
topology's compose/team/alertmanager.yml, compose/team/central.rules.yaml and
compose/team/alert-budget.env. Hand-written and
committed as they are: alerts/runbook.md, dashboards/provisioning/, the rest of compose/.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass

from telemetry.artifacts.alertmanager import (
    COMPOSE_SERVE_URL,
    SERVE_DOWN_URL,
    SERVE_URL,
    TEAMS,
    WATCHDOG_URL,
    alertmanager_config,
    budget_env,
    check_teams,
    team_alertmanager_config,
)
from telemetry.artifacts.alerts import alerts, central_rule_groups, rule_groups
from telemetry.artifacts.dashboards import dashboards
from telemetry.artifacts.promtool import promtool_tests
from telemetry.artifacts.recording import recorded_names
from telemetry.artifacts.render import to_json, to_yaml

# Where alerts' runbook links point: `memhealth serve` shows the runbook at /runbook on the
# machine the alert is about (serve's default listen address), so a link in Alertmanager or
# Grafana opens with nothing else to host. A team that hosts it elsewhere (a wiki, its forge)
# sets `memhealth generate --runbook-url URL` (and checks with the same flag).
RUNBOOK_URL = "http://127.0.0.1:9464/runbook"

# Directories every file of which is generated: a leftover file there is reported, because
# Grafana provisions every JSON in dashboards/ and promtool runs every test file.
GENERATED_DIRS = ("dashboards", "alerts/tests")

__all__ = ["Options", "alerts", "artifacts", "dashboards", "recorded_names", "stale", "write",
           "RUNBOOK_URL", "SERVE_URL", "WATCHDOG_URL", "SERVE_DOWN_URL", "TEAMS"]


@dataclass(frozen=True)
class Options:
    """What an operator may set at generate time: where runbook links and the two receivers
    outside serve (the Watchdog's dead man's switch, the target-down alert) point, and the
    teams of a team topology (its central Alertmanager routes each `team` label apart)."""

    runbook_url: str = RUNBOOK_URL
    watchdog_url: str = WATCHDOG_URL
    serve_down_url: str = SERVE_DOWN_URL
    teams: tuple[str, ...] = TEAMS

    def __post_init__(self) -> None:
        check_teams(self.teams)
        for name in ("runbook_url", "watchdog_url", "serve_down_url"):
            value = getattr(self, name)
            parts = urllib.parse.urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
                raise ValueError(f"{name} must be an absolute http(s) URL without a #fragment, "
                                 f"not {value!r}")


def artifacts(options: Options | None = None) -> dict[str, str]:
    """Every generated file: repository-relative path → exact content."""
    opts = options or Options()
    files: dict[str, str] = {}
    for name, dash in dashboards().items():
        files[f"dashboards/{name}.json"] = to_json(dash)
    files["alerts/memhealth.rules.yaml"] = to_yaml({"groups": rule_groups(opts.runbook_url)})
    for path, data in promtool_tests(opts.runbook_url).items():
        files[path] = to_yaml(data)
    files["alerts/alertmanager.yml"] = to_yaml(
        alertmanager_config(SERVE_URL, opts.watchdog_url, opts.serve_down_url))
    # the compose stack's copy differs only in where serve is (a test holds them to that)
    files["compose/alertmanager.yml"] = to_yaml(
        alertmanager_config(COMPOSE_SERVE_URL, opts.watchdog_url, opts.serve_down_url))
    # the team topology's central side: per-team routes into the central alert budget
    files["compose/team/alertmanager.yml"] = to_yaml(
        team_alertmanager_config(opts.teams, watchdog_url=opts.watchdog_url,
                                 serve_down_url=opts.serve_down_url))
    files["compose/team/central.rules.yaml"] = to_yaml({"groups": central_rule_groups(opts.runbook_url)})
    files["compose/team/alert-budget.env"] = budget_env(opts.teams)
    return files


def write(out_dir: str, options: Options | None = None, extra: dict[str, str] | None = None) -> list[str]:
    """Write every artifact (and the `extra` files: the application's reference docs) under
    out_dir; returns the paths whose content changed."""
    changed = []
    for rel, content in {**artifacts(options), **(extra or {})}.items():
        path = os.path.join(out_dir, rel)
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == content:
                    continue
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
        os.replace(tmp, path)  # a reader (Grafana's provisioner) never sees half a file
        changed.append(rel)
    return changed


def stale(out_dir: str, options: Options | None = None, extra: dict[str, str] | None = None) -> list[str]:
    """'path: reason' for every artifact (and `extra` file) missing or different under out_dir,
    and for files in the generated directories the generator does not produce."""
    expected = {**artifacts(options), **(extra or {})}
    problems = []
    for rel, content in expected.items():
        try:
            with open(os.path.join(out_dir, rel), encoding="utf-8", newline="") as fh:
                if fh.read() != content:
                    problems.append(f"{rel}: differs from the generator's output")
        except FileNotFoundError:
            problems.append(f"{rel}: missing")
    for top in GENERATED_DIRS:
        base = os.path.join(out_dir, top)
        names = os.listdir(base) if os.path.isdir(base) else []
        for name in names:  # not recursive: dashboards/provisioning/ is hand-written
            rel = f"{top}/{name}"
            if (os.path.isfile(os.path.join(base, name)) and rel not in expected
                    and not name.startswith(".")):
                problems.append(f"{rel}: not produced by the generator")
    return sorted(problems)
