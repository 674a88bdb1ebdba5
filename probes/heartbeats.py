"""The hook-heartbeat check: expected hooks, latest failures, killed runs, session
boundaries, and rows the database could not take.

    hooks, timeouts, problems = wired_hooks(ev.settings_paths)
    remember_session(conn, "s1", "/…/s1.jsonl", now_ns)    # SessionStart, after the gate
    result = hook_heartbeats(ev)

Idle is not dead: a project no session touched is never RED. A hook that stopped firing
while sessions ran is: the boundary rule compares a previous session's transcript (how many
real prompts it gained after SessionStart) with the prompt hook's rows for that session.
"""

from __future__ import annotations

import json
import os
import re

from memory_core.delivery.intent import system_turn
from memory_core.errors import StoreError
from memory_core.outbox import heartbeat_reads, journal, spill
from memory_core.outbox.heartbeat import FUTURE_SLACK_NS
from memory_core.store import identity, repair
from memory_core.store.db import write
from memory_core.store.meta import get_meta, set_meta
from probes.result import OPERATOR, CheckResult, ago, green, note, red

_OURS = re.compile(r"memhealth.*\bhook\s+([a-z][a-z-]*)\s*$")
_OURS_URL = re.compile(r"/memhealth/hook/([a-z][a-z-]*)$")  # an http entry to memhealth serve
SESSIONS_KEY = "gate.sessions"  # meta: the last few SessionStarts and their transcript sizes
KEEP_SESSIONS = 8
MAX_TRANSCRIPT_READ = 4 * 1024 * 1024  # bytes of a transcript's growth read per session
# Hooks whose every session must leave rows; the tool and compaction hooks may
# legitimately stay silent for days (no matching tool, no compaction).
FIX_WIRING = "run `memhealth init` (rewrites the hook entries in .claude/settings*.json), then restart Claude Code"
# A RED about something that already happened stays true after its cause is fixed; the
# operator acknowledges it, and only later events are reported (meta gate.ack.hook_heartbeats).
ACK = "; then `memhealth gate --ack hook_heartbeats` acknowledges this past event"


def wired_hooks(paths: list[str]) -> tuple[set[str], dict[str, int], list[str]]:
    """(our events wired in these settings files, their timeouts in s, unreadable files)."""
    events: set[str] = set()
    timeouts: dict[str, int] = {}
    problems: list[str] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{os.path.basename(path)} unreadable ({exc})")
            continue
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            problems.append(f"{os.path.basename(path)} is not valid JSON ({exc})")
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if not isinstance(hooks, dict):
            continue
        for groups in hooks.values():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for handler in handlers if isinstance(handlers, list) else ():
                    command = handler.get("command") if isinstance(handler, dict) else None
                    match = _OURS.search(command) if isinstance(command, str) else None
                    url = handler.get("url") if isinstance(handler, dict) else None
                    if match is None and isinstance(url, str):  # the HTTP transport (probes.transport)
                        match = _OURS_URL.search(url)
                    if match:
                        events.add(match.group(1))
                        timeout = handler.get("timeout")
                        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
                            timeouts[match.group(1)] = int(timeout)
    return events, timeouts, problems


_CLAUDE_PROJECT_DIR = re.compile(r"\$\{CLAUDE_PROJECT_DIR(?::-[^}]*)?\}|\$CLAUDE_PROJECT_DIR\b")


def unrunnable_commands(paths: list[str]) -> list[tuple[str, str]]:
    """(program, settings file) for each of our hook commands whose program cannot run here:
    a deleted or moved virtualenv, a path typed by hand. Claude Code then reports `hook error`
    (exit 127) on every event, no heartbeat is ever written and nothing reaches Claude, so
    the heartbeat rows alone would call the project idle."""
    import shlex

    found: dict[str, str] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue  # wired_hooks reports unreadable files
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for groups in hooks.values() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks") if isinstance(group, dict) else None
                for handler in handlers if isinstance(handlers, list) else ():
                    command = handler.get("command") if isinstance(handler, dict) else None
                    if not isinstance(command, str) or not _OURS.search(command):
                        continue
                    try:
                        program = shlex.split(command)[0]
                    except (ValueError, IndexError):
                        found.setdefault(command[:80], os.path.basename(path))
                        continue
                    # shared settings run "${CLAUDE_PROJECT_DIR:-.}"/.memhealth/bin/memhealth:
                    # Claude Code sets that variable to the project root (settings' parent's parent)
                    root = os.path.dirname(os.path.dirname(os.path.abspath(path)))
                    program = _CLAUDE_PROJECT_DIR.sub(lambda _m, root=root: root, program)
                    if os.sep in program:
                        runnable = os.path.isfile(program) and os.access(program, os.X_OK)
                    else:
                        import shutil  # 1.6 ms of imports: only for a bare program name

                        runnable = shutil.which(program) is not None
                    if not runnable:
                        found.setdefault(program, os.path.basename(path))
    return sorted(found.items())


