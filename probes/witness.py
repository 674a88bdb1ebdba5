"""The transcript as a witness: what Claude Code saw fire, against the rows memhealth wrote.

    report = reconcile(conn, root, cfg, now_ns)   # read new transcript bytes, record findings
    hook_witness(ev)                              # the gate check over the recorded findings

A hook that fails before memhealth runs (a broken wrapper, a PATH change, an edited
settings file) or that is not wired at all leaves no heartbeat, so no row can say it
happened. The session's transcript can: every tool call is a `tool_use` block with its id,
every typed prompt a `user` record with its `promptId`, every compaction a
`compact_boundary`, every turn end a `stop_hook_summary` naming the commands that ran, and
every failed hook an attachment (`hook_non_blocking_error`, `hook_blocking_error`) with its
event, exit code and stderr. The hooks record the event's id (`heartbeats.event_ref`:
tool_use_id, prompt_id), so each event is matched to its own row:

- a tool call memhealth's matcher covers needs a pre-tool row, and a post-tool row when the
  tool succeeded; a prompt needs a prompt row; a session with prompts a session-start row;
  a compaction a pre-compact row; a turn end our Stop command among the ones that ran.
- an event with no row is a finding: kind `failed` when the transcript holds a failure of
  that event (its exit code and stderr are kept), else `not_run` (no hook ran: missing from
  the settings, or not matching). A failure of an event whose row exists is another hook's.
- rows without an event_ref (written before the column existed, or reaped from the start
  journal) match an event of their hook and session within MATCH_WINDOW_NS.
- on the HTTP transport serve's hook runner writes the same rows with the same event_ref; a
  refused POST (serve down: "connect ECONNREFUSED …"; a stale secret: "HTTP 401 from URL")
  is a failure of the transport: no exit code is kept (no process ran), the URL is, and the
  FIX starts serve where the settings point or rewrites the secret (_http_fixes).

Bounded: each transcript is read from where the last reconciliation stopped (complete lines
only; a truncated, replaced or rewritten file starts again, as the transcripts ingester's
watermark does), at most `max_bytes` per run; an event is judged only once the transcript
shows its hooks finished (a later assistant message) or the file has been idle IDLE_S.
Events before the store existed or older than the heartbeat window are not judged.
Never on the hook path: the gate reads transcripts only when its caller allows it
(`memhealth gate`, serve's scheduled gate); a SessionStart's gate reads the findings only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import Counter
from datetime import datetime
from urllib.parse import urlsplit

from memory_core.delivery.intent import system_turn
from memory_core.errors import MemoryCoreError
from memory_core.outbox import heartbeat_reads
from memory_core.outbox.rollups import bump
from memory_core.store.db import write
from memory_core.store.meta import get_meta, set_meta
from probes.heartbeats import SESSIONS_KEY
from probes.result import OPERATOR, CheckResult, ago, green, note, red
from probes.wiring import (
    HOOK_OF,
    TOOLS_OF,
    hook_named,
    init_command,
    read_wiring,
    settings_files,
)

MAX_BYTES = 8 * 1024 * 1024       # transcript bytes read per reconciliation, over all files
MAX_FILES = 200                   # transcripts looked at per reconciliation (newest first)
MAX_PENDING = 2000                # events kept waiting per transcript; the oldest are judged
MAX_LINE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 1024
IDLE_S = 60.0                     # a transcript unchanged this long: its last events are done
MATCH_WINDOW_NS = 60 * 10**9      # a row without event_ref matches an event this close in time
COMPACT_WINDOW_NS = 600 * 10**9   # PreCompact runs before the boundary is written
KEEP_FINDINGS = 1000
LAST_OK_KEY = "witness.last_ok"   # meta: {event: transcript ns of the latest event a row recorded}
FAILURE_TYPES = ("hook_non_blocking_error", "hook_blocking_error", "hook_error", "hook_cancelled",
                 "hook_timeout")
_STDERR_PREFIXES = ("Failed with non-blocking status code: ", "Failed with blocking status code: ")
_COMMAND_STDOUT = "<local-command-stdout>"
_PRECOMPACT_LINE = re.compile(r"^PreCompact \[(.+)\] (completed successfully|failed)(?::\s?(.*))?$")
# statusMessage stands in for the command in some attachments: ours all begin so
_OUR_STATUS = "memhealth:"
# -- the HTTP transport: an http hook that failed ---------------------------------------------
# Claude Code 2.1.332 records a refused POST as a hook_non_blocking_error with no command,
# "exitCode": 0 and the client's error as stderr ("connect ECONNREFUSED 127.0.0.1:PORT"); a
# Stop summary lists the URL as the command. No process exited, so no exit code is kept.
_NET_ERROR = re.compile(r"\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL"
                        r"|ENOTFOUND|EPIPE|socket hang up)\b")
# serve answered 401 (Claude Code: "HTTP 401 from URL", the status as exitCode): a stale secret
_UNAUTHORIZED = re.compile(r"^HTTP 401\b")
# cheap byte tests before json.loads: a line with none of these holds nothing we judge
_MARKERS = (b'"tool_use"', b'"tool_result"', b'"promptId"', b'compact_boundary', b'"hook_',
            b'stop_hook_summary', b'blocked_by_hook', b'"assistant"')


def _ts(value) -> int | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


def _stderr(text) -> str:
    if not isinstance(text, str):
        return ""
    for prefix in _STDERR_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    # a Python traceback says what failed on its last line (an ImportError before memhealth
    # could start), not on its first
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line[:200]


def _ours(command) -> bool:
    return isinstance(command, str) and (hook_named(command) is not None
                                         or command.startswith(_OUR_STATUS))


def _over_http(fail: dict, url: str | None) -> bool:
    """Whether a failure is an http hook's: its command is a URL, or it names no command and
    the event is wired over HTTP (`url`) or its stderr is a network client's error. A failure
    that names a command is that command's, whatever its stderr says."""
    command = fail.get("command") or ""
    if command:
        return command.startswith(("http://", "https://"))
    return bool(url) or bool(_NET_ERROR.search(fail.get("stderr") or ""))


