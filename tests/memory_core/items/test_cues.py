"""Cue-anchored delivery: memory files whose frontmatter names paths, symbols and events fire
through the real hooks on first touch, once per session and epoch, audited every time."""

from __future__ import annotations

import json
import os

import pytest

from memory_core.items.frontmatter import parse_frontmatter
from memory_core.items.spec import compile_glob, read_spec
from tests.conftest import payload, rows, run_cli, run_hook

WAL = """---
name: wal-checkpoint-stall
kind: gotcha
paths: [src/storage/**]
symbols: checkpoint_wal, WalWriter.flush
---
Checkpoints stall while a reader holds the WAL; close readers before checkpointing.
"""
PINNED = """---
name: ids-are-monotonic
type: invariant
---
Event ids never go backwards; replay depends on it.
"""


def mem(project, name: str, text: str) -> str:
    directory = project / ".memhealth" / "memory"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.md").write_text(text)
    return f".memhealth/memory/{name}.md"


def ingest(project) -> None:
    proc = run_cli("ingest", "memory", "--project", str(project))
    assert proc.returncode == 0 and "memory" in proc.stdout, proc.stdout + proc.stderr


def tool(project, name: str, tool_input: dict, session: str = "s1", cwd=None) -> str | None:
    run = run_hook("pre-tool", payload("PreToolUse", cwd or project, session_id=session, tool_name=name,
                                       tool_input=tool_input), cwd=str(project))
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    if not run.stdout:
        return None
    body = json.loads(run.stdout)["hookSpecificOutput"]
    assert body["hookEventName"] == "PreToolUse"
    return body["additionalContext"]


def start(project, source: str, session: str = "s1") -> str:
    body = payload("SessionStart", project, session_id=session)
    body["source"] = source  # recorded payloads exist for startup, resume and compact, not clear
    run = run_hook("session-start", body, cwd=str(project))
    assert run.returncode == 0
    return run.context()


def compact(project, session: str = "s1") -> None:
    run = run_hook("pre-compact", payload("PreCompact", project, session_id=session, trigger="auto"),
                   cwd=str(project))
    assert run.returncode == 0 and run.stdout == b""


@pytest.fixture
def wal_project(project):
    mem(project, "wal", WAL)
    (project / "src" / "storage").mkdir(parents=True)
    (project / "src" / "storage" / "wal.py").write_text("def checkpoint_wal():\n    pass\n")
    (project / "src" / "api.py").write_text("x = 1\n")
    ingest(project)
    return project


# -- the frontmatter reader and the compiler ------------------------------------------------

def test_frontmatter_reads_scalars_flow_lists_block_lists_and_trailing_comments():
    lines = ["---", "name: 'a # b'", "kind: gotcha   # gotcha | invariant", "paths: [src/**, \"docs/a, b.md\"]",
             "on:", "  - compact", "  - prompt", "---", "body"]
    fields, errors, body = parse_frontmatter(lines)
    assert errors == []
    assert fields == {"name": "a # b", "kind": "gotcha", "paths": ["src/**", "docs/a, b.md"],
                      "on": ["compact", "prompt"]}
    assert body == 8


@pytest.mark.parametrize("line, key, words", [
    ("paths: [src/**", "paths", "closing ]"),
    ("name: \"unterminated", "name", "unterminated"),
    ("symbols: [a, [b]]", "symbols", "nested"),
    ("pinned: true\npinned: false", "pinned", "duplicate"),
])
def test_a_malformed_key_is_an_error_naming_it_and_only_it_is_dropped(line, key, words):
    fields, errors, _ = parse_frontmatter(["---", "kind: gotcha", *line.split("\n"), "---"])
    assert [e.key for e in errors] == [key] and words in str(errors[0])
    assert fields.get("kind") == "gotcha" and key not in fields


def test_comma_separated_strings_and_yaml_lists_mean_the_same():
    a = read_spec("---\npaths: a/**, b.md\nsymbols: [Foo, bar_baz]\non: compact, prompt\n---\nx\n")
    b = read_spec("---\npaths:\n  - a/**\n  - b.md\nsymbols: Foo, bar_baz\non: [compact, prompt]\n---\nx\n")
    assert (a.paths, a.symbols, a.on) == (b.paths, b.symbols, b.on) == (["a/**", "b.md"], ["Foo", "bar_baz"],
                                                                        ["compact", "prompt"])
    assert a.errors == b.errors == []


