"""OTLP export: recorded spans arrive with their own ids, parents and timestamps, exactly
once; an outage loses nothing; a dead collector costs at most the export timeout; hooks
never touch the network."""

from __future__ import annotations

import json
import socket
import statistics
import time

import pytest

from memhealth.config import load
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, write
from telemetry.export import OtlpExporter, export_once
from tests.conftest import clean_env, payload, run_cli, run_hook
from tests.memhealth.test_capture_worker import wait_for
from tests.support.otlp_receiver import GrpcOtlpReceiver, OtlpReceiver

SESSION = [
    ("session-start", {"source": "startup"}),
    ("prompt", {"prompt": "hello there, how are you"}),
    ("prompt", {"prompt": "let's build the retry queue for the exporter"}),
    ("pre-tool", {"tool_name": "Read", "tool_input": {"file_path": "README.md"}}),
    ("post-tool", {"tool_name": "Read", "tool_input": {"file_path": "README.md"}}),
    ("stop", {}),
    ("session-end", {"reason": "exit"}),
]


def rows(project, sql: str, params=()) -> list[tuple]:
    """Read the store with the driver the code under test uses. Not the stdlib module: two
    SQLite libraries in one process release each other's POSIX locks when one closes the
    file, and a WAL database can then be checkpointed under a live reader ("malformed")."""
    conn = connect(str(project / ".memhealth" / "memory.db"), migrate=False)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def drive_session(project, env=None, events=SESSION):
    for event, fields in events:
        run = run_hook(event, payload(event, project, **fields), cwd=str(project), env=env)
        assert run.returncode == 0
        if event == "session-end":  # its detached capture worker records its own root span
            wait_for(lambda: rows(project, "SELECT 1 FROM heartbeats WHERE hook = 'capture' "
                                           "AND outcome IS NOT NULL"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(project, **env):
    return load(str(project / ".memhealth"),
                environ={f"MEMHEALTH_TELEMETRY_{k.upper()}": str(v) for k, v in env.items()})


def outbox(project):
    return rows(project, "SELECT trace_id, span_id, parent_span_id, name, start_ns, end_ns FROM spans ORDER BY id")


def test_a_scripted_session_arrives_with_its_recorded_ids_timestamps_and_parent_links(project):
    drive_session(project)
    with OtlpReceiver() as rx:
        proc = run_cli("export", "--once", "--project", str(project),
                       env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    recorded = outbox(project)
    assert len(recorded) >= len(SESSION)
    got = {(s.trace_id, s.span_id): s for s in rx.spans}
    assert len(got) == len(rx.spans) == len(recorded)
    for trace_id, span_id, parent, name, start_ns, end_ns in recorded:
        span = got[(trace_id, span_id)]
        assert (span.name, span.parent_span_id, span.start_ns, span.end_ns) == (name, parent, start_ns, end_ns)
    roots = [s for s in rx.spans if s.parent_span_id is None]
    assert sorted(s.name for s in roots) == sorted([f"memhealth.hook {e}" for e, _ in SESSION]
                                                   + ["memhealth.hook capture"])
    by_id = {s.span_id: s for s in rx.spans}
    for span in rx.spans:
        if span.parent_span_id:
            assert by_id[span.parent_span_id].trace_id == span.trace_id
    resource = rx.spans[0].resource
    assert resource["service.name"] == "memhealth"
    assert resource["service.version"]
    assert resource["memhealth.project.id"] and str(project) not in json.dumps(resource)
    assert rows(project, "SELECT value FROM meta WHERE key = 'export.spans.last_id'")[0][0] == str(
        rows(project, "SELECT max(id) FROM spans")[0][0])


def test_a_second_export_sends_nothing_new(project):
    drive_session(project, events=SESSION[:2])
    with OtlpReceiver() as rx:
        conn = connect(str(project / ".memhealth" / "memory.db"))
        cfg = config(project, otlp_endpoint=rx.endpoint)
        first = export_once(conn, cfg)
        second = export_once(conn, cfg)
        conn.close()
    assert first.ok and first.spans_sent == len(outbox(project)) > 0
    assert second.ok and second.spans_sent == 0 and second.backlog == 0
    assert len(rx.spans) == first.spans_sent
    assert len([p for p, _ in rx.requests if p == "/v1/traces"]) == 1


def test_spans_recorded_during_an_outage_arrive_after_it_none_lost_none_duplicated(project):
    rx = OtlpReceiver().up()
    rx.down()  # the port is known and refuses connections
    cfg = config(project, otlp_endpoint=rx.endpoint, export_timeout_s=1.0)
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        drive_session(project, events=SESSION[:3])
        failed = export_once(conn, cfg)
        assert not failed.ok and failed.backlog == len(outbox(project))
        assert "failed" in rows(project, "SELECT value FROM meta WHERE key = 'export.last_error'")[0][0]
        drive_session(project, events=SESSION[3:])
        rx.up()
        shipped = export_once(conn, cfg)
    finally:
        conn.close()
        rx.down()
    assert shipped.ok and shipped.backlog == 0, shipped.error
    recorded = {(t, s) for t, s, *_ in outbox(project)}
    received = [(s.trace_id, s.span_id) for s in rx.spans]
    assert len(received) == len(set(received)) == len(recorded)
    assert set(received) == recorded
    assert rows(project, "SELECT value FROM meta WHERE key = 'export.last_error'")[0][0] == ""


@pytest.mark.parametrize("failure", ["refused", "hang"])
def test_a_dead_or_hung_collector_costs_at_most_the_export_timeout(project, failure):
    drive_session(project, events=SESSION[:2])
    rx = OtlpReceiver().up()
    if failure == "refused":
        rx.down()
    else:
        rx.mode = "hang"
    timeout = 0.5
    cfg = config(project, otlp_endpoint=rx.endpoint, export_timeout_s=timeout)
    conn = connect(str(project / ".memhealth" / "memory.db"))
    try:
        t0 = time.monotonic()
        result = export_once(conn, cfg)
        elapsed = time.monotonic() - t0
    finally:
        conn.close()
        rx.down()
    assert not result.ok
    # the receiver hangs 60 s and the OTel default timeout is 10 s: seconds of slack still
    # tell the configured 0.5 s from either
    assert elapsed < timeout + 3.0, f"{failure}: stalled {elapsed:.3f}s with timeout {timeout}s"
    assert result.backlog == len(outbox(project))


def test_the_export_command_with_a_dead_collector_exits_1_within_its_timeout(project):
    drive_session(project, events=SESSION[:1])
    env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}",
                    MEMHEALTH_TELEMETRY_EXPORT_TIMEOUT_S="1.0")
    t0 = time.monotonic()
    proc = run_cli("export", "--once", "--json", "--project", str(project), env=env)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    # bounded by the configured 1 s (with slack), not the OTel default of 10 s
    assert result["ok"] is False and result["backlog"] > 0 and result["seconds"] < 1.0 + 2.0
    assert elapsed < 1.0 + 5.0  # the timeout plus interpreter start and imports
    assert "Traceback" not in proc.stderr


def test_a_hook_with_the_collector_down_is_as_fast_as_with_it_up(project):
    def median_prompt_seconds(endpoint):
        env = clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=endpoint)
        samples = []
        for _ in range(5):
            run = run_hook("prompt", payload("prompt", project, prompt="hello there"), cwd=str(project),
                           env=env)
            assert run.returncode == 0
            samples.append(run.seconds)
        return statistics.median(samples)

    with OtlpReceiver() as rx:
        up = median_prompt_seconds(rx.endpoint)
    down = median_prompt_seconds(f"http://127.0.0.1:{free_port()}")
    assert rx.requests == []  # the hook never touched the network
    assert down < up * 1.5 + 0.1, f"collector down {down:.3f}s vs up {up:.3f}s"


