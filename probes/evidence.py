"""What every check reads: the clock, the project's paths, the store, the config.

    ev = Evidence(root, conn, cfg, now=time.time())
    ev.meta("export.spans.last_id"), ev.has_table("chunks_vec"), ev.now_ns

Checks never call `time.time()` or walk up from the cwd themselves: tests inject `now` and
paths and travel in time (healthchecks does the same with `time_machine.travel`).
"""

from __future__ import annotations

import json
import os
import time

from memory_core.outbox import heartbeat_reads
from memory_core.outbox.heartbeat import FUTURE_SLACK_NS
from memory_core.store.layout import DB_NAME, SPILL_NAME, STATE_DIR
from memory_core.store.meta import get_meta

ACK_PREFIX = "gate.ack."  # meta: gate.ack.<check> = {"ack_ns", "detail"} (memhealth gate --ack)


class Evidence:
    """Injected inputs for one gate run: `now` (Unix seconds), paths, store connection, config.

    `session_id` is the session whose SessionStart runs the gate (its own rows are excluded
    from boundary checks); `deadline` is a `time.monotonic()` value the embedding probe's
    warm-up must finish before (the hook's own timeout), or None; `witness` lets the
    transcript witness read new transcript bytes (off the hook path only).
    """

    __slots__ = ("root", "state_dir", "conn", "cfg", "now", "session_id", "deadline",
                 "trace", "witness", "scheduled", "_tables", "_meta")

    def __init__(self, root: str, conn, cfg: dict, now: float | None = None,
                 session_id: str | None = None, deadline: float | None = None,
                 trace=None, witness: bool = False):
        self.root = os.path.abspath(root)
        self.state_dir = os.path.join(self.root, STATE_DIR)
        self.conn = conn
        self.cfg = cfg
        self.now = time.time() if now is None else float(now)
        self.session_id = session_id
        self.deadline = deadline
        self.trace = trace  # a memory_core.outbox.spans.Trace for probe spans, or None
        # whether the witness may read new transcript bytes (probes.witness): `memhealth gate`
        # and serve's scheduled gate; never a hook's gate, which reads the recorded findings only
        self.witness = witness
        self.scheduled = False  # serve's background gate: reports one-time notices, never uses them up
        self._tables: set[str] | None = None
        self._meta: dict[str, str | None] = {}

    @property
    def now_ns(self) -> int:
        return int(self.now * 1e9)

    @property
    def db_path(self) -> str:
        return os.path.join(self.state_dir, DB_NAME)

    @property
    def spill_path(self) -> str:
        return os.path.join(self.state_dir, SPILL_NAME)

    @property
    def settings_paths(self) -> list[str]:
        """The project's Claude Code settings files, shared first (both may wire hooks)."""
        base = os.path.join(self.root, ".claude")
        return [os.path.join(base, "settings.json"), os.path.join(base, "settings.local.json")]

    def has_table(self, name: str) -> bool:
        if self._tables is None:
            self._tables = {row[0] for row in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        return name in self._tables

    def meta(self, key: str) -> str | None:
        if key not in self._meta:
            self._meta[key] = get_meta(self.conn, key)
        return self._meta[key]

    def acked_ns(self, check: str) -> int:
        """When `memhealth gate --ack CHECK` last acknowledged CHECK's past findings (0 =
        never): events at or before it are not reported again; later ones are."""
        raw = self.meta(ACK_PREFIX + check)
        if not raw:
            return 0
        try:
            value = json.loads(raw)
            return int(value.get("ack_ns", 0)) if isinstance(value, dict) else int(value)
        except (ValueError, TypeError):
            return 0

    def acked_id(self, check: str) -> int:
        """The newest heartbeat row when CHECK was last acknowledged (0 = never, or an
        acknowledgement older than this field): rows written after it are reported again,
        whatever their clocks said."""
        raw = self.meta(ACK_PREFIX + check)
        try:
            value = json.loads(raw) if raw else {}
            return int(value.get("ack_id", 0)) if isinstance(value, dict) else 0
        except (ValueError, TypeError):
            return 0

    def last_activity_ns(self) -> int | None:
        """Start of the newest completed hook run other than the gate's own: when a session
        last did something. None for a project no session has touched (idle is not dead)."""
        # a row dated in the future (a clock set back since) is not activity: it would make
        # every watermark look behind it for as long as the skew lasts
        return heartbeat_reads.last_activity_ns(self.conn, self.now_ns + FUTURE_SLACK_NS)

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (None when there is none)."""
        if self.deadline is None:
            return None
        return self.deadline - time.monotonic()
