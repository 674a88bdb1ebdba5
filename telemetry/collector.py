"""Prometheus exposition of one project's store, read from rollups and small tables.

    registry = CollectorRegistry()
    registry.register(StoreCollector(project.db_path, killed_after_s=900.0))
    registry.get_sample_value("memhealth_hook_invocations_total", {"hook": "prompt", "outcome": "ok"})

A scrape never scans raw heartbeat, span or decision rows: counters and histograms come
from the `rollups` table that writers keep current, gauges from small tables (watermarks,
the latest gate run, meta) and two indexed counts (chunks per source, outbox backlog by
primary-key range). `describe()` is defined so registering the collector never queries
SQLite (without it prometheus_client's registry calls `collect()` at registration).

`read_families()` is the library part (standard library only); the OTLP metric export in
`telemetry.export` reads the same families, so both views always agree.
"""

from __future__ import annotations

import json
import threading
import time

from memory_core.errors import StoreError
from memory_core.index import code as code_index
from memory_core.index import docfreq
from memory_core.index import reads as index_reads
from memory_core.index.vectors import vector_count
from memory_core.outbox import gate_log, rollup_reads, span_reads
from memory_core.store.db import connect, load_vec, sqlite3
from memory_core.store.meta import get_meta
from memory_core.store.tx import failure_reason
from telemetry.catalog import (
    CATALOG,
    CODE_FILE_STATUSES,
    EMBEDDING_STATES,
    GATE_STATUS_VALUES,
    GATE_STATUSES,
    METRICS,
    Metric,
)

INF = float("inf")
MAX_LABEL_CHARS = 120  # a label value is a bounded word, never text
META_EXPORT_LAST_ID = "export.spans.last_id"
META_EXPORT_LAST_SUCCESS = "export.last_success_ns"

# Gauges computed from tables at scrape time; a rollup row of the same name is ignored.
COMPUTED = frozenset({
    "memhealth_chunks", "memhealth_vector_coverage_ratio", "memhealth_ingest_watermark_age_seconds",
    "memhealth_gate_check_status", "memhealth_outbox_backlog_spans",
    "memhealth_export_last_success_timestamp_seconds", "memhealth_scrape_errors_total",
    "memhealth_gate_check_state", "memhealth_ingest_last_timestamp_seconds", "memhealth_build_info",
    "memhealth_code_files", "memhealth_code_definitions", "memhealth_code_components",
    "memhealth_code_index_last_timestamp_seconds",
})
EXEMPLAR_METRICS = frozenset({"memhealth_hook_duration_seconds"})  # rollup_exemplars rows read


class Histogram:
    """One histogram series: non-cumulative counts per upper bound, sum and count, and the
    latest exemplar per bound: {bound: (trace_id, value, unix seconds)}."""

    __slots__ = ("counts", "sum", "count", "exemplars")

    def __init__(self):
        self.counts: dict[float, float] = {}
        self.sum = 0.0
        self.count = 0.0
        self.exemplars: dict[float, tuple[str, float, float]] = {}

    def cumulative(self, bounds) -> list[tuple[float, float]]:
        """[(bound, observations <= bound)] for each bound, then (+Inf, total)."""
        items = sorted(self.counts.items())
        out, running, i = [], 0.0, 0
        for bound in bounds:
            while i < len(items) and items[i][0] <= bound:
                running += items[i][1]
                i += 1
            out.append((float(bound), running))
        total = sum(v for _, v in items)
        out.append((INF, total))
        return out


class Family:
    """One metric's samples: `samples` maps a label tuple to a float or a Histogram."""

    __slots__ = ("metric", "samples")

    def __init__(self, metric: Metric):
        self.metric = metric
        self.samples: dict[tuple, float | Histogram] = {}

    def labels_of(self, key: tuple) -> dict[str, str]:
        return dict(zip(self.metric.labels, key, strict=True))


def _key(metric: Metric, labels: dict, extra: tuple = ()) -> tuple | None:
    """Label values in catalog order, or None when the row's label set does not match."""
    if set(labels) != set(metric.labels) | set(extra):
        return None
    return tuple(str(labels[name])[:MAX_LABEL_CHARS] for name in metric.labels)


def store_dir(conn) -> str | None:
    """The directory of the connection's main database file (None for :memory:)."""
    import os

    for _seq, name, file in conn.execute("PRAGMA database_list"):
        if name == "main" and file:
            return os.path.dirname(file)
    return None