@pytest.mark.parametrize("text, key", [
    ("paths: /etc/passwd", "paths"), ("paths: ../other/**", "paths"), ("on: lunch", "on"),
    ("symbols: 'not an ident'", "symbols"), ("expires: 2027-02-30", "expires"), ("ttl_days: -3", "ttl_days"),
    ("pinned: maybe", "pinned"), ("kind: Not A Kind", "kind"),
])
def test_invalid_trigger_values_are_errors_for_their_key(text, key):
    spec = read_spec(f"---\n{text}\nname: x\n---\nbody\n")
    assert [k for k, _ in spec.errors] == [key]
    assert spec.name == "x" and spec.body == "body"


@pytest.mark.parametrize("glob, yes, no", [
    ("src/**/*.py", ["src/a.py", "src/x/y/b.py"], ["src/a.pyc", "lib/src/a.py", "a.py"]),
    ("**/wal.py", ["wal.py", "src/storage/wal.py"], ["src/storage/wal.pyx", "src/wal.py/x"]),
    ("src/storage", ["src/storage", "src/storage/wal.py"], ["src/storage2/x.py", "src/stor"]),
    ("docs/", ["docs/a.md", "docs/x/y.md"], ["docs", "mydocs/a.md"]),
    ("*.md", ["README.md"], ["docs/README.md"]),
    ("a/[bc]?.txt", ["a/b1.txt", "a/cz.txt"], ["a/d1.txt", "a/b/1.txt"]),
])
def test_globs_are_project_relative_and_double_star_spans_directories(glob, yes, no):
    import re

    _key, _prefix, regex = compile_glob(glob)
    assert [p for p in yes if re.match(regex, p)] == yes
    assert [p for p in no if re.match(regex, p)] == []


# -- delivery through the real hooks --------------------------------------------------------

def test_a_path_cue_fires_on_first_touch_with_provenance_and_is_deduplicated(wal_project):
    text = tool(wal_project, "Read", {"file_path": str(wal_project / "src/storage/wal.py")})
    assert "wal-checkpoint-stall" in text and "Checkpoints stall" in text
    assert "(.memhealth/memory/wal.md:7, recorded " in text and "verify before building on it" in text
    assert tool(wal_project, "Edit", {"file_path": str(wal_project / "src/storage/wal.py"),
                                      "old_string": "pass", "new_string": "return"}) is None
    assert rows(wal_project, "SELECT event, trigger, outcome, reason FROM cue_audit ORDER BY id") == [
        ("pre-tool", "path", "fired", None), ("pre-tool", "path", "skipped", "deduped")]
    assert tool(wal_project, "Read", {"file_path": "src/storage/wal.py"}, session="s2") is not None  # a new session


@pytest.mark.parametrize("name, tool_input", [
    ("Read", {"file_path": "{root}/src/storage/wal.py"}),
    ("Edit", {"file_path": "{root}/src/storage/wal.py", "old_string": "a", "new_string": "b"}),
    ("MultiEdit", {"file_path": "{root}/src/storage/wal.py", "edits": [{"old_string": "a", "new_string": "b"}]}),
    ("Write", {"file_path": "{root}/src/storage/new_file.py", "content": "x = 1\n"}),
    ("NotebookEdit", {"notebook_path": "{root}/src/storage/n.ipynb", "new_source": "print(1)"}),
    ("Grep", {"pattern": "fsync", "path": "{root}/src/storage"}),
    ("Grep", {"pattern": "fsync", "path": "src", "glob": "storage/*.py"}),
    ("Grep", {"pattern": "checkpoint_wal\\(", "output_mode": "content"}),
    ("Glob", {"pattern": "src/storage/**/*.py"}),
    ("Glob", {"pattern": "*.py", "path": "{root}/src/storage"}),
    ("Bash", {"command": "sed -n 1,40p src/storage/wal.py | head"}),
    ("Bash", {"command": "pytest -q tests/test_x.py -k WalWriter.flush"}),
    ("Bash", {"command": "ls src/storage/"}),
])
def test_every_tool_input_shape_fires_the_cue(wal_project, name, tool_input):
    filled = json.loads(json.dumps(tool_input).replace("{root}", str(wal_project)))
    text = tool(wal_project, name, filled)
    assert text is not None and "wal-checkpoint-stall" in text, (name, tool_input)