def remember_session(conn, session_id: str | None, transcript_path: str | None, now_ns: int) -> None:
    """Record a SessionStart's transcript and its size, so the next gate can tell whether
    prompts arrived that the prompt hook never saw. Keeps the last few sessions."""
    if not session_id:
        return
    size = None
    if transcript_path:
        try:
            size = os.path.getsize(transcript_path)
        except OSError:
            size = 0  # not written yet: everything in it later is growth
    try:
        sessions = json.loads(get_meta(conn, SESSIONS_KEY) or "[]")
    except ValueError:
        sessions = []
    sessions = [s for s in sessions if isinstance(s, dict) and s.get("sid") != session_id]
    sessions.append({"sid": session_id, "transcript": transcript_path, "size": size, "ts_ns": now_ns})
    with write(conn):
        set_meta(conn, SESSIONS_KEY, json.dumps(sessions[-KEEP_SESSIONS:]))


def count_prompts(path: str, offset: int, limit: int = MAX_TRANSCRIPT_READ) -> int:
    """Real user prompts in a transcript after byte `offset` (machine turns, meta lines,
    tool results and compaction summaries do not count). Reads at most `limit` bytes."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(limit)
    except OSError:
        return 0
    prompts = 0
    for line in data.splitlines():
        if b'"user"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "user":
            continue
        if entry.get("isMeta") or entry.get("isCompactSummary") or entry.get("isSidechain"):
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            content = texts[0] if texts and len(texts) == len(content) else None
        if isinstance(content, str) and content.strip() and not system_turn(content):
            prompts += 1
    return prompts


def _sessions(ev) -> list[dict]:
    raw = ev.meta(SESSIONS_KEY)
    try:
        sessions = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [s for s in sessions if isinstance(s, dict) and s.get("sid")]


def _spilled(ev) -> tuple[int, list[str], str | None, str | None]:
    """Rows still waiting outside the database after the drain: (count, files, the cause
    the spill recorded for leaving .memhealth/, the store's failure family), if known."""
    count, files, cause, reason = 0, [], None, None
    for path in spill.pending_files(ev.spill_path):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                lines = [line for line in fh if line.strip()]
        except OSError:
            continue
        if lines:
            count += len(lines)
            files.append(path if not path.startswith(ev.state_dir) else os.path.basename(path))
            try:
                first = json.loads(lines[0])
            except ValueError:
                continue
            if isinstance(first, dict):
                cause = cause or first.get("spill_cause")
                reason = reason or first.get("reason")
    return count, files, cause, reason


_SPILLED_OUT = re.compile(r"spilled outside \.memhealth/ \((\w+)\): ")
# the fix for a hook's latest failure, by failure family: the reason names what to do
REASON_FIXES = {
    "db_locked": "another process holds the write lock past [hooks].busy_timeout_s: find it with "
                 f"`{repair.holders_command()}`",
    "db_readonly": "make .memhealth/ and memory.db writable by the user Claude Code runs as: "
                   f"`{repair.readonly_command()}` (-wal and -shm "
                   "inherit the database's mode)",
    "db_corrupt": "move .memhealth/memory.db aside, then `memhealth init` and `memhealth ingest`",
    "db_full": spill.CAUSE_FIXES["disk_full"],
    "db_io": f"check the disk holding .memhealth/ (`{repair.disk_command()}`)",
    "wal_deleted": "memory.db-wal was deleted under open connections: `memhealth gate` names the process "
                   "to copy it back from (`cp /proc/PID/fd/N .memhealth/memory.db-wal`)",
    "stdin_timeout": "the hook's stdin was never closed: run it as Claude Code does "
                     "(`memhealth hook EVENT < payload.json`)",
    "config": "fix .memhealth/config.toml (the error names the key), then `memhealth gate`",
    "shm_deleted": "memory.db-shm was deleted under a process that holds the database: stop that process "
                   "(`memhealth gate` names it: `kill PID`); the next hook drains the spilled rows",
    "ablation": "the stored ablation schedule is unreadable: `memhealth ablation stop` clears it",
    "db_symlink": "a store file is a symbolic link (the detail names it; `ls -l .memhealth/`): remove the "
                  "link, never its target, and the next hook opens this project's own store",
    "db_not_file": "memory.db is not a database file: move it aside (`mv .memhealth/memory.db "
                   ".memhealth/memory.db.aside`), then `memhealth init`",
    # the capture worker's ingest could not read a source file (a FIFO, a link outside the
    # project, bad bytes): the detail names each file and why
    "ingest": "remove or replace the file the detail names, then `memhealth ingest` (it names any file "
              "still failing) and `memhealth gate --ack hook_heartbeats`",
}


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def hook_heartbeats(ev) -> CheckResult:
    """RED when a wired hook's latest run failed or was killed, when a hook stopped firing
    across a session boundary, or when rows sit in the spill file; idle is green."""
    conn, cfg = ev.conn, ev.cfg
    # drain (spill, then journal) before reaping: a completion spilled under a lock lands
    # before its row could be marked killed, and a hook killed before its heartbeat reached
    # the database becomes a killed row here
    journal.settle(conn, ev.state_dir, cfg["hooks"]["killed_after_s"], now_ns=ev.now_ns)
    expected, _timeouts, problems = wired_hooks(ev.settings_paths)
    reds: list[tuple[str, str]] = []
    notes: list[str] = []
    for problem in problems:
        reds.append((f"{problem}: Claude Code cannot load the hooks there",
                     "fix the JSON by hand (memhealth init refuses to overwrite it)"))
    if not expected and not problems:
        return red("no memhealth hooks are wired in .claude/settings.json or settings.local.json",
                   FIX_WIRING)
    for program, where in unrunnable_commands(ev.settings_paths):
        reds.append((f"hooks in {where} run {program}, which is not an executable here: every hook "
                     "fails before it starts (Claude Code shows `hook error`, nothing reaches Claude)",
                     "run `memhealth init` with the memhealth you use (rewrites the hook commands), "
                     "then restart Claude Code"))

    window_ns = int(cfg["gate"]["heartbeat_max_age_days"] * 86400e9)
    acked = ev.acked_ns("hook_heartbeats")
    since = ev.now_ns - window_ns
    acked_id = ev.acked_id("hook_heartbeats")
    # the capture worker is no settings entry but runs for every SessionEnd: its rows count
    for hook in sorted(expected | {"gate", "capture"}):
        # the latest run is the row written last (rowid order), never the one whose clock
        # said latest: a failure written while the clock ran behind, or far ahead, is still
        # the hook's latest run
        last = heartbeat_reads.last_completed(conn, hook)
        if last is None:
            continue
        outcome, reason, detail, started, row_id = last
        when = ago((ev.now_ns - started) / 1e9)
        if started > ev.now_ns + FUTURE_SLACK_NS:
            when = f"dated {ago((started - ev.now_ns) / 1e9)} in the future, clock skew; written"
        if outcome in ("killed", "error") and (row_id <= acked_id if acked_id else started <= acked):
            continue  # acknowledged; the hook's next run decides again
        if outcome == "killed":
            if detail == journal.KILLED_DETAIL:  # it never reached the database
                reds.append((f"{hook}: last run ({when} ago) was killed before its heartbeat reached the "
                             "database (waiting on stdin or on the database lock)",
                             "find what holds the database lock (`fuser .memhealth/memory.db`) or kept "
                             f"the hook's stdin open; raise the {hook} timeout in .claude/settings*.json "
                             "only if neither"))
                continue
            reds.append((f"{hook}: last run ({when} ago) was killed (started, never completed)",
                         ("the capture worker was killed (out of memory? a reboot?): `memhealth ingest` "
                          "captures what it left" if hook == "capture" else
                          f"raise the {hook} timeout in .claude/settings*.json or find what stalls it "
                          "(`memhealth report`)") + ACK))
            continue
        if outcome == "error":
            fix = REASON_FIXES.get(reason or "")
            spilled_out = _SPILLED_OUT.match(detail or "")
            if spilled_out and spilled_out.group(1) in spill.CAUSE_FIXES:
                # .memhealth/ refused even the spill: that cause is what to fix first
                fix = spill.CAUSE_FIXES[spilled_out.group(1)]
                detail = f"{spilled_out.group(1).replace('_', ' ')}: {detail[spilled_out.end():]}"
            reds.append((f"{hook}: last run ({when} ago) failed: {reason or 'error'}"
                         + (f" ({detail[:160]})" if detail else ""),
                         (fix + "; " if fix else "fix what the reason names; ")
                         + "the hook's next good run clears this (history: `memhealth report`)" + ACK))
            continue
        failed = heartbeat_reads.failures_since(conn, hook, max(since, acked + 1))
        if failed:
            notes.append(f"{hook}: " + ", ".join(f"{n} {o}" for o, n in failed) + " recently, latest ok")

    # boundary consistency: a previous session gained prompts the prompt hook never saw
    if "prompt" in expected:
        for s in _sessions(ev):
            if s["sid"] == ev.session_id or not s.get("transcript") or s.get("size") is None:
                continue
            try:
                size = os.path.getsize(s["transcript"])
            except OSError:
                continue
            if size <= s["size"]:
                continue
            try:
                grew_ns = os.stat(s["transcript"]).st_mtime_ns
            except OSError:
                continue
            if grew_ns <= acked:
                continue
            prompts = count_prompts(s["transcript"], s["size"])
            if not prompts:
                continue
            seen = heartbeat_reads.prompts_in_session(conn, s["sid"], s["ts_ns"])
            if not seen:
                reds.append((f"prompt hook left no rows in session {s['sid'][:8]} while its transcript "
                             f"gained {prompts} prompt(s) after SessionStart (last "
                             f"{ago((ev.now_ns - grew_ns) / 1e9)} ago)",
                             "check the UserPromptSubmit entry in .claude/settings*.json ("
                             "`memhealth init` rewrites it); try `memhealth hook prompt < payload.json`" + ACK))
    # ... and the other direction: prompts recorded in a session SessionStart never saw
    if "session-start" in expected:
        first = heartbeat_reads.first_session_start_ns(conn)
        if first is not None:
            orphans = heartbeat_reads.sessions_without_start(conn, since, first)
            orphans = [o for o in orphans if o[0] != ev.session_id and o[1] > acked]
            if orphans:
                reds.append((f"session-start did not fire for {len(orphans)} session(s) whose prompts "
                             f"were recorded (latest {orphans[0][0][:8]}, "
                             f"{ago((ev.now_ns - orphans[0][1]) / 1e9)} ago)",
                             "check the SessionStart entry in .claude/settings*.json (`memhealth init` "
                             "rewrites it)" + ACK))

    future = heartbeat_reads.future_rows(conn, ev.now_ns + FUTURE_SLACK_NS)
    skew = None
    if future[0]:
        # their own finding: not a failure of any hook, and not activity (ignored above);
        # said beside any RED too, since it explains the odd ages there
        skew = (f"clock skew: {future[0]} heartbeat(s) dated up to {ago((future[1] - ev.now_ns) / 1e9)} "
                     "in the future (the clock was wrong when they were written; they are not counted "
                     "as activity); check the system clock (`timedatectl`)")
        notes.append(skew)

    try:
        identity.adopt(conn, ev.db_path)
        reset = identity.pending_reset(conn)
        if reset is not None:
            prev = reset.get("previous") or {}
            created = prev.get("created_ns")
            reds.append((f"store reset: {os.path.basename(ev.db_path)} was recreated empty "
                         f"{ago((ev.now_ns - reset.get('ts_ns', ev.now_ns)) / 1e9)} ago where store "
                         f"{prev.get('id', '?')}"
                         + (f" (created {ago((ev.now_ns - created) / 1e9)} ago)" if created else "")
                         + " existed: its history (heartbeats, decisions, gate runs) is gone"
                         + ("" if ev.scheduled else "; said once"),
                         "restore .memhealth/memory.db from a backup if you have one, else nothing to do "
                         "(`memhealth ingest` rebuilds memory from its sources)"))
            if not ev.scheduled:  # said once to a person (gate, session start), not to serve's schedule
                identity.reset_said(conn)
    except (StoreError, conn.Error):
        pass  # a store that cannot be written is named by the rows it refused

    for link in spill.planted_links(ev.spill_path):
        shown = os.path.relpath(link, ev.root) if link.startswith(ev.state_dir) else link
        reds.append((f"{os.path.basename(link)} is a symbolic link (to {_readlink(link)}): state files never "
                     "follow links, so rows a hook could not store have nowhere to wait there",
                     f"remove the link (its target is not touched): `rm {shown}`"))
    spilled, files, cause, why = _spilled(ev)
    if spilled:
        if cause in spill.CAUSE_FIXES:
            reds.append((f"{spilled} row(s) in {', '.join(files)} the database could not take, "
                         f"outside .memhealth/ because it refused them: {cause.replace('_', ' ')}",
                         spill.CAUSE_FIXES[cause]))
        else:
            reds.append((f"{spilled} row(s) in {', '.join(files)} the database could not take"
                         + (f" ({why})" if why else ""),
                         (REASON_FIXES[why] + "; the next hook drains the file") if why in REASON_FIXES else
                         f"make {ev.db_path} writable (locked? read-only? corrupt?); the next hook drains "
                         "the file"))

    if reds:
        detail = "; ".join(d for d, _ in reds)
        if len(reds) > 1:
            detail = f"{len(reds)} problems: {detail}"
        if skew:
            detail += f"; also {skew}"
        return red(detail, reds[0][1] if len(reds) == 1 else " | ".join(dict.fromkeys(f for _, f in reds)))
    runs = heartbeat_reads.runs_since(conn, since)
    if notes:  # recovered failures: the person's to look into, not Claude's
        return note("; ".join(notes), audience=OPERATOR)
    if ev.last_activity_ns() is None:
        return green(f"{len(expected)} hooks wired; no sessions yet (idle)")
    return green(f"{len(expected)} hooks wired; {runs} runs in {cfg['gate']['heartbeat_max_age_days']:g} d, "
                 "latest all ok")
