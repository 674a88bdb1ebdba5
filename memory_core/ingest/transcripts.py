"""Claude Code transcripts (JSONL): what the human typed and what the assistant answered.

    ingest_transcripts(run, report)   # [ingest].transcripts: "auto", directories, files

What becomes memory, and what does not (Claude Code's transcript record shapes; tests/fixtures/transcripts has real ones):

- kept: user text the human typed (kind "prompt"); assistant `text` blocks (kind "reply");
  a subagent's own `text` blocks (kind "subagent", see below).
- machine-generated user turns are filtered with memory_core.delivery.intent.system_turn, the same
  list of shapes the prompt hook uses (task notifications, slash-command and local-command
  echoes, caveats, system reminders, interruptions, skill headers, teammate messages,
  subagent completion callbacks, ...). A `<system-reminder>` (or IDE tag) block inside a
  typed prompt is cut out and the human's text around it is kept.
- isMeta user turns are filtered: Claude Code marks the text it injects itself that way
  (the expanded body of a slash command, the local-command caveat, hook output).
- compaction summaries are machine text: an `isCompactSummary` turn ("This session is
  being continued...") is Claude's paraphrase of earlier turns that are already ingested
  from the same file, so storing it would double every fact with a lossy copy. The
  summarizer's own sidechain (agentId "acompact-...", or any sidechain that received the
  "Your task is to create a detailed summary" prompt) is filtered for the same reason.
- sidechains (subagents) are kept on purpose, as kind "subagent": a subagent's findings
  reach the parent only inside a tool_result, which is not memory, so its own text is the
  only place they survive. The sidechain's user turns are filtered: the parent agent wrote
  them (they repeat the parent's tool_use input), not the human.
- tool_use, tool_result, thinking and images are not memory: tool output is machine text
  and thinking is scratch work. API error replies (isApiErrorMessage) are filtered.
- every other record type (system, summary, progress, queue-operation, attachment,
  file-history-snapshot, last-prompt) is skipped silently; a line that is not JSON, not an
  object, or a user/assistant record without a usable message is counted as malformed.

"auto" finds the project's transcript directory: first the meta key `last_transcript_dir`
(set from a hook's transcript_path, which names the real directory), then
`~/.claude/projects/<slug>` (or `$CLAUDE_CONFIG_DIR/projects/<slug>`) for the slugs Claude
Code is known to derive from the project path. Real directories keep the path's case
(Claude Code's project-directory slug); the lowercased slug of the reference installer is not tried.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

from memory_core.delivery.intent import system_turn
from memory_core.ingest.appendfile import sync_appends
from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import MAX_CHARS, Piece, split_bounded
from memory_core.ingest.filesource import discover
from memory_core.store.meta import TRANSCRIPT_DIR, get_meta
from memory_core.text import split_lines

META_TRANSCRIPT_DIR = TRANSCRIPT_DIR  # recorded by the hooks (memhealth.handlers)
COMPACTION_PROMPT = "Your task is to create a detailed summary of the conversation so far"
# Injected blocks that can sit inside a typed prompt; an unclosed one runs to the end.
_INLINE = re.compile(
    r"<(system-reminder|ide_opened_file|ide_selection|ide_diagnostics)\b[^>]*>.*?(?:</\1>|\Z)",
    re.S)
_SKIPPED_TYPES = frozenset({"system", "summary", "progress", "queue-operation", "attachment",
                            "file-history-snapshot", "last-prompt"})


def strip_inline(text: str) -> str:
    """The human's text with injected blocks removed."""
    return _INLINE.sub("", text)


def _texts(content) -> tuple[list[str], bool] | None:
    """Text blocks of a message content (str or list); None when content is unusable.
    The bool says whether some block was not an object (counted malformed)."""
    if isinstance(content, str):
        return [content], False
    if not isinstance(content, list):
        return None
    texts, odd = [], False
    for block in content:
        if not isinstance(block, dict):
            odd = True
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        # tool_use, tool_result, thinking, image: not memory
    return texts, odd


def parse_transcript_lines(lines: list[bytes], first: int, rel: str,
                           state: dict) -> tuple[list[Piece], int, int]:
    """Pieces for complete transcript lines; (pieces, malformed, filtered).

    `state` persists per file: it remembers summarizer sidechains across runs."""
    pieces: list[Piece] = []
    malformed = filtered = 0
    compaction_agents = set(state.get("compaction_agents", ()))
    file_is_compaction = os.path.basename(rel).startswith("agent-acompact")
    for i, raw in enumerate(lines):
        number = first + i
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError:  # also invalid UTF-8 (UnicodeDecodeError is a ValueError)
            malformed += 1
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
            malformed += 1
            continue
        kind = rec["type"]
        track_reads(rec, kind, state)
        if kind not in ("user", "assistant"):
            continue
        message = rec.get("message")
        got = _texts(message.get("content")) if isinstance(message, dict) else None
        if got is None:
            malformed += 1
            continue
        texts, odd = got
        malformed += odd
        sidechain = rec.get("isSidechain") is True
        agent = rec.get("agentId") if isinstance(rec.get("agentId"), str) else ""
        if kind == "user":
            if rec.get("isCompactSummary") or rec.get("isMeta") is True:
                filtered += 1
                continue
            if sidechain:
                if any(t.lstrip().startswith(COMPACTION_PROMPT) for t in texts):
                    compaction_agents.add(agent)
                filtered += 1
                continue
            for text in texts:
                if system_turn(text) is not None:
                    filtered += 1
                    continue
                typed = strip_inline(text)
                if not typed.strip():
                    filtered += 1  # nothing but a system reminder
                    continue
                pieces.extend(_pieces(typed, number, "prompt", rec))
        else:
            if sidechain and (file_is_compaction or agent.startswith("acompact")
                              or agent in compaction_agents):
                filtered += 1
                continue
            if rec.get("isApiErrorMessage") is True:
                filtered += 1
                continue
            for text in texts:
                if text.strip():
                    pieces.extend(_pieces(text, number, "subagent" if sidechain else "reply", rec))
    if compaction_agents:
        state["compaction_agents"] = sorted(compaction_agents)
    return pieces, malformed, filtered


