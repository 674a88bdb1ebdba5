"""What a user feels: a scripted 30-tool-call session of the real Claude Code CLI, with
memhealth's hooks installed against the same session without them, in one run.

The model is the scripted stand-in (tests/e2e/messages_api.py, answering at once), so the
difference is the hooks: SessionStart (the gate), UserPromptSubmit, Pre/PostToolUse on the
25 calls init's matcher covers (Read, Bash; the 5 Grep calls are not matched), Stop, and SessionEnd
(an incremental ingest). Sessions alternate with and without hooks so drift on a shared box
hits both; figures are medians. Needs the CLI (tests/e2e/claude_cli.py installs it into
the cache); without it the benchmark says why and reports nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

from common import row

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

TOOL_CALLS = 30
PROMPT = "Walk the ledger code: read each module, grep for the batch limits, run the quick checks."


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


def _session_seconds(session, model, root: str, tool_calls: bool = True) -> float:
    before = len(model.agent_requests())
    model.extend(_script(root) if tool_calls else [[text_block("Nothing to do.")]])
    run = session.run(PROMPT)
    made = len(model.agent_requests()) - before
    wanted = TOOL_CALLS + 1 if tool_calls else 1
    assert made == wanted, f"the session made {made} model calls, scripted {wanted}"
    return run.seconds


def text_block(value: str) -> dict:
    from tests.e2e.messages_api import text

    return text(value)


def bench(quick: bool = False) -> list[dict]:
    from tests.e2e.claude_cli import Unavailable, install, installed_version
    from tests.e2e.harness import SampleProject, Session
    from tests.e2e.messages_api import ScriptedModel

    try:
        binary = install()
        version = installed_version(binary)
    except Unavailable as exc:
        print(f"bench_session: skipped: {exc}", file=sys.stderr)
        return []
    pairs = 3 if quick else 7
    times: dict[tuple[bool, bool], list[float]] = {(h, t): [] for h in (True, False) for t in (True, False)}
    with tempfile.TemporaryDirectory() as tmp:
        projects = {True: SampleProject.create(os.path.join(tmp, "hooked")),
                    False: SampleProject.create(os.path.join(tmp, "bare"), hooks=False)}
        with ScriptedModel() as m1, ScriptedModel() as m2:
            models = {True: m1, False: m2}
            sessions = {h: Session(binary, projects[h].root, os.path.join(tmp, f"home-{h}"), models[h])
                        for h in (True, False)}
            for h in (True, False):  # warm-up: the first run in a fresh HOME sets it up
                _session_seconds(sessions[h], models[h], projects[h].root)
            for _ in range(pairs):  # alternate, so drift on a shared box hits both
                for tools in (True, False):
                    for h in (True, False):
                        times[(h, tools)].append(_session_seconds(sessions[h], models[h], projects[h].root, tools))
    med = {k: statistics.median(v) for k, v in times.items()}
    per_call = {h: (med[(h, True)] - med[(h, False)]) / TOOL_CALLS for h in (True, False)}
    note = f"CLI {version}, median of {pairs} alternating sessions"
    spread = {k: f"min {min(v):.2f} max {max(v):.2f}" for k, v in times.items()}
    return [
        row(f"session of {TOOL_CALLS} tool calls, no hooks (floor)", med[(False, True)], "s",
            note=f"{spread[(False, True)]}; {note}"),
        row(f"session of {TOOL_CALLS} tool calls, memhealth hooks", med[(True, True)], "s",
            note=spread[(True, True)]),
        row(f"session of {TOOL_CALLS} tool calls: hooks / no hooks", med[(True, True)] / med[(False, True)], "x"),
        row("session of 0 tool calls, no hooks (floor)", med[(False, False)], "s", note=spread[(False, False)]),
        row("session of 0 tool calls, memhealth hooks", med[(True, False)], "s",
            note=f"{spread[(True, False)]}; the gate at start, the ingest at end"),
        row("per tool call, no hooks (floor)", per_call[False] * 1000, "ms",
            note="(30-call session - 0-call session) / 30"),
        row("per tool call, memhealth hooks", per_call[True] * 1000, "ms",
            note="Read and Bash run PreToolUse + PostToolUse; Grep is not matched"),
        row("per tool call: hooks / no hooks", per_call[True] / per_call[False], "x"),
    ]
