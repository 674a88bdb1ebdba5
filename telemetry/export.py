"""Ship the outbox over OTLP: recorded spans as real OTel SDK spans, rollups as OTel metrics.

    exporter = OtlpExporter(cfg)                 # HTTP/protobuf or gRPC, timeout= from config
    result = exporter.run_once(conn)             # ExportResult(ok, spans_sent, backlog, ...)
    exporter.shutdown()

Hooks never touch the network (DESIGN: one OTLP span to a dead collector stalls a short
process 6.5 s at exit). They write span rows; this module turns each row into an SDK span
with its recorded ids, parent and timestamps (a tracer with an IdGenerator that hands out
the recorded ids) and sends batches synchronously, so it knows what the collector accepted.

Watermark: meta `export.spans.last_id` is the highest span row id the collector has
acknowledged. It advances only after a successful export, so delivery is at-least-once
and, when nothing fails, exactly once. A dead collector leaves the backlog in place; it
ships when the collector returns. Rows older than `telemetry.retention_days` are deleted;
those never exported are counted in `memhealth_outbox_dropped_spans_total{reason="retention"}`.

Every run makes at most one failing network call, bounded by `telemetry.export_timeout_s`
passed as the exporter's constructor `timeout=` (OTEL_EXPORTER_OTLP_TIMEOUT is seconds in
Python but milliseconds in the OpenTelemetry spec). Other OTEL_* variables (headers,
compression, endpoint, service name, resource attributes) are honoured.
"""

from __future__ import annotations

import json
import logging
import os
import time

from memory_core.errors import StoreError
from memory_core.outbox import span_reads
from memory_core.outbox.spans import prune_spans
from memory_core.store.db import sqlite3, write
from memory_core.store.meta import get_meta, init_meta, set_meta
from telemetry.collector import (
    META_EXPORT_LAST_ID,
    META_EXPORT_LAST_SUCCESS,
    Histogram,
    read_families,
)

META_EXPORT_LAST_ERROR = "export.last_error"        # "" after a success, else the message
META_EXPORT_LAST_ERROR_AT = "export.last_error_ns"
META_METRICS_START = "export.metrics.start_ns"
META_PROJECT_ID = "project.id"
DEFAULT_HTTP_ENDPOINT = "http://127.0.0.1:4318"  # IPv4 literal: localhost may resolve to ::1 first
DEFAULT_GRPC_ENDPOINT = "http://127.0.0.1:4317"
CONTENT_SUFFIXES = (".prompt.text", ".query.text")  # attributes carrying user text
BATCH_SIZE = 512
MAX_BATCHES_PER_RUN = 200



class ExportResult:
    """What one export run did; `ok` is False when the collector refused or was unreachable."""

    __slots__ = ("ok", "spans_sent", "metrics_sent", "dropped", "malformed", "backlog", "error",
                 "seconds", "disabled")

    def __init__(self):
        self.ok = True
        self.spans_sent = 0
        self.metrics_sent = 0
        self.dropped = 0
        self.malformed = 0
        self.backlog = 0
        self.error: str | None = None
        self.seconds = 0.0
        self.disabled = False

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


# -- store side: watermark, retention, project id --------------------------------------------


def service_version() -> str:
    """The installed distribution's version (telemetry may not import the application)."""
    from importlib import metadata

    try:
        return metadata.version("memhealth")
    except metadata.PackageNotFoundError:
        return "0+unknown"

INSTANCE_ID_FILE = "instance-id"


def instance_id(environ=None) -> str:
    """service.instance.id: a UUID kept in the per-user state dir
    (`$XDG_STATE_HOME/memhealth/instance-id`), so every CLI run and serve of this user on this
    machine reports the same instance, and nothing in it says where a project lives.

    The first writer wins a race (O_EXCL); an unwritable state dir falls back to a UUID
    derived from /etc/machine-id and the uid (still stable), and only without either to a
    fresh one per process."""
    import uuid

    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(state):  # the XDG spec: a relative value is invalid and ignored
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    path = os.path.join(state, "memhealth", INSTANCE_ID_FILE)
    for _attempt in range(2):
        try:
            with open(path, encoding="ascii") as fh:
                return str(uuid.UUID(fh.read().strip()))
        except (OSError, ValueError):
            pass
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path + f".{os.getpid()}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(str(uuid.uuid4()) + "\n")
            try:
                os.link(path + f".{os.getpid()}", path)  # fails if another process won
            except FileExistsError:
                pass
            finally:
                os.unlink(path + f".{os.getpid()}")
        except OSError:
            break
    try:
        with open("/etc/machine-id", encoding="ascii") as fh:
            machine = fh.read().strip()
    except OSError:
        machine = ""
    if machine:
        return str(uuid.uuid5(uuid.NAMESPACE_OID, f"memhealth:{machine}:{os.getuid()}"))
    return str(uuid.uuid4())


