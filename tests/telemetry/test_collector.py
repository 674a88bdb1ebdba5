"""The Prometheus collector reads rollups and small tables, exports every catalog metric
with zeros for known series, survives a locked store, and passes `promtool check metrics`."""

from __future__ import annotations

import subprocess
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from memory_core.outbox import decisions, heartbeat, rollups, spans
from memory_core.store.db import connect, load_vec, write
from telemetry.catalog import HOOK_OUTCOMES, HOOKS, INJECTION_OUTCOMES, METRICS
from telemetry.collector import StoreCollector
from tests.conftest import require_binary


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "memory.db")
    conn = connect(path)
    yield path, conn
    conn.close()


def scrape(path, **kw):
    registry = CollectorRegistry()
    collector = StoreCollector(path, **kw)
    registry.register(collector)
    return registry, collector


def invoke(conn, hook, outcome="ok", seconds=0.02, reason=None):
    start = time.time_ns() - int(seconds * 1e9)
    hb = heartbeat.start(conn, hook, "s1", started_ns=start)
    heartbeat.finish(conn, hb, hook, start, outcome, reason=reason,
                            ended_ns=start + int(seconds * 1e9))


def test_registering_the_collector_never_touches_the_database(tmp_path):
    path = tmp_path / "absent.db"
    registry = CollectorRegistry(auto_describe=True)  # as the default REGISTRY does
    collector = StoreCollector(str(path))
    registry.register(collector)
    assert not path.exists() and collector.errors == 0


def test_every_catalog_metric_is_exposed_with_its_type(db):
    path, _conn = db
    registry, _ = scrape(path)
    text = generate_latest(registry).decode()
    families = {f.name: f.type for f in text_string_to_metric_families(text)}
    for metric in METRICS:
        name = metric.name[:-len("_total")] if metric.type == "counter" else metric.name
        assert families.get(name) == metric.type, metric.name


def test_closed_label_vocabularies_are_exported_as_zero_before_anything_happened(db):
    path, _conn = db
    registry, _ = scrape(path)
    for hook in HOOKS:
        for outcome in HOOK_OUTCOMES:
            assert registry.get_sample_value(
                "memhealth_hook_invocations_total", {"hook": hook, "outcome": outcome}) == 0.0
        assert registry.get_sample_value(
            "memhealth_hook_duration_seconds_bucket", {"hook": hook, "le": "+Inf"}) == 0.0
    for outcome in INJECTION_OUTCOMES:
        assert registry.get_sample_value("memhealth_injection_decisions_total", {"outcome": outcome}) == 0.0
    assert registry.get_sample_value("memhealth_retrieval_duration_seconds_count") == 0.0


def test_counters_and_histograms_match_what_was_recorded_with_cumulative_buckets(db):
    path, conn = db
    invoke(conn, "prompt", seconds=0.003)
    invoke(conn, "prompt", seconds=0.03)
    invoke(conn, "prompt", seconds=0.3)
    invoke(conn, "stop", "error", reason="db_locked")
    registry, _ = scrape(path)
    get = registry.get_sample_value
    assert get("memhealth_hook_invocations_total", {"hook": "prompt", "outcome": "ok"}) == 3
    assert get("memhealth_hook_invocations_total", {"hook": "stop", "outcome": "error"}) == 1
    bucket = {le: get("memhealth_hook_duration_seconds_bucket", {"hook": "prompt", "le": le})
              for le in ("0.005", "0.01", "0.05", "0.25", "0.5", "60.0", "+Inf")}
    assert bucket == {"0.005": 1, "0.01": 1, "0.05": 2, "0.25": 2, "0.5": 3, "60.0": 3, "+Inf": 3}
    assert get("memhealth_hook_duration_seconds_count", {"hook": "prompt"}) == 3
    assert get("memhealth_hook_duration_seconds_sum", {"hook": "prompt"}) == pytest.approx(0.333, abs=1e-3)
    assert get("memhealth_hook_last_success_timestamp_seconds", {"hook": "prompt"}) == pytest.approx(
        time.time(), abs=5)


def test_a_started_heartbeat_whose_process_is_gone_is_counted_killed_at_scrape(db):
    path, conn = db
    with write(conn):
        conn.execute("INSERT INTO heartbeats(hook, pid, started_ns) VALUES ('prompt', 999999999, ?)",
                     (time.time_ns() - 10 * 10 ** 9,))
    registry, _ = scrape(path)
    assert registry.get_sample_value(
        "memhealth_hook_invocations_total", {"hook": "prompt", "outcome": "killed"}) == 1


