"""The console's pages: Health, Decisions, Memory, Triage and Alerts, each a method that
reads the store and returns (title, body HTML)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from memory_core.index import reads as index_reads
from memory_core.items import reads as item_reads
from memory_core.outbox import (
    alert_log,
    decision_reads,
    delivery_reads,
    gate_log,
    heartbeat_reads,
    span_reads,
)
from memory_core.records import reads as record_reads
from telemetry.console.html import (
    GATE_HISTORY,
    HEARTBEAT_DAYS,
    HERE_CLASS,
    MAX_ITEMS,
    PAGE_SIZE,
    as_int,
    cascade,
    chunk_table,
    clip,
    cue_cell,
    esc,
    fmt,
    line_span,
    loads_detail,
    provenance,
    status_badge,
    when,
)
from telemetry.console.queries import (
    chunk_kind,
    cue_evaluations,
    has_table,
    last_runs,
    outcome_totals,
    transcript_context,
)


class Pages:
    """Mixed into Console: `self.base` (the prefix as an attribute), `self.app`, `self.token()`."""

    # -- Health ----------------------------------------------------------------------------

    def health(self, conn, params) -> tuple[str, str]:
        out = []
        run = gate_log.latest_run(conn)
        out.append("<section aria-labelledby=\"now\"><h2 id=\"now\">Verdict now</h2>")
        if run is None:
            out.append("<p>No gate run recorded yet. It runs at every session start and on serve's "
                       "probe schedule; <code>memhealth gate</code> runs it now.</p>")
        else:
            rid, ts, total, green, red, verdict, ms = run
            head = (f"MEMORY-HEALTH: {green}/{total} GREEN ({red} RED)" if red
                    else f"MEMORY-HEALTH: {total}/{total} GREEN")
            out.append(f'<p class="verdict">{status_badge(verdict)} <strong>{esc(head)}</strong> '
                       f'<span class="muted">run #{rid} at {when(ts)}, {esc(fmt(ms))} ms</span></p>')
            checks = gate_log.checks_of(conn, rid)
            out.append("<table><caption class=\"muted\">Every check of the latest run, REDs first</caption>"
                       "<thead><tr><th scope=\"col\">Status</th><th scope=\"col\">Check</th>"
                       "<th scope=\"col\">State</th><th scope=\"col\">Detail</th><th scope=\"col\">FIX</th>"
                       "<th scope=\"col\" class=\"num\">ms</th></tr></thead><tbody>")
            for name, status, state, detail, fix, cms in checks:
                out.append(f"<tr><td>{status_badge(status)}</td><th scope=\"row\">{esc(name)}</th>"
                           f"<td>{esc(state)}</td><td>{esc(detail)}</td><td>{esc(fix) if fix else '—'}</td>"
                           f"<td class=\"num\">{esc(fmt(cms))}</td></tr>")
            out.append("</tbody></table>")
        out.append("</section>")

        runs = gate_log.recent_runs(conn, GATE_HISTORY)
        if runs:
            ids = [r[0] for r in runs]
            reds: dict[int, list[str]] = {}
            for rid, name in gate_log.red_checks_of(conn, ids):
                reds.setdefault(rid, []).append(name)
            out.append("<section aria-labelledby=\"hist\"><h2 id=\"hist\">Verdict history</h2>"
                       f"<table><caption class=\"muted\">The last {len(runs)} gate runs</caption><thead><tr>"
                       "<th scope=\"col\">Run</th><th scope=\"col\">When</th><th scope=\"col\">Verdict</th>"
                       "<th scope=\"col\" class=\"num\">Green</th><th scope=\"col\">RED checks</th></tr></thead><tbody>")
            for rid, ts, total, green, _red, verdict in runs:
                out.append(f"<tr><td>#{rid}</td><td>{when(ts)}</td><td>{status_badge(verdict)}</td>"
                           f"<td class=\"num\">{green}/{total}</td><td>{esc(', '.join(reds.get(rid, [])) or '—')}</td></tr>")
            out.append("</tbody></table></section>")

        since = time.time_ns() - HEARTBEAT_DAYS * 86400 * 10 ** 9
        per: dict[tuple, dict] = {}
        for day, hook, outcome, reason, n in heartbeat_reads.outcomes_and_reasons_by_day(conn, since):
            row = per.setdefault((day, hook), {"ok": 0, "error": {}, "killed": 0, "open": 0})
            if outcome == "error":
                row["error"][reason or "unknown"] = row["error"].get(reason or "unknown", 0) + n
            else:
                row[outcome] = row.get(outcome, 0) + n
        out.append("<section aria-labelledby=\"hb\"><h2 id=\"hb\">Hook heartbeats</h2>")
        if not per:
            out.append(f"<p>No hook ran in the last {HEARTBEAT_DAYS} days.</p>")
        else:
            out.append(f"<table><caption class=\"muted\">Per day (UTC) and hook, the last {HEARTBEAT_DAYS} days. "
                       "Open: running, or killed and not yet reaped.</caption><thead><tr>"
                       "<th scope=\"col\">Day</th><th scope=\"col\">Hook</th><th scope=\"col\" class=\"num\">OK</th>"
                       "<th scope=\"col\">Errors by reason</th><th scope=\"col\" class=\"num\">Killed</th>"
                       "<th scope=\"col\" class=\"num\">Open</th></tr></thead><tbody>")
            for (day, hook), row in per.items():
                errors = ", ".join(f"{esc(k)} {v}" for k, v in sorted(row["error"].items())) or "—"
                if row["error"]:
                    errors = f'<span class="red">{errors}</span>'
                killed = f'<span class="red">{row["killed"]}</span>' if row["killed"] else "0"
                out.append(f"<tr><td>{esc(day)}</td><th scope=\"row\">{esc(hook)}</th>"
                           f"<td class=\"num\">{row['ok']}</td><td>{errors}</td>"
                           f"<td class=\"num\">{killed}</td><td class=\"num\">{row['open']}</td></tr>")
            out.append("</tbody></table>")
        last = last_runs(conn, since)
        if last:
            out.append(f"<h3>Last success per hook</h3><table><thead><tr><th scope=\"col\">Hook</th>"
                       "<th scope=\"col\">Last success</th><th scope=\"col\" class=\"num\">Successes (all time)</th>"
                       f"<th scope=\"col\">Last failure ({HEARTBEAT_DAYS} d)</th></tr></thead><tbody>")
            for hook, ok_ns, n, bad in last:
                bad_text = (f'<span class="red">{when(bad[0])} ({esc(bad[1])}{": " + esc(bad[2]) if bad[2] else ""})</span>'
                            if bad else "—")
                out.append(f"<tr><th scope=\"row\">{esc(hook)}</th><td>{when(ok_ns)}</td><td class=\"num\">{n}</td>"
                           f"<td>{bad_text}</td></tr>")
            out.append("</tbody></table>")
        out.append("</section>")
        return "Health", "".join(out)

    # -- Decisions -------------------------------------------------------------------------

    def decisions(self, conn, params) -> tuple[str, str]:
        from telemetry.catalog import INJECTION_OUTCOMES

        outcome = params.get("outcome", "")
        session = params.get("session", "").strip()
        before = as_int(params.get("before"))
        rows = decision_reads.page(conn, PAGE_SIZE + 1, outcome, session, before)
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        texts = self._prompt_texts(conn, [r[9] for r in rows if r[9]])
        cues_by_trace = cue_evaluations(conn, [r[9] for r in rows if r[9]])

        options = "".join(f'<option value="{esc(o)}"{" selected" if o == outcome else ""}>{esc(o or "all")}</option>'
                          for o in ("", *INJECTION_OUTCOMES))
        out = ["<p>Every prompt writes one row here, injected or not: this is the denominator of the "
               "injection rate. Newest first.</p>",
               f"<form class=\"filters\" method=\"get\" action=\"{self.base}/decisions\" role=\"search\">"
               f"<label for=\"f-outcome\">Outcome<select id=\"f-outcome\" name=\"outcome\">{options}</select></label>"
               f"<label for=\"f-session\">Session<input id=\"f-session\" name=\"session\" value=\"{esc(session)}\" "
               "size=\"24\"></label><button type=\"submit\">Filter</button>"
               f"<a href=\"{self.base}/decisions\">Clear</a></form>"]
        counts = outcome_totals(conn) if before is None and not session and not outcome else []
        if counts:
            out.append("<p>" + " · ".join(
                f'<a href="{self.base}/decisions?{esc(urlencode({"outcome": o}))}">{esc(o)}</a> {n}' for o, n in counts) + "</p>")
        if not rows:
            out.append("<p>No decision matches.</p>")
            return "Decisions", "".join(out)
        capture = bool(self.app.cfg["injection"].get("capture_content"))
        out.append("<table id=\"decisions\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th>"
                   "<th scope=\"col\">Session</th><th scope=\"col\">Prompt</th><th scope=\"col\">Outcome</th>"
                   "<th scope=\"col\">Cascade</th><th scope=\"col\">Cues</th><th scope=\"col\" class=\"num\">ms</th>"
                   "</tr></thead><tbody>")
        for rid, ts, _hook, sid, phash, plen, oc, intent, ms, trace_id, detail_text in rows:
            detail = loads_detail(detail_text)
            text = texts.get(trace_id)
            if text is not None:
                prompt = f"<q>{esc(clip(text, 200))}</q> <span class=\"muted\">({plen} chars)</span>"
            else:
                prompt = (f"<code>{esc(phash or '—')}</code> <span class=\"muted\">{plen if plen is not None else '?'} "
                          f"chars{'' if capture else ', text not captured'}</span>")
            session_link = (f'<a href="{self.base}/decisions?{esc(urlencode({"session": sid}))}">{esc(clip(sid, 14))}</a>'
                            if sid else "—")
            cls = "green" if oc == "injected" else ("red" if oc == "error" else "")
            out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{session_link}</td><td>{prompt}</td>"
                       f"<td><span class=\"{cls}\">{esc(oc)}</span>{'<br><span class=muted>' + esc(intent) + '</span>' if intent else ''}</td>"
                       f"<td>{cascade(oc, detail)}</td><td>{cue_cell(cues_by_trace.get(trace_id, []))}</td>"
                       f"<td class=\"num\">{esc(fmt(ms))}</td></tr>")
        out.append("</tbody></table><nav class=\"pager\" aria-label=\"Pages of decisions\">")
        keep = {k: v for k, v in (("outcome", outcome), ("session", session)) if v}
        if before is not None:
            out.append(f'<a href="{self.base}/decisions?{esc(urlencode(keep))}">Newest</a>')
        if more:
            out.append(f'<a href="{self.base}/decisions?{esc(urlencode({**keep, "before": rows[-1][0]}))}" rel="next">Older →</a>')
        out.append("</nav>")
        out.append(self._cue_audit(conn, params, session))
        return "Decisions", "".join(out)

    def _cue_audit(self, conn, params, session: str) -> str:
        """Every cue evaluation (tool calls, session starts, prompts), newest first, by keyset."""
        if not has_table(conn, "cue_audit"):
            return ""
        cue = params.get("cue", "")
        before = as_int(params.get("cue_before"))
        rows = delivery_reads.page(conn, PAGE_SIZE + 1, session, cue if cue in ("fired", "skipped") else "",
                                   before)
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        options = "".join(f'<option value="{c}"{" selected" if c == cue else ""}>{c or "all"}</option>'
                          for c in ("", "fired", "skipped"))
        out = ["<h2 id=\"cues\">Cue evaluations</h2><p>Every evaluation of a cue (a tool call touching a "
               "file or symbol, a session start, a prompt) leaves a row: fired, or skipped and why.</p>"
               f"<form class=\"filters\" method=\"get\" action=\"{self.base}/decisions#cues\">"
               + (f'<input type="hidden" name="session" value="{esc(session)}">' if session else "")
               + f"<label for=\"f-cue\">Cue outcome<select id=\"f-cue\" name=\"cue\">{options}</select></label>"
               "<button type=\"submit\">Filter</button></form>"]
        if not rows:
            out.append("<p>No cue evaluation recorded.</p>")
            return "".join(out)
        out.append("<table id=\"cue-audit\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th>"
                   "<th scope=\"col\">Session</th><th scope=\"col\">Event</th><th scope=\"col\">Trigger</th><th scope=\"col\">Item</th>"
                   "<th scope=\"col\">Outcome</th><th scope=\"col\">Touched</th></tr></thead><tbody>")
        for rid, ts, sid, event, trigger, name, outcome, reason, epoch, detail in rows:
            what = ('<span class="green">fired</span>' if outcome == "fired"
                    else f"skipped{': ' + esc(reason) if reason else ''}")
            out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{esc(clip(sid, 14)) if sid else '—'}</td>"
                       f"<td>{esc(event)}</td><td>{esc(trigger)}</td><td>{esc(name or '—')}</td>"
                       f"<td>{what}{' <span class=muted>epoch ' + esc(epoch) + '</span>' if epoch else ''}</td>"
                       f"<td>{esc(clip(detail, 120))}</td></tr>")
        out.append("</tbody></table>")
        if more:
            keep = {k: v for k, v in (("session", session), ("cue", cue)) if v}
            out.append(f'<nav class="pager" aria-label="Pages of cue evaluations"><a rel="next" '
                       f'href="{self.base}/decisions?{esc(urlencode({**keep, "cue_before": rows[-1][0]}))}#cues">Older →</a></nav>')
        return "".join(out)

    def _prompt_texts(self, conn, trace_ids: list[str]) -> dict[str, str]:
        """Prompt text by trace id, from the prompt's root span: only recorded when
        [injection].capture_content is on, and only while the span is in the outbox."""
        if not trace_ids or not self.app.cfg["injection"].get("capture_content"):
            return {}
        found = {}
        for trace_id, attrs in span_reads.root_attributes(conn, trace_ids):
            text = loads_detail(attrs).get("memhealth.prompt.text")
            if isinstance(text, str):
                found[trace_id] = text
        return found

    # -- Memory ----------------------------------------------------------------------------

    def memory(self, conn, params) -> tuple[str, str]:
        q = params.get("q", "").strip()
        source = params.get("source", "")
        before = as_int(params.get("before"))
        # Counting reads the whole (source, path) index (~10 ms per 100,000 chunks): on request
        # only, so the page itself costs the same with 1,000 chunks as with 100,000.
        counts = []
        if params.get("counts"):
            counts = [(s, "", n) for s, n in index_reads.counts_by_source(conn) if s != "memory"]
            counts += [("memory", k, n) for k, n in index_reads.memory_counts_by_kind(conn)]
            counts.sort(key=lambda c: c[0])
        from memory_core.ingest.base import SOURCES

        sources = list(SOURCES)
        options = "".join(f'<option value="{esc(s)}"{" selected" if s == source else ""}>{esc(s or "all")}</option>'
                          for s in ("", *sources))
        out = [f"<form class=\"filters\" method=\"get\" action=\"{self.base}/memory\" role=\"search\">"
               f"<label for=\"m-q\">Search memory<input id=\"m-q\" name=\"q\" type=\"search\" size=\"40\" value=\"{esc(q)}\"></label>"
               f"<label for=\"m-source\">Source<select id=\"m-source\" name=\"source\">{options}</select></label>"
               f"<button type=\"submit\">Search</button><a href=\"{self.base}/memory\">Clear</a></form>"]
        if counts:
            out.append("<h2>What memory holds: " + esc(sum(n for *_x, n in counts))
                       + " chunks</h2><table id=\"counts\"><thead><tr><th scope=\"col\">Source</th><th scope=\"col\">Kind</th>"
                       "<th scope=\"col\" class=\"num\">Chunks</th></tr></thead><tbody>")
            out += [f"<tr><td>{esc(s)}</td><td>{esc(k or '—')}</td><td class=\"num\">{n}</td></tr>" for s, k, n in counts]
            out.append("</tbody></table>")
        else:
            out.append(f'<p><a href="{self.base}/memory?counts=1">Count the chunks by source and kind</a></p>')
        if q:
            from memory_core.index.search import search

            result = search(conn, q, self.app.cfg, k=20)
            hits = [h for h in result.hits if not source or h.source == source]
            legs = ", ".join(result.legs_answered) or "none"
            note = f"; vector leg: {esc(result.degraded)}" if result.degraded else ""
            out.append(f"<h2>Search: “{esc(q)}”</h2><p class=\"muted\">{len(hits)} hit(s), legs answered: {esc(legs)}{note}, "
                       f"{esc(fmt(result.timings.get('total_ms')))} ms</p>")
            out.append('<section id="hits" aria-label="Search results">' + chunk_table(
                [(h.chunk_id, h.source, chunk_kind(conn, h.chunk_id), h.path, h.lines, h.title, h.snippet, h.signal_weight,
                  f"{h.score:.4f} ({'+'.join(h.legs)})") for h in hits], score=True) + "</section>")
        else:
            rows = index_reads.chunk_page(conn, PAGE_SIZE + 1, source, before)
            more = len(rows) > PAGE_SIZE
            rows = rows[:PAGE_SIZE]
            out.append("<h2>Chunks, newest first</h2>")
            out.append(chunk_table([(r[0], r[1], r[2], r[3], line_span(r[4], r[5]), r[6], clip(r[7], 240), r[8], None)
                                     for r in rows]))
            keep = {"source": source} if source else {}
            out.append("<nav class=\"pager\" aria-label=\"Pages of chunks\">")
            if before is not None:
                out.append(f'<a href="{self.base}/memory?{esc(urlencode(keep))}">Newest</a>')
            if more:
                out.append(f'<a href="{self.base}/memory?{esc(urlencode({**keep, "before": rows[-1][0]}))}" rel="next">Older →</a>')
            out.append("</nav>")
        out.append(self._memory_items(conn))
        records = record_reads.confirmed(conn, 100)
        out.append("<h2>Confirmed records</h2>")
        if not records:
            out.append(f"<p>No record confirmed yet: <a href=\"{self.base}/triage\">triage</a> decides which captured "
                       "statements become memory.</p>")
        else:
            out.append("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Kind</th><th scope=\"col\">Title</th>"
                       "<th scope=\"col\">Statement</th><th scope=\"col\">Provenance</th><th scope=\"col\">File</th>"
                       "<th scope=\"col\">Confirmed</th></tr></thead><tbody>")
            for cid, kind, title, stmt, tr, line, sid, ts, role, path, decided in records:
                prov = provenance(tr, line, sid, ts, role)
                out.append(f"<tr><td>{cid}</td><td>{esc(kind)}</td><td>{esc(title)}</td><td>{esc(clip(stmt))}</td>"
                           f"<td>{esc(prov)}</td><td><code>{esc(path)}</code></td><td>{when(decided)}</td></tr>")
            out.append("</tbody></table>")
        return "Memory", "".join(out)

    def _memory_items(self, conn) -> str:
        """Memory items (one per memory file, compiled at ingest): kind, triggers, provenance,
        state; pinned items and the resume anchor first."""
        if not has_table(conn, "memory_items"):
            return ""
        from memory_core.items.listing import list_cues

        out = []
        anchor = index_reads.resume_anchor(conn)
        out.append("<h2>Resume anchor</h2>")
        if anchor:
            out.append(f'<div class="card"><h3>{esc(anchor[2])}</h3><p class="muted"><code>{esc(anchor[0])}:'
                       f'{esc(anchor[1])}</code></p><pre>{esc(anchor[3][:1500])}</pre></div>')
        else:
            out.append("<p>No resume anchor: a <code>## LATEST</code> heading in a memory file is where the next "
                       "session picks up.</p>")
        now = time.time_ns()
        cued = {c["id"]: c for c in list_cues(conn, self.app.project.root, self.app.cfg, now_ns=now)}
        items = item_reads.listing(conn, MAX_ITEMS + 1)
        out.append(f"<h2>Memory items: {min(len(items), MAX_ITEMS)}{'+' if len(items) > MAX_ITEMS else ''}</h2>")
        if not items:
            out.append("<p>No memory item: memory files (with frontmatter naming their kind and triggers) "
                       "become items at ingest.</p>")
            return "".join(out)
        out.append("<table><thead><tr><th scope=\"col\">Item</th><th scope=\"col\">Kind</th>"
                   "<th scope=\"col\">Triggers</th><th scope=\"col\">State</th><th scope=\"col\">Provenance</th>"
                   "<th scope=\"col\">Fired</th></tr></thead><tbody>")
        for iid, path, line, name, kind, scope, pinned, expires_ns, recorded_ns in items[:MAX_ITEMS]:
            info = cued.get(iid)
            expired = expires_ns is not None and expires_ns <= now
            triggers = "".join(f"<li>{esc(c['trigger'])}: <code>{esc(c['pattern'])}</code>"
                               f"{'' if c['state'] == 'active' else ' — <span class=note>' + esc(c['state']) + '</span>'}</li>"
                               for c in (info or {}).get("cues", []))
            states = {c["state"].split(":")[0] for c in (info or {}).get("cues", [])}
            state = "expired" if expired else ("stale" if "stale" in states else "active")
            cls = {"expired": "muted", "stale": "note", "active": "green"}[state]
            errors = (info or {}).get("errors") or []
            fired = (f"{info['fired']}× · last {when(info['last_fired_ns'])}" if info and info["fired"] else "never")
            out.append(
                f"<tr><th scope=\"row\">{esc(name)}{' <span class=note>pinned</span>' if pinned else ''}"
                f"{'<br><span class=muted>scope ' + esc(scope) + '</span>' if scope else ''}</th><td>{esc(kind)}</td>"
                f"<td>{'<ul>' + triggers + '</ul>' if triggers else '—'}"
                + "".join(f'<div class="red">{esc(e[0])}: {esc(e[1])}</div>' for e in errors
                          if isinstance(e, (list, tuple)) and len(e) == 2)
                + f"</td><td><span class=\"{cls}\">{state}</span>"
                f"{'<br><span class=muted>expires ' + when(expires_ns) + '</span>' if expires_ns else ''}</td>"
                f"<td><code>{esc(path)}{':' + esc(line) if line else ''}</code><br><span class=muted>recorded "
                f"{when(recorded_ns)}</span></td><td>{fired}</td></tr>")
        out.append("</tbody></table>")
        return "".join(out)

    # -- Triage ----------------------------------------------------------------------------

    def triage(self, conn, params) -> tuple[str, str]:
        from memory_core.records import triage

        items = triage.pending(conn)
        token = self.token()
        out = []
        if params.get("done"):
            out.append(f'<p class="flash" role="status">{esc(params["done"])}</p>')
        if params.get("error"):
            out.append(f'<p class="flash error" role="alert">{esc(params["error"])}</p>')
        out.append("<p>The session-end capture proposes decisions, dead ends and corrections; only what "
                   "you confirm becomes memory (a file under <code>.memhealth/memory/records/</code>, indexed "
                   "at once). Rejected and merged statements are never proposed again. These are the "
                   "operations of <code>memhealth triage</code>, recorded the same way.</p>")
        targets = record_reads.merge_targets(conn)
        out.append(f"<h2>Pending: {len(items)}</h2>")
        if not items:
            out.append("<p>Nothing pending.</p>")
        for item in items:
            cid = item["id"]
            merge_opts = "".join(f'<option value="{t[0]}">#{t[0]} {esc(clip(t[1], 60))} ({esc(t[2])})</option>'
                                 for t in targets if t[0] != cid)
            hidden = f'<input type="hidden" name="csrf" value="{esc(token)}"><input type="hidden" name="id" value="{cid}">'
            also = "".join(f"<li>#{a['id']}: {esc(clip(a['statement']))}</li>" for a in item.get("also") or [])
            out.append(
                f'<article class="card" id="c{cid}" aria-labelledby="c{cid}-t">'
                f'<h3 id="c{cid}-t">#{cid} <span class="muted">{esc(item["kind"])}</span> · {esc(item["title"])}</h3>'
                f"<p>{esc(item['statement'])}</p>"
                f"<p class=\"muted\">From {esc(triage.provenance(item))} · proposed {when(item['created_ns'])}</p>"
                f"{context_html(item)}"
                + (f"<p>Also said:</p><ul>{also}</ul>" if also else "")
                + f'<form class="inline" method="post" action="{self.base}/triage/confirm">{hidden}'
                f'<button type="submit" name="confirm" aria-label="Confirm #{cid}">Confirm</button></form>'
                f'<form class="inline" method="post" action="{self.base}/triage/reject">{hidden}'
                f'<button type="submit" aria-label="Reject #{cid}">Reject</button></form>'
                f'<form class="inline" method="post" action="{self.base}/triage/retitle">{hidden}'
                f'<label for="t{cid}">New title</label><input id="t{cid}" name="title" required size="36" '
                f'value="{esc(item["title"])}"><button type="submit">Retitle</button></form>'
                + (f'<form class="inline" method="post" action="{self.base}/triage/merge">{hidden}'
                   f'<label for="m{cid}">Same as</label><select id="m{cid}" name="into">{merge_opts}</select>'
                   f'<button type="submit">Merge</button></form>' if merge_opts else "")
                + "</article>")
        decided = record_reads.recently_decided(conn, 30)
        if decided:
            out.append("<h2>Recently decided</h2><table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">Kind</th>"
                       "<th scope=\"col\">Title</th><th scope=\"col\">Decision</th><th scope=\"col\">When</th></tr></thead><tbody>")
            for cid, kind, title, state, into, path, ts in decided:
                what = {"confirmed": f"confirmed → <code>{esc(path)}</code>", "merged": f"merged into #{into}"}.get(
                    state, esc(state))
                out.append(f"<tr><td>{cid}</td><td>{esc(kind)}</td><td>{esc(title)}</td><td>{what}</td><td>{when(ts)}</td></tr>")
            out.append("</tbody></table>")
        return "Triage", "".join(out)

    # -- Alerts ----------------------------------------------------------------------------

    def alerts(self, conn, params) -> tuple[str, str]:
        from probes import budget

        acfg = self.app.cfg["alerts"]
        now = time.time()
        start = budget.window_start(now, self.app.cfg)
        size = float(acfg["window_h"]) * 3600
        per_window = int(acfg["pages_per_window"])
        routes = list(dict.fromkeys([*(acfg.get("routes") or ()), budget.DEFAULT_ROUTE, budget.UNKNOWN_ROUTE]))
        out = [f"<p>A page is a person interrupted: at most {per_window} per route per {acfg['window_h']:g} h window "
               f"(this one: {when(start * 1e9)} to {when((start + size) * 1e9)}). Over budget, an alert folds "
               "into the window's digest.</p>",
               "<h2>Page budget, this window</h2><table><thead><tr><th scope=\"col\">Route</th>"
               "<th scope=\"col\" class=\"num\">Pages used</th><th scope=\"col\" class=\"num\">Remaining</th>"
               "<th scope=\"col\" class=\"num\">Folded</th><th scope=\"col\">Noisiest</th></tr></thead><tbody>"]
        for route in routes:
            used = budget.pages_used(conn, route, start, now)
            dig = budget.digest(conn, route, start, now + 1)
            left = max(0, per_window - used)
            out.append(f"<tr><th scope=\"row\">{esc(route)}</th><td class=\"num\">{used}</td>"
                       f"<td class=\"num\">{'<span class=red>0</span>' if not left else left}</td>"
                       f"<td class=\"num\">{dig['folded']}</td><td>{esc(dig['noisiest'] or '—')}</td></tr>")
        out.append("</tbody></table>")
        digests = alert_log.recent_digests(conn, 10)
        out.append("<h2>Digests</h2>")
        out.append("<ul>" + "".join(f"<li>{when(ts)} · {esc(r)}: {esc(d)}</li>" for ts, r, d in digests) + "</ul>"
                   if digests else "<p>No digest sent yet (one goes out when the first alert of a new window "
                                   "arrives after anything folded).</p>")
        decision = params.get("decision", "")
        before = as_int(params.get("before"))
        rows = alert_log.page_of_decisions(conn, PAGE_SIZE + 1, decision, before)
        more = len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        options = "".join(f'<option value="{d}"{" selected" if d == decision else ""}>{d or "all"}</option>'
                          for d in ("", "paged", "folded", "deduped", "noted", "digest"))
        out.append(f"<h2>Decisions</h2><form class=\"filters\" method=\"get\" action=\"{self.base}/alerts-budget\">"
                   f"<label for=\"a-d\">Decision<select id=\"a-d\" name=\"decision\">{options}</select></label>"
                   "<button type=\"submit\">Filter</button></form>")
        if not rows:
            out.append("<p>No alert decision recorded.</p>")
        else:
            out.append("<table><thead><tr><th scope=\"col\">#</th><th scope=\"col\">When</th><th scope=\"col\">Route</th>"
                       "<th scope=\"col\">Alert</th><th scope=\"col\">Severity</th><th scope=\"col\">Status</th>"
                       "<th scope=\"col\">Decision</th><th scope=\"col\">Why</th></tr></thead><tbody>")
            for rid, ts, route, name, sev, status, dec, detail in rows:
                cls = "red" if dec == "paged" else ("note" if dec == "folded" else "")
                out.append(f"<tr><td>{rid}</td><td>{when(ts)}</td><td>{esc(route)}</td><td>{esc(name)}</td>"
                           f"<td>{esc(sev)}</td><td>{esc(status)}</td><td><span class=\"{cls}\">{esc(dec)}</span></td>"
                           f"<td>{esc(clip(detail))}</td></tr>")
            out.append("</tbody></table>")
            if more:
                keep = {"decision": decision} if decision else {}
                out.append(f'<nav class="pager" aria-label="Pages of alert decisions"><a rel="next" '
                           f'href="{self.base}/alerts-budget?{esc(urlencode({**keep, "before": rows[-1][0]}))}">Older →</a></nav>')
        return "Alerts", "".join(out)


def context_html(item: dict) -> str:
    lines = transcript_context(item.get("transcript") or "", int(item.get("line") or 0))
    if not lines:
        return '<p class="muted">(transcript context unavailable: the file is gone or moved)</p>'
    body = "".join(
        f'<div{HERE_CLASS if n == item["line"] else ""}><span class="muted">{n} {esc(role)}:</span> {esc(text)}</div>'
        for n, role, text in lines)
    return f'<details open><summary>Transcript context</summary><div class="context">{body}</div></details>'
