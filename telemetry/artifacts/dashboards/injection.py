"""Injection decisions: the precision-gated cascade as a funnel."""

from __future__ import annotations

from telemetry.artifacts.dashboards.layout import INST, Layout, dashboard, target
from telemetry.artifacts.promql import m

FUNNEL = (  # the injection cascade, cheapest gate first (memory_core/delivery/cascade.py, hooks)
    ("prompts", ()),
    ("not a machine turn", ("system_turn",)),
    ("with intent", ("system_turn", "no_intent")),
    ("relevant (IDF gate)", ("system_turn", "no_intent", "below_relevance")),
    ("within session caps", ("system_turn", "no_intent", "below_relevance", "capped")),
)


def build() -> dict:
    L = Layout()
    dec = m("memhealth_injection_decisions_total")
    targets = []
    for stage, excluded in FUNNEL:
        matcher = f',outcome!~"{"|".join(excluded)}"' if excluded else ""
        targets.append(target(f"sum(increase({dec}{{{INST}{matcher}}}[$__range]))", stage,
                              instant=True))
    targets.append(target(f'sum(increase({dec}{{{INST},outcome="injected"}}[$__range]))',
                          "injected", instant=True))
    L.add("Injection cascade (funnel)", "bargauge", targets,
          "Prompts surviving each gate of the cascade, cheapest first: system-turn exemption, "
          "intent, IDF relevance, session caps, then injected (the rest of the last stage was "
          "suppressed by injection = \"off\").", w=24, h=9,
          options={"orientation": "horizontal", "displayMode": "basic", "showUnfilled": True,
                   "reduceOptions": {"calcs": ["lastNotNull"]}, "valueMode": "color"},
          defaults={"min": 0, "color": {"mode": "continuous-GrYlRd"}})
    L.add("Decisions by outcome", "timeseries", [target(
        f"sum by (outcome) (rate({dec}{{{INST}}}[$__rate_interval]))", "{{outcome}}")],
        "Every prompt writes one decision, injected or not (the denominator).", unit="ops",
        options={"legend": {"displayMode": "table"}},
        defaults={"custom": {"stacking": {"mode": "normal"}, "fillOpacity": 40}})
    L.add("Injected share of prompts (dashboard range)", "stat", [target(
        f'sum(increase({dec}{{{INST},outcome="injected"}}[$__range]))\n'
        f"/ (sum(increase({dec}{{{INST}}}[$__range])) > 0)", "injected", instant=True)],
        "Silence is the default: most prompts should inject nothing.", unit="percentunit",
        options={"reduceOptions": {"calcs": ["lastNotNull"]}})
    _cues(L)
    _capture(L)
    _cost(L)
    L.add("Agent memory tool calls (MCP)", "timeseries", [target(
        f"sum by (tool, outcome) (increase({m('memhealth_mcp_calls_total')}{{{INST}}}"
        f"[$__rate_interval]))", "{{tool}} {{outcome}}")],
        "What the agent asked for itself through `memhealth mcp` (search, remember, cues), "
        "beside what the hooks delivered unasked.", w=24, h=7)
    return dashboard("memhealth-injection", "memhealth / Injection decisions",
                      "The precision-gated injection cascade as a funnel; cue-anchored delivery; "
                      "what sessions propose as records, and what triage keeps.", L)


def _cues(L: Layout) -> None:
    """Cue-anchored delivery: memory fired by the file, symbol or event it belongs to."""
    ev, dl = m("memhealth_cue_evaluations_total"), m("memhealth_cue_deliveries_total")
    L.add("Cue evaluations by outcome", "timeseries", [target(
        f"sum by (outcome) (rate({ev}{{{INST}}}[$__rate_interval]))", "{{outcome}}")],
        "Every tool call, prompt and session start evaluates the cues: fired, or skipped and why "
        "(no_match, deduped, expired, over_budget, ablation, inactive). A flat zero while tool "
        "hooks run means cues stopped being evaluated (gate check cue_delivery).", unit="ops",
        options={"legend": {"displayMode": "table"}},
        defaults={"custom": {"stacking": {"mode": "normal"}, "fillOpacity": 40}})
    L.add("Cue deliveries by trigger (dashboard range)", "bargauge", [target(
        f"sum by (trigger) (increase({dl}{{{INST}}}[$__range]))", "{{trigger}}", instant=True)],
        "Memory items delivered into Claude's context by a cue: pinned items at session start "
        "(and again after each compaction), path and symbol cues on first touch, prompt cues.",
        options={"orientation": "horizontal", "displayMode": "basic",
                 "reduceOptions": {"calcs": ["lastNotNull"]}})
    rr, rb = m("memhealth_compaction_rereads_total"), m("memhealth_compaction_reread_bytes_total")
    L.add("What compaction cost: files re-read after a compaction", "timeseries", [
        target(f"sum by (same_content) (increase({rr}{{{INST}}}[1h]))", "same content: {{same_content}}"),
        target(f"sum(increase({rb}{{{INST}}}[1h]))", "bytes re-read", ref="B")],
        "Files read again after a compaction boundary of the same session, per hour, and the "
        "bytes re-read: the context a compaction threw away and the session paid for again. "
        "same_content=true: the file had not changed.",
        overrides=[{"matcher": {"id": "byFrameRefID", "options": "B"},
                    "properties": [{"id": "unit", "value": "bytes"},
                                   {"id": "custom.axisPlacement", "value": "right"}]}])