MAX_TRACKED = 5000  # files and pending Read calls remembered per transcript


def track_reads(rec: dict, kind: str, state: dict) -> None:
    """What compaction cost, read from the transcript (the hooks count it live, in file_reads):
    a Read whose file was read before a compaction boundary of this transcript is a re-read.
    Kept in the file's watermark state as `rereads` = {files, bytes, same}; the main thread
    only (a subagent's reads are its own context)."""
    if rec.get("isSidechain") is True:
        return
    if kind == "system" and rec.get("subtype") == "compact_boundary":
        state["epoch"] = int(state.get("epoch", 0)) + 1
        state["boundary_open"] = True
        return
    if kind == "user" and rec.get("isCompactSummary"):
        if not state.pop("boundary_open", False):  # an older transcript: the summary is the boundary
            state["epoch"] = int(state.get("epoch", 0)) + 1
        return
    message = rec.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return
    pending = state.setdefault("pending_reads", {})
    for block in content:
        if not isinstance(block, dict):
            continue
        if kind == "assistant" and block.get("type") == "tool_use" and block.get("name") == "Read":
            path = (block.get("input") or {}).get("file_path") if isinstance(block.get("input"), dict) else None
            if isinstance(path, str) and isinstance(block.get("id"), str) and len(pending) < MAX_TRACKED:
                pending[block["id"]] = path
        elif kind == "user" and block.get("type") == "tool_result" and block.get("tool_use_id") in pending:
            path = pending.pop(block["tool_use_id"])
            if block.get("is_error") is True:
                continue
            body = block.get("content")
            if isinstance(body, list):
                body = "\n".join(b.get("text", "") for b in body if isinstance(b, dict)
                                 and isinstance(b.get("text"), str))
            if not isinstance(body, str):
                continue
            data = body.encode("utf-8", "replace")
            digest = hashlib.blake2b(data, digest_size=8).hexdigest()
            epoch = int(state.get("epoch", 0))
            seen = state.setdefault("seen_reads", {})
            before = seen.get(path)
            if before is not None and before[0] < epoch:
                cost = state.setdefault("rereads", {"files": 0, "bytes": 0, "same": 0})
                cost["files"] += 1
                cost["bytes"] += len(data)
                cost["same"] += int(before[1] == digest)
            if path in seen or len(seen) < MAX_TRACKED:
                seen[path] = [epoch, digest]


def _pieces(text: str, number: int, kind: str, rec: dict) -> list[Piece]:
    ts = rec.get("timestamp") if isinstance(rec.get("timestamp"), str) else ""
    attrs = {k: v for k, v in (("session", rec.get("sessionId")), ("uuid", rec.get("uuid")),
                               ("ts", ts or None), ("agent", rec.get("agentId")))
             if isinstance(v, str) and v}
    title = f"{kind} {ts[:10]}".strip()
    # Every piece of a record shares the record's line: that is where it is in the file.
    return [Piece(number, number, title, chunk, kind, attrs or None)
            for _ls, _le, chunk in split_bounded(split_lines(text.strip()), number, MAX_CHARS)]


def slugs(project_root: str) -> list[str]:
    """Directory names Claude Code may have derived from the project path, best first.
    Observed: every character other than a letter or digit becomes "-", case kept."""
    out: list[str] = []
    for path in dict.fromkeys([os.path.abspath(project_root), os.path.realpath(project_root)]):
        for slug in (re.sub(r"[^A-Za-z0-9]", "-", path), path.replace(os.sep, "-")):
            if slug not in out:
                out.append(slug)
    return out


def projects_dir(environ=None) -> str:
    environ = os.environ if environ is None else environ
    base = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(base, "projects")


def auto_dir(conn, project_root: str, environ=None) -> tuple[str | None, list[str]]:
    """(the project's transcript directory or None, the places looked at)."""
    looked: list[str] = []
    recorded = get_meta(conn, META_TRANSCRIPT_DIR)
    if recorded:
        if recorded.endswith(".jsonl"):
            recorded = os.path.dirname(recorded)
        looked.append(recorded)
        if os.path.isdir(recorded):
            return recorded, looked
    base = projects_dir(environ)
    for slug in slugs(project_root):
        candidate = os.path.join(base, slug)
        looked.append(candidate)
        if os.path.isdir(candidate):
            return candidate, looked
    return None, looked


def ingest_transcripts(run: Run, report: SourceReport) -> None:
    entries: list[str] = []
    for entry in run.cfg["ingest"]["transcripts"]:
        if entry == "auto":
            found, looked = auto_dir(run.conn, run.root)
            if found is None:
                report.notes.append("no Claude Code transcript directory for this project "
                                    f"(looked in {', '.join(looked)})")
                continue
            entries.append(found)
        elif entry:
            entries.append(entry)
    # <session>.jsonl at the top, <session>/subagents/agent-*.jsonl below it
    files, _complete = discover(run, run.root, entries, (".jsonl",), max_depth=3)
    sync_appends(run, "transcript", files, parse_transcript_lines, SIGNAL_WEIGHTS["transcript"],
                 report)
