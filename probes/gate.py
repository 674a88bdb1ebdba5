"""The gate: run every check, print one verdict line, record what it saw.

    ev = Evidence(root, conn, cfg)                 # injected now / paths / store / config
    verdict = run(ev)                              # heartbeat "gate", gate_runs, rollups
    print(verdict.text())                          # MEMORY-HEALTH: 10/11 GREEN (1 RED) ...
    sys.exit(1 if verdict.red else 0)

N is the number of checks that ran (`len(CHECKS)` unless a caller passes its own list). A
check that raises becomes RED "check raised: …" with a fix, never a crash of the gate.
"""

from __future__ import annotations

import json
import os
import time

from memory_core.errors import MemoryCoreError, StoreError
from memory_core.outbox import gate_log, heartbeat, heartbeat_reads, rollups, spans, spill
from memory_core.store import repair
from memory_core.store.db import write
from memory_core.store.meta import set_meta
from probes import checks, code_index, heartbeats, novelty, transport, wiring, witness
from probes.evidence import ACK_PREFIX
from probes.result import MEMORY, NOTE, OPERATOR, RED, CheckResult
from telemetry.catalog import EMBEDDING_STATES, GATE_STATUS_VALUES


def _embedding_path(ev) -> CheckResult:
    from probes.embedding import embedding_path  # deferred: the gate imports it only to run it

    return embedding_path(ev)


CHECKS = (
    ("ingest_freshness", checks.ingest_freshness),
    ("vector_coverage", checks.vector_coverage),
    ("hook_heartbeats", heartbeats.hook_heartbeats),
    ("hook_transport", transport.hook_transport),
    ("capture_queue", checks.capture_queue),
    ("lineage_freshness", checks.lineage_freshness),
    ("index_integrity", checks.index_integrity),
    ("memory_files", checks.memory_files),
    ("code_index", code_index.code_index_check),
    ("cue_delivery", checks.cue_delivery),
    ("render_novelty", novelty.render_novelty),
    ("embedding_path", _embedding_path),
    ("integrations", checks.integrations),
    ("telemetry_pipeline", checks.telemetry_pipeline),
    # -- hooks that do not run: the wiring at configuration time, the transcript as a witness
    ("hook_wiring", wiring.hook_wiring),
    ("hook_witness", witness.hook_witness),
)

# Whose a check's findings are when the check does not say (CheckResult.audience): the
# memory path's checks speak to Claude; integrations and telemetry speak to the operator.
# A check overrides per result where one of its notes is the person's business (e.g. the
# embedding probe's "not configured", the heartbeat check's "failed recently, latest ok").
AUDIENCE = {
    "ingest_freshness": MEMORY, "vector_coverage": MEMORY, "hook_heartbeats": MEMORY,
    "hook_transport": MEMORY,
    "capture_queue": MEMORY, "lineage_freshness": MEMORY, "index_integrity": MEMORY,
    "memory_files": MEMORY, "code_index": MEMORY, "render_novelty": MEMORY, "embedding_path": MEMORY,
    "integrations": OPERATOR, "telemetry_pipeline": OPERATOR, "store": MEMORY,
    "hook_wiring": MEMORY, "hook_witness": MEMORY,
}
# Checks whose REDs can be about a past event (a hook that did not fire, a webhook delivery
# that failed): `memhealth gate --ack CHECK` acknowledges what happened up to now.
ACKABLE = ("hook_heartbeats", "integrations", "cue_delivery", "hook_witness")


class Verdict:
    """The gate's answer: every CheckResult, counts, and the lines to print.

        verdict.headline()   # "MEMORY-HEALTH: 11/11 GREEN"
        verdict.to_json()    # {"total", "green", "red", "checks": [...]}
    """

    __slots__ = ("results", "duration_ms", "run_id")

    def __init__(self, results: list[CheckResult], duration_ms: float = 0.0):
        self.results = results
        self.duration_ms = duration_ms
        self.run_id: int | None = None

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def red(self) -> int:
        return sum(1 for r in self.results if r.status == RED)

    @property
    def green(self) -> int:
        """Checks that are not RED (a NOTE is green with a remark)."""
        return self.total - self.red

    @property
    def verdict(self) -> str:
        return "red" if self.red else "green"

    def headline(self) -> str:
        if self.red:
            return f"MEMORY-HEALTH: {self.green}/{self.total} GREEN ({self.red} RED)"
        return f"MEMORY-HEALTH: {self.total}/{self.total} GREEN"

    def lines(self) -> list[str]:
        """The headline, then one line per RED, then one per NOTE."""
        reds = [r.line() for r in self.results if r.status == RED]
        notes = [r.line() for r in self.results if r.status == "note"]
        return [self.headline(), *reds, *notes]

    def text(self) -> str:
        return "\n".join(self.lines())

    def context_lines(self) -> list[str]:
        """What Claude reads at session start: the verdict line, memory-path REDs and NOTEs.
        A RED for the operator (telemetry, an integration) is named, not explained, so the
        count in the verdict line adds up; its detail and fix go to the person."""
        reds = [r.line() if r.audience != OPERATOR else
                f"  RED {r.name}: not on the memory path (shown to the user; memory unaffected)"
                for r in self.results if r.status == RED]
        notes = [r.line() for r in self.results if r.status == NOTE and r.audience != OPERATOR]
        return [self.headline(), *reds, *notes]

    def operator_lines(self, quiet_notes: bool = False) -> list[str]:
        """What only the person needs: operator REDs (with their fix) and operator NOTEs
        (without them when `quiet_notes`: the person has already been told)."""
        reds = [r.line() for r in self.results if r.status == RED and r.audience == OPERATOR]
        notes = [] if quiet_notes else [r.line() for r in self.results
                                        if r.status == NOTE and r.audience == OPERATOR]
        return [*reds, *notes]

    def operator_notes_key(self) -> str:
        """Which checks carry an operator NOTE, as one string: a session start repeats the
        notes only when this changes (details move with counts and clocks; the set does not)."""
        return ",".join(sorted(r.name for r in self.results if r.status == NOTE and r.audience == OPERATOR))

    def to_json(self) -> dict:
        return {"total": self.total, "green": self.green, "red": self.red,
                "checks": [r.to_dict() for r in self.results]}

    def get(self, name: str) -> CheckResult | None:
        return next((r for r in self.results if r.name == name), None)


