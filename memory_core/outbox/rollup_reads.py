"""Reads of the metric rollups (written by memory_core.outbox.rollups on every write): what
the collector serves and the console totals, without a GROUP BY over the history.

    every_rollup(conn)                                   # [(metric, labels JSON, value)]
    rollups_of(conn, "memhealth_injection_decisions_total")   # [(labels JSON, value)]
"""

from __future__ import annotations


def every_rollup(conn) -> list[tuple[str, str, float]]:
    return conn.execute("SELECT metric, labels, value FROM rollups").fetchall()


def rollups_of(conn, metric: str) -> list[tuple[str, float]]:
    """[(labels JSON, value)] of one metric."""
    return conn.execute("SELECT labels, value FROM rollups WHERE metric = ?", (metric,)).fetchall()


def rollups_among(conn, metrics: list[str]) -> list[tuple[str, str, float]]:
    """[(metric, labels JSON, value)] of these metrics, by metric and labels."""
    marks = ",".join("?" * len(metrics))
    return conn.execute(f"SELECT metric, labels, value FROM rollups WHERE metric IN ({marks}) "
                        "ORDER BY metric, labels", list(metrics)).fetchall()


def exemplars(conn) -> list[tuple]:
    """[(metric, labels JSON, trace_id, value, ts_ns)]: the latest trace per histogram bucket."""
    return conn.execute("SELECT metric, labels, trace_id, value, ts_ns FROM rollup_exemplars").fetchall()
