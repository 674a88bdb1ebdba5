"""Alertmanager routing: severities to serve's alert budget, the Watchdog, the target-down and
the project-not-served alerts to receivers outside serve, and inhibitions scoped so one alert
mutes only its own kind.

    alertmanager_config(SERVE_URL, WATCHDOG_URL, SERVE_DOWN_URL)   # alerts/alertmanager.yml
    team_alertmanager_config(("team-a", "team-b"))                # compose/team/alertmanager.yml

Why outside: serve's /alerts is where pages are budgeted, so it is the natural receiver for
everything serve can watch. It cannot watch itself: a dead man's switch whose receiver is serve
ends inside what it watches, and "serve is down" cannot be delivered to serve; nor can "serve
--all cannot read this project", whose budget and sinks are that project's. Those go to a
healthchecks-style service (a ping keeps a check up; `/fail` marks another one down).
"""

from __future__ import annotations

import re

from telemetry.artifacts.alerts import (
    BUDGET_DOWN_ALERT,
    GATE_CHECK_ALERT,
    PROJECT_NOT_SERVED_ALERT,
    TARGET_DOWN_ALERT,
    WATCHDOG_ALERT,
)
from telemetry.artifacts.promql import TOPOLOGY_LABELS

SERVE_URL = "http://127.0.0.1:9464/alerts"
COMPOSE_SERVE_URL = "http://memhealth:9464/alerts"
# healthchecks.io ping URLs by slug (https://hc-ping.com/<ping key>/<check slug>): replace the
# key with your project's (`memhealth generate --watchdog-url … --serve-down-url …`). Two
# checks, because a Watchdog ping every few minutes would mark a shared check up again.
WATCHDOG_URL = "https://hc-ping.com/YOUR-PING-KEY/memhealth-watchdog"
SERVE_DOWN_URL = "https://hc-ping.com/YOUR-PING-KEY/memhealth-serve-down/fail"
# The team topology's central alert budget: a `memhealth serve` of its own in compose/team/,
# on TLS with a bearer token; Alertmanager reads both from the git-ignored secrets/ beside its
# config (relative paths resolve against the config file's directory)
BUDGET_URL = "https://alert-budget:9464/alerts"
BUDGET_HTTP_CONFIG = {"authorization": {"type": "Bearer", "credentials_file": "secrets/alert-budget.token"},
                      "tls_config": {"ca_file": "secrets/ca.pem"},
                      "follow_redirects": False}
# Example teams (`memhealth generate --team NAME`, repeated, names yours): the `team` external
# label each developer's Prometheus agent sends, one page and one ticket route each
TEAMS = ("team-a", "team-b")
TEAM_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
# the budget routes every config has; serve counts any receiver outside its closed set of
# routes ([alerts].routes) as "unknown", so the central serve is told every team's routes
BASE_ROUTES = ("page", "ticket", "watchdog", "null", "default")


def alertmanager_config(url: str = SERVE_URL, watchdog_url: str = WATCHDOG_URL,
                        serve_down_url: str = SERVE_DOWN_URL) -> dict:
    """The whole Alertmanager configuration, with serve's webhook at `url`."""
    hook = {"url": url, "send_resolved": True, "max_alerts": 0}
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            # unknown severities become tickets: paging must be declared (probes/budget.py)
            "receiver": "ticket",
            "group_by": ["alertname", *TOPOLOGY_LABELS, "instance", "project"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "12h",
            "routes": [
                # the dead man's switch: a ping every 5 minutes; the check's period (5 min)
                # plus grace says how long silence may last before it alarms
                {"receiver": "deadman", "matchers": [f'alertname="{WATCHDOG_ALERT}"'],
                 "group_wait": "0s", "group_interval": "1m", "repeat_interval": "5m",
                 "continue": True},
                # and, hourly, to serve too: the alert-budget dashboard counts deliveries
                {"receiver": "watchdog", "matchers": [f'alertname="{WATCHDOG_ALERT}"'],
                 "group_wait": "0s", "group_interval": "1m", "repeat_interval": "1h"},
                # and a project serve --all cannot read: serve's /alerts would decide it by that
                # project's budget, which is what is lost, so it goes where serve's death goes
                {"receiver": "serve-down",
                 "matchers": [f'alertname=~"{TARGET_DOWN_ALERT}|{PROJECT_NOT_SERVED_ALERT}"'],
                 "group_wait": "0s", "repeat_interval": "1h"},
                {"receiver": "null", "matchers": ['severity=~"info|none"']},
                {"receiver": "page", "matchers": ['severity=~"critical|page"'],
                 "repeat_interval": "4h"},
                {"receiver": "ticket", "matchers": ['severity=~"warning|ticket"'],
                 "group_wait": "5m", "repeat_interval": "24h"},
            ],
        },
        "inhibit_rules": [
            # a page mutes the ticket of the same alert (the burn tiers, one gate check) on the
            # same project, and nothing else: scoped by alertname, a critical burn alert on the
            # hooks no longer mutes MemhealthHookHeartbeatMissing (another alert, same
            # component). `check` keeps one gate check's page from muting another's ticket
            # (a label both sides lack counts as equal).
            {"source_matchers": ['severity="critical"'],
             "target_matchers": ['severity=~"warning|info"'],
             "equal": [*TOPOLOGY_LABELS, "instance", "project", "alertname", "check"]},
            # (the topology labels keep two machines' `app` projects apart on a central
            # Alertmanager; both sides lack them on a single machine, which counts as equal)
            # a cold start explains slow hooks: no latency alert while it lasts (cold is not dead)
            {"source_matchers": ['alertname="MemhealthEmbeddingColdStart"'],
             "target_matchers": ['slo="hook-latency"'],
             "equal": [*TOPOLOGY_LABELS, "instance", "project"]},
            # a dedicated alert (labelled with the gate check it explains) says more than the
            # generic RED of that check: one notification, the specific one
            {"source_matchers": [f'alertname!="{GATE_CHECK_ALERT}"', 'check=~".+"'],
             "target_matchers": [f'alertname="{GATE_CHECK_ALERT}"'],
             "equal": [*TOPOLOGY_LABELS, "instance", "project", "check"]},
        ],
        # the receiver name is the budget route memhealth serve accounts pages against
        "receivers": [
            {"name": "page", "webhook_configs": [dict(hook)]},
            {"name": "ticket", "webhook_configs": [dict(hook)]},
            {"name": "watchdog", "webhook_configs": [dict(hook, send_resolved=False)]},
            # outside serve. The Watchdog never resolves; for serve-down a resolved
            # notification would be one more /fail, so none is sent
            {"name": "deadman", "webhook_configs": [
                {"url": watchdog_url, "send_resolved": False, "max_alerts": 1}]},
            {"name": "serve-down", "webhook_configs": [
                {"url": serve_down_url, "send_resolved": False, "max_alerts": 0}]},
            {"name": "null"},
        ],
    }


