"""Errors raised by the telemetry package (collector, export, serve, report).

    TelemetryError              base: catch this at a boundary (CLI, serve's loops)
     ├── ListenError            (telemetry.serve) the listen address is malformed, or not
     │                          loopback without --allow-remote; also a ValueError
     ├── ExporterUnavailable    (telemetry.export) the configured OTLP protocol's exporter
     │                          is not installed (gRPC is the `grpc` extra)
     └── ServeAuthError         (telemetry.serve_auth) serve's TLS certificate or token file
                                is unusable (missing, unreadable, readable by others)

A row that cannot be written raises `memory_core.errors.StoreError`: the write path is the
store's (memory_core.store.tx), not telemetry's own failure.
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


class ServeAuthError(TelemetryError):
    """serve's TLS certificate, key or bearer-token file cannot be used as given."""

    reason = "serve_auth"
    exit_code = 2
