"""What a user feels: a scripted 30-tool-call session of the real Claude Code CLI, with
memhealth's hooks on each transport (a process per event, and `memhealth init --transport
http` to a running `memhealth serve`) against the same session without hooks, in one run.

The model is the scripted stand-in (tests/e2e/messages_api.py, answering at once), so the
difference is the hooks: SessionStart (the gate), UserPromptSubmit, Pre/PostToolUse on the
25 calls init's matcher covers (Read, Bash; the 5 Grep calls are not matched), Stop, and
SessionEnd (an incremental ingest). Sessions alternate between the three setups so drift on
a shared box hits all of them; figures are medians.

Two views of the per-tool-call overhead:
- session level: (30-call session - 0-call session) / 30, per setup;
- per call, from the client's side: the gap between the model's reply carrying a tool_use
  and the CLI's next request (the tool runs, PreToolUse before it, PostToolUse after it),
  for the 25 matched calls; p50 and p99 of the gaps with hooks minus the same percentile
  without (the floor: the tool itself and the CLI's own work).
Needs the CLI (tests/e2e/claude_cli.py installs it into the cache); without it the benchmark
says why and reports nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from common import pct, row

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

TOOL_CALLS = 30
MATCHED = ("Read", "Bash")  # memhealth init's tool matcher covers these of the script's tools
PROMPT = "Walk the ledger code: read each module, grep for the batch limits, run the quick checks."
SETUPS = ("none", "command", "http")


def _script(root: str) -> list[list[dict]]:
    """30 agent turns of one tool call each (15 Read, 10 Bash, 5 Grep), then a closing reply."""
    from tests.e2e.messages_api import text, tool_use

    files = ["src/ledger/writer.py", "src/ledger/compactor.py", "src/api.py", "README.md",
             "docs/architecture.md"]
    calls = []
    for i in range(TOOL_CALLS):
        if i % 6 == 5:
            calls.append(tool_use("Grep", {"pattern": "BATCH_MAX", "path": root}))
        elif i % 2 == 0:
            calls.append(tool_use("Read", {"file_path": os.path.join(root, files[i % len(files)])}))
        else:
            calls.append(tool_use("Bash", {"command": f"echo step-{i}", "description": f"Step {i}"}))
    return [[c] for c in calls] + [[text("Walked the ledger code; nothing to change.")]]


def _cpu_children() -> float:
    """CPU seconds (user + system) of every child this process has waited for: the CLI and,
    through it, every hook process it started and waited for."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pid: int) -> float:
    """CPU seconds of a running process (serve), from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _session(session, model, root: str, tool_calls: bool = True, serve_pid: int | None = None
             ) -> tuple[float, list[float], float]:
    """(wall seconds, per matched tool call the client-side gap in seconds, CPU seconds of the
    CLI, its hook processes and serve)."""
    before = len(model.agent_requests())
    model.extend(_script(root) if tool_calls else [[text_block("Nothing to do.")]])
    cpu0 = _cpu_children() + (_cpu_of(serve_pid) if serve_pid else 0.0)
    run = session.run(PROMPT)
    cpu = _cpu_children() + (_cpu_of(serve_pid) if serve_pid else 0.0) - cpu0
    made = model.agent_requests()[before:]
    wanted = TOOL_CALLS + 1 if tool_calls else 1
    assert len(made) == wanted, f"the session made {len(made)} model calls, scripted {wanted}"
    gaps = []
    for this, nxt in zip(made, made[1:], strict=False):
        tools = [b["name"] for b in this.get("reply") or [] if b.get("type") == "tool_use"]
        if tools and tools[0] in MATCHED and this.get("replied_t") is not None:
            gaps.append(nxt["t"] - this["replied_t"])
    return run.seconds, gaps, cpu


def text_block(value: str) -> dict:
    from tests.e2e.messages_api import text

    return text(value)


def bench(quick: bool = False) -> list[dict]:
    from tests.e2e.claude_cli import Unavailable, install, installed_version
    from tests.e2e.harness import SampleProject, Session
    from tests.e2e.messages_api import ScriptedModel
    from tests.support.hook_serve import HookServe

    try:
        binary = install()
        version = installed_version(binary)
    except Unavailable as exc:
        print(f"bench_session: skipped: {exc}", file=sys.stderr)
        return []
    pairs = 3 if quick else 7
    times: dict[tuple[str, bool], list[float]] = {(s, t): [] for s in SETUPS for t in (True, False)}
    gaps: dict[str, list[float]] = {s: [] for s in SETUPS}
    cpu: dict[tuple[str, bool], list[float]] = {(s, t): [] for s in SETUPS for t in (True, False)}
    serve = None
    # the detached capture workers of the last SessionEnds may still be writing their stores
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        projects = {"none": SampleProject.create(os.path.join(tmp, "bare"), hooks=False),
                    "command": SampleProject.create(os.path.join(tmp, "command")),
                    "http": SampleProject.create(os.path.join(tmp, "http"))}
        serve = HookServe.start(projects["http"].root)  # settings now POST the turn's hooks to it
        try:
            with ScriptedModel() as m1, ScriptedModel() as m2, ScriptedModel() as m3:
                models = dict(zip(SETUPS, (m1, m2, m3), strict=True))
                sessions = {s: Session(binary, projects[s].root, os.path.join(tmp, f"home-{s}"), models[s])
                            for s in SETUPS}
                for s in SETUPS:  # warm-up: the first run in a fresh HOME sets it up
                    _session(sessions[s], models[s], projects[s].root)
                for _ in range(pairs):  # alternate, so drift on a shared box hits every setup
                    for tools in (True, False):
                        for s in SETUPS:
                            seconds, got, used = _session(sessions[s], models[s], projects[s].root, tools,
                                                          serve.pid if s == "http" else None)
                            times[(s, tools)].append(seconds)
                            cpu[(s, tools)].append(used)
                            gaps[s].extend(got)
            code, answer = serve.request("GET", "/memhealth/hook/ping")
            handled = json.loads(answer)["handled_ms"] if code == 200 else {}
        finally:
            serve.kill()
    med = {k: statistics.median(v) for k, v in times.items()}
    per_call = {s: (med[(s, True)] - med[(s, False)]) / TOOL_CALLS for s in SETUPS}
    spread = {k: f"min {min(v):.2f} max {max(v):.2f}" for k, v in times.items()}
    note = f"CLI {version}, median of {pairs} alternating sessions"
    p = {s: {q: pct(gaps[s], q) for q in (50, 99)} for s in SETUPS}
    n_gaps = len(gaps["none"])
    out = [
        row(f"session of {TOOL_CALLS} tool calls, no hooks (floor)", med[("none", True)], "s",
            note=f"{spread[('none', True)]}; {note}"),
        row(f"session of {TOOL_CALLS} tool calls, command hooks", med[("command", True)], "s",
            note=spread[("command", True)]),
        row(f"session of {TOOL_CALLS} tool calls, HTTP hooks", med[("http", True)], "s",
            note=spread[("http", True)]),
        row(f"session of {TOOL_CALLS} tool calls: command hooks / no hooks",
            med[("command", True)] / med[("none", True)], "x"),
        row(f"session of {TOOL_CALLS} tool calls: HTTP hooks / no hooks",
            med[("http", True)] / med[("none", True)], "x"),
        row("session of 0 tool calls, no hooks (floor)", med[("none", False)], "s", note=spread[("none", False)]),
        row("session of 0 tool calls, command hooks", med[("command", False)], "s",
            note=f"{spread[('command', False)]}; the gate at start, the ingest at end"),
        row("session of 0 tool calls, HTTP hooks", med[("http", False)], "s",
            note=f"{spread[('http', False)]}; SessionStart and SessionEnd stay commands"),
        row("per tool call, no hooks (floor)", per_call["none"] * 1000, "ms",
            note="(30-call session - 0-call session) / 30"),
        row("per tool call, command hooks", per_call["command"] * 1000, "ms",
            note="Read and Bash run PreToolUse + PostToolUse; Grep is not matched"),
        row("per tool call, HTTP hooks", per_call["http"] * 1000, "ms"),
        row("per tool call added, command hooks", (per_call["command"] - per_call["none"]) * 1000, "ms",
            note="session level, minus the floor"),
        row("per tool call added, HTTP hooks", (per_call["http"] - per_call["none"]) * 1000, "ms",
            target="< 3 ms", note="session level, minus the floor"),
    ]
    for s, label in (("command", "command hooks"), ("http", "HTTP hooks")):
        for q in (50, 99):
            out.append(row(f"matched tool call, client-side gap p{q} added, {label}",
                           (p[s][q] - p["none"][q]) * 1000, "ms",
                           target="< 3 ms" if s == "http" and q == 50 else "",
                           note=f"p{q} {p[s][q] * 1000:.1f} ms vs floor {p['none'][q] * 1000:.1f} ms; "
                                f"{len(gaps[s])} calls vs {n_gaps}"))
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    cpu_call = {s: (cmed[(s, True)] - cmed[(s, False)]) / TOOL_CALLS for s in SETUPS}
    for s, label in (("none", "no hooks (floor)"), ("command", "command hooks"), ("http", "HTTP hooks")):
        out.append(row(f"CPU per tool call, {label}", cpu_call[s] * 1000, "ms",
                       note="CLI + hook processes (+ serve for HTTP), (30-call - 0-call) / 30: less "
                            "sensitive to a loaded box than wall time"))
    for s, label in (("command", "command hooks"), ("http", "HTTP hooks")):
        out.append(row(f"CPU per tool call added, {label}", (cpu_call[s] - cpu_call["none"]) * 1000, "ms"))
    out.append(row("HTTP hook event, serve-side p50", handled.get("p50") or float("nan"), "ms",
                   note=f"p99 {handled.get('p99')} ms over the last {handled.get('n')} events: request read "
                        "to answer sent; the rest of the client-side gap is the CLI and scheduling"))
    return out