@pytest.mark.parametrize("name, tool_input", [
    ("Read", {"file_path": "{root}/src/api.py"}),
    ("Grep", {"pattern": "checkpoint", "path": "{root}/src"}),  # a wider directory is not a touch
    ("Glob", {"pattern": "**/*.md"}),
    ("Bash", {"command": "grep -rn checkpoint_walrus src/api.py"}),  # word boundaries
    ("Bash", {"command": "cat /etc/hostname"}),
    ("TodoWrite", {"todos": [{"content": "look at src/storage/wal.py", "status": "pending"}]}),
])
def test_near_misses_do_not_fire_and_leave_a_no_match_row(wal_project, name, tool_input):
    filled = json.loads(json.dumps(tool_input).replace("{root}", str(wal_project)))
    assert tool(wal_project, name, filled) is None
    assert rows(wal_project, "SELECT outcome, reason FROM cue_audit") == [("skipped", "no_match")]


def test_relative_paths_resolve_against_the_payload_cwd(wal_project):
    assert tool(wal_project, "Read", {"file_path": "storage/wal.py"}, cwd=wal_project / "src") is not None
    assert tool(wal_project, "Read", {"file_path": "storage/wal.py"}, session="s2") is None  # from the root: no such path


def test_paths_outside_the_project_never_match(wal_project, tmp_path):
    outside = tmp_path / "elsewhere" / "src" / "storage"
    outside.mkdir(parents=True)
    (outside / "wal.py").write_text("x\n")
    assert tool(wal_project, "Read", {"file_path": str(outside / "wal.py")}) is None
    assert tool(wal_project, "Read", {"file_path": "../elsewhere/src/storage/wal.py"}) is None
    # a symlink inside the project that points outside it is outside
    os.symlink(outside / "wal.py", wal_project / "src" / "storage" / "escape.py")
    assert tool(wal_project, "Read", {"file_path": str(wal_project / "src/storage/escape.py")}) is None
    assert rows(wal_project, "SELECT count(*) FROM cue_audit WHERE outcome = 'fired'") == [(0,)]


def test_symlinks_resolve_to_the_file_they_name(wal_project):
    os.symlink(wal_project / "src" / "storage", wal_project / "current")
    text = tool(wal_project, "Read", {"file_path": str(wal_project / "current" / "wal.py")})
    assert text is not None and "src/storage/** ~ src/storage/wal.py" in rows(
        wal_project, "SELECT detail FROM cue_audit WHERE outcome = 'fired'")[0][0]


def test_precompact_rearms_so_the_first_touch_after_a_compaction_delivers_again(wal_project):
    wal = {"file_path": str(wal_project / "src/storage/wal.py")}
    assert tool(wal_project, "Read", wal) is not None
    assert tool(wal_project, "Read", wal) is None
    compact(wal_project)
    assert tool(wal_project, "Read", wal) is not None
    assert tool(wal_project, "Read", wal) is None
    assert rows(wal_project, "SELECT epoch, outcome, coalesce(reason, '') FROM cue_audit ORDER BY id") == [
        (0, "fired", ""), (0, "skipped", "deduped"), (1, "fired", ""), (1, "skipped", "deduped")]


