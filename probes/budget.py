"""The alert budget: which Alertmanager alerts become pages, and which fold into a digest.

    decisions = decide(conn, webhook["alerts"], now=time.time(), cfg=cfg)
    [d.to_dict() for d in decisions]     # one per alert, plus a meta-alert or digest at most

Every alert class declares a severity (page | ticket | note), an actionable fix, and a
budget: at most `alerts.pages_per_window` pages per route per `alerts.window_h` (default 2
per 12 h: the SRE book's incident load, an incident taking about six hours). Windows are
fixed shifts aligned to the Unix epoch, so "the window rolled over" is one comparison.

Decision order for each alert (deterministic with an injected `now`):
  resolved                                   → noted
  same fingerprint decided within repeat_s   → deduped
  cold, optional, note or ticket severity    → noted   (cold is not dead; optional is not broken)
  page without a fix                         → noted   (a page must be actionable)
  page within budget                         → paged
  page over budget                           → folded into the window's digest; the first fold
                                               of a window raises exactly one meta-alert naming
                                               the noisiest class
When the first alert of a new window arrives, the previous window's digest (if anything
folded) is returned once with `decision == "digest"`. Every decision is an
`alert_decisions` row and bumps `memhealth_alert_decisions_total{route,decision}`;
`memhealth_alert_budget_remaining{route}` is kept current.
"""

from __future__ import annotations

import json
import math

from memory_core.outbox import alert_log, rollups
from memory_core.store.db import write
from memory_core.store.meta import get_meta, set_meta
from probes.errors import AlertPayloadError

try:
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

SEVERITIES = ("page", "ticket", "note")
# Alertmanager / mixin severities → ours (the kubernetes-mixin convention: critical = page, warning = ticket,
# info = not routed). An unknown severity is a ticket: paging must be declared.
SEVERITY_MAP = {"critical": "page", "page": "page", "error": "page",
                "warning": "ticket", "ticket": "ticket",
                "info": "note", "none": "note", "note": "note"}
NEVER_PAGE_STATES = frozenset({"cold", "not_configured", "optional"})
META_ALERTNAME = "MemhealthAlertBudgetExhausted"
DEFAULT_ROUTE = "default"
UNKNOWN_ROUTE = "unknown"  # every receiver outside [alerts].routes: one series, one shared budget


class AlertClass:
    """What an alert class declares: severity, an actionable fix, an optional budget of its
    own (pages per window; None = the route's), and whether it may never page.

        CLASSES["MemhealthEmbeddingCold"] = AlertClass("MemhealthEmbeddingCold", "note",
            "wait for the warm-up; nothing to do", never_page="cold")
    """

    __slots__ = ("name", "severity", "fix", "pages_per_window", "never_page")

    def __init__(self, name: str, severity: str, fix: str = "", pages_per_window: int | None = None,
                 never_page: str | None = None):
        if severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
        self.name = name
        self.severity = severity
        self.fix = fix
        self.pages_per_window = pages_per_window
        self.never_page = never_page  # a reason ("cold", "optional") or None


# Declared classes win over what an alert's labels say.
CLASSES: dict[str, AlertClass] = {
    META_ALERTNAME: AlertClass(META_ALERTNAME, "page",
                               "read the digest; fix or re-tune the noisiest alert it names"),
}


class Decision:
    """One alert's fate (or the meta-alert / digest the policy raised itself)."""

    __slots__ = ("ts", "route", "alertname", "fingerprint", "severity", "status", "decision",
                 "detail", "fix", "meta", "digest")

    def __init__(self, ts: float, route: str, alertname: str, fingerprint: str, severity: str,
                 status: str, decision: str, detail: str, fix: str = "", meta: bool = False,
                 digest: dict | None = None):
        self.ts = ts
        self.route = route
        self.alertname = alertname
        self.fingerprint = fingerprint
        self.severity = severity
        self.status = status
        self.decision = decision
        self.detail = detail
        self.fix = fix
        self.meta = meta
        self.digest = digest

    def to_dict(self) -> dict:
        out = {name: getattr(self, name) for name in self.__slots__}
        if out["digest"] is None:
            del out["digest"]
        return out

    def __repr__(self) -> str:
        return f"Decision({self.alertname!r}, {self.decision!r}, route={self.route!r})"