def _failure(att: dict) -> dict:
    """exit code, stderr and command of a failure attachment."""
    if att.get("type") == "hook_blocking_error":
        blocking = att.get("blockingError")
        text = blocking.get("blockingError") if isinstance(blocking, dict) else blocking
        command = blocking.get("command") if isinstance(blocking, dict) else att.get("command")
        text = text if isinstance(text, str) else ""
        if text.startswith("[") and "]: " in text:
            text = text.split("]: ", 1)[1]
        return {"exit": 2, "stderr": _stderr(text), "command": command if isinstance(command, str) else ""}
    code = att.get("exitCode")
    return {"exit": code if isinstance(code, int) and not isinstance(code, bool) else None,
            "stderr": _stderr(att.get("stderr") or att.get("content")),
            "command": att.get("command") if isinstance(att.get("command"), str) else ""}


def _prompt_text(message) -> str | None:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if not texts or len(texts) != len(content) or not all(isinstance(t, str) for t in texts):
            return None
        content = texts[0]
    return content if isinstance(content, str) and content.strip() else None


class Observer:
    """Turns transcript records into events waiting for their hooks' rows (kept in `state`,
    which is saved with the file's offset) and the verdicts the transcript gives by itself."""

    def __init__(self, state: dict):
        self.pending: list[dict] = list(state.get("pending") or [])
        self.started: list[str] = list(state.get("started") or [])   # sessions already judged
        self.errs: dict = dict(state.get("errs") or {})              # session-level failures
        self.direct: list[dict] = []                                   # judged by the transcript
        # indexes over `pending`: events not ready yet, and events by (event, ref), so a long
        # transcript costs one pass, not one scan of the waiting events per record
        self.unready = [e for e in self.pending if not e.get("ready")]
        self.by_ref = {(e["e"], e["ref"]): e for e in self.pending if e.get("ref")}

    def state(self) -> dict:
        out = {"pending": self.pending[-MAX_PENDING:], "started": self.started[-200:]}
        if self.errs:
            out["errs"] = dict(list(self.errs.items())[-200:])
        return out

    def _add(self, event: str, sid, ts, ref=None, tool=None, msg=None, ready=False) -> dict:
        ev = {"e": event, "sid": sid, "ts": ts, "ref": ref, "tool": tool, "msg": msg, "ready": ready}
        self.pending.append(ev)
        if not ready:
            self.unready.append(ev)
        if ref:
            self.by_ref[(event, ref)] = ev
        return ev

    def _ready_before(self, msg) -> None:
        """A later assistant message: every event before it has had its hooks run (the
        model's request carries their context). Tool calls of the same message are not."""
        waiting = []
        for ev in self.unready:
            if msg is None or ev.get("msg") != msg:
                ev["ready"] = True
            else:
                waiting.append(ev)
        self.unready = waiting

    def observe(self, rec: dict) -> None:
        kind = rec.get("type")
        sid = rec.get("sessionId") if isinstance(rec.get("sessionId"), str) else None
        ts = _ts(rec.get("timestamp"))
        if kind == "assistant":
            message = rec.get("message") if isinstance(rec.get("message"), dict) else {}
            msg = message.get("id") if isinstance(message.get("id"), str) else rec.get("requestId")
            self._ready_before(msg)
            for block in message.get("content") if isinstance(message.get("content"), list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    name = block.get("name") if isinstance(block.get("name"), str) else ""
                    if name in TOOLS_OF["PreToolUse"]:
                        self._add("PreToolUse", sid, ts, block["id"][:200], name, msg)
        elif kind == "user":
            message = rec.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content):
                for block in content:
                    if not isinstance(block, dict) or block.get("type") != "tool_result":
                        continue
                    pre = self.by_ref.get(("PreToolUse", block.get("tool_use_id")))
                    if pre is not None and block.get("is_error") is not True:
                        self._add("PostToolUse", pre["sid"], ts or pre["ts"], pre["ref"], pre["tool"], pre["msg"])
                return
            if rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("isSidechain"):
                return
            if isinstance(content, str) and content.startswith(_COMMAND_STDOUT):
                self._compact_output(content, sid)
                return
            prompt_id = rec.get("promptId")
            text = _prompt_text(message)
            if not isinstance(prompt_id, str) or text is None or system_turn(text) is not None:
                return
            if sid and sid not in self.started:
                self.started.append(sid)
                self._add("SessionStart", sid, ts)
            self._add("UserPromptSubmit", sid, ts, prompt_id[:200])
        elif kind == "system":
            subtype = rec.get("subtype")
            if subtype == "compact_boundary" and not rec.get("isSidechain"):
                # judged once /compact's output (which names the PreCompact commands) or a later
                # message is read, or the file goes idle
                self._add("PreCompact", sid, ts)
            elif subtype == "stop_hook_summary":
                self._stop_summary(rec, sid, ts)
            elif isinstance(rec.get("promptSubmitEnding"), dict):
                ending = rec["promptSubmitEnding"].get("ending")
                content = rec.get("content") if isinstance(rec.get("content"), str) else ""
                if isinstance(ending, dict) and ending.get("kind") == "blocked_by_hook":
                    # "UserPromptSubmit operation blocked by hook:\n[command]: stderr"
                    line = content.split("\n", 2)[1] if content.count("\n") >= 1 else ""
                    command = line[1:line.index("]: ")] if line.startswith("[") and "]: " in line else ""
                    if _ours(command):
                        self.direct.append({"e": "UserPromptSubmit", "sid": sid, "ts": ts, "kind": "failed",
                                            "exit": 2, "stderr": _stderr(ending.get("reason")),
                                            "command": command})
        elif kind == "attachment":
            att = rec.get("attachment")
            if isinstance(att, dict) and att.get("type") in FAILURE_TYPES:
                self._attach_failure(att, sid, ts)

    def _stop_summary(self, rec: dict, sid, ts) -> None:
        """A turn end: the summary lists every Stop command that ran and which failed. Ours
        listed and not failed still needs its row (a run whose row was lost is a finding)."""
        attached = self.errs.pop(f"Stop:{sid}", None) or {}
        infos = rec.get("hookInfos") if isinstance(rec.get("hookInfos"), list) else []
        commands = [i.get("command") if isinstance(i, dict) and isinstance(i.get("command"), str) else ""
                    for i in infos]
        ours = [i for i, c in enumerate(commands) if hook_named(c) == HOOK_OF["Stop"]]
        failed = [i for i in rec.get("failedHookErrorIndexes") or () if isinstance(i, int)] \
            if isinstance(rec.get("failedHookErrorIndexes"), list) else []
        errors = rec.get("hookErrors") if isinstance(rec.get("hookErrors"), list) else []
        ev = self._add("Stop", sid, ts, ready=True)
        ev["listed"] = bool(ours)
        # ours failed, or (ours absent) a Stop command that failed in its place: the evidence
        culprit = next((i for i in ours if i in failed), None) if ours else (failed[0] if failed else None)
        if culprit is not None and 0 <= culprit < len(commands):
            k = failed.index(culprit)
            command = commands[culprit]
            ev["err"] = {"exit": attached.get("exit") if attached.get("command") == command else None,
                         "stderr": _stderr(errors[k]) if k < len(errors) else "", "command": command}

    def _compact_output(self, content: str, sid) -> None:
        """/compact's output lists each PreCompact command: "PreCompact [COMMAND] completed
        successfully" or "PreCompact [COMMAND] failed: STDERR" (Claude Code 2.1.332)."""
        target = next((e for e in reversed(self.unready) if e["e"] == "PreCompact" and e["sid"] == sid), None)
        if target is None:
            return
        for line in content[len(_COMMAND_STDOUT):].split("</local-command-stdout>")[0].splitlines():
            match = _PRECOMPACT_LINE.match(line.strip())
            if not match:
                continue
            command, outcome, stderr = match.groups()
            ours = hook_named(command) == HOOK_OF["PreCompact"]
            if outcome == "failed" and (ours or "err" not in target):
                target["err"] = {"exit": None, "stderr": _stderr(stderr), "command": command}
            elif ours:
                target["listed"] = True
        target["ready"] = True
        self.unready = [e for e in self.unready if e is not target]

    def _attach_failure(self, att: dict, sid, ts) -> None:
        event = att.get("hookEvent")
        if event not in HOOK_OF:
            return
        fail = _failure(att)
        fail["ours"] = _ours(fail["command"])
        if event == "Stop":  # its summary, next, says which command failed; this has the exit code
            self.errs[f"Stop:{sid}"] = fail
            return
        if event in ("PreToolUse", "PostToolUse"):
            ref = att.get("toolUseID")
            target = self.by_ref.get((event, ref))
            if target is None and event == "PostToolUse":
                # PostToolUse of a tool whose result was an error is PostToolUseFailure's; a
                # post hook that ran anyway is still an event
                pre = self.by_ref.get(("PreToolUse", ref))
                if pre is not None:
                    target = self._add("PostToolUse", pre["sid"], ts, ref, pre["tool"], pre["msg"])
        elif event == "UserPromptSubmit":
            target = next((e for e in reversed(self.pending) if e["e"] == event and e["sid"] == sid), None)
        elif event == "PreCompact":
            self.errs[f"PreCompact:{sid}"] = fail
            return
        elif event == "SessionStart":
            target = next((e for e in reversed(self.pending) if e["e"] == event and e["sid"] == sid), None)
            if target is None and sid in self.started:
                # a later start of a session already judged (a resume, a compaction): this start
                # needs its own row, near the failure
                target = self._add("SessionStart", sid, ts, ready=True)
                target["window"] = True
            elif target is None:
                self.errs[f"SessionStart:{sid}"] = fail
                return
        else:  # SessionEnd: no row to match here; said only when the failure is ours
            if fail["ours"]:
                self.direct.append({"e": event, "sid": sid, "ts": ts, "kind": "failed", **fail})
            return
        if target is not None and (fail["ours"] or "err" not in target):
            target["err"] = fail


