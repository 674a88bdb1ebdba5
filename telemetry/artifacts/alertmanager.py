"""Alertmanager routing: severities to serve's alert budget, the Watchdog and the target-down
alert to receivers outside serve, and inhibitions scoped so one alert mutes only its own kind.

    alertmanager_config(SERVE_URL, WATCHDOG_URL, SERVE_DOWN_URL)   # alerts/alertmanager.yml

Why outside: serve's /alerts is where pages are budgeted, so it is the natural receiver for
everything serve can watch. It cannot watch itself: a dead man's switch whose receiver is serve
ends inside what it watches, and "serve is down" cannot be delivered to serve. Those two go to
a healthchecks-style service (a ping keeps a check up; `/fail` marks another one down).
"""

from __future__ import annotations

from telemetry.artifacts.alerts import GATE_CHECK_ALERT, TARGET_DOWN_ALERT, WATCHDOG_ALERT

SERVE_URL = "http://127.0.0.1:9464/alerts"
COMPOSE_SERVE_URL = "http://memhealth:9464/alerts"
# healthchecks.io ping URLs by slug (https://hc-ping.com/<ping key>/<check slug>): replace the
# key with your project's (`memhealth generate --watchdog-url … --serve-down-url …`). Two
# checks, because a Watchdog ping every few minutes would mark a shared check up again.
WATCHDOG_URL = "https://hc-ping.com/YOUR-PING-KEY/memhealth-watchdog"
SERVE_DOWN_URL = "https://hc-ping.com/YOUR-PING-KEY/memhealth-serve-down/fail"


def alertmanager_config(url: str = SERVE_URL, watchdog_url: str = WATCHDOG_URL,
                        serve_down_url: str = SERVE_DOWN_URL) -> dict:
    """The whole Alertmanager configuration, with serve's webhook at `url`."""
    hook = {"url": url, "send_resolved": True, "max_alerts": 0}
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            # unknown severities become tickets: paging must be declared (probes/budget.py)
            "receiver": "ticket",
            "group_by": ["alertname", "instance", "project"],
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
                {"receiver": "serve-down", "matchers": [f'alertname="{TARGET_DOWN_ALERT}"'],
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
             "equal": ["instance", "project", "alertname", "check"]},
            # a cold start explains slow hooks: no latency alert while it lasts (cold is not dead)
            {"source_matchers": ['alertname="MemhealthEmbeddingColdStart"'],
             "target_matchers": ['slo="hook-latency"'],
             "equal": ["instance", "project"]},
            # a dedicated alert (labelled with the gate check it explains) says more than the
            # generic RED of that check: one notification, the specific one
            {"source_matchers": [f'alertname!="{GATE_CHECK_ALERT}"', 'check=~".+"'],
             "target_matchers": [f'alertname="{GATE_CHECK_ALERT}"'],
             "equal": ["instance", "project", "check"]},
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