def test_pinned_items_come_back_at_every_session_start_and_after_every_compaction(project):
    for i in range(3):
        mem(project, f"fact{i}", f"---\nname: fact-{i}\npinned: true\n---\nFact number {i} holds.\n")
    mem(project, "inv", PINNED)
    ingest(project)
    for source in ("startup", "compact", "compact", "resume", "clear"):
        if source == "compact":
            compact(project)
        text = start(project, source)
        assert all(f"fact-{i}" in text for i in range(3)) and "ids-are-monotonic" in text, source
        assert "MEMORY-HEALTH" in text.splitlines()[0]  # the verdict stays first
        if source == "compact":
            assert "re-delivered after compaction: all 4 pinned items" in text
    fired = rows(project, "SELECT detail, count(*) FROM cue_audit WHERE trigger = 'pinned' AND outcome = 'fired' "
                          "GROUP BY detail ORDER BY detail")
    assert fired == [("pinned at clear", 4), ("pinned at compact", 8), ("pinned at resume", 4), ("pinned at startup", 4)]


def test_pinned_overflow_is_named_never_silently_dropped(project):
    for i in range(12):
        mem(project, f"big{i:02d}", f"---\nname: big-{i:02d}\npinned: true\n---\n" + ("word " * 130) + "\n")
    ingest(project)
    text = start(project, "startup")
    delivered = sum(f"big-{i:02d}" in text for i in range(12))
    assert 0 < delivered < 12
    assert f"{12 - delivered} more pinned items: `memhealth cues`" in text
    assert len(text) < 10_000
    assert rows(project, "SELECT outcome, coalesce(reason, ''), count(*) FROM cue_audit WHERE trigger = 'pinned' "
                         "GROUP BY 1, 2 ORDER BY 1") == [("fired", "", delivered), ("skipped", "over_budget", 12 - delivered)]


def test_an_expired_item_is_audited_as_expired_and_not_delivered(project):
    mem(project, "old", "---\nname: old-news\npaths: src/**\nexpires: 2020-01-01\n---\nNo longer true.\n")
    mem(project, "ttl", "---\nname: short-lived\npinned: true\nrecorded: 2020-01-01\nttl_days: 30\n---\nGone.\n")
    (project / "src").mkdir()
    ingest(project)
    assert tool(project, "Read", {"file_path": str(project / "src/a.py")}) is None
    assert "short-lived" not in start(project, "startup")
    assert sorted(rows(project, "SELECT trigger, reason FROM cue_audit WHERE outcome = 'skipped'")) == [
        ("path", "expired"), ("pinned", "expired")]
    listing = run_cli("cues", "--json", "--project", str(project))
    states = {item["name"]: {c["state"] for c in item["cues"]} for item in json.loads(listing.stdout)["cues"]}
    assert states == {"old-news": {"expired"}, "short-lived": {"expired"}}


def test_ablation_evaluates_and_audits_but_emits_nothing(wal_project):
    config = wal_project / ".memhealth" / "config.toml"
    config.write_text(config.read_text().replace('# mode = "on"', 'mode = "off"', 1))
    assert 'mode = "off"' in config.read_text()
    mem(wal_project, "inv", PINNED)
    ingest(wal_project)
    assert tool(wal_project, "Read", {"file_path": str(wal_project / "src/storage/wal.py")}) is None
    assert "ids-are-monotonic" not in start(wal_project, "startup")
    assert sorted(rows(wal_project, "SELECT trigger, outcome, reason FROM cue_audit")) == [
        ("path", "skipped", "ablation"), ("pinned", "skipped", "ablation")]


def test_a_malformed_frontmatter_is_an_ingest_error_naming_file_and_key_and_other_cues_work(wal_project):
    mem(wal_project, "broken", "---\nname: broken\npaths: [src/**\nsymbols: fine_symbol\n---\nStill here.\n")
    proc = run_cli("ingest", "memory", "--project", str(wal_project))
    assert proc.returncode == 1
    errors = rows(wal_project, "SELECT path, reason, detail FROM ingest_log WHERE outcome = 'error'")
    assert len(errors) == 1 and errors[0][:2] == (".memhealth/memory/broken.md", "frontmatter")
    assert "'paths'" in errors[0][2] and "broken.md" in errors[0][2]
    assert "wal-checkpoint-stall" in tool(wal_project, "Read", {"file_path": "src/storage/wal.py"})
    assert "broken" in tool(wal_project, "Bash", {"command": "grep -rn fine_symbol ."})  # its valid key still works