def _table_exists(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def read_families(conn, *, now_ns: int | None = None, killed_after_s: float | None = 900.0,
                  scrape_errors: float = 0.0) -> list[Family]:
    """Every catalog metric with its current samples, read cheaply from `conn`.

    Reaps killed heartbeats first when `killed_after_s` is given (best effort: a locked
    store still gets read). Closed label vocabularies are filled with zeros."""
    now_ns = now_ns or time.time_ns()
    if killed_after_s is not None:
        # drain (spill, journal) before reaping, as the gate does: a spilled completion is
        # never reaped as killed, a hook killed before the database is (best effort: a
        # locked store still gets read)
        from memory_core.outbox import journal

        state_dir = store_dir(conn)
        if state_dir:
            journal.settle(conn, state_dir, killed_after_s, now_ns=now_ns)
    families = {m.name: Family(m) for m in METRICS}

    # rollups: counters, set gauges, histogram parts
    parts = {}
    for m in METRICS:
        if m.type == "histogram":
            parts[m.name + "_bucket"] = (m, "bucket")
            parts[m.name + "_sum"] = (m, "sum")
            parts[m.name + "_count"] = (m, "count")
    for name, labels_json, value in rollup_reads.every_rollup(conn):
        try:
            labels = json.loads(labels_json)
        except ValueError:
            continue
        if not isinstance(labels, dict):
            continue
        if name in CATALOG and CATALOG[name].type != "histogram" and name not in COMPUTED:
            fam = families[name]
            key = _key(fam.metric, labels)
            if key is not None:
                fam.samples[key] = fam.samples.get(key, 0.0) + float(value) \
                    if fam.metric.type == "counter" else float(value)
        elif name in parts:
            metric, part = parts[name]
            fam = families[metric.name]
            key = _key(metric, labels, ("le",) if part == "bucket" else ())
            if key is None:
                continue
            hist = fam.samples.setdefault(key, Histogram())
            if part == "bucket":
                try:
                    bound = float(labels["le"])
                except ValueError:
                    continue
                hist.counts[bound] = hist.counts.get(bound, 0.0) + float(value)
            elif part == "sum":
                hist.sum += float(value)
            else:
                hist.count += float(value)

    _read_exemplars(conn, families, parts)

    # gauges from small tables
    fam = families["memhealth_chunks"]
    total_chunks = 0
    for source, count in docfreq.counts_by_source(conn):  # kept on write: no scan of chunks
        fam.samples[(str(source)[:MAX_LABEL_CHARS],)] = float(count)
        total_chunks += count
    vectors = vector_count(conn)
    ratio = 1.0 if total_chunks == 0 else min(1.0, (vectors or 0) / total_chunks)
    families["memhealth_vector_coverage_ratio"].samples[()] = ratio

    fam = families["memhealth_ingest_watermark_age_seconds"]
    stamps = families["memhealth_ingest_last_timestamp_seconds"]
    for source, newest in index_reads.newest_by_source(conn):
        key = (str(source)[:MAX_LABEL_CHARS],)
        fam.samples[key] = max(0.0, (now_ns - newest) / 1e9)
        stamps.samples[key] = newest / 1e9

    _read_code_index(conn, families)

    latest = gate_log.latest_run_id(conn)
    current_state = None
    if latest is not None:
        fam = families["memhealth_gate_check_status"]
        enum = families["memhealth_gate_check_state"]
        for name, status, state in gate_log.check_states(conn, latest):
            if status in GATE_STATUS_VALUES:
                check = str(name)[:MAX_LABEL_CHARS]
                fam.samples[(check,)] = float(GATE_STATUS_VALUES[status])
                for value in GATE_STATUSES:
                    enum.samples[(check, value)] = 1.0 if value == status else 0.0
            if state in EMBEDDING_STATES and current_state is None:
                current_state = state
    fam = families["memhealth_embedding_state"]
    if not any(fam.samples.values()) and current_state is not None:
        fam.samples = {(s,): 1.0 if s == current_state else 0.0 for s in EMBEDDING_STATES}

    last_id = int(get_meta(conn, META_EXPORT_LAST_ID) or 0)
    backlog = span_reads.backlog(conn, last_id)
    families["memhealth_outbox_backlog_spans"].samples[()] = float(backlog)
    last_ok = int(get_meta(conn, META_EXPORT_LAST_SUCCESS) or 0)
    families["memhealth_export_last_success_timestamp_seconds"].samples[()] = last_ok / 1e9
    families["memhealth_scrape_errors_total"].samples[()] = float(scrape_errors)
    families["memhealth_build_info"].samples[build_info(conn)] = 1.0

    for fam in families.values():
        _fill_known(fam)
    return list(families.values())


def _read_code_index(conn, families: dict) -> None:
    """The code index's gauges (zero in a store without the index, as before migration 9)."""
    if not _table_exists(conn, "code_files"):
        return
    stats = code_index.stats(conn)
    fam = families["memhealth_code_files"]
    for status in CODE_FILE_STATUSES:
        fam.samples[(status,)] = float(stats[status])
    families["memhealth_code_definitions"].samples[()] = float(stats["defs"])
    families["memhealth_code_components"].samples[()] = float(stats["components"])
    families["memhealth_code_index_last_timestamp_seconds"].samples[()] = (stats["indexed_ns"] or 0) / 1e9


def _read_exemplars(conn, families: dict, parts: dict) -> None:
    """Attach the latest trace id per histogram bucket (rollup_exemplars, kept by
    memory_core.outbox.heartbeat at finish) to the histograms read from rollups. A store from
    before the table (serve migrates up front; a library caller may not) has none."""
    if not _table_exists(conn, "rollup_exemplars"):
        return
    for name, labels_json, trace_id, value, ts_ns in rollup_reads.exemplars(conn):
        part = parts.get(name)
        if part is None or part[1] != "bucket" or part[0].name not in EXEMPLAR_METRICS:
            continue
        try:
            labels = json.loads(labels_json)
            bound = float(labels["le"])
        except (ValueError, KeyError, TypeError):
            continue
        key = _key(part[0], labels, ("le",))
        hist = families[part[0].name].samples.get(key) if key is not None else None
        if hist is not None and trace_id:
            hist.exemplars[bound] = (str(trace_id)[:32], float(value), ts_ns / 1e9)


_VERSIONS: dict[str, str] = {}


def build_info(conn) -> tuple[str, str, str, str, str]:
    """(version, python, sqlite, sqlite_vec, instance_id) in catalog label order; "none" when
    sqlite-vec is not loaded. The package version and the instance id (telemetry.export's
    service.instance.id) are read once per process (importlib.metadata costs a few ms); the
    SQLite ones come from the connection that serves the scrape."""
    import platform

    if "instance_id" not in _VERSIONS:
        from telemetry.export import instance_id  # here: export imports this module

        _VERSIONS["instance_id"] = instance_id()
    if "version" not in _VERSIONS:
        from importlib import metadata

        try:
            _VERSIONS["version"] = metadata.version("memhealth")
        except metadata.PackageNotFoundError:
            _VERSIONS["version"] = "unknown"
    (sqlite_version,) = conn.execute("SELECT sqlite_version()").fetchone()
    vec_version = "none"
    if load_vec(conn):  # already loaded by the vector count on the scrape path
        (vec_version,) = conn.execute("SELECT vec_version()").fetchone()
    return (_VERSIONS["version"], platform.python_version(), str(sqlite_version), str(vec_version),
            _VERSIONS["instance_id"])


def _fill_known(fam: Family) -> None:
    """Export 0 for known series: every value of each closed label vocabulary, for every
    combination of the open labels seen (Prometheus instrumentation practice)."""
    metric = fam.metric
    closed = [name for name in metric.labels if name in metric.label_values]
    if not metric.labels:
        if not fam.samples and metric.type in ("counter", "histogram"):
            fam.samples[()] = Histogram() if metric.type == "histogram" else 0.0
        return
    if not closed:
        return
    open_idx = [i for i, name in enumerate(metric.labels) if name not in metric.label_values]
    if open_idx:
        seen_open = {tuple(key[i] for i in open_idx) for key in fam.samples}
    else:
        seen_open = {()}
    combos = [()]
    for name in metric.labels:
        if name in metric.label_values:
            combos = [c + (v,) for c in combos for v in metric.label_values[name]]
        else:
            combos = [c + (None,) for c in combos]
    for open_values in seen_open:
        for combo in combos:
            key, it = [], iter(open_values)
            for value in combo:
                key.append(next(it) if value is None else value)
            key = tuple(key)
            if key not in fam.samples:
                fam.samples[key] = Histogram() if metric.type == "histogram" else 0.0


class StoreCollector:
    """A prometheus_client collector over one store; a failed read serves the last good values.

        registry.register(StoreCollector(db_path))
        generate_latest(registry)

    Every scrape is bounded: the store is read under `deadline_s` (a progress handler
    interrupts a slow query) after at most `busy_timeout_s` waiting on a lock, and a scrape
    that cannot get the collector's own lock in time serves the last good values."""

    def __init__(self, db_path: str, *, killed_after_s: float | None = 900.0, deadline_s: float = 2.0,
                 busy_timeout_s: float = 0.5):
        self.db_path = db_path
        self.killed_after_s = killed_after_s
        self.deadline_s = deadline_s
        self.busy_timeout_s = busy_timeout_s
        self.errors = 0
        self.last_error: str | None = None
        # the failure family of the latest read (memory_core.errors reasons, "busy" for a
        # scrape still reading), None after a good one: serve --all's project state
        self.last_reason: str | None = None
        # the StoreError of the latest failed read (its path, pid: what a FIX names), else None
        self.last_cause: StoreError | None = None
        self.last_duration_s: float | None = None
        self._last_good: list[Family] | None = None
        self._lock = threading.Lock()

    def describe(self):
        """The families without samples: registration never touches the database."""
        for metric in METRICS:
            yield _empty_family(metric)

    def read(self) -> list[Family]:
        """Read the store now (bounded); on failure count an error and return the last good."""
        t0 = time.monotonic()
        if not self._lock.acquire(timeout=self.deadline_s + self.busy_timeout_s):
            return self._failed("another scrape is still reading the store", "busy")
        try:
            deadline = time.monotonic() + self.deadline_s
            try:
                # a connection per scrape: nothing held open between scrapes (another
                # process may need the file exclusively), and opening costs well under 1 ms
                conn = connect(self.db_path, busy_timeout_s=self.busy_timeout_s,
                               create=False, migrate=False)
                try:
                    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
                    families = read_families(conn, killed_after_s=self.killed_after_s,
                                             scrape_errors=self.errors)
                finally:
                    conn.close()
            except StoreError as exc:
                return self._failed(str(exc), exc.reason, exc)
            except sqlite3.Error as exc:
                return self._failed(str(exc), failure_reason(exc))
            self._last_good = families
            self.last_reason = None
            self.last_cause = None
            self.last_duration_s = time.monotonic() - t0
            return families
        finally:
            self._lock.release()

    def _failed(self, message: str, reason: str, cause: StoreError | None = None) -> list[Family]:
        self.errors += 1
        self.last_error = message
        self.last_reason = reason
        self.last_cause = cause
        families = self._last_good or [Family(m) for m in METRICS]
        fam = next(f for f in families if f.metric.name == "memhealth_scrape_errors_total")
        fam.samples[()] = float(self.errors)
        return families

    def collect(self):
        for fam in self.read():
            yield to_prometheus(fam)

    def close(self) -> None:
        """Nothing to release (connections are per scrape); kept for symmetry with serve."""


def _empty_family(metric: Metric, extra_labels: tuple[str, ...] = ()):
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    cls = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily,
           "histogram": HistogramMetricFamily}[metric.type]
    return cls(metric.name, metric.help, labels=[*metric.labels, *extra_labels])


def to_prometheus(fam: Family, extra: tuple[str, ...] = (), out=None):
    """A prometheus_client metric family from a Family (histogram buckets made cumulative).
    `extra` label values are appended to every sample, and `out` (a family made with the
    matching extra label names) collects several stores' samples under one family: serve
    --all writes each metric once, with a `project` label, never one family per project."""
    from prometheus_client.samples import Exemplar
    from prometheus_client.utils import floatToGoString

    if out is None:
        out = _empty_family(fam.metric)
    for key in sorted(fam.samples):
        value = fam.samples[key]
        if isinstance(value, Histogram):
            buckets = []
            for b, c in value.cumulative(fam.metric.buckets or ()):
                ex = value.exemplars.get(b)
                # exemplars appear only in the OpenMetrics exposition (the text format drops them)
                buckets.append((floatToGoString(b), c) if ex is None else
                               (floatToGoString(b), c, Exemplar({"trace_id": ex[0]}, ex[1], ex[2])))
            out.add_metric([*key, *extra], buckets, value.sum)
        else:
            out.add_metric([*key, *extra], value)
    return out