def test_expired_unexported_spans_are_dropped_counted_and_the_newest_row_is_kept(project):
    conn = connect(str(project / ".memhealth" / "memory.db"))
    old = time.time_ns() - 30 * 86400 * 10 ** 9
    with write(conn):
        for i in range(3):
            trace = Trace()
            with trace.span("old"):
                pass
            trace.spans[0].start_ns = trace.spans[0].end_ns = old + i
            trace.write(conn)
    with OtlpReceiver() as rx:
        result = export_once(conn, config(project, otlp_endpoint=rx.endpoint, retention_days=14))
    (dropped,) = conn.execute("SELECT value FROM rollups WHERE metric = 'memhealth_outbox_dropped_spans_total' "
                              "AND labels = '{\"reason\":\"retention\"}'").fetchone()
    conn.close()
    assert result.dropped == 2 and dropped == 2
    assert len(outbox(project)) == 1  # the newest id stays, so ids never restart below the watermark
    assert len(rx.spans) == 1


def test_prompt_text_is_exported_only_when_content_capture_is_on(project):
    secret = "build the parser for the zanzibar protocol"
    env = clean_env(MEMHEALTH_INJECTION_CAPTURE_CONTENT="true")
    run_hook("prompt", payload("prompt", project, prompt=secret), cwd=str(project), env=env)
    assert any(secret in (a or "") for (a,) in rows(project, "SELECT attributes FROM spans"))
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        export_once(conn, config(project, otlp_endpoint=rx.endpoint))
        with write(conn):
            conn.execute("DELETE FROM meta WHERE key = 'export.spans.last_id'")
        export_once(conn, config(project, otlp_endpoint=rx.endpoint, capture_content="true"))
    conn.close()
    half = len(rx.spans) // 2
    without, with_content = rx.spans[:half], rx.spans[half:]
    assert not any(secret in json.dumps(s.attributes) for s in without)
    assert any(s.attributes.get("memhealth.prompt.text") == secret for s in with_content)
    root = next(s for s in without if s.parent_span_id is None)
    assert root.attributes["memhealth.prompt.hash"] and root.attributes["memhealth.prompt.length"] == len(secret)