def test_gauges_come_from_chunks_watermarks_the_latest_gate_run_and_the_outbox(db):
    path, conn = db
    now = time.time_ns()
    with write(conn):
        for i, source in enumerate(["docs", "docs", "git"]):
            conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                         "VALUES (?, ?, 'x', ?, ?)", (source, f"f{i}", f"h{i}", now))
        conn.execute("INSERT INTO watermarks(source, path, updated_ns) VALUES ('docs', 'a', ?)",
                     (now - 120 * 10 ** 9,))
        conn.execute("INSERT INTO watermarks(source, path, updated_ns) VALUES ('docs', 'b', ?)",
                     (now - 60 * 10 ** 9,))
        for run_id, status in ((1, "green"), (2, "red")):
            conn.execute("INSERT INTO gate_runs(id, ts_ns, total, green, red, verdict) "
                         "VALUES (?, ?, 2, 1, 1, 'red')", (run_id, now))
            conn.execute("INSERT INTO gate_checks(run_id, name, status) VALUES (?, 'ingest_freshness', ?)",
                         (run_id, status))
            conn.execute("INSERT INTO gate_checks(run_id, name, status, state) "
                         "VALUES (?, 'embedding', 'note', 'cold')", (run_id,))
        conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) "
                     "VALUES ('ab', 'cd', 'x', 1, 2)")
    registry, _ = scrape(path)
    get = registry.get_sample_value
    assert get("memhealth_chunks", {"source": "docs"}) == 2
    assert get("memhealth_chunks", {"source": "git"}) == 1
    assert get("memhealth_vector_coverage_ratio") == 0.0
    assert get("memhealth_ingest_watermark_age_seconds", {"source": "docs"}) == pytest.approx(60, abs=5)
    assert get("memhealth_ingest_last_timestamp_seconds", {"source": "docs"}) == (now - 60 * 10 ** 9) / 1e9
    assert get("memhealth_gate_check_status", {"check": "ingest_freshness"}) == 2
    assert get("memhealth_gate_check_status", {"check": "embedding"}) == 1
    # the enum convention: one 0/1 series per status, exactly one 1 per check
    state = {(check, status): get("memhealth_gate_check_state", {"check": check, "status": status})
             for check in ("ingest_freshness", "embedding") for status in ("green", "note", "red")}
    assert state == {("ingest_freshness", "green"): 0, ("ingest_freshness", "note"): 0,
                     ("ingest_freshness", "red"): 1, ("embedding", "green"): 0,
                     ("embedding", "note"): 1, ("embedding", "red"): 0}
    assert get("memhealth_embedding_state", {"state": "cold"}) == 1
    assert get("memhealth_embedding_state", {"state": "ok"}) == 0
    assert get("memhealth_outbox_backlog_spans") == 1
    assert get("memhealth_export_last_success_timestamp_seconds") == 0


def test_a_scrape_reads_no_raw_heartbeat_rows_beyond_the_open_row_index(db):
    path, conn = db
    invoke(conn, "prompt")
    statements = []
    from telemetry.collector import read_families

    conn.set_trace_callback(statements.append)
    read_families(conn, killed_after_s=900.0)
    conn.set_trace_callback(None)
    touching = [s for s in statements if "heartbeats" in s]
    assert touching == ["SELECT id, hook, pid, started_ns FROM heartbeats WHERE outcome IS NULL"]
    plan = conn.execute("EXPLAIN QUERY PLAN " + touching[0]).fetchall()
    assert any("heartbeats_open" in row[-1] for row in plan), plan


def test_a_locked_store_serves_the_last_good_values_and_counts_a_scrape_error(db, monkeypatch):
    import telemetry.collector as collector_module

    path, conn = db
    invoke(conn, "prompt")
    conn.close()
    registry, collector = scrape(path, busy_timeout_s=0.2, deadline_s=0.5)
    assert registry.get_sample_value(
        "memhealth_hook_invocations_total", {"hook": "prompt", "outcome": "ok"}) == 1
    waits_s = []  # the lock wait each scrape's connection is opened with

    def connect_recording(*args, **kw):
        waits_s.append(kw.get("busy_timeout_s"))
        return connect(*args, **kw)

    monkeypatch.setattr(collector_module, "connect", connect_recording)
    locker = connect(path)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    locker.execute("INSERT INTO meta(key, value) VALUES ('lock', 'held')")
    try:
        value = registry.get_sample_value(
            "memhealth_hook_invocations_total", {"hook": "prompt", "outcome": "ok"})
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert value == 1
    # it met the lock (released only after the scrape returned) and gave up after the one
    # 0.2 s wait it was configured with, rather than waiting for the lock
    assert waits_s == [0.2]
    assert collector.errors == 1 and "locked" in collector.last_error
    assert registry.get_sample_value("memhealth_scrape_errors_total") >= 1