def classify(alert: dict) -> AlertClass:
    """The declared class of an alert, or one derived from its labels and annotations:
    `severity`, `state`/`class` (cold, optional, not_configured never page), `optional`,
    and the fix from annotations `fix`, else `runbook_url`."""
    labels = alert.get("labels") or {}
    annotations = alert.get("annotations") or {}
    name = str(labels.get("alertname", "")) or "unnamed"
    declared = CLASSES.get(name)
    if declared is not None:
        return declared
    severity = SEVERITY_MAP.get(str(labels.get("severity", "")).lower(), "ticket")
    never = None
    for key in ("state", "class", "kind"):
        value = str(labels.get(key, "")).lower()
        if value in NEVER_PAGE_STATES:
            never = value
            break
    if never is None and str(labels.get("optional", "")).lower() in ("true", "1", "yes"):
        never = "optional"
    fix = str(annotations.get("fix") or annotations.get("runbook_url") or "")
    return AlertClass(name, severity, fix, never_page=never)


def fingerprint(labels: dict) -> str:
    """Alertmanager sends one; without it, a stable hash of the sorted labels."""
    text = json.dumps(labels, sort_keys=True, separators=(",", ":"), default=str)
    return _blake2b(text.encode(), digest_size=8).hexdigest()


def window_start(now: float, cfg: dict) -> float:
    size = cfg["alerts"]["window_h"] * 3600.0
    return math.floor(now / size) * size


def _ns(t: float) -> int:
    return int(round(t * 1e9))


def pages_used(conn, route: str, start: float, end: float, alertname: str | None = None) -> int:
    """Pages (meta-alerts excluded) sent on `route` in [start, end]."""
    return alert_log.pages(conn, route, _ns(start), _ns(end), META_ALERTNAME, alertname)


def digest(conn, route: str, start: float, end: float) -> dict:
    """What folded on `route` in [start, end): counts by alert name, the noisiest first."""
    rows = alert_log.folded_by_alertname(conn, route, _ns(start), _ns(end))
    return {"route": route, "window_start": start, "window_end": end,
            "folded": sum(n for _, n in rows), "by_alertname": {name: n for name, n in rows},
            "noisiest": rows[0][0] if rows else None}


def noisiest(conn, route: str, start: float, end: float) -> tuple[str, int]:
    """The alert name with the most pages and folds on `route` in the window."""
    row = alert_log.noisiest(conn, route, _ns(start), _ns(end), META_ALERTNAME)
    return (row[0], row[1]) if row else ("", 0)


def _store(conn, d: Decision) -> None:
    alert_log.record(conn, _ns(d.ts), d.route, d.alertname, d.fingerprint, d.severity, d.status,
                     d.decision, d.detail)
    rollups.bump(conn, "memhealth_alert_decisions_total", {"route": d.route, "decision": d.decision})


def _digest_due(conn, route: str, now: float, cfg: dict) -> Decision | None:
    """The previous window's digest, once, when the first alert of a new window arrives."""
    size = cfg["alerts"]["window_h"] * 3600.0
    current = window_start(now, cfg)
    key = f"alerts.digest_sent.{route}"
    sent_upto = float(get_meta(conn, key, "0"))
    last = alert_log.last_fold_before(conn, route, _ns(current))
    if last is None or last / 1e9 < sent_upto:
        return None
    start = math.floor((last / 1e9) / size) * size
    summary = digest(conn, route, start, start + size)
    set_meta(conn, key, repr(start + size))
    return Decision(now, route, "digest", f"digest:{route}:{start:.0f}", "note", "firing", "digest",
                    f"{summary['folded']} alert(s) folded in the window; noisiest: {summary['noisiest']}",
                    digest=summary)


DECIDE_BATCH = 100        # alerts decided per write transaction
ALERT_KEEP_ROWS = 5_000   # alert_decisions rows kept besides pages (newest first)