def team_routes(teams: tuple[str, ...]) -> list[str]:
    """Every route the central alert budget accounts pages against, teams' included."""
    return [*BASE_ROUTES, *(f"{t}-{kind}" for t in teams for kind in ("page", "ticket"))]


def check_teams(teams: tuple[str, ...]) -> None:
    """Team names become receiver and route names: lower-case, unique, at least one."""
    if not teams:
        raise ValueError("at least one team is needed")
    for team in teams:
        if not TEAM_NAME.fullmatch(team):
            raise ValueError(f"team {team!r}: use 1-40 of a-z, 0-9, '-' and '_', starting with "
                             "a letter or digit (it is the `team` label and a receiver name)")
    if len(set(teams)) != len(teams):
        raise ValueError("a team is listed twice")


def team_alertmanager_config(teams: tuple[str, ...] = TEAMS, url: str = BUDGET_URL,
                             watchdog_url: str = WATCHDOG_URL,
                             serve_down_url: str = SERVE_DOWN_URL) -> dict:
    """The central Alertmanager of a team topology: the single-machine routing, with one
    subtree per `team` label whose page and ticket receivers are that team's budget routes.

    Every receiver is the central alert budget (`url`), which keeps at most
    [alerts].pages_per_window pages per route per window, so each team gets its own page budget
    and one noisy team cannot spend another's. An alert without a known team (an agent whose
    `team` label is missing or misspelt) still pages, on the shared `page` route."""
    check_teams(teams)
    config = alertmanager_config(url, watchdog_url)
    for receiver in config["receivers"]:
        for webhook in receiver.get("webhook_configs", []):
            if webhook["url"] == url:
                webhook["http_config"] = BUDGET_HTTP_CONFIG
    hook = {"url": url, "send_resolved": True, "max_alerts": 0, "http_config": BUDGET_HTTP_CONFIG}
    routes = config["route"]["routes"]
    generic = {r["receiver"]: r for r in routes}
    # the target-down alert: on a single machine serve cannot receive its own death, so it goes
    # outside; here the receiver is central and the dead serve is on a developer's machine, so
    # it follows its severity like any other alert, inside the team's budget
    routes.remove(generic["serve-down"])
    config["receivers"] = [r for r in config["receivers"] if r["name"] != "serve-down"]
    # the alert budget itself down: no route through it can page, so it goes outside, to the
    # serve-down check, ahead of every team's subtree
    routes.insert(routes.index(generic["watchdog"]) + 1, {
        "receiver": "budget-down", "matchers": [f'alertname="{BUDGET_DOWN_ALERT}"'],
        "group_wait": "0s", "repeat_interval": "1h"})
    config["receivers"].append({"name": "budget-down", "webhook_configs": [
        {"url": serve_down_url, "send_resolved": False, "max_alerts": 0}]})
    at = routes.index(generic["page"])
    for team in teams:
        routes.insert(at, {
            "receiver": f"{team}-ticket", "matchers": [f'team="{team}"'],
            "routes": [dict(generic["page"], receiver=f"{team}-page"),
                       dict(generic["ticket"], receiver=f"{team}-ticket")]})
        at += 1
        config["receivers"] += [{"name": f"{team}-{kind}", "webhook_configs": [dict(hook)]}
                                for kind in ("page", "ticket")]
    return config


def budget_env(teams: tuple[str, ...] = TEAMS) -> str:
    """The central alert budget serve's environment (compose env_file): its closed set of
    routes, so every team's receiver is a budget of its own rather than "unknown"."""
    check_teams(teams)
    return ("# Generated by `memhealth generate`: the central alert budget's routes, one page and "
            "one ticket route per team.\n"
            f"MEMHEALTH_ALERTS_ROUTES={','.join(team_routes(teams))}\n")