def project_id(conn) -> str:
    """A short random identifier for the project, kept in meta: never the path."""
    value = get_meta(conn, META_PROJECT_ID)
    if value:
        return value
    try:
        with write(conn):
            init_meta(conn, META_PROJECT_ID, os.urandom(6).hex())
    except StoreError:
        return "unknown"
    return get_meta(conn, META_PROJECT_ID) or "unknown"


def watermark(conn) -> int:
    """Highest span row id acknowledged by the collector (0 = none). A value that is not an
    id is not "none": re-sending every span would duplicate them at the collector. It is
    repaired to the newest span (what was already acknowledged cannot be told apart from
    what was not) and recorded as a degradation naming the value."""
    raw = get_meta(conn, META_EXPORT_LAST_ID)
    try:
        value = int(raw or 0)
        if value >= 0:
            return value
    except ValueError:
        pass
    from memory_core.outbox.decisions import insert_degradation
    from memory_core.store.db import write

    with write(conn):
        newest = span_reads.newest_id(conn) or 0
        insert_degradation(conn, "export", "watermark_corrupt",
                           f"{META_EXPORT_LAST_ID} was {str(raw)[:80]!r}: resumed after span {newest}; spans "
                           "recorded before it and not yet exported are not sent")
        set_meta(conn, META_EXPORT_LAST_ID, newest)
    return newest


def backlog(conn) -> int:
    return span_reads.backlog(conn, watermark(conn))


# -- rows to SDK objects ---------------------------------------------------------------------

def _attr_value(value):
    """An OTel attribute value, or None to drop it (OTel allows primitives and lists of one type)."""
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if -(2 ** 63) <= value < 2 ** 63 else str(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, default=str, ensure_ascii=False)


def clean_attributes(attrs, capture_content: bool) -> dict:
    """Primitive attribute values; prompt/query text removed unless content capture is on."""
    if not isinstance(attrs, dict):
        return {}
    out = {}
    for key, value in attrs.items():
        key = str(key)
        if not capture_content and key.endswith(CONTENT_SUFFIXES):
            continue
        value = _attr_value(value)
        if value is not None:
            out[key] = value
    return out


def _loads(text, default):
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def _hex_id(text, width: int) -> int:
    if not isinstance(text, str) or len(text) != width:
        raise ValueError(f"not a {width}-digit hex id: {text!r}")
    value = int(text, 16)
    if value == 0:
        raise ValueError("an all-zero id is invalid")
    return value