def transcript_paths(conn, root: str, cfg: dict) -> list[str]:
    """The project's transcripts (`<session>.jsonl` and `<session>/subagents/*.jsonl`) in
    the directories [ingest].transcripts names, newest first, at most MAX_FILES."""
    from memory_core.ingest.transcripts import auto_dir  # only when transcripts are read

    dirs: list[str] = []
    for entry in cfg.get("ingest", {}).get("transcripts", ["auto"]):
        if entry == "auto":
            found, _looked = auto_dir(conn, root)
            if found:
                dirs.append(found)
            # where the last SessionStarts said their transcripts were (the SessionEnd that
            # records the directory for the ingester may be the hook that is broken)
            try:
                sessions = json.loads(get_meta(conn, SESSIONS_KEY) or "[]")
            except ValueError:
                sessions = []
            for s in sessions if isinstance(sessions, list) else ():
                transcript = s.get("transcript") if isinstance(s, dict) else None
                if isinstance(transcript, str) and transcript.endswith(".jsonl"):
                    dirs.append(os.path.dirname(os.path.abspath(transcript)))
        elif entry:
            dirs.append(entry if os.path.isabs(entry) else os.path.join(root, entry))
    found: list[tuple[int, str]] = []
    for base in dict.fromkeys(dirs):
        if base.endswith(".jsonl"):
            candidates = [base]
        else:
            try:
                names = os.listdir(base)
            except OSError:
                continue
            candidates = [os.path.join(base, n) for n in names if n.endswith(".jsonl")]
            for n in names:
                sub = os.path.join(base, n, "subagents")
                if os.path.isdir(sub):
                    try:
                        candidates += [os.path.join(sub, s) for s in os.listdir(sub) if s.endswith(".jsonl")]
                    except OSError:
                        pass
        for path in candidates:
            try:
                st = os.stat(path)
            except OSError:
                continue
            found.append((st.st_mtime_ns, path))
    found.sort(reverse=True)
    return [p for _m, p in found[:MAX_FILES]]


