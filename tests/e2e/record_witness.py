"""Record the witness fixtures: real Claude Code sessions (the pinned CLI against the
scripted model) with memhealth's wiring broken in known ways, and the heartbeat rows
memhealth wrote during them.

    .venv/bin/python -m tests.e2e.record_witness      # rewrites tests/fixtures/transcripts/witness/witness-*

Each scenario leaves `witness-NAME.jsonl` (the transcript, paths scrubbed to
/home/dev/ledger-service and /home/dev, bulky attachments the witness never reads dropped:
system-prompt snapshots, tool/agent/skill listings and the copies of API requests) and `witness-NAME.rows.json` (the
heartbeats: hook, session, event_ref, start, outcome). tests/probes/test_witness.py replays them.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import tempfile

from tests.e2e.claude_cli import install
from tests.e2e.harness import SampleProject, Session, settled_capture_outcomes
from tests.e2e.messages_api import ScriptedModel, text, tool_use

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "transcripts", "witness")
DROPPED = {"prompt_snapshot", "skill_listing", "agent_listing_delta", "deferred_tools_delta"}
DROPPED_RECORDS = {"api-request", "api-request-blob", "api-request-shape"}  # request copies
BOOM = "sh -c 'echo boom >&2; exit 1'"


def _edit(root: str, change) -> None:
    path = os.path.join(root, ".claude", "settings.local.json")
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    change(data["hooks"])
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)


def _reads(root: str, n: int, extra=()) -> list:
    """Model replies: `n` Reads of src/api.py (one per turn), then `extra`, then a last text."""
    def read():  # a fresh tool_use id each time
        return tool_use("Read", {"file_path": os.path.join(root, "src", "api.py")})
    return [[text("Reading."), read()]] + [[read()] for _ in range(n - 1)] + list(extra) + [[text("Done.")]]


def scenario_boom(world):
    _edit(world.root, lambda h: h["PreToolUse"][0]["hooks"][0].update(command=BOOM))
    world.model.extend(_reads(world.root, 3))
    return [world.session.run("read the api three times")]


def scenario_removed(world):
    _edit(world.root, lambda h: h.pop("PreToolUse"))
    world.model.extend(_reads(world.root, 3))
    return [world.session.run("read the api three times")]


def scenario_mixed(world):
    def change(h):
        h["UserPromptSubmit"][0]["hooks"][0]["command"] = "sh -c 'echo promptboom >&2; exit 1'"
        h["PostToolUse"][0]["hooks"][0]["command"] = "sh -c 'echo postboom >&2; exit 2'"
        h["Stop"][0]["hooks"][0]["command"] = "sh -c 'echo stopboom >&2; exit 3'"
    _edit(world.root, change)
    world.model.extend(_reads(world.root, 2, [[tool_use("Grep", {"pattern": "def", "path": world.root})]]))
    return [world.session.run("read the api twice, then grep")]


def scenario_healthy(world):
    world.model.extend(_reads(world.root, 2, [[tool_use("Bash", {"command": "echo ok", "description": "check"})]]))
    first = world.session.run("read the api twice and run a check")
    return [first, world.session.run("/compact", resume=first.session_id)]


def scenario_denied(world):
    """Tool calls the permission check refuses still fire PreToolUse (and no PostToolUse)."""
    world.model.extend([
        [text("Writing."), tool_use("Write", {"file_path": os.path.join(world.root, "x.txt"), "content": "x"})],
        [tool_use("Bash", {"command": "rm -rf /nonexistent-dir", "description": "clean"})], [text("Done.")]])
    return [world.session.run("write a file", tools="Read")]


# -- held out: recorded after their expected findings were written (witness-heldout.expected.json)

def _fail(word: str, code: int = 1) -> str:
    return f"sh -c 'echo {word} >&2; exit {code}'"


def heldout_parallel(world):
    api = os.path.join(world.root, "src", "api.py")
    world.model.extend([
        [text("Two at once."), tool_use("Read", {"file_path": api}),
         tool_use("Bash", {"command": "echo ok", "description": "check"})],
        [tool_use("Edit", {"file_path": api, "old_string": "HTTP handlers", "new_string": "The HTTP handlers"})],
        [tool_use("Write", {"file_path": os.path.join(world.root, "NOTES.md"), "content": "notes\n"})],
        [tool_use("Grep", {"pattern": "def", "path": world.root})],
        [tool_use("Glob", {"pattern": "src/**/*.py"})],
        [text("Done.")]])
    return [world.session.run("look around and tidy the api docstring")]


def heldout_interpreter_gone(world):
    _edit(world.root, lambda h: h["PostToolUse"][0]["hooks"][0].update(
        command="/nonexistent/venv/bin/memhealth hook post-tool"))
    world.model.extend(_reads(world.root, 2, [[tool_use("Bash", {"command": "echo ok", "description": "check"})]]))
    return [world.session.run("read the api twice and run a check")]


def heldout_prompt_removed(world):
    _edit(world.root, lambda h: h.pop("UserPromptSubmit"))
    world.model.extend(_reads(world.root, 1))
    first = world.session.run("read the api")
    world.model.extend([[text("Next, the writer metrics.")]])
    return [first, world.session.run("thanks, what next?", resume=first.session_id)]


def heldout_compact_broken(world):
    _edit(world.root, lambda h: h["PreCompact"][0]["hooks"][0].update(command=_fail("compactboom")))
    world.model.extend([[text("The ledger has a writer, a compactor and an API.")]])
    first = world.session.run("what is in this project?")
    return [first, world.session.run("/compact", resume=first.session_id)]


def heldout_matcher_narrow(world):
    _edit(world.root, lambda h: h["PreToolUse"][0].update(matcher="Read"))
    api = os.path.join(world.root, "src", "api.py")
    world.model.extend([
        [text("Reading."), tool_use("Read", {"file_path": api})],
        [tool_use("Bash", {"command": "echo ok", "description": "check"})],
        [tool_use("Edit", {"file_path": api, "old_string": "HTTP handlers", "new_string": "The HTTP handlers"})],
        [text("Done.")]])
    return [world.session.run("read the api, check it, fix its docstring")]


def heldout_session_start_broken(world):
    _edit(world.root, lambda h: h["SessionStart"][0]["hooks"][0].update(command=_fail("startboom")))
    world.model.extend(_reads(world.root, 1))
    return [world.session.run("read the api")]


# -- the HTTP transport (`memhealth init --transport http`, a real `memhealth serve`) ------------

def scenario_http_killed(world):
    """serve answers the prompt and the first Read, then dies (SIGKILL) before the second:
    Claude Code records each refused event as a hook_non_blocking_error and goes on."""
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(world.root)
    world.cleanup.append(hs.kill)
    api = os.path.join(world.root, "src", "api.py")

    def kill_then_read(_body):
        hs.kill()
        return [tool_use("Read", {"file_path": api})]

    world.model.extend([[text("Reading."), tool_use("Read", {"file_path": api})], kill_then_read,
                        [text("Done.")]])
    return [world.session.run("read the api twice")]


def _http_serve(world):
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(world.root)
    world.cleanup.append(hs.kill)
    return hs


def heldout_http_never_up(world):
    _http_serve(world).kill()  # wired to its port, then gone: nothing listens there
    world.model.extend(_reads(world.root, 2, [[tool_use("Bash", {"command": "echo ok", "description": "check"})]]))
    return [world.session.run("read the api twice and run a check")]


def heldout_http_healthy(world):
    _http_serve(world)
    api = os.path.join(world.root, "src", "api.py")
    world.model.extend([
        [text("Reading."), tool_use("Read", {"file_path": api})],
        [tool_use("Edit", {"file_path": api, "old_string": "HTTP handlers", "new_string": "The HTTP handlers"})],
        [tool_use("Bash", {"command": "echo ok", "description": "check"})],
        [tool_use("Grep", {"pattern": "def", "path": world.root})],
        [text("Done.")]])
    return [world.session.run("read the api, fix its docstring, check, grep")]


def heldout_http_wrong_secret(world):
    hs = _http_serve(world)
    path = os.path.join(world.root, ".claude", "settings.local.json")
    with open(path, encoding="utf-8") as fh:
        text_ = fh.read()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text_.replace(hs.secret, "f" * 64))  # a stale secret: serve answers 401
    world.model.extend(_reads(world.root, 1))
    return [world.session.run("read the api")]


SCENARIOS = {"boom": scenario_boom, "http-killed": scenario_http_killed, "removed": scenario_removed, "mixed": scenario_mixed,
             "healthy": scenario_healthy, "denied": scenario_denied,
             "heldout-parallel": heldout_parallel, "heldout-interpreter-gone": heldout_interpreter_gone,
             "heldout-prompt-removed": heldout_prompt_removed, "heldout-compact-broken": heldout_compact_broken,
             "heldout-matcher-narrow": heldout_matcher_narrow,
             "heldout-session-start-broken": heldout_session_start_broken,
             "heldout-http-never-up": heldout_http_never_up, "heldout-http-healthy": heldout_http_healthy,
             "heldout-http-wrong-secret": heldout_http_wrong_secret}


class World:
    def __init__(self, root, session, model):
        self.root, self.session, self.model = root, session, model
        self.cleanup: list = []  # run after the session (a serve the scenario started)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _scrub(text_: str, root: str, home: str) -> str:
    """Machine paths out: the project, HOME, its transcript directory's slug, this checkout."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", root)
    return (text_.replace(root, "/home/dev/ledger-service").replace(home, "/home/dev")
            .replace(slug, "-home-dev-ledger-service").replace(REPO, "/opt/memhealth"))