def run_checks(ev, selected=CHECKS, trace=None) -> list[CheckResult]:
    """Run each check, timing it; an exception becomes a RED result naming it."""
    results = []
    for name, fn in selected:
        span = trace.span(f"probe {name}", **{"memhealth.check": name}) if trace is not None else None
        t0 = time.perf_counter()
        raised = None
        try:
            result = fn(ev)
            if not isinstance(result, CheckResult):
                raise TypeError(f"returned {type(result).__name__}, not a CheckResult")
        except Exception as exc:  # a check's bug or a broken data source is a RED, not a crash
            raised = exc
            result = CheckResult(RED, f"check raised: {type(exc).__name__}: {str(exc)[:200]}",
                                 "investigate the data source (run `memhealth gate --json` for every "
                                 "check's detail)")
        result.name = name
        if result.audience is None:
            result.audience = AUDIENCE.get(name, MEMORY)
        result.duration_ms = (time.perf_counter() - t0) * 1000
        if span is not None:
            span.update({"memhealth.check.status": result.status, "memhealth.check.detail": result.detail})
            if result.state is not None:
                span.set("memhealth.check.state", result.state)
            # a RED verdict is the probe doing its job: the span stays unset (OTel status
            # ERROR means the operation failed); only a probe that raised is an error
            if raised is not None:
                span.fail(result.detail, type(raised).__name__)
            span.end()
        results.append(result)
    return results


def store(conn, verdict: Verdict, session_id: str | None, ts_ns: int) -> int:
    """Write the gate_runs row, its gate_checks rows and the rollups in one transaction."""
    with write(conn):
        run_id = gate_log.record_run(
            conn, ts_ns, session_id, verdict.total, verdict.green, verdict.red, verdict.verdict,
            verdict.duration_ms,
            [(r.name, r.status, r.state, r.detail, r.fix or None, r.duration_ms) for r in verdict.results])
        rollups.bump(conn, "memhealth_gate_runs_total", {"verdict": verdict.verdict})
        for r in verdict.results:
            rollups.set_gauge(conn, "memhealth_gate_check_status", GATE_STATUS_VALUES[r.status],
                             {"check": r.name})
        probe = verdict.get("embedding_path")
        if probe is not None and probe.state in EMBEDDING_STATES:
            for state in EMBEDDING_STATES:
                rollups.set_gauge(conn, "memhealth_embedding_state", 1.0 if state == probe.state else 0.0,
                                 {"state": state})
            if "probe_s" in probe.extra:
                rollups.set_gauge(conn, "memhealth_embedding_probe_duration_seconds", probe.extra["probe_s"])
            rollups.set_gauge(conn, "memhealth_embedding_warmup_seconds",
                             probe.extra.get("warmup_s", 0.0) if probe.state == "cold" else 0.0)
    return run_id