def _head(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _same_head(fh, head: str) -> bool:
    """Whether the file still starts with the bytes it started with when first read
    (`head` is "LENGTH:HASH"); a rewritten file is read again from its start."""
    length, _sep, digest = head.partition(":")
    if not length.isdigit():
        return False
    fh.seek(0)
    return _head(fh.read(int(length))) == digest


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
    row = conn.execute("SELECT ino, head, offset, state, updated_ns FROM witness_marks WHERE path = ?",
                       (path,)).fetchone()
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
        now_mark = conn.execute("SELECT offset, updated_ns FROM witness_marks WHERE path = ?", (path,)).fetchone()
        if now_mark != mark_seen:
            return 0
        findings = _judge(conn, observer, floor, report, path, http)
        _record(conn, findings, now_ns, path, report)
        conn.execute(
            "INSERT INTO witness_marks(path, ino, head, offset, state, updated_ns) VALUES (?,?,?,?,?,?) "
            "ON CONFLICT(path) DO UPDATE SET ino = excluded.ino, head = excluded.head, "
            "offset = excluded.offset, state = excluded.state, updated_ns = excluded.updated_ns",
            (path, st.st_ino, head if new_offset else None, new_offset,
             json.dumps(observer.state(), separators=(",", ":")), now_ns))
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
        conn.execute(
            "INSERT INTO witness_findings(ts_ns, session_id, event, kind, n, exit_code, stderr, first_ns, "
            "last_ns, transcript, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (now_ns, sid, event, kind, g["n"], exit_code, stderr or None, g["first"], g["last"], path,
             json.dumps(detail, sort_keys=True) if detail else None))
        bump(conn, "memhealth_witness_findings_total", {"event": event, "kind": kind}, g["n"])
        report.findings += 1