def record(name: str, binary: str, base: str) -> None:
    project = SampleProject.create(os.path.join(base, "proj"), capture_dir=None)
    model = ScriptedModel(log_path=os.path.join(base, "api.ndjson")).start()
    home = os.path.join(base, "home")
    runs = []
    try:
        session = Session(binary, project.root, home=home, model=model)
        world = World(project.root, session, model)
        try:
            runs = SCENARIOS[name](world)
        finally:
            for done in world.cleanup:
                done()
        sid = runs[0].session_id
        lines = []
        with open(session.transcript(sid), encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                att = rec.get("attachment")
                if (isinstance(att, dict) and att.get("type") in DROPPED) or rec.get("type") in DROPPED_RECORDS:
                    continue
                lines.append(_scrub(json.dumps(rec, ensure_ascii=False), project.root, home))
    finally:
        model.stop()
    # each SessionEnd hands capture to a detached worker: let it finish before reading and removing
    settled_capture_outcomes(project.db_path, at_least=len(runs), timeout_s=30.0)
    conn = sqlite3.connect(project.db_path)
    keys = ("hook", "session_id", "event_ref", "started_ns", "outcome")
    rows = [dict(zip(keys, r, strict=True)) for r in conn.execute(
        "SELECT hook, session_id, event_ref, started_ns, outcome FROM heartbeats WHERE hook NOT IN ('gate', 'capture') "
        "ORDER BY id")]
    created = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'store.id'").fetchone()[0])["created_ns"]
    conn.close()
    with open(os.path.join(OUT, f"witness-{name}.jsonl"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(OUT, f"witness-{name}.rows.json"), "w", encoding="utf-8") as fh:
        json.dump({"store_created_ns": created, "heartbeats": rows}, fh, indent=1)
        fh.write("\n")


def main(argv: list[str]) -> int:
    binary = install()
    for name in argv or list(SCENARIOS):
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as base:
            record(name, binary, base)
            print(f"recorded witness-{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
