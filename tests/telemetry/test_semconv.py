"""Span shapes checked against the OpenTelemetry semantic conventions package itself (not
strings copied from the spec): DB client spans for store queries under an internal
retrieval span, no sampling attribute misused for the retrieval k, a RED gate verdict that is
not a span error, and a service.instance.id stable across CLI runs."""

from __future__ import annotations

import json
import uuid

from opentelemetry.semconv._incubating.attributes import db_attributes as db_incubating
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv.attributes import db_attributes, service_attributes

from memory_core.index.search import search
from memory_core.outbox.spans import Trace
from memory_core.store.db import connect, write
from probes.gate import run_checks
from probes.result import RED, CheckResult
from telemetry.export import instance_id
from tests.conftest import clean_env, payload, run_cli, run_hook
from tests.support.otlp_receiver import OtlpReceiver

DB_CLIENT_ATTRIBUTES = {db_attributes.DB_SYSTEM_NAME, db_attributes.DB_OPERATION_NAME,
                        db_attributes.DB_COLLECTION_NAME, db_incubating.DB_RESPONSE_RETURNED_ROWS}


def _store(directory):
    conn = connect(str(directory / "memory.db"))
    with write(conn):
        for i, text in enumerate(["the checkpoint stall in the compactor", "replay queue notes"]):
            conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                         "VALUES ('docs', ?, ?, ?, 1)", (f"d{i}.md", text, f"h{i}"))
    return conn  # chunks_fts follows chunks by trigger


def test_a_search_is_an_internal_retrieval_span_over_db_client_spans(tmp_path):
    conn = _store(tmp_path)
    trace = Trace()
    result = search(conn, "checkpoint stall", None, k=3, trace=trace, use_vectors=False)
    assert result.hits
    outer, query = trace.spans
    assert (outer.name, outer.kind, outer.parent_span_id) == ("memory.search", "internal", None)
    assert gen_ai_attributes.GEN_AI_REQUEST_TOP_K not in outer.attributes  # a sampling parameter
    assert outer.attributes["memhealth.search.k"] == 3
    assert query.kind == "client" and query.parent_span_id == outer.span_id
    assert set(query.attributes) == DB_CLIENT_ATTRIBUTES
    attrs = query.attributes
    assert attrs[db_attributes.DB_SYSTEM_NAME] == db_incubating.DbSystemNameValues.SQLITE.value
    # span name `{db.operation.name} {target}` (docs/db/database-spans.md)
    assert query.name == f"{attrs[db_attributes.DB_OPERATION_NAME]} {attrs[db_attributes.DB_COLLECTION_NAME]}"
    assert attrs[db_incubating.DB_RESPONSE_RETURNED_ROWS] >= len(result.hits)


def test_a_search_command_exports_its_db_client_span_as_otlp_kind_client(project, tmp_path):
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan

    _store(project / ".memhealth").close()
    proc = run_cli("search", "checkpoint stall", "--project", str(project))
    assert proc.returncode == 0 and "d0.md" in proc.stdout, proc.stdout + proc.stderr
    with OtlpReceiver() as rx:
        proc = run_cli("export", "--once", "--project", str(project),
                       env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    by_id = {s.span_id: s for s in rx.spans}
    (query,) = [s for s in rx.spans if s.name == "SELECT chunks_fts"]
    assert query.kind == OtlpSpan.SPAN_KIND_CLIENT
    assert set(query.attributes) == DB_CLIENT_ATTRIBUTES
    parent = by_id[query.parent_span_id]
    assert parent.name == "memory.search" and parent.kind == OtlpSpan.SPAN_KIND_INTERNAL
    assert all(gen_ai_attributes.GEN_AI_REQUEST_TOP_K not in s.attributes for s in rx.spans)


def test_a_red_verdict_is_not_a_span_error_but_a_probe_that_raises_is(tmp_path):
    def red(_ev):
        return CheckResult(RED, "the store is 9 days stale", "run `memhealth ingest`")

    def broken(_ev):
        raise OSError("disk gone")

    trace = Trace()
    results = run_checks(None, [("stale", red), ("broken", broken)], trace=trace)
    assert [r.status for r in results] == [RED, RED]
    spans = {s.name: s for s in trace.spans}
    assert spans["probe stale"].status_code == "unset"
    assert spans["probe stale"].attributes["memhealth.check.status"] == "red"
    assert spans["probe broken"].status_code == "error"
    assert spans["probe broken"].attributes["error.type"] == "OSError"


def test_service_instance_id_is_one_uuid_across_cli_runs_and_never_the_path(project, tmp_path):
    from opentelemetry.semconv._incubating.attributes import (
        service_attributes as service_incubating,
    )

    key = service_incubating.SERVICE_INSTANCE_ID
    assert service_attributes.SERVICE_NAME == "service.name"
    state = tmp_path / "state"
    seen = []
    for event in ("session-start", "prompt"):
        assert run_hook(event, payload(event, project, prompt="hello"), cwd=str(project)).returncode == 0
        with OtlpReceiver() as rx:
            proc = run_cli("export", "--once", "--project", str(project),
                           env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint,
                                         XDG_STATE_HOME=str(state)))
            assert proc.returncode == 0, proc.stdout + proc.stderr
        seen.append(rx.spans[0].resource[key])
    assert seen[0] == seen[1] == str(uuid.UUID(seen[0]))
    assert str(project) not in json.dumps(seen)
    assert (state / "memhealth" / "instance-id").read_text().strip() == seen[0]
    assert instance_id({"XDG_STATE_HOME": str(state)}) == seen[0]
    # another user state (another user or machine) is another instance
    assert instance_id({"XDG_STATE_HOME": str(tmp_path / "other")}) != seen[0]
    # OTEL_RESOURCE_ATTRIBUTES wins, as for every resource attribute
    with OtlpReceiver() as rx:
        assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
        proc = run_cli("export", "--once", "--project", str(project),
                       env=clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=rx.endpoint,
                                     XDG_STATE_HOME=str(state),
                                     OTEL_RESOURCE_ATTRIBUTES=f"{key}=pod-7"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rx.spans[0].resource[key] == "pod-7"