def test_symbols_in_a_read_result_fire_after_the_read_and_rereads_after_compaction_are_counted(wal_project):
    mem(wal_project, "sym", "---\nname: flush-order\nsymbols: flush_order\n---\nflush_order must run before fsync.\n")
    ingest(wal_project)
    api = str(wal_project / "src" / "api.py")

    def post(content: str):
        run = run_hook("post-tool", payload("PostToolUse", wal_project, session_id="s1", tool_name="Read",
                                            tool_input={"file_path": api},
                                            tool_response={"type": "text", "file": {
                                                "filePath": api, "content": content, "numLines": 1,
                                                "startLine": 1, "totalLines": 1}}), cwd=str(wal_project))
        assert run.returncode == 0 and run.stderr == b""
        return run.context() if run.stdout else None

    assert "flush-order" in post("def x():\n    flush_order()\n")
    assert post("def x():\n    flush_order()\n") is None  # not the first read of the file
    compact(wal_project)
    assert "flush-order" in post("def x():\n    flush_order()\n")
    assert rows(wal_project, "SELECT path, epoch, reread, same_content FROM file_reads ORDER BY epoch") == [
        ("src/api.py", 0, 0, 0), ("src/api.py", 1, 1, 1)]
    report = run_cli("report", "--project", str(wal_project))
    assert "compaction cost: 1 file(s) read again after a compaction boundary, 27 bytes re-read" in report.stdout


def test_prompt_cues_append_to_the_cascade_and_on_prompt_fires_once_per_epoch(wal_project):
    mem(wal_project, "every", "---\nname: say-hello\non: prompt\n---\nThe user prefers terse answers.\n")
    ingest(wal_project)

    def prompt(text: str):
        run = run_hook("prompt", payload("UserPromptSubmit", wal_project, session_id="s1", prompt=text),
                       cwd=str(wal_project))
        assert run.returncode == 0
        return run.context() if run.stdout else None

    first = prompt("why does checkpoint_wal hang?")
    assert "wal-checkpoint-stall" in first and "say-hello" in first
    assert prompt("and now?") is None
    assert rows(wal_project, "SELECT count(*) FROM decisions") == [(2,)]  # the cascade still decided both


def test_remember_cues_audit_and_forget_through_the_cli(project):
    (project / "lib").mkdir()
    (project / "lib" / "queue.ex").write_text("defmodule Queue do end\n")
    proc = run_cli("remember", "Never drain the queue inside a transaction", "--path", "lib/*.ex",
                   "--symbol", "Queue.drain", "--on", "compact", "--json", "--project", str(project))
    assert proc.returncode == 0, proc.stderr
    item = json.loads(proc.stdout)
    assert item["kind"] == "gotcha" and item["path"].startswith(".memhealth/memory/")
    assert [c["trigger"] for c in item["cues"]] == ["path", "symbol", "event"]
    text = tool(project, "Read", {"file_path": "lib/queue.ex"})
    assert "Never drain the queue" in text
    listing = run_cli("cues", "--project", str(project)).stdout
    assert f"#{item['id']}" in listing and "lib/*.ex" in listing and "active" in listing
    audit = json.loads(run_cli("cues", "audit", "--session", "s1", "--json", "--project", str(project)).stdout)["audit"]
    assert [(a["event"], a["outcome"], a["item_id"]) for a in audit] == [("pre-tool", "fired", item["id"])]
    (project / "lib" / "queue.ex").unlink()
    assert "stale: no file matches its paths any more" in run_cli("cues", "--project", str(project)).stdout
    assert run_cli("forget", str(item["id"]), "--project", str(project)).returncode == 0
    assert not (project / item["path"]).exists()
    assert rows(project, "SELECT count(*) FROM cues") == [(0,)]
    assert run_cli("forget", str(item["id"]), "--project", str(project)).returncode == 1


@pytest.mark.parametrize("args", [["--path", "/abs/path"], ["--on", "lunch"], ["--expires", "tomorrow"],
                                  ["--symbol", "not ident"]])
