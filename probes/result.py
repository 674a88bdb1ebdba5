"""The typed result of one check, and the closed set of statuses it may carry.

    r = red("ingestion never ran", fix="memhealth ingest")
    r.status, r.detail, r.fix            # 'red', 'ingestion never ran', 'memhealth ingest'

A check returns one of these; the gate fills in `name` and `duration_ms`. Metrics derive
from the same word (`memhealth_gate_check_status`: green 0, note 1, red 2), as healthchecks
derives its gauges from `Check.get_status()`.
"""

from __future__ import annotations

GREEN, NOTE, RED = "green", "note", "red"
STATUSES = (GREEN, NOTE, RED)
# Who a result is for. MEMORY: it changes what Claude can rely on (stale or missing memory,
# a broken index, a retrieval leg down), so SessionStart puts it in Claude's context.
# OPERATOR: it is the person's to act on (an optional integration not wired, telemetry),
# so it goes to the user's systemMessage and `memhealth gate`, never to the model.
MEMORY, OPERATOR = "memory", "operator"
AUDIENCES = (MEMORY, OPERATOR)


class CheckResult:
    """status ∈ green|note|red, a one-line detail, a fix (required for red), optional state."""

    __slots__ = ("name", "status", "detail", "fix", "state", "duration_ms", "extra", "audience")

    def __init__(self, status: str, detail: str, fix: str = "", state: str | None = None,
                 name: str = "", duration_ms: float = 0.0, extra: dict | None = None,
                 audience: str | None = None):
        if status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        if audience is not None and audience not in AUDIENCES:
            raise ValueError(f"audience must be one of {', '.join(AUDIENCES)}, not {audience!r}")
        if status == RED and not fix:
            # every RED must be actionable (Memory as Infrastructure §5, principle 5)
            fix = "investigate the data source"
        self.name = name
        self.status = status
        self.detail = " ".join(str(detail).split())  # one line, always
        self.fix = " ".join(str(fix).split())
        self.state = state
        self.duration_ms = duration_ms
        self.extra = extra or {}  # measurements for metrics (not printed): probe_s, warmup_s
        # None: the gate fills in the check's default audience (probes.gate.AUDIENCE)
        self.audience = audience

    def to_dict(self) -> dict:
        out = {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}
        if self.state is not None:
            out["state"] = self.state
        if self.audience is not None:
            out["audience"] = self.audience
        out["duration_ms"] = round(self.duration_ms, 3)
        return out

    def line(self) -> str | None:
        """The verdict line for this result (None for green)."""
        if self.status == RED:
            return f"  RED {self.name}: {self.detail}  FIX: {self.fix}"
        if self.status == NOTE:
            return f"  NOTE {self.name}: {self.detail}"
        return None

    def __repr__(self) -> str:
        return f"CheckResult({self.name!r}, {self.status!r}, {self.detail!r})"


def green(detail: str, state: str | None = None) -> CheckResult:
    return CheckResult(GREEN, detail, state=state)


def note(detail: str, fix: str = "", state: str | None = None, audience: str | None = None) -> CheckResult:
    return CheckResult(NOTE, detail, fix, state=state, audience=audience)


def red(detail: str, fix: str, state: str | None = None, audience: str | None = None) -> CheckResult:
    return CheckResult(RED, detail, fix, state=state, audience=audience)


def worst(results) -> str:
    """The verdict is the worst status among the results."""
    order = {GREEN: 0, NOTE: 1, RED: 2}
    return max((r.status for r in results), key=order.__getitem__, default=GREEN)


def duration(value: float) -> str:
    """A duration as a person reads it: "0.3 s", "6.5 s", "42 s" (never "6.47467 s")."""
    value = max(float(value), 0.0)
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def ago(seconds: float) -> str:
    """A short human age: 45 s, 12 min, 3.5 h, 4.2 d."""
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
