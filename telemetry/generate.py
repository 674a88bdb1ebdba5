"""Kept so `from telemetry import generate` still works: the artifacts are a package now
(telemetry/artifacts/); use it directly."""

from __future__ import annotations

from telemetry.artifacts import Options, artifacts, recorded_names, stale, write  # noqa: F401