def run(ev, selected=CHECKS, trace=None, write_trace: bool = True) -> Verdict:
    """Run the gate with its own heartbeat (hook "gate") and store the verdict.

    `trace`: the caller's Trace (the session-start hook), whose writer owns the spans; without
    one the gate records its own trace with a root span `memhealth.gate`. Recording is best
    effort: a store that cannot be written still gets a verdict (and a spilled heartbeat)."""
    conn = ev.conn
    # the gate's own clock is the evidence clock (equal to the wall clock outside tests), so a
    # gate run at an injected time never reaps or judges its own open heartbeat
    started_ns = ev.now_ns
    t0 = time.perf_counter()
    own_trace = trace is None
    if own_trace:
        trace = spans.Trace()
    root = trace.span("memhealth.gate", **{"session.id": ev.session_id or ""})
    ev.trace = trace
    hb_id = None
    try:
        hb_id = heartbeat.start(conn, "gate", ev.session_id, trace.trace_id, started_ns)
    except (StoreError, MemoryCoreError):
        hb_id = None
    results = run_checks(ev, selected, trace)
    verdict = Verdict(results, (time.perf_counter() - t0) * 1000)
    _bound_outbox(ev)
    root.update({"memhealth.gate.total": verdict.total, "memhealth.gate.red": verdict.red})
    root.end()
    detail = f"{verdict.green}/{verdict.total} green"
    try:
        verdict.run_id = store(conn, verdict, ev.session_id, ev.now_ns)
        if hb_id is not None:
            heartbeat.finish(conn, hb_id, "gate", started_ns, "ok", detail=detail,
                                    trace=trace if (own_trace and write_trace) else None,
                                    ended_ns=started_ns + int((time.perf_counter() - t0) * 1e9))
        else:
            raise StoreError("the gate's heartbeat could not be started")
    except (StoreError, MemoryCoreError) as exc:
        spill.append(ev.spill_path, {
            "kind": "heartbeat", "id": hb_id, "hook": "gate", "session_id": ev.session_id,
            "pid": os.getpid(), "trace_id": trace.trace_id, "started_ns": started_ns,
            "ended_ns": started_ns + int((time.perf_counter() - t0) * 1e9), "outcome": "error", "reason": getattr(exc, "reason", "store"),
            "detail": f"{detail}; not stored: {exc}"[:500]})
    return verdict


def _bound_outbox(ev) -> None:
    """Keep the span outbox bounded by age and rows. Here (once per gate run: every session
    start and every `memhealth gate`) rather than on every hook, so a prompt never pays for
    it; best effort, a busy store prunes next time."""
    tel = ev.cfg.get("telemetry", {})
    try:
        spans.prune_spans(ev.conn, float(tel.get("retention_days", 14.0)),
                           int(tel.get("outbox_max_rows", spans.DEFAULT_MAX_ROWS)), now_ns=ev.now_ns)
    except (StoreError, MemoryCoreError, ev.conn.Error):
        pass


def acknowledge(conn, check: str, now_ns: int, detail: str = "") -> None:
    """Record that the operator acknowledged CHECK's past findings up to `now_ns` (meta row
    `gate.ack.<check>`, shown by `memhealth report`). Findings after it are reported again."""
    if check not in ACKABLE:
        raise ValueError(f"{check} has no past-event findings to acknowledge; "
                         f"acknowledgeable: {', '.join(ACKABLE)}")
    with write(conn):
        # ack_id: the rows it covers by insertion order, so a skewed clock cannot hide a later
        # failure behind the acknowledgement (ack_ns stays for `memhealth report`)
        ack_id = heartbeat_reads.newest_id(conn)
        set_meta(conn, ACK_PREFIX + check, json.dumps({"ack_ns": now_ns, "ack_id": ack_id,
                                                       "detail": detail[:500]}))


def dumps(verdict: Verdict) -> str:
    return json.dumps(verdict.to_json(), ensure_ascii=False)


def hook_deadline(root: str, event: str, started_ns: int, default_s: float = 600.0) -> float:
    """The `time.monotonic()` by which a hook that started at `started_ns` (wall clock) is
    killed: its `timeout` in the project's settings (Claude Code's default is 600 s)."""
    _events, timeouts, _problems = heartbeats.wired_hooks(
        [os.path.join(root, ".claude", "settings.json"), os.path.join(root, ".claude", "settings.local.json")])
    elapsed_s = max(time.time_ns() - started_ns, 0) / 1e9
    return time.monotonic() - elapsed_s + float(timeouts.get(event, default_s))


STORE_FIXES = {
    "db_corrupt": "move .memhealth/memory.db aside, then `memhealth init` and `memhealth ingest`: "
                  "the store is rebuilt from your files",
    "db_locked": f"another process holds the write lock: find it with `{repair.holders_command()}`",
    "db_readonly": "make .memhealth/ and memory.db writable by the user Claude Code runs as: "
                   f"`{repair.readonly_command()}` (SQLite creates "
                   "-wal and -shm with the database's mode)",
    "db_full": "free space on the disk holding .memhealth/ (`df -h .memhealth`) or raise the "
               "file-size limit (`ulimit -f`)",
    "db_io": f"check the disk holding .memhealth/ (`{repair.disk_command()}`)",
}


def store_failure(exc: BaseException) -> Verdict:
    """The verdict when the store itself cannot be opened: the one check that could run is
    RED, so a dead store is never silent (the paper's fourth failure mode)."""
    reason = getattr(exc, "reason", "store")
    fix = getattr(exc, "fix", "") or STORE_FIXES.get(reason, "run `memhealth gate` and read the error")
    return Verdict([CheckResult(RED, str(exc), fix, name="store")])
