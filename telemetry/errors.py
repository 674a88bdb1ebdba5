"""Errors raised by the telemetry package (collector, export, serve, report).

    TelemetryError              base: catch this at a boundary (CLI, serve's loops)
     ├── ListenError            (telemetry.serve) the listen address is malformed, or not
     │                          loopback without --allow-remote; also a ValueError
     └── ExporterUnavailable    (telemetry.export) the configured OTLP protocol's exporter
                                is not installed (gRPC is the `grpc` extra)

A row that cannot be written raises `telemetry.record.RecordError`: that is the store's write
path (moving to memory_core, where it becomes a StoreError), not telemetry's own failure; the
CLI catches it beside these.
"""

from __future__ import annotations


class TelemetryError(Exception):
    """Base class for every error the telemetry package raises on purpose."""

    reason = "telemetry"


class ExporterUnavailable(TelemetryError):
    """The exporter for the configured OTLP protocol cannot be imported."""

    reason = "exporter_unavailable"


class ListenError(TelemetryError, ValueError):
    """The listen address is unusable or not allowed (non-loopback without --allow-remote)."""

    reason = "listen"
    exit_code = 2
