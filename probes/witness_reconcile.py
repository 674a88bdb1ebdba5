"""The witness's reconciliation: read what each transcript gained, match every event to the
heartbeat row it should have left, and record the events no row recorded.

    report = reconcile(conn, root, cfg, now_ns)   # -> Report (bytes read, judged, findings)

Bounded: each transcript is read from its mark (complete lines only; a truncated, replaced or
rewritten file starts again), at most `max_bytes` per run; two reconcilers at once do not both
record the same bytes. The rows live in memory_core.outbox.witness_log.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter

from memory_core.outbox import heartbeat_reads, witness_log
from memory_core.outbox.rollups import bump
from memory_core.store.db import write
from memory_core.store.meta import get_meta, set_meta
from probes.wiring import HOOK_OF, read_wiring, settings_files
from probes.witness_transcript import (
    _MARKERS,
    MAX_PENDING,
    Observer,
    _head,
    _over_http,
    _same_head,
    transcript_paths,
)

MAX_BYTES = 8 * 1024 * 1024       # transcript bytes read per reconciliation, over all files
MAX_LINE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 1024
IDLE_S = 60.0                     # a transcript unchanged this long: its last events are done
MATCH_WINDOW_NS = 60 * 10**9      # a row without event_ref matches an event this close in time
COMPACT_WINDOW_NS = 600 * 10**9   # PreCompact runs before the boundary is written
KEEP_FINDINGS = 1000
LAST_OK_KEY = "witness.last_ok"   # meta: {event: transcript ns of the latest event a row recorded}


class Report:
    """What one reconciliation did: bytes and files read, events judged, findings recorded."""

    __slots__ = ("files_found", "bytes_read", "files_read", "judged", "matched", "findings", "more")

    def __init__(self):
        self.files_found = self.bytes_read = self.files_read = self.judged = self.matched = self.findings = 0
        self.more = False

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


def _floor_ns(conn, cfg: dict, now_ns: int) -> int:
    """Events before this are not judged: before the store existed (memhealth was not
    recording), or older than the heartbeat window."""
    window_ns = int(cfg["gate"]["heartbeat_max_age_days"] * 86400e9)
    floor = now_ns - window_ns
    raw = get_meta(conn, "store.id")
    try:
        created = json.loads(raw).get("created_ns") if raw else None
    except (ValueError, AttributeError):
        created = None
    if isinstance(created, int):
        floor = max(floor, created)
    return floor


def reconcile(conn, root: str, cfg: dict, now_ns: int | None = None, max_bytes: int = MAX_BYTES,
              deadline: float | None = None) -> Report:
    """Read what the transcripts gained since the last reconciliation, match each event to
    its row, record what no row recorded. Raises StoreError when the store cannot be written."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    report = Report()
    floor = _floor_ns(conn, cfg, now_ns)
    budget = max_bytes
    paths = transcript_paths(conn, root, cfg)
    report.files_found = len(paths)
    http = read_wiring(settings_files(root)).http if paths else {}
    for path in paths:
        if budget <= 0 or (deadline is not None and time.monotonic() > deadline):
            report.more = True
            break
        read = _reconcile_file(conn, path, now_ns, floor, budget, report, http)
        budget -= read
    _prune(conn, now_ns)
    return report


