"""The alert budget, after Alertmanager's acceptance tests: alerts arrive at scripted times,
and the decisions are asserted. Real SQLite; the clock is injected."""

from __future__ import annotations

import pytest

from memhealth.config import defaults
from memory_core.store.db import connect
from probes import budget
from probes.errors import AlertPayloadError

HOUR = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % (12 * HOUR))  # the start of a 12 h window


@pytest.fixture
def conn(tmp_path):
    c = connect(tmp_path / "memory.db")
    yield c
    c.close()


@pytest.fixture
def cfg():
    return defaults()


def alert(name: str, severity: str = "critical", fp: str | None = None, status: str = "firing",
          fix: str = "restart the thing", **labels) -> dict:
    annotations = {"summary": name, "description": name}
    if fix:
        annotations["fix"] = fix
    return {"status": status, "labels": {"alertname": name, "severity": severity, **labels},
            "annotations": annotations, "fingerprint": fp or f"fp-{name}-{len(labels)}",
            "startsAt": "2026-09-19T00:00:00Z"}


def play(conn, cfg, script) -> list[tuple[str, str]]:
    """Deliver (offset seconds, alert) pairs in order; return (alertname, decision) pairs."""
    got = []
    for offset, a in script:
        got += [(d.alertname, d.decision) for d in budget.decide(conn, [a], T0 + offset, cfg)]
    return got


def rollup(conn, metric, **labels):
    import json

    row = conn.execute("SELECT value FROM rollups WHERE metric = ? AND labels = ?",
                       (metric, json.dumps(labels, sort_keys=True, separators=(",", ":")))).fetchone()
    return row[0] if row else None


def test_cold_embedding_never_pages_even_at_critical_severity(conn, cfg):
    got = play(conn, cfg, [(0, alert("EmbeddingCold", state="cold")),
                           (60, alert("EmbeddingOptional", optional="true"))])
    assert got == [("EmbeddingCold", "noted"), ("EmbeddingOptional", "noted")]
    assert budget.pages_used(conn, "default", T0, T0 + HOUR) == 0


def test_third_page_in_twelve_hours_folds_and_raises_one_meta_alert_naming_the_noisiest(conn, cfg):
    got = play(conn, cfg, [
        (0, alert("HookErrors", fp="a1")),
        (1 * HOUR, alert("HookErrors", fp="a2")),
        (2 * HOUR, alert("IngestStale", fp="b1")),
        (3 * HOUR, alert("HookErrors", fp="a3")),
        (4 * HOUR, alert("IngestStale", fp="b2")),
    ])
    assert got == [("HookErrors", "paged"), ("HookErrors", "paged"),
                   ("IngestStale", "folded"), (budget.META_ALERTNAME, "paged"),
                   ("HookErrors", "folded"), ("IngestStale", "folded")]
    meta = conn.execute("SELECT detail FROM alert_decisions WHERE alertname = ?",
                        (budget.META_ALERTNAME,)).fetchall()
    assert len(meta) == 1 and "noisiest: HookErrors" in meta[0][0]
    assert rollup(conn, "memhealth_alert_decisions_total", route="default", decision="folded") == 3
    assert rollup(conn, "memhealth_alert_budget_remaining", route="default") == 0


def test_a_repeat_of_the_same_fingerprint_within_repeat_s_is_deduped(conn, cfg):
    cfg["alerts"]["repeat_s"] = 600.0
    got = play(conn, cfg, [(0, alert("HookErrors", fp="x")), (300, alert("HookErrors", fp="x")),
                           (900, alert("HookErrors", fp="x"))])
    assert got == [("HookErrors", "paged"), ("HookErrors", "deduped"), ("HookErrors", "paged")]


def test_the_budget_window_rolls_over_and_the_old_windows_digest_is_delivered_once(conn, cfg):
    script = [(i * HOUR, alert("HookErrors", fp=f"a{i}")) for i in range(4)]
    first = play(conn, cfg, script)
    assert [d for _, d in first].count("paged") == 2 + 1  # two pages and the meta-alert
    decisions = budget.decide(conn, [alert("HookErrors", fp="next")], T0 + 12 * HOUR + 60, cfg)
    assert [(d.decision, d.alertname) for d in decisions] == [("digest", "digest"),
                                                               ("paged", "HookErrors")]
    assert decisions[0].digest["folded"] == 2 and decisions[0].digest["noisiest"] == "HookErrors"
    again = budget.decide(conn, [alert("IngestStale", fp="n2")], T0 + 13 * HOUR, cfg)
    assert [d.decision for d in again] == ["paged"]  # no second digest
    assert rollup(conn, "memhealth_alert_budget_remaining", route="default") == 0


def test_warning_is_a_ticket_and_a_page_without_a_fix_is_not_actionable(conn, cfg):
    got = play(conn, cfg, [(0, alert("Slow", severity="warning")), (1, alert("Vague", fix=""))])
    assert got == [("Slow", "noted"), ("Vague", "noted")]
    assert "not actionable" in conn.execute(
        "SELECT detail FROM alert_decisions WHERE alertname = 'Vague'").fetchone()[0]


def test_routes_have_separate_budgets_and_resolved_alerts_are_noted(conn, cfg):
    cfg["alerts"]["pages_per_window"] = 1
    cfg["alerts"]["routes"] = ["team1", "team2"]  # the closed set: other routes are "unknown"
    got = play(conn, cfg, [(0, alert("A", route="team1")), (1, alert("B", route="team2")),
                           (2, alert("A", status="resolved", route="team1"))])
    assert got == [("A", "paged"), ("B", "paged"), ("A", "noted")]


def test_a_route_outside_the_closed_set_is_unknown_and_shares_one_budget(conn, cfg):
    cfg["alerts"]["pages_per_window"] = 2
    got = play(conn, cfg, [(i, alert(f"A{i}", route=f"client text {i} <script>")) for i in range(6)])
    assert [d for _, d in got if d == "paged"] == ["paged"] * 3  # two pages and one meta-alert
    routes = {r for (r,) in conn.execute("SELECT DISTINCT route FROM alert_decisions")}
    assert routes == {"unknown"}


def test_every_decision_is_a_row(conn, cfg):
    play(conn, cfg, [(i, alert("A", fp=f"f{i}")) for i in range(5)])
    (n,) = conn.execute("SELECT count(*) FROM alert_decisions").fetchone()
    assert n == 5 + 1  # five alerts and the meta-alert


def test_a_payload_that_is_not_a_list_of_alerts_is_refused(conn, cfg):
    with pytest.raises(AlertPayloadError):
        budget.decide(conn, {"alerts": []}, T0, cfg)