def _prune(conn, now_ns: int) -> None:
    """Keep the findings and the offsets bounded: the newest KEEP_FINDINGS rows; marks of
    transcripts gone from disk."""
    (n,) = conn.execute("SELECT count(*) FROM witness_findings").fetchone()
    stale = [p for (p,) in conn.execute("SELECT path FROM witness_marks") if not os.path.exists(p)]
    if n <= KEEP_FINDINGS and not stale:
        return
    with write(conn):
        if n > KEEP_FINDINGS:
            conn.execute("DELETE FROM witness_findings WHERE id <= (SELECT id FROM witness_findings "
                         "ORDER BY id DESC LIMIT 1 OFFSET ?)", (KEEP_FINDINGS,))
        for p in stale:
            conn.execute("DELETE FROM witness_marks WHERE path = ?", (p,))


# -- the gate check ----------------------------------------------------------------------------

def _http_fixes(root: str, wired, events: list[tuple[str, str]], fix_events: list[str]) -> list[str]:
    """The FIX of http hooks that failed: start serve where the settings send them, or write
    the project's secret into them when serve refused it (HTTP 401), or go back to a process
    per event; an event no longer sent over HTTP is repaired by `memhealth init`."""
    from probes.transport import serve_command

    fixes = []
    by_listen: dict[str, list[str]] = {}
    refused: list[str] = []
    for event, stderr in dict.fromkeys(events):
        url = wired.http.get(event)
        if url is None:
            if event not in fix_events:  # the settings no longer POST it: hook_wiring names what runs there
                fix_events.append(event)
        elif _UNAUTHORIZED.match(stderr):
            refused.append(event)
        else:
            by_listen.setdefault(urlsplit(url).netloc, []).append(event)
    back = "or `memhealth init --transport command` goes back to a process per event"
    for listen, names in by_listen.items():
        shown = ", ".join(dict.fromkeys(names))
        fixes.append(f"`{serve_command(root, listen)}` starts memhealth serve where the settings send {shown} "
                     f"(hook_transport says whether it answers now), {back}; the next {shown} memhealth "
                     "records clears this")
    if refused:
        shown = ", ".join(dict.fromkeys(refused))
        fixes.append(f"serve refused the settings' secret for {shown}: `memhealth init --transport http` writes "
                     f"the project's secret into them, {back}; the next {shown} memhealth records clears this")
    return fixes