def test_remember_refuses_a_value_that_would_not_compile_with_exit_2(project, args):
    proc = run_cli("remember", "text", *args, "--project", str(project))
    assert proc.returncode == 2 and "not recorded" in proc.stderr
    assert not (project / ".memhealth" / "memory").exists() or not list((project / ".memhealth" / "memory").iterdir())


def test_semantic_and_stop_cues_are_listed_as_inactive_with_the_reason(project):
    mem(project, "sem", "---\nname: sem\nsemantic: how do retries interact with idempotency keys\non: stop\n---\nx\n")
    ingest(project)
    items = json.loads(run_cli("cues", "--json", "--project", str(project)).stdout)["cues"]
    states = {c["trigger"]: c["state"] for c in items[0]["cues"]}
    assert states["semantic"].startswith("inactive: no embedding server configured")
    assert states["event"].startswith("inactive: a Stop hook has no context channel")


# -- the gate -------------------------------------------------------------------------------

def test_the_gate_is_red_when_a_compaction_delivered_fewer_pinned_items_than_exist(project):
    for i in range(12):
        mem(project, f"big{i:02d}", f"---\nname: big-{i:02d}\npinned: true\n---\n" + ("word " * 130) + "\n")
    ingest(project)
    compact(project)
    start(project, "compact")
    proc = run_cli("gate", "--json", "--project", str(project))
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "cue_delivery")
    assert check["status"] == "red" and "pinned items" in check["detail"] and "over_budget" in check["detail"]
    assert proc.returncode == 1


def test_the_gate_is_red_when_tool_hooks_fire_but_cues_are_not_evaluated(wal_project):
    from memory_core.store.db import connect, write

    for _ in range(2):
        tool(wal_project, "Read", {"file_path": "src/api.py"})
    good = json.loads(run_cli("gate", "--json", "--project", str(wal_project)).stdout)
    assert next(c for c in good["checks"] if c["name"] == "cue_delivery")["status"] == "green"
    for _ in range(4):
        tool(wal_project, "Read", {"file_path": "src/api.py"})
    conn = connect(str(wal_project / ".memhealth" / "memory.db"))
    with write(conn):  # what a broken evaluation leaves: heartbeats ok, no audit rows
        conn.execute("DELETE FROM cue_audit WHERE id > 2")
    conn.close()
    bad = json.loads(run_cli("gate", "--json", "--project", str(wal_project)).stdout)
    check = next(c for c in bad["checks"] if c["name"] == "cue_delivery")
    assert check["status"] == "red" and "cues stopped being evaluated: 4 of 6 tool calls" in check["detail"]


def test_cue_metrics_are_served_from_rollups(wal_project):
    from prometheus_client import CollectorRegistry

    from telemetry.collector import StoreCollector

    tool(wal_project, "Read", {"file_path": "src/storage/wal.py"})
    tool(wal_project, "Read", {"file_path": "src/api.py"})
    registry = CollectorRegistry()
    registry.register(StoreCollector(str(wal_project / ".memhealth" / "memory.db")))
    get = registry.get_sample_value
    assert get("memhealth_cue_evaluations_total", {"trigger": "path", "outcome": "fired"}) == 1.0
    assert get("memhealth_cue_evaluations_total", {"trigger": "path", "outcome": "no_match"}) == 1.0
    assert get("memhealth_cue_deliveries_total", {"trigger": "path"}) == 1.0
    assert get("memhealth_cue_deliveries_total", {"trigger": "symbol"}) == 0.0
    spans = rows(wal_project, "SELECT attributes FROM spans WHERE name = 'cue.evaluate'")
    attrs = [json.loads(a) for (a,) in spans]
    assert [(a["memhealth.cue.trigger"], a["memhealth.cue.outcome"]) for a in attrs] == [
        ("path", "fired"), ("path", "no_match")]