def _capture(L: Layout) -> None:
    """Anti-recurrence records: what the session-end capture proposes, what triage keeps."""
    cand, tri = m("memhealth_capture_candidates_total"), m("memhealth_triage_decisions_total")
    depth = m("memhealth_capture_queue_depth")
    L.add("Candidates proposed per day, by kind", "timeseries", [target(
        f"sum by (kind) (increase({cand}{{{INST}}}[1d]))", "{{kind}}")],
        "Decisions, dead ends and corrections the session-end extraction proposed (deterministic "
        "patterns over what the human typed and the assistant wrote).",
        defaults={"custom": {"stacking": {"mode": "normal"}, "fillOpacity": 40}})
    L.add("Triage decisions and keep rate (dashboard range)", "stat", [
        target(f"sum by (decision) (increase({tri}{{{INST}}}[$__range]))", "{{decision}}", instant=True),
        target(f'sum(increase({tri}{{{INST},decision="confirmed"}}[$__range]))\n'
               f"/ (sum(increase({tri}{{{INST}}}[$__range])) > 0)", "keep rate", instant=True)],
        "What triage kept: a store that accepts everything becomes noise (the paper kept 59 of "
        "154 decisions and 47 of 186 dead ends).",
        options={"reduceOptions": {"calcs": ["lastNotNull"]}, "textMode": "value_and_name"})
    L.add("Capture queues", "timeseries", [target(f"max by (queue) ({depth}{{{INST}}})", "{{queue}}")],
        "triage: candidates waiting for a decision (`memhealth triage`); work: session boundaries "
        "the detached worker has not captured yet (the next session start resumes them).")


# -- what memory costs a session (memory_core.outbox.costs, telemetry.session_cost) ---------------

def _cost(L: Layout) -> None:
    """The context memory puts in front of Claude, and the time its hooks add to a session."""
    chars, tokens = m("memhealth_context_chars_total"), m("memhealth_context_tokens_estimated_total")
    inv, dur = m("memhealth_hook_invocations_total"), m("memhealth_hook_duration_seconds_sum")
    L.add("What memory cost: context put into Claude's context per hour, by kind", "timeseries", [target(
        f"sum by (kind) (increase({chars}{{{INST}}}[1h]))", "{{kind}}")],
        "Characters hooks emitted into Claude's context (after cleaning and the 10,000-character cap): "
        "the verdict, pinned items, the session summary, recalled memory, cue deliveries. Every one "
        "of them is paid for in the context window of every later turn of the session.",
        defaults={"custom": {"stacking": {"mode": "normal"}, "fillOpacity": 40}})
    L.add("Estimated tokens per session (dashboard range)", "stat", [target(
        f"sum(increase({tokens}{{{INST}}}[$__range]))\n"
        f'/ (sum(increase({inv}{{{INST},hook="session-start"}}[$__range])) > 0)', "~tokens per session",
        instant=True)],
        "Context tokens per session start, estimated at 4 characters per token (Claude's tokenizer is "
        "not public; `memhealth report` gives the exact characters).", w=6,
        options={"reduceOptions": {"calcs": ["lastNotNull"]}})
    L.add("Hook time per tool call", "stat", [target(
        f'sum(increase({dur}{{{INST},hook=~"pre-tool|post-tool"}}[$__range]))\n'
        f'/ (sum(increase({inv}{{{INST},hook="pre-tool"}}[$__range])) > 0)', "per tool call",
        instant=True)],
        "PreToolUse + PostToolUse wall time inside the hooks per tool call. A command hook's process "
        "start (~30-60 ms) comes on top; the HTTP transport (`memhealth init --transport http`) "
        "removes it.", w=6, unit="s", options={"reduceOptions": {"calcs": ["lastNotNull"]}})
    rej = m("memhealth_hook_http_rejected_total")
    L.add("HTTP hook requests refused", "timeseries", [target(
        f"sum by (reason) (increase({rej}{{{INST}}}[1h]))", "{{reason}}")],
        "Requests to serve's hook endpoint without the project's secret (unauthorized) or unreadable "
        "(bad_request). Anything here is a local process calling the endpoint, or settings with an "
        "old secret (`memhealth init --transport http` rewrites it).", w=24, h=6)