def decide(conn, alerts: list[dict], now: float, cfg: dict, route: str | None = None) -> list[Decision]:
    """Decide every alert of one Alertmanager webhook (v4) delivery; store and count each.

    `route`: the receiving route (the webhook's `receiver`); an alert's `route` label wins,
    else "default". A route outside [alerts].routes is "unknown": the client cannot mint
    series or budgets. Returns the decisions in input order, each meta-alert right after the
    alert that triggered it, a due digest first."""
    if not isinstance(alerts, list) or not all(isinstance(a, dict) for a in alerts):
        raise AlertPayloadError("alerts must be a list of objects (Alertmanager webhook v4)")
    acfg = cfg["alerts"]
    per_window = int(acfg["pages_per_window"])
    start = window_start(now, cfg)
    known = set(acfg.get("routes") or ()) | {DEFAULT_ROUTE}
    out: list[Decision] = []
    routes: set[str] = set()
    # short transactions: a delivery of thousands of alerts must not hold the write lock the
    # hooks need for seconds (each batch is its own transaction; decisions stay in order)
    for at in range(0, len(alerts), DECIDE_BATCH):
        with write(conn):
            _decide_batch(conn, alerts[at:at + DECIDE_BATCH], now, cfg, route, known, start, out, routes)
    with write(conn):
        for r in sorted(routes):
            remaining = max(per_window - pages_used(conn, r, start, now), 0)
            rollups.set_gauge(conn, "memhealth_alert_budget_remaining", float(remaining), {"route": r})
        # retention: the newest rows stay; pages always do (the budget counts them per window)
        alert_log.prune(conn, ALERT_KEEP_ROWS)
    return out


def _decide_batch(conn, alerts, now, cfg, route, known, start, out, routes) -> None:
    """Decide one batch of a delivery inside the caller's write transaction (see decide)."""
    acfg = cfg["alerts"]
    per_window, repeat_s = int(acfg["pages_per_window"]), float(acfg["repeat_s"])
    for alert in alerts:
        labels = alert.get("labels") if isinstance(alert.get("labels"), dict) else {}
        r = str(labels.get("route") or route or DEFAULT_ROUTE)
        if r not in known:  # client text never becomes a label or a budget of its own
            r = UNKNOWN_ROUTE
        if r not in routes:
            routes.add(r)
            due = _digest_due(conn, r, now, cfg)
            if due is not None:
                out.append(due)
        cls = classify(alert)
        fp = str(alert.get("fingerprint") or fingerprint(labels))
        status = str(alert.get("status") or "firing")
        base = (now, r, cls.name, fp, cls.severity, status)
        recent = status == "firing" and alert_log.fired_recently(conn, r, fp, _ns(now - repeat_s))
        meta = None
        if status != "firing":
            d = Decision(*base, "noted", f"{status}: recorded, never a page", cls.fix)
        elif recent:
            d = Decision(*base, "deduped", f"same fingerprint decided within {repeat_s:g} s", cls.fix)
        elif cls.never_page:
            d = Decision(*base, "noted", f"{cls.never_page} never pages", cls.fix)
        elif cls.severity != "page":
            d = Decision(*base, "noted", f"{cls.severity}: recorded, not paged", cls.fix)
        elif not cls.fix:
            d = Decision(*base, "noted", "not actionable (no fix or runbook_url): a page must be "
                         "actionable", cls.fix)
        else:
            used = pages_used(conn, r, start, now)
            class_ok = cls.pages_per_window is None or \
                pages_used(conn, r, start, now, cls.name) < cls.pages_per_window
            if used < per_window and class_ok:
                d = Decision(*base, "paged", f"page {used + 1} of {per_window} in this window", cls.fix)
            else:
                d = Decision(*base, "folded", f"over budget ({per_window} pages per "
                             f"{acfg['window_h']:g} h): folded into the window's digest", cls.fix)
        _store(conn, d)
        out.append(d)
        if d.decision == "folded":
            meta = _meta_alert(conn, r, start, now)
            if meta is not None:
                _store(conn, meta)
                out.append(meta)


def _meta_alert(conn, route: str, start: float, now: float) -> Decision | None:
    """Exactly one meta-alert per route and window: the first fold raises it."""
    if alert_log.decided_since(conn, route, META_ALERTNAME, _ns(start)):
        return None
    name, count = noisiest(conn, route, start, now)
    cls = CLASSES[META_ALERTNAME]
    return Decision(now, route, META_ALERTNAME, f"budget:{route}:{start:.0f}", "page", "firing", "paged",
                    f"alert budget exhausted on route {route}: further pages fold into a digest; "
                    f"noisiest: {name} ({count} alert(s) this window)", cls.fix, meta=True)