class _SpanBuilder:
    """Turn outbox rows into finished SDK spans carrying the recorded ids and timestamps."""

    def __init__(self, resource, capture_content: bool):
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.id_generator import IdGenerator
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        __version__ = service_version()

        class RecordedIds(IdGenerator):
            """Hands out the ids the hook recorded, so exported ids equal the stored ones."""

            trace_id = 0
            span_id = 0

            def generate_span_id(self) -> int:
                return self.span_id

            def generate_trace_id(self) -> int:
                return self.trace_id

        class Finished(SpanProcessor):
            def __init__(self):
                self.spans = []

            def on_end(self, span) -> None:
                self.spans.append(span)

        self.ids = RecordedIds()
        self.finished = Finished()
        # ALWAYS_ON: the outbox already is the record; sampling belongs to the collector.
        self.provider = TracerProvider(resource=resource, sampler=ALWAYS_ON, id_generator=self.ids,
                                       shutdown_on_exit=False)
        self.provider.add_span_processor(self.finished)
        self.tracer = self.provider.get_tracer("memhealth", __version__)
        self.capture_content = capture_content

    def build(self, rows) -> tuple[list, int]:
        """(finished spans, malformed row count) for rows in span_reads.SPAN_COLUMNS order."""
        from opentelemetry import context as otel_context
        from opentelemetry import trace
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER,
                 "producer": SpanKind.PRODUCER, "consumer": SpanKind.CONSUMER}
        self.finished.spans = []
        malformed = 0
        for (_id, trace_id, span_id, parent_id, name, kind, start_ns, end_ns, status_code,
             status_message, attributes, events) in rows:
            try:
                tid = _hex_id(trace_id, 32)
                sid = _hex_id(span_id, 16)
                pid = _hex_id(parent_id, 16) if parent_id else None
                start_ns, end_ns = int(start_ns), int(end_ns)
            except (ValueError, TypeError):
                malformed += 1
                continue
            self.ids.trace_id, self.ids.span_id = tid, sid
            ctx = otel_context.Context()  # never inherit whatever span is current here
            if pid is not None:
                parent = SpanContext(tid, pid, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
                ctx = trace.set_span_in_context(trace.NonRecordingSpan(parent), ctx)
            span = self.tracer.start_span(
                str(name), context=ctx, kind=kinds.get(kind, SpanKind.INTERNAL),
                attributes=clean_attributes(_loads(attributes, {}), self.capture_content),
                start_time=start_ns)
            for ev in _loads(events, []) or []:
                if isinstance(ev, dict) and ev.get("name"):
                    span.add_event(str(ev["name"]),
                                   clean_attributes(ev.get("attributes") or {}, self.capture_content),
                                   timestamp=int(ev.get("time_ns") or start_ns))
            if status_code == "error":
                span.set_status(Status(StatusCode.ERROR, status_message or None))
            elif status_code == "ok":
                span.set_status(Status(StatusCode.OK))
            span.end(end_time=max(end_ns, start_ns))
        return list(self.finished.spans), malformed


def metrics_data(families, resource, start_ns: int, now_ns: int):
    """OTLP MetricsData for catalog families: counters as cumulative monotonic sums,
    gauges as gauges, histograms with non-cumulative bucket counts and catalog bounds."""
    from opentelemetry.sdk.metrics.export import (
        AggregationTemporality,
        Gauge,
        HistogramDataPoint,
        Metric,
        MetricsData,
        NumberDataPoint,
        ResourceMetrics,
        ScopeMetrics,
        Sum,
    )
    from opentelemetry.sdk.metrics.export import Histogram as OtelHistogram
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    __version__ = service_version()

    metrics = []
    for fam in families:
        m = fam.metric
        points = []
        for key, value in sorted(fam.samples.items()):
            attrs = fam.labels_of(key)
            if isinstance(value, Histogram):
                bounds = [float(b) for b in (m.buckets or ())]
                cumulative = value.cumulative(bounds)
                counts, prev = [], 0.0
                for _bound, running in cumulative:
                    counts.append(int(running - prev))
                    prev = running
                points.append(HistogramDataPoint(
                    attributes=attrs, start_time_unix_nano=start_ns, time_unix_nano=now_ns,
                    count=int(cumulative[-1][1]), sum=value.sum, bucket_counts=counts,
                    explicit_bounds=bounds, min=None, max=None))
            else:
                points.append(NumberDataPoint(attributes=attrs, start_time_unix_nano=start_ns,
                                              time_unix_nano=now_ns, value=float(value)))
        if not points:
            continue
        if m.type == "counter":
            data = Sum(data_points=points, aggregation_temporality=AggregationTemporality.CUMULATIVE,
                       is_monotonic=True)
        elif m.type == "histogram":
            data = OtelHistogram(data_points=points,
                                 aggregation_temporality=AggregationTemporality.CUMULATIVE)
        else:
            data = Gauge(data_points=points)
        # unit "1" only for ratios: the Collector's Prometheus exporter would otherwise
        # append "_ratio" to every dimensionless gauge name
        unit = m.unit if m.unit != "1" or m.name.endswith("_ratio") else ""
        # the OTel name (dotted, unit in metadata); Prometheus's OTLP receiver translates it
        # back to the scraped name (telemetry.catalog.Metric.otel_name)
        metrics.append(Metric(name=m.otel_name, description=m.help, unit=unit, data=data))
    scope = InstrumentationScope("memhealth", __version__)
    return MetricsData(resource_metrics=[ResourceMetrics(
        resource=resource, scope_metrics=[ScopeMetrics(scope=scope, metrics=metrics, schema_url="")],
        schema_url="")])


# -- the exporter ----------------------------------------------------------------------------

def resolve_target(cfg, environ=None) -> tuple[str, str | None]:
    """(protocol, endpoint or None = let the OTLP exporter read OTEL_* itself).

    `telemetry.otlp_protocol`/`otlp_endpoint` win when set away from their defaults; then
    OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL/ENDPOINT; then HTTP/protobuf on 127.0.0.1:4318."""
    environ = os.environ if environ is None else environ
    tel = cfg["telemetry"]
    protocol = tel["otlp_protocol"]
    if protocol == "http/protobuf":
        env_protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
        if env_protocol == "grpc":
            protocol = "grpc"
    endpoint = tel["otlp_endpoint"].strip() or None
    if endpoint is None and not (environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                                 or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")):
        endpoint = DEFAULT_GRPC_ENDPOINT if protocol == "grpc" else DEFAULT_HTTP_ENDPOINT
    return protocol, endpoint


class _LastMessage(logging.Handler):
    """Keeps the OTel exporters' last warning as the export error, instead of stderr noise."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.message: str | None = None

    def emit(self, record) -> None:
        try:
            self.message = record.getMessage()[:500]
        except Exception:  # a foreign library's bad format args: keep the raw message
            self.message = str(record.msg)[:500]


class OtlpExporter:
    """OTLP span and metric exporters for one project, reused across runs.

        exporter = OtlpExporter(cfg)
        result = exporter.run_once(conn)

    run_once never raises for a collector problem: the result says what happened and meta
    `export.last_error` keeps it for the gate."""

    def __init__(self, cfg, environ=None):
        environ = os.environ if environ is None else environ
        self.cfg = cfg
        tel = cfg["telemetry"]
        self.timeout_s = float(tel["export_timeout_s"])
        self.retention_days = float(tel["retention_days"])
        self.outbox_max_rows = int(tel.get("outbox_max_rows", 20_000))
        self.capture_content = bool(tel["capture_content"])
        self.export_metrics = bool(tel.get("otlp_metrics", True))
        self.disabled = environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
        self.protocol, endpoint = resolve_target(cfg, environ)
        self.endpoint = endpoint
        self._log = _LastMessage()
        otel_logger = logging.getLogger("opentelemetry")
        if self._log not in otel_logger.handlers:
            otel_logger.addHandler(self._log)
        self._environ = environ
        self._resource = None
        self._builder = None
        if self.disabled:
            self.spans = self.metrics = None
            return
        if self.protocol == "grpc":
            try:
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                    OTLPMetricExporter,
                )
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            except ImportError as exc:  # an optional extra: HTTP/protobuf is the default
                from telemetry.errors import ExporterUnavailable

                raise ExporterUnavailable(
                    f"OTLP over gRPC is configured but its exporter is not installed ({exc}); "
                    "install memhealth with the grpc extra (`pip install 'memhealth[grpc]'`) or "
                    'set [telemetry].otlp_protocol = "http/protobuf"') from None

            insecure = None
            if endpoint is not None:
                insecure = not endpoint.startswith("https://")
            self.spans = OTLPSpanExporter(endpoint=endpoint, insecure=insecure, timeout=self.timeout_s)
            self.metrics = OTLPMetricExporter(endpoint=endpoint, insecure=insecure, timeout=self.timeout_s)
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            base = endpoint.rstrip("/") if endpoint else None
            self.spans = OTLPSpanExporter(
                endpoint=None if base is None else (base if base.endswith("/v1/traces") else base + "/v1/traces"),
                timeout=self.timeout_s)
            self.metrics = OTLPMetricExporter(
                endpoint=None if base is None else (base if base.endswith("/v1/metrics") else base + "/v1/metrics"),
                timeout=self.timeout_s)

    def resource(self, conn):
        """service.name=memhealth (OTEL_SERVICE_NAME wins), service.version, project id, and
        service.instance.id (OTEL_RESOURCE_ATTRIBUTES wins)."""
        if self._resource is None:
            from opentelemetry.sdk.resources import Resource

            __version__ = service_version()

            name = self._environ.get("OTEL_SERVICE_NAME", "").strip()
            for item in self._environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
                key, _, value = item.partition("=")
                if key.strip() == "service.name" and value.strip() and not name:
                    name = value.strip()
            attrs = {"service.name": name or "memhealth", "service.version": __version__,
                     "memhealth.project.id": project_id(conn)}
            if "service.instance.id" not in self._environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
                attrs["service.instance.id"] = instance_id(self._environ)
            self._resource = Resource.create(attrs)
        return self._resource

    def run_once(self, conn, *, now_ns: int | None = None, scrape_errors: float = 0.0,
                 metrics: bool = True) -> ExportResult:
        """Drop expired rows, ship the backlog in batches, then the metrics; advance the
        watermark after each acknowledged batch. Stops at the first failure."""
        t0 = time.monotonic()
        result = ExportResult()
        now_ns = now_ns or time.time_ns()
        try:
            # the same bounds the gate keeps (memory_core.outbox.spans.prune_spans: one definition)
            dropped = prune_spans(conn, self.retention_days, self.outbox_max_rows, now_ns)
            result.dropped = sum(dropped.values())
            if self.disabled:
                result.disabled = True
                result.backlog = backlog(conn)
                return result
            self._ship(conn, result, now_ns, t0, scrape_errors, metrics and self.export_metrics)
            result.backlog = backlog(conn)
        except (StoreError, sqlite3.Error) as exc:
            result.ok = False
            result.error = f"store: {exc}"
        finally:
            result.seconds = time.monotonic() - t0
        return result

    def _ship(self, conn, result, now_ns, t0, scrape_errors, metrics) -> None:
        from opentelemetry.sdk.metrics.export import MetricExportResult
        from opentelemetry.sdk.trace.export import SpanExportResult

        resource = self.resource(conn)
        if self._builder is None:
            self._builder = _SpanBuilder(resource, self.capture_content)
        last_id = watermark(conn)
        newest = span_reads.newest_id(conn)
        if newest is not None and newest < last_id:
            last_id = 0  # the table was rebuilt under us: resend rather than skip
        for _ in range(MAX_BATCHES_PER_RUN):
            rows = span_reads.batch(conn, last_id, BATCH_SIZE)
            if not rows:
                break
            spans, malformed = self._builder.build(rows)
            if spans:
                self._log.message = None
                if self.spans.export(spans) != SpanExportResult.SUCCESS:
                    self._fail(conn, result, "spans")
                    return
            last_id = rows[-1][0]
            with write(conn):
                set_meta(conn, META_EXPORT_LAST_ID, last_id)
                set_meta(conn, META_EXPORT_LAST_SUCCESS, time.time_ns())
                set_meta(conn, META_EXPORT_LAST_ERROR, "")
                from memory_core.outbox.rollups import bump

                if spans:
                    bump(conn, "memhealth_exported_spans_total", None, len(spans))
                if malformed:
                    bump(conn, "memhealth_outbox_dropped_spans_total", {"reason": "malformed"}, malformed)
            result.spans_sent += len(spans)
            result.malformed += malformed
            if len(rows) < BATCH_SIZE or time.monotonic() - t0 > self.timeout_s:
                break  # the rest ships next run; one run stays within its time budget
        if not metrics or time.monotonic() - t0 > self.timeout_s:
            return
        start = get_meta(conn, META_METRICS_START)
        if start is None:
            start = str(now_ns)
            with write(conn):
                start = init_meta(conn, META_METRICS_START, start)
        families = read_families(conn, now_ns=now_ns, killed_after_s=None, scrape_errors=scrape_errors)
        data = metrics_data(families, resource, int(start), now_ns)
        self._log.message = None
        if self.metrics.export(data, timeout_millis=self.timeout_s * 1000) != MetricExportResult.SUCCESS:
            self._fail(conn, result, "metrics")
            return
        result.metrics_sent = sum(len(sm.metrics) for rm in data.resource_metrics for sm in rm.scope_metrics)
        with write(conn):
            set_meta(conn, META_EXPORT_LAST_SUCCESS, time.time_ns())
            set_meta(conn, META_EXPORT_LAST_ERROR, "")

    def _fail(self, conn, result: ExportResult, what: str) -> None:
        result.ok = False
        result.error = f"{what} export to {self.endpoint or 'OTEL_EXPORTER_OTLP_ENDPOINT'} failed: " \
                       f"{self._log.message or 'collector refused or unreachable'}"
        try:
            with write(conn):
                set_meta(conn, META_EXPORT_LAST_ERROR, result.error)
                set_meta(conn, META_EXPORT_LAST_ERROR_AT, time.time_ns())
        except StoreError:
            pass

    def shutdown(self) -> None:
        logging.getLogger("opentelemetry").removeHandler(self._log)
        for exporter in (self.spans, self.metrics):
            if exporter is not None:
                try:
                    exporter.shutdown()
                except Exception:  # the OTel SDK's own shutdown failing must not stop ours
                    pass
        if self._builder is not None:
            self._builder.provider.shutdown()


def export_once(conn, cfg, *, environ=None, now_ns: int | None = None) -> ExportResult:
    """One export run with fresh exporters (what `memhealth export --once` does)."""
    exporter = OtlpExporter(cfg, environ)
    try:
        return exporter.run_once(conn, now_ns=now_ns)
    finally:
        exporter.shutdown()