def _tools(details: list[str | None]) -> str:
    tools: Counter = Counter()
    for raw in details:
        try:
            tools.update(json.loads(raw).get("tools", {}) if raw else {})
        except (ValueError, AttributeError):
            continue
    return ", ".join(f"{t}×{n}" if n > 1 else t for t, n in tools.most_common())


def hook_witness(ev) -> CheckResult:
    """RED when a session's transcript shows an event memhealth is wired for whose hook
    failed before it ran, or that ran no memhealth hook at all, and no later event of that
    kind was recorded since; a failure of another hook (our row exists) is not ours."""
    if not ev.has_table("witness_findings"):
        return note("witness tables missing (store older than this memhealth)", fix="memhealth gate")
    read, unread = "", ""
    if getattr(ev, "witness", False):
        try:
            rep = reconcile(ev.conn, ev.root, ev.cfg, ev.now_ns, deadline=time.monotonic() + 5.0)
            read = f"; read {rep.bytes_read} new transcript bytes" + (" (more next run)" if rep.more else "")
            if not rep.files_found and ev.last_activity_ns() is not None:
                # sessions ran, yet no transcript is where [ingest].transcripts points: blind
                unread = ("no transcript found for the sessions that ran ([ingest].transcripts, "
                          "the directory the hooks reported, ~/.claude/projects/<slug>): the witness "
                          "cannot check them")
        except (MemoryCoreError, ev.conn.Error) as exc:
            # a store that cannot take the findings is named by the checks of the store; what
            # was recorded before is still judged
            unread = (f"transcripts not read this run: the store cannot take findings "
                      f"({getattr(exc, 'reason', type(exc).__name__)})")
    acked = ev.acked_ns("hook_witness")
    rows = ev.conn.execute(
        "SELECT event, kind, sum(n), max(last_ns), count(DISTINCT session_id) FROM witness_findings "
        "WHERE ts_ns > ? GROUP BY event, kind ORDER BY max(last_ns) DESC", (acked,)).fetchall()
    try:
        last_ok = json.loads(ev.meta(LAST_OK_KEY) or "{}")
    except ValueError:
        last_ok = {}
    last_ok = last_ok if isinstance(last_ok, dict) else {}
    reds: list[tuple[str, str]] = []
    recovered: list[str] = []
    fix_events: list[str] = []
    http_events: list[tuple[str, str]] = []   # (event, stderr of its latest failure)
    lost = False
    for event, kind, n, last_ns, sessions in rows:
        latest = ev.conn.execute(
            "SELECT session_id, exit_code, stderr, detail FROM witness_findings WHERE event = ? AND kind = ? "
            "AND ts_ns > ? ORDER BY last_ns DESC, id DESC LIMIT 1", (event, kind, acked)).fetchone()
        sid, exit_code, stderr, latest_detail = latest
        try:
            latest_detail = json.loads(latest_detail) if latest_detail else {}
        except ValueError:
            latest_detail = {}
        over_http = isinstance(latest_detail, dict) and latest_detail.get("transport") == "http"
        details = [r[0] for r in ev.conn.execute(
            "SELECT detail FROM witness_findings WHERE event = ? AND kind = ? AND ts_ns > ?",
            (event, kind, acked))]
        tools = _tools(details)
        when = ago((ev.now_ns - last_ns) / 1e9) if last_ns else "?"
        where = (f"{sessions} sessions, latest {(sid or '-')[:8]}" if sessions > 1 else f"session {(sid or '-')[:8]}")
        facts = [f"exit {exit_code}" if exit_code is not None else "", f"stderr: {stderr}" if stderr else "",
                 tools, where, f"last {when} ago"]
        facts = "; ".join(f for f in facts if f)
        if kind == "failed" and over_http:
            url = latest_detail.get("url")
            what = (f"{event} hook failed {n} time(s) over the HTTP transport"
                    + (f" ({url})" if isinstance(url, str) and url else "")
                    + f": Claude Code skipped those events and memhealth recorded no run ({facts})")
        elif kind == "failed":
            what = f"{event} hook failed {n} time(s) and memhealth recorded no run for those events ({facts})"
        elif kind == "lost":
            what = (f"{event} ran memhealth {n} time(s) (Claude Code lists its command) but memhealth has no "
                    f"row for those runs ({facts})")
        else:
            what = f"{event} fired {n} time(s) with no memhealth hook run ({facts})"
        if int(last_ok.get(event, 0) or 0) > (last_ns or 0):
            recovered.append(f"{what}; recorded again since")
            continue
        reds.append((what, event))
        if kind == "lost":
            lost = True
        elif over_http:
            http_events.append((event, stderr or ""))
        else:
            fix_events.append(event)
    if reds:
        fixes = []
        wired = read_wiring(settings_files(ev.root)) if fix_events or http_events else None
        if http_events:
            fixes.extend(_http_fixes(ev.root, wired, http_events, fix_events))
        if fix_events:
            init = init_command(wired)
            events = ", ".join(dict.fromkeys(fix_events))
            hooks = "hook" if len(set(fix_events)) == 1 else "hooks"
            fixes.append(f"`{init}` puts memhealth's {events} {hooks} back in the settings (hook_wiring names "
                         "what replaced or dropped it), restart a running Claude Code session; "
                         f"the next {events} memhealth records clears this")
        if lost:
            fixes.append("rows of runs that happened were lost: hook_heartbeats names the store's failure "
                         "(lock, spill, disk); once it is fixed the next recorded run clears this")
        fix = "; ".join(fixes) + ", or `memhealth gate --ack hook_witness` acknowledges it"
        detail = "; ".join(d for d, _ in reds)
        return red(detail if len(reds) == 1 else f"{len(reds)} findings: {detail}", fix)
    if recovered or unread:
        return note("; ".join(recovered + ([unread] if unread else [])), audience=OPERATOR)
    return green("every event in the transcripts read so far has its memhealth row" + read)


__all__ = ["Observer", "Report", "hook_witness", "reconcile", "transcript_paths"]
