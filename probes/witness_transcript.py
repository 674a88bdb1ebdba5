"""Reading a session's transcript for the witness (probes.witness): what Claude Code saw fire.

    observer = Observer(state)            # the events still waiting from the last read
    observer.observe(record)              # one JSONL record; events land in observer.pending
    transcript_paths(conn, root, cfg)     # the project's transcripts, newest first

Every tool call is a `tool_use` block with its id, every typed prompt a `user` record with its
`promptId`, every compaction a `compact_boundary`, every turn end a `stop_hook_summary`, every
failed hook an attachment with its event, exit code and stderr. Nothing here touches a
heartbeat: matching events to rows is the reconciliation's (probes.witness_reconcile).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime

from memory_core.delivery.intent import system_turn
from memory_core.store.meta import get_meta
from probes.heartbeats import SESSIONS_KEY
from probes.wiring import HOOK_OF, TOOLS_OF, hook_named

MAX_FILES = 200                   # transcripts looked at per reconciliation (newest first)
MAX_PENDING = 2000                # events kept waiting per transcript; the oldest are judged
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