def _reconcile_file(conn, path: str, now_ns: int, floor: int, budget: int, report: Report,
                    http: dict[str, str] | None = None) -> int:
    row = witness_log.mark(conn, path)
    mark_seen = (row[2], row[4]) if row else None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return 0
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        ino, head, offset, raw_state = row[:4] if row else (None, None, 0, None)
        try:
            state = json.loads(raw_state) if raw_state else {}
        except ValueError:
            state = {}
        if row is not None and (st.st_size < offset or (ino is not None and ino != st.st_ino)
                                or (head and offset and not _same_head(fh, head))):
            offset, state, head = 0, {}, None  # truncated, replaced or rewritten: read it again
        idle = (now_ns - st.st_mtime_ns) / 1e9 > IDLE_S
        pending = state.get("pending") or []
        if st.st_size == offset and not (idle and any(not e.get("ready") for e in pending)):
            return 0
        fh.seek(offset)
        data = fh.read(min(budget, MAX_LINE_BYTES))
        end = data.rfind(b"\n")
        consumed = data[:end + 1] if end >= 0 else b""
        skipped = 0
        if end < 0 and offset + len(data) < st.st_size:
            # one record longer than this run's budget (a pasted screenshot is a multi-megabyte
            # line): stepped over, so it cannot stall the witness; it holds no hook event
            line_end = _skip_line(fh, offset + len(data))
            skipped = line_end - offset if line_end is not None else 0
        if offset == 0 and consumed:
            first = consumed[:HEAD_BYTES]
            head = f"{len(first)}:{_head(first)}"
    observer = Observer(state)
    for line in consumed.split(b"\n"):
        if not line.strip() or not any(m in line for m in _MARKERS):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            observer.observe(rec)
    new_offset = offset + (skipped or len(consumed))
    complete = new_offset >= st.st_size
    if idle and complete:
        for ev in observer.pending:
            ev["ready"] = True
    if new_offset > offset:
        report.files_read += 1
        report.bytes_read += new_offset - offset
    if offset + len(data) < st.st_size:
        report.more = True
    with write(conn):
        # two reconcilers at once (serve's gate and a `memhealth gate`) must not both record
        # the same bytes: the first to commit wins, the other finds the mark moved and stops
        now_mark = witness_log.mark_position(conn, path)
        if now_mark != mark_seen:
            return 0
        findings = _judge(conn, observer, floor, report, path, http)
        _record(conn, findings, now_ns, path, report)
        witness_log.set_mark(conn, path, st.st_ino, head if new_offset else None, new_offset,
                             json.dumps(observer.state(), separators=(",", ":")), now_ns)
    return new_offset - offset


def _skip_line(fh, pos: int) -> int | None:
    """The offset just past the newline at or after `pos`; None when the line is not
    complete yet (still being written: it is read once it is)."""
    fh.seek(pos)
    while True:
        block = fh.read(1 << 20)
        if not block:
            return None
        nl = block.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(block)



def _matched(conn, ev: dict, used: set[int], recorded: set[tuple[str, str]]) -> bool:
    hook = HOOK_OF[ev["e"]]
    ts = ev.get("ts") or 0
    if ev.get("ref") and (hook, ev["ref"]) in recorded:
        return True
    if ev["e"] == "SessionStart" and not ev.get("window"):
        return heartbeat_reads.session_started(conn, ev["sid"])
    lo, hi = (ts - COMPACT_WINDOW_NS, ts + 5 * 10**9) if ev["e"] == "PreCompact" else \
        (ts - MATCH_WINDOW_NS, ts + MATCH_WINDOW_NS)
    for hb_id in heartbeat_reads.unreferenced_ids(  # enough rows to reach an unused one
            conn, hook, ev["sid"], lo, hi, len(used) + 1, with_ref=ev["e"] == "PreCompact"):
        if hb_id not in used:
            used.add(hb_id)
            return True
    return False