def test_label_sets_that_do_not_match_the_catalog_are_not_exported(db):
    path, conn = db
    with write(conn):
        rollups.bump(conn, "memhealth_degradations_total",
                    {"component": "embed", "reason": "timeout", "path": "/home/secret"})
        rollups.bump(conn, "memhealth_degradations_total", {"component": "embed", "reason": "timeout"})
    registry, _ = scrape(path)
    text = generate_latest(registry).decode()
    assert "/home/secret" not in text
    assert registry.get_sample_value(
        "memhealth_degradations_total", {"component": "embed", "reason": "timeout"}) == 1


def test_promtool_check_metrics_passes_on_the_exposition(db):
    promtool = require_binary("promtool")
    path, conn = db
    invoke(conn, "prompt")
    invoke(conn, "session-start", "error", reason="config")
    with write(conn):
        decisions.insert_decision(conn, {"hook": "prompt", "outcome": "injected", "retrieval_ms": 4.0})
        decisions.insert_degradation(conn, "embed", "unreachable")
        rollups.bump(conn, "memhealth_alert_decisions_total", {"route": "pager", "decision": "paged"})
        rollups.set_gauge(conn, "memhealth_alert_budget_remaining", 1, {"route": "pager"})
    registry, _ = scrape(path)
    text = generate_latest(registry)
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    assert text.decode().count("\nmemhealth_") > 100


def test_build_info_names_the_versions_serving_the_metrics(db):
    import platform
    from importlib import metadata

    path, conn = db
    registry, _ = scrape(path)
    (sqlite_version,) = conn.execute("SELECT sqlite_version()").fetchone()
    assert load_vec(conn)
    (vec_version,) = conn.execute("SELECT vec_version()").fetchone()
    info = [s for f in registry.collect() if f.name == "memhealth_build_info" for s in f.samples]
    assert len(info) == 1 and info[0].value == 1
    from telemetry.export import instance_id

    assert info[0].labels == {"version": metadata.version("memhealth"),
                              "python": platform.python_version(), "sqlite": sqlite_version,
                              "sqlite_vec": vec_version, "instance_id": instance_id()}


def openmetrics_buckets(registry, hook):
    """{le: exemplar or None} of one hook's duration buckets, parsed from an OpenMetrics scrape."""
    from prometheus_client.openmetrics.exposition import generate_latest as om_latest
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

    text = om_latest(registry).decode()
    assert text.endswith("# EOF\n")
    (family,) = [f for f in om_parse(text) if f.name == "memhealth_hook_duration_seconds"]
    return {s.labels["le"]: s.exemplar for s in family.samples
            if s.name.endswith("_bucket") and s.labels["hook"] == hook}


def test_the_openmetrics_scrape_carries_the_latest_trace_id_per_duration_bucket(db):
    path, conn = db
    traces, ended = {}, {}
    for name, seconds in (("first", 0.02), ("second", 0.03), ("slow", 0.7)):
        traces[name] = spans.new_trace_id()
        start = time.time_ns() - 10 ** 9
        ended[name] = start + int(seconds * 1e9)
        hb = heartbeat.start(conn, "prompt", "s1", traces[name], started_ns=start)
        heartbeat.finish(conn, hb, "prompt", start, ended_ns=ended[name])
    registry, _ = scrape(path)
    buckets = openmetrics_buckets(registry, "prompt")
    # 0.02 and 0.03 share the 0.05 bucket: the later one is its exemplar
    assert buckets["0.05"].labels == {"trace_id": traces["second"]}
    assert buckets["0.05"].value == pytest.approx(0.03)
    assert buckets["1.0"].labels == {"trace_id": traces["slow"]}
    assert buckets["1.0"].value == pytest.approx(0.7)
    stamp = buckets["1.0"].timestamp  # the observation's end, not the scrape's time
    assert stamp.sec + stamp.nsec / 1e9 == pytest.approx(ended["slow"] / 1e9, abs=1e-3)
    assert buckets["0.005"] is None and buckets["+Inf"] is None
    assert openmetrics_buckets(registry, "stop")["0.05"] is None
    # the plain text format has no exemplars and still parses
    assert "trace_id" not in generate_latest(registry).decode()


def test_an_exemplar_costs_one_row_per_bucket_not_per_invocation(db):
    path, conn = db
    for _ in range(5):
        invoke(conn, "prompt", seconds=0.02)  # invoke() starts heartbeats without a trace id
    assert conn.execute("SELECT count(*) FROM rollup_exemplars").fetchone()[0] == 0
    for _ in range(5):
        start = time.time_ns()
        hb = heartbeat.start(conn, "prompt", "s1", spans.new_trace_id(), started_ns=start)
        heartbeat.finish(conn, hb, "prompt", start, ended_ns=start + 20_000_000)
    assert conn.execute("SELECT metric, labels FROM rollup_exemplars").fetchall() == [
        ("memhealth_hook_duration_seconds_bucket", '{"hook":"prompt","le":"0.025"}')]