def test_metrics_are_exported_from_rollups_as_sums_gauges_and_histograms(project):
    drive_session(project, events=SESSION[:3])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        result = export_once(conn, config(project, otlp_endpoint=rx.endpoint))
    conn.close()
    assert result.ok and result.metrics_sent > 10
    metrics = rx.metrics()
    kind, points, metric = metrics["memhealth.hook.invocations"]
    assert kind == "sum" and metric.sum.is_monotonic
    values = {(p.attributes[0].value.string_value, p.attributes[1].value.string_value): p.as_double
              for p in points}
    assert values[("prompt", "ok")] == 2 and values[("stop", "ok")] == 0
    kind, points, hist = metrics["memhealth.hook.duration"]
    assert hist.unit == "s"
    prompt = next(p for p in points if p.attributes[0].value.string_value == "prompt")
    assert kind == "histogram" and prompt.count == 2 and sum(prompt.bucket_counts) == 2
    assert len(prompt.bucket_counts) == len(prompt.explicit_bounds) + 1
    kind, points, _ = metrics["memhealth.hook.last_success_timestamp"]
    assert kind == "gauge" and len(points) == 3
    assert rx.metric_requests[-1].resource_metrics[0].resource.attributes


def prometheus_name(name: str, unit: str, monotonic_sum: bool, gauge: bool) -> str:
    """Prometheus's OTLP name translation (prometheus/otlptranslator, with suffixes): dots
    to underscores, the unit's suffix unless the name has it, `_ratio` for a unit-1 gauge,
    `_total` for a monotonic sum."""
    out = name.replace(".", "_")
    suffix = {"s": "seconds", "By": "bytes"}.get(unit) or ("ratio" if unit == "1" and gauge else "")
    if suffix and not out.endswith("_" + suffix):
        out += "_" + suffix
    if monotonic_sum and not out.endswith("_total"):
        out += "_total"
    return out


