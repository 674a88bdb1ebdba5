"""Errors raised by the probes package.

    ProbeError                  base: catch this at a boundary (hook, CLI, serve); the CLI
                                prints it as one line, exit 1
     ├── EvidenceError          evidence for a check could not be gathered (the gate turns
     │                          it into a RED "check raised: …", never a crash)
     └── AlertPayloadError      an Alertmanager webhook body is not a list of alerts
"""

from __future__ import annotations


class ProbeError(Exception):
    """Base class for every error the probes package raises on purpose."""

    reason = "probe"


class EvidenceError(ProbeError):
    reason = "evidence"


class AlertPayloadError(ProbeError):
    reason = "alert_payload"
