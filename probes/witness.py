"""The transcript as a witness: what Claude Code saw fire, against the rows memhealth wrote.

    report = reconcile(conn, root, cfg, now_ns)   # read new transcript bytes, record findings
    hook_witness(ev)                              # the gate check over the recorded findings

In three modules: probes.witness_transcript reads a transcript into events,
probes.witness_reconcile matches them to heartbeat rows and records the findings
(memory_core.outbox.witness_log holds the rows), and this module is the gate check.

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

import json
import time
from collections import Counter
from urllib.parse import urlsplit

from memory_core.errors import MemoryCoreError
from memory_core.outbox import witness_log
from probes.result import OPERATOR, CheckResult, ago, green, note, red
from probes.wiring import init_command, read_wiring, settings_files
from probes.witness_reconcile import (  # noqa: F401
    IDLE_S,
    KEEP_FINDINGS,
    LAST_OK_KEY,
    MAX_BYTES,
    Report,
    reconcile,
)
from probes.witness_transcript import (  # noqa: F401  (the witness's names, for its callers)
    _UNAUTHORIZED,
    Observer,
    _failure,
    _over_http,
    _ts,
    transcript_paths,
)

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
    rows = witness_log.summary_since(ev.conn, acked)
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
        latest = witness_log.latest_finding(ev.conn, event, kind, acked)
        sid, exit_code, stderr, latest_detail = latest
        try:
            latest_detail = json.loads(latest_detail) if latest_detail else {}
        except ValueError:
            latest_detail = {}
        over_http = isinstance(latest_detail, dict) and latest_detail.get("transport") == "http"
        details = witness_log.finding_details(ev.conn, event, kind, acked)
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