def test_otlp_metric_names_are_dotted_and_translate_back_to_the_scraped_names(project):
    from telemetry.catalog import CATALOG

    drive_session(project, events=SESSION[:3])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        assert export_once(conn, config(project, otlp_endpoint=rx.endpoint)).ok
    conn.close()
    shipped = rx.metrics()
    assert len(shipped) > 20
    translated = set()
    for name, (kind, _points, metric) in shipped.items():
        assert "_total" not in name and not name.endswith("_seconds") and name.count(".") >= 1
        translated.add(prometheus_name(name, metric.unit, kind == "sum" and metric.sum.is_monotonic,
                                       kind == "gauge"))
    assert translated <= set(CATALOG)
    assert {"memhealth_hook_invocations_total", "memhealth_hook_duration_seconds",
            "memhealth_vector_coverage_ratio", "memhealth_build_info"} <= translated


def test_otlp_metrics_off_ships_the_spans_alone(project):
    """compose sets it: Prometheus scrapes that serve, so OTLP metrics would count the store twice."""
    drive_session(project, events=SESSION[:2])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        result = export_once(conn, config(project, otlp_endpoint=rx.endpoint, otlp_metrics="false"))
    conn.close()
    assert result.ok and result.spans_sent == len(rx.spans) > 0
    assert result.metrics_sent == 0
    assert [p for p, _ in rx.requests] == ["/v1/traces"]


def test_gzip_compression_from_the_standard_variable_is_honoured(project, monkeypatch):
    drive_session(project, events=SESSION[:1])
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        result = export_once(conn, config(project, otlp_endpoint=rx.endpoint))
    conn.close()
    assert result.ok and result.spans_sent >= 1
    assert ("/v1/traces", "gzip") in rx.requests
    assert rx.spans[0].name == "memhealth.hook session-start"


def test_otel_service_name_overrides_the_default_service_name(project):
    drive_session(project, events=SESSION[:1])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        exporter = OtlpExporter(config(project, otlp_endpoint=rx.endpoint),
                                environ={"OTEL_SERVICE_NAME": "memhealth-ci"})
        exporter.run_once(conn)
        exporter.shutdown()
    conn.close()
    assert rx.spans[0].resource["service.name"] == "memhealth-ci"


def test_spans_and_metrics_also_ship_over_grpc(project):
    drive_session(project, events=SESSION[:2])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with GrpcOtlpReceiver() as rx:
        result = export_once(conn, config(project, otlp_endpoint=rx.endpoint, otlp_protocol="grpc"))
    conn.close()
    assert result.ok, result.error
    assert {(s.trace_id, s.span_id) for s in rx.spans} == {(t, s) for t, s, *_ in outbox(project)}
    assert rx.metric_requests


def test_otel_sdk_disabled_ships_nothing_and_keeps_the_backlog(project):
    drive_session(project, events=SESSION[:1])
    conn = connect(str(project / ".memhealth" / "memory.db"))
    with OtlpReceiver() as rx:
        exporter = OtlpExporter(config(project, otlp_endpoint=rx.endpoint),
                                environ={"OTEL_SDK_DISABLED": "true"})
        result = exporter.run_once(conn)
        exporter.shutdown()
    conn.close()
    assert result.disabled and result.backlog == len(outbox(project)) and rx.requests == []


def test_grpc_without_its_extra_is_one_line_naming_the_extra(project):
    """The gRPC exporter is the `grpc` extra; an interpreter without it gets told so."""
    import subprocess
    import sys

    # None in sys.modules is how Python spells "not installed" for every import below it
    code = ("import sys\n"
            "for name in [m for m in list(sys.modules) if m.startswith('opentelemetry.exporter.otlp.proto.grpc')]:\n"
            "    del sys.modules[name]\n"
            "sys.modules['opentelemetry.exporter.otlp.proto.grpc'] = None\n"
            "from memhealth.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "export", "--once", "--project", str(project)],
                          cwd=str(project), capture_output=True, text=True, timeout=60,
                          env=clean_env(MEMHEALTH_TELEMETRY_OTLP_PROTOCOL="grpc"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("memhealth export: OTLP over gRPC is configured but its exporter is "
                                  "not installed")
    assert "pip install 'memhealth[grpc]'" in proc.stderr and len(proc.stderr.splitlines()) == 1