def _judge(conn, observer: Observer, floor: int, report: Report, path: str,
           http: dict[str, str] | None = None) -> list[dict]:
    """Judge every ready event (and what the transcript said by itself); return the findings.
    `http`: the events the settings send over HTTP, and their URLs (wiring.Wiring.http)."""
    http = http or {}
    used: set[int] = set()
    findings: list[dict] = []
    last_ok: dict[str, int] = {}
    keep: list[dict] = []
    overflow = len(observer.pending) - MAX_PENDING
    recorded = heartbeat_reads.refs_recorded(conn, [e["ref"] for i, e in enumerate(observer.pending)
                                     if e.get("ref") and (e.get("ready") or i < overflow)])
    for i, ev in enumerate(observer.pending):
        if not ev.get("ready") and i >= overflow:
            keep.append(ev)
            continue
        ts = ev.get("ts") or 0
        if ts < floor:
            continue
        if ev["e"] == "PreCompact":
            err = observer.errs.pop(f"PreCompact:{ev['sid']}", None)
            if err is not None:
                ev["err"] = err
        if ev["e"] == "SessionStart" and "err" not in ev:
            err = observer.errs.pop(f"SessionStart:{ev['sid']}", None)
            if err is not None:
                ev["err"] = err
        report.judged += 1
        if _matched(conn, ev, used, recorded):
            report.matched += 1
            last_ok[ev["e"]] = max(last_ok.get(ev["e"], 0), ts)
            continue
        err = ev.get("err")
        kind = "failed" if err else ("lost" if ev.get("listed") else "not_run")
        finding = {"e": ev["e"], "sid": ev["sid"], "ts": ts, "kind": kind,
                   "exit": err.get("exit") if err else None, "stderr": err.get("stderr", "") if err else "",
                   "command": err.get("command", "") if err else "", "tool": ev.get("tool")}
        if err and _over_http(err, http.get(ev["e"])):
            command = finding["command"]
            finding.update(exit=None, command="", transport="http",
                           url=command if command.startswith("http") else http.get(ev["e"], ""))
        findings.append(finding)
    observer.pending = keep
    for d in observer.direct:
        ts = d.get("ts") or 0
        if ts < floor:
            continue
        report.judged += 1
        findings.append({**d, "tool": None})
    observer.direct = []
    if last_ok:
        try:
            known = json.loads(get_meta(conn, LAST_OK_KEY) or "{}")
        except ValueError:
            known = {}
        known = known if isinstance(known, dict) else {}
        for event, ts in last_ok.items():
            if ts > int(known.get(event, 0) or 0):
                known[event] = ts
        set_meta(conn, LAST_OK_KEY, json.dumps(known, sort_keys=True))
    return findings


def _record(conn, findings: list[dict], now_ns: int, path: str, report: Report) -> None:
    """One row per session, event, kind and failure: counted, with the tools and times."""
    groups: dict[tuple, dict] = {}
    for f in findings:
        key = (f["sid"], f["e"], f["kind"], f.get("exit"), f.get("stderr", ""))
        g = groups.setdefault(key, {"n": 0, "first": f["ts"], "last": f["ts"], "tools": Counter(),
                                    "command": f.get("command", ""), "url": f.get("url") or "",
                                    "http": f.get("transport") == "http"})
        g["n"] += 1
        g["first"], g["last"] = min(g["first"], f["ts"]), max(g["last"], f["ts"])
        if f.get("tool"):
            g["tools"][f["tool"]] += 1
    for (sid, event, kind, exit_code, stderr), g in groups.items():
        detail = {}
        if g["tools"]:
            detail["tools"] = dict(g["tools"])
        if g["command"]:
            detail["command"] = g["command"][:200]
        if g["http"]:  # an http hook's failure (the HTTP transport): no process, no exit code
            detail["transport"] = "http"
            if g["url"]:
                detail["url"] = g["url"][:200]
        witness_log.record_finding(conn, now_ns, sid, event, kind, g["n"], exit_code, stderr or None,
                                   g["first"], g["last"], path,
                                   json.dumps(detail, sort_keys=True) if detail else None)
        bump(conn, "memhealth_witness_findings_total", {"event": event, "kind": kind}, g["n"])
        report.findings += 1


def _prune(conn, now_ns: int) -> None:
    """Keep the findings and the offsets bounded: the newest KEEP_FINDINGS rows; marks of
    transcripts gone from disk."""
    n = witness_log.finding_count(conn)
    stale = [p for p in witness_log.marked_paths(conn) if not os.path.exists(p)]
    if n <= KEEP_FINDINGS and not stale:
        return
    with write(conn):
        if n > KEEP_FINDINGS:
            witness_log.keep_newest_findings(conn, KEEP_FINDINGS)
        for p in stale:
            witness_log.drop_mark(conn, p)