def test_retention_keeps_the_audit_table_bounded(wal_project):
    from memory_core.delivery import cues
    from memory_core.store.db import connect, write

    conn = connect(str(wal_project / ".memhealth" / "memory.db"))
    with write(conn):
        conn.executemany("INSERT INTO cue_audit(ts_ns, event, trigger, outcome, reason) "
                         "VALUES (1, 'pre-tool', 'path', 'skipped', 'no_match')",
                         [()] * (cues.AUDIT_KEEP_ROWS + 500))
        conn.execute("INSERT INTO file_reads(session_id, path, epoch, bytes, ts_ns) VALUES ('old', 'a', 0, 1, 1)")
    conn.close()
    start(wal_project, "startup")
    (kept,) = rows(wal_project, "SELECT count(*) FROM cue_audit")[0]
    assert cues.AUDIT_KEEP_ROWS <= kept <= cues.AUDIT_KEEP_ROWS + 1
    assert rows(wal_project, "SELECT count(*) FROM cue_audit WHERE trigger = 'pinned'") == [(1,)]  # the newest stays
    assert rows(wal_project, "SELECT count(*) FROM file_reads WHERE session_id = 'old'") == [(0,)]


def test_a_semantic_cue_fires_on_a_prompt_close_to_its_query_with_an_embedding_server(project):
    from tests.conftest import clean_env
    from tests.support.ollama_standin import OllamaStandin

    query = "how do retries interact with idempotency keys"
    mem(project, "sem", f"---\nname: retry-keys\nsemantic: {query}\n---\nRetries reuse the key; never mint a new one.\n")
    with OllamaStandin(mode="healthy", dim=64) as server:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=server.url, MEMHEALTH_EMBEDDING_DIM="64")
        assert run_cli("ingest", "memory", "--project", str(project), env=env).returncode == 0
        listed = json.loads(run_cli("cues", "--json", "--project", str(project), env=env).stdout)["cues"]
        assert listed[0]["cues"][0]["state"] == "active"

        def prompt(text: str, session: str):
            run = run_hook("prompt", payload("UserPromptSubmit", project, session_id=session, prompt=text),
                           cwd=str(project), env=env)
            assert run.returncode == 0 and run.stderr == b"", run.stderr
            return run.context() if run.stdout else ""

        assert "retry-keys" in prompt(query, "s1")
        assert "retry-keys" not in prompt("thanks, the layout looks right", "s2")
    audit = rows(project, "SELECT session_id, outcome, coalesce(reason, ''), detail FROM cue_audit "
                          "WHERE trigger = 'semantic' ORDER BY id")
    assert [(a[0], a[1], a[2]) for a in audit] == [("s1", "fired", ""), ("s2", "skipped", "no_match")]
    assert audit[0][3].endswith("cos 1.00")
    # the server gone: listed and audited as inactive, with the reason
    listed = json.loads(run_cli("cues", "--json", "--project", str(project)).stdout)["cues"]
    assert listed[0]["cues"][0]["state"].startswith("inactive: no embedding server configured")


