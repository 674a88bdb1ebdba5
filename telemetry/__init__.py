"""Telemetry: recording (stdlib only, on the hook path), the metric catalog, and the heavy
parts (Prometheus collector, OTLP export, serve) that only long-lived commands import."""
