"""A real OTLP/HTTP receiver for tests: a stdlib ThreadingHTTPServer on 127.0.0.1 decoding
ExportTraceServiceRequest and ExportMetricsServiceRequest protobuf (plain or gzip).

    with OtlpReceiver() as rx:             # rx.endpoint == "http://127.0.0.1:<port>"
        ...export...
        rx.spans                           # [ReceivedSpan], in arrival order
        rx.down(); rx.up()                 # same port: connection refused, then back
        rx.mode = "hang"                   # accept and never answer (a wedged collector)
        rx.mode = "slow"                   # record, then acknowledge after rx.slow_s

There is no OpenTelemetry Collector in Debian; this is what the tests
export to.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _any_value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def attrs(kvs) -> dict:
    return {kv.key: _any_value(kv.value) for kv in kvs}


class ReceivedSpan:
    """One decoded span: hex ids, timestamps, attributes, its resource's attributes."""

    __slots__ = ("trace_id", "span_id", "parent_span_id", "name", "kind", "start_ns", "end_ns",
                 "attributes", "events", "status_code", "status_message", "resource", "scope")

    def __init__(self, span, resource: dict, scope: str):
        self.trace_id = span.trace_id.hex()
        self.span_id = span.span_id.hex()
        self.parent_span_id = span.parent_span_id.hex() or None
        self.name = span.name
        self.kind = span.kind
        self.start_ns = span.start_time_unix_nano
        self.end_ns = span.end_time_unix_nano
        self.attributes = attrs(span.attributes)
        self.events = [(e.name, e.time_unix_nano, attrs(e.attributes)) for e in span.events]
        self.status_code = span.status.code
        self.status_message = span.status.message
        self.resource = resource
        self.scope = scope

    def __repr__(self) -> str:
        return f"ReceivedSpan({self.name!r}, {self.span_id})"


class OtlpReceiver:
    """Start on 127.0.0.1:0 (or a given port); switch up/down; record what arrives."""

    def __init__(self, port: int = 0):
        self.port = port
        self.mode = "ok"  # ok | hang | error (HTTP 503) | slow (records, acknowledges after slow_s)
        self.slow_s = 2.0
        self.spans: list[ReceivedSpan] = []
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.requests: list[tuple[str, str]] = []  # (path, content-encoding)
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = None
        self._thread = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                with receiver._lock:
                    receiver.requests.append((self.path, encoding))
                if receiver.mode == "hang":
                    receiver._release.wait(60)
                    return
                if receiver.mode == "error":
                    self._reply(503, b"unavailable")
                    return
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path.endswith("/v1/traces"):
                    req = ExportTraceServiceRequest.FromString(body)
                    got = []
                    for rs in req.resource_spans:
                        resource = attrs(rs.resource.attributes)
                        for ss in rs.scope_spans:
                            got.extend(ReceivedSpan(s, resource, ss.scope.name) for s in ss.spans)
                    with receiver._lock:
                        receiver.spans.extend(got)
                    if receiver.mode == "slow":  # took the data; the acknowledgement comes late
                        receiver._release.wait(receiver.slow_s)
                    self._reply(200, ExportTraceServiceResponse().SerializeToString())
                elif self.path.endswith("/v1/metrics"):
                    req = ExportMetricsServiceRequest.FromString(body)
                    with receiver._lock:
                        receiver.metric_requests.append(req)
                    self._reply(200, ExportMetricsServiceResponse().SerializeToString())
                else:
                    self._reply(404, b"not found")

            def _reply(self, code: int, data: bytes):
                self.send_response(code)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._release.clear()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def down(self) -> None:
        """Stop listening: the port refuses connections until up() binds it again."""
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = None

    def metrics(self) -> dict[str, list]:
        """Metric name -> data points of the latest metrics request."""
        out: dict[str, list] = {}
        if not self.metric_requests:
            return out
        for rm in self.metric_requests[-1].resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    kind = m.WhichOneof("data")
                    out[m.name] = (kind, list(getattr(m, kind).data_points), m)
        return out

    def __enter__(self) -> OtlpReceiver:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


class GrpcOtlpReceiver:
    """The same for OTLP/gRPC: a grpcio server on 127.0.0.1 with the trace and metrics services.

        with GrpcOtlpReceiver() as rx:     # rx.endpoint == "http://127.0.0.1:<port>"
            ...
    """

    def __init__(self):
        self.spans: list[ReceivedSpan] = []
        self.metric_requests: list[ExportMetricsServiceRequest] = []
        self.port = 0
        self._server = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> GrpcOtlpReceiver:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        receiver = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request, context):
                for rs in request.resource_spans:
                    resource = attrs(rs.resource.attributes)
                    for ss in rs.scope_spans:
                        receiver.spans.extend(ReceivedSpan(s, resource, ss.scope.name) for s in ss.spans)
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request, context):
                receiver.metric_requests.append(request)
                return ExportMetricsServiceResponse()

        self._server = grpc.server(ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def down(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)
            self._server = None

    def __enter__(self) -> GrpcOtlpReceiver:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()