def test_parallel_first_touches_of_one_cue_deliver_it_once(wal_project):
    import subprocess

    from tests.conftest import clean_env, memhealth_cmd

    body = json.dumps(payload("PreToolUse", wal_project, session_id="s1", tool_name="Read",
                              tool_input={"file_path": str(wal_project / "src/storage/wal.py")})).encode()
    procs = [subprocess.Popen(memhealth_cmd() + ["hook", "pre-tool"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(wal_project), env=clean_env()) for _ in range(6)]
    outs = [p.communicate(body, timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs) and all(err == b"" for _, err in outs)
    assert sum(b"wal-checkpoint-stall" in out for out, _ in outs) == 1
    assert rows(wal_project, "SELECT outcome, coalesce(reason, ''), count(*) FROM cue_audit GROUP BY 1, 2 ORDER BY 1") == [
        ("fired", "", 1), ("skipped", "deduped", 5)]


def test_claude_memory_files_carry_cues_too_and_a_broken_one_is_listed_with_its_error(wal_project):
    claude = wal_project / ".claude" / "memory"
    claude.mkdir(parents=True)
    (claude / "api.md").write_text("---\nname: api-shape\ntype: feedback\npaths: src/api.py\n---\nKeep handlers thin.\n")
    (claude / "bad.md").write_text("---\nname: bad-one\nsymbols: [a, b\n---\nx\n")
    assert run_cli("ingest", "memory", "--project", str(wal_project)).returncode == 1  # the bad key
    assert "api-shape" in tool(wal_project, "Read", {"file_path": "src/api.py"})
    listing = run_cli("cues", "--project", str(wal_project)).stdout
    assert "bad-one" in listing and "error    line 3: key 'symbols': a [list] without its closing ]" in listing


def test_keys_memhealth_does_not_read_are_not_errors_however_they_are_shaped():
    spec = read_spec("---\nname: x\nmetadata:\n  owner: team-a\n  tags: [a, b]\nfree text line\n"
                     "paths [src/**]\n---\nbody\n")
    assert [k for k, _ in spec.errors] == ["paths [src/**]"]  # a known key, missing its colon
    assert spec.name == "x" and spec.body == "body"


def test_one_compaction_is_one_epoch_and_a_start_without_precompact_still_rearms(wal_project):
    wal = {"file_path": "src/storage/wal.py"}
    assert tool(wal_project, "Read", wal) is not None
    compact(wal_project)
    start(wal_project, "compact")               # the PreCompact's epoch, not another one
    assert tool(wal_project, "Read", wal) is not None
    start(wal_project, "compact")               # no PreCompact before it: it re-arms itself
    assert tool(wal_project, "Read", wal) is not None
    start(wal_project, "resume")                # a resume is not a boundary
    assert tool(wal_project, "Read", wal) is None
    start(wal_project, "clear")
    assert tool(wal_project, "Read", wal) is not None
    assert rows(wal_project, "SELECT epoch, outcome, coalesce(reason, '') FROM cue_audit WHERE event = 'pre-tool' "
                             "ORDER BY id") == [(0, "fired", ""), (1, "fired", ""), (2, "fired", ""),
                                                (2, "skipped", "deduped"), (3, "fired", "")]


def _transcript_lines(session: str = "t1") -> list[bytes]:
    def rec(kind: str, content, **extra) -> bytes:
        return json.dumps({"type": kind, "sessionId": session, "isSidechain": False,
                           "message": {"role": kind, "content": content}, **extra}).encode()

    def read(i: int, path: str) -> bytes:
        return rec("assistant", [{"type": "tool_use", "id": f"r{i}", "name": "Read", "input": {"file_path": path}}])

    def result(i: int, text: str) -> bytes:
        return rec("user", [{"type": "tool_result", "tool_use_id": f"r{i}", "content": text}])

    return [read(1, "/p/a.py"), result(1, "alpha" * 20), read(2, "/p/b.py"), result(2, "beta"),
            json.dumps({"type": "system", "subtype": "compact_boundary", "sessionId": session}).encode(),
            rec("user", "This session is being continued from a previous conversation", isCompactSummary=True),
            read(3, "/p/a.py"), result(3, "alpha" * 20),   # re-read, unchanged: 100 bytes
            read(4, "/p/a.py"), result(4, "alpha" * 20),   # the same epoch again: not another re-read
            read(5, "/p/b.py"), result(5, "beta, edited"),  # re-read, changed: 12 bytes
            read(6, "/p/c.py"), result(6, "gamma")]         # first read: free


def test_transcripts_count_what_compaction_cost_across_ingest_runs():
    from memory_core.ingest.transcripts import parse_transcript_lines

    lines = _transcript_lines()
    state: dict = {}
    parse_transcript_lines(lines[:7], 1, "t.jsonl", state)   # split mid-way: state carries over
    parse_transcript_lines(lines[7:], 8, "t.jsonl", state)
    assert state["epoch"] == 1  # the boundary record and its summary are one compaction
    assert state["rereads"] == {"files": 2, "bytes": 112, "same": 1}


def test_report_shows_compaction_cost_from_ingested_transcripts(project, tmp_path):
    from tests.support.gate_fix_helpers import set_config

    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "t1.jsonl").write_bytes(b"\n".join(_transcript_lines()) + b"\n")
    set_config(project, "ingest", "transcripts", [str(folder)])
    assert run_cli("ingest", "transcripts", "--project", str(project)).returncode == 0
    report = run_cli("report", "--project", str(project)).stdout
    assert ("from ingested transcripts: 2 file(s) re-read after a compaction, 112 bytes (1 unchanged) "
            "in 1 transcript(s)") in report
