"""A labeled evaluation set for cue-anchored delivery: every tool call in the real transcripts
of tests/fixtures/transcripts/ plus synthetic sessions, each labeled with the memory items
that must fire on it (most: none).

    events = all_events()                       # >= 200, >= 20 that must fire
    build_project(root)                         # memory files with the cues below
    fired = replay(root, events)                # real hook subprocesses, in order
    s = score(events, fired)                    # tp, fp, fn, precision, recall, misses

Labels are written by hand from the cue definitions and what each call touches: a cue fires
on the first touch of its file (or of the directory holding it), a symbol on its first
mention on word boundaries, once per session until a compaction re-arms it. Real
transcripts keep their calls; each transcript's cwd is mapped onto the test project.
Decoys (near-miss paths and symbols, and files outside the project) must never fire.
"""

from __future__ import annotations

import glob
import json
import os
import re

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
TRANSCRIPTS = os.path.join(HERE, "fixtures", "transcripts")

MEMORY = {
    # real-transcript cues: (frontmatter lines, body)
    "tmux-gotcha": ("paths: lib/spotter/services/tmux.ex", "tmux send-keys drops input while a pane is in copy mode."),
    "test-support": ("paths: test/support/**", "DataCase checks out a sandboxed repo per test; never share it."),
    "package-json": ("paths: todo-app/package.json", "Pin next to the version the lockfile has."),
    "page-tsx": ("paths: todo-app/src/app/page.tsx", "The page is a server component; no hooks here."),
    "claude-md": ("paths: CLAUDE.md", "Keep CLAUDE.md under 200 lines."),
    "root-python": ("paths: '*.py'", "Scripts at the root run under python3.11 only."),
    "number-generator": ("paths: number_generator.py", "Seed the generator for reproducible output."),
    "session-live": ("paths: lib/spotter_web/live/*.ex", "LiveViews must not block in mount/3."),
    "conn-case": ("symbols: ConnCase", "ConnCase is generated; edit the template instead."),
    "liveview-test": ("symbols: Phoenix.LiveViewTest", "LiveViewTest needs the endpoint started."),
    "mix-exs": ("paths: mix.exs", "Bump the version in mix.exs and the changelog together."),
    "assets-js": ("paths: assets/js/app.js", "app.js is bundled by esbuild; no require()."),
    "deploy-command": ("paths: .claude/commands/deploy.md", "The deploy command needs the staging token."),
    # synthetic cues
    "ledger-lock": ("paths: svc/ledger/**\nsymbols: LedgerLock", "Take LedgerLock before touching balances."),
    "retry-budget": ("symbols: [retry_budget]", "retry_budget is per request, not per attempt."),
    "migrations": ("paths: db/migrations/*.sql", "Migrations are append-only; never edit a shipped one."),
    "schema-doc": ("paths: docs/schema.md", "schema.md is generated from the migrations."),
    "notebooks": ("paths: notebooks/*.ipynb", "Notebooks read a snapshot, never the live database."),
    "proto": ("paths: '**/*.proto'", "Field numbers are forever; reserve removed ones."),
    "qualified": ("symbols: Store::flush_all", "Store::flush_all blocks writers for its whole run."),
    # decoys: near misses that must never fire
    "decoy-tmux-test": ("paths: lib/spotter/services/tmux_test.ex", "decoy"),
    "decoy-fixtures": ("paths: test/fixtures/**", "decoy"),
    "decoy-web": ("paths: src/web/**", "decoy"),
    "decoy-rust": ("paths: '**/*.rs'", "decoy"),
    "decoy-claude-local": ("paths: CLAUDE.local.md", "decoy"),
    "decoy-output": ("paths: '**/*.output'", "decoy"),
    "decoy-symbols": ("symbols: TmuxSession, render_submit_all, ExUnit.CaseTemplate, process_items, "
                      "data_border_color, HelloWorld", "decoy"),
    "decoy-ledger-archive": ("paths: svc/ledger_archived/y.py, db/migrations_bak/*.sql, docs/schema.md.orig",
                             "decoy"),
}

# (transcript file, tool_use id) -> items that must fire on that call; every other real call: none
REAL_LABELS = {
    ("ccl_edge_cases.jsonl", "tool_edge_002"): {"root-python"},
    ("ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "toolu_017Uj8NydfpTP1sKZ8hxWeko"): {"package-json"},
    ("ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "toolu_01Fqq8ovHgopDjoLkxB1JAsT"): {"page-tsx"},
    ("ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "toolu_019ctBEHhLKehUi4xPDkYwvc"): {"claude-md"},
    ("ccviewer_5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", "@12"): {"deploy-command"},
    ("fasthooks_sample_main_transcript.jsonl", "toolu_01HaquTrAhq2raBg86UfK1s6"): {"root-python"},
    ("fasthooks_sample_main_transcript.jsonl", "toolu_012i3pCHWhJwsWiidPZbhRh6"): {"number-generator"},
    ("spotter_agent-a7be2f0.jsonl", "toolu_013zUH5CLXBdHVFNNQhvjWMi"): {"tmux-gotcha"},
    ("spotter_agent-a7be2f0.jsonl", "toolu_011D3Lwfw7enu1qCySHgjdmZ"): {"test-support"},
    ("spotter_agent-a7be2f0.jsonl", "toolu_014gGZMjTkuTyJAkJiF4rJvk"): {"conn-case"},
    ("spotter_agent-a7be2f0.jsonl", "toolu_018dRXgBY3mdEH7hzgHmUgbZ"): {"liveview-test"},
    ("spotter_agent-a7be2f0.jsonl", "@58"): {"session-live"},
    ("spotter_short.jsonl", "toolu_01FdQ8qTyVyZjE3Kw4dguQGx"): {"mix-exs"},
    ("spotter_tool_heavy.jsonl", "toolu_01JJds55jYrYwd9TktNGndRY"): {"assets-js"},
}


def build_project(root: str) -> None:
    """Write the memory files (the caller ingests them)."""
    directory = os.path.join(root, ".memhealth", "memory")
    os.makedirs(directory, exist_ok=True)
    for name, (front, body) in MEMORY.items():
        with open(os.path.join(directory, f"{name}.md"), "w", encoding="utf-8") as fh:
            fh.write(f"---\nname: {name}\nkind: gotcha\n{front}\n---\n{body}\n")


def _remap(value, cwd: str, root: str):
    if isinstance(value, str):
        return value.replace(cwd, root) if cwd.startswith("/") else value
    if isinstance(value, list):
        return [_remap(v, cwd, root) for v in value]
    if isinstance(value, dict):
        return {k: _remap(v, cwd, root) for k, v in value.items()}
    return value


def real_events() -> list[dict]:
    """Every tool_use in the transcript fixtures, in file order, with its label (found by
    tool_use id, or by `@n`, the call's position across all files in name order)."""
    events: list[dict] = []
    n = 0
    for path in sorted(glob.glob(os.path.join(TRANSCRIPTS, "*.jsonl"))):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                message = record.get("message") if isinstance(record, dict) else None
                content = message.get("content") if isinstance(message, dict) else None
                if not isinstance(content, list):
                    continue
                for part in content:
                    if not (isinstance(part, dict) and part.get("type") == "tool_use"):
                        continue
                    expect = REAL_LABELS.get((name, part.get("id")), REAL_LABELS.get((name, f"@{n}"), set()))
                    events.append({"source": "real", "label": f"{name}#{n} {part.get('name')}",
                                   "session": f"real-{record.get('sessionId') or name}",
                                   "cwd": record.get("cwd") or "", "tool": part.get("name") or "",
                                   "input": part.get("input") if isinstance(part.get("input"), dict) else {},
                                   "expect": set(expect)})
                    n += 1
    return events


def _syn(session: str, tool: str, tool_input: dict, expect=(), cwd: str = "") -> dict:
    return {"source": "synthetic", "label": f"{session} {tool} {json.dumps(tool_input)[:60]}",
            "session": session, "cwd": cwd, "tool": tool, "input": tool_input, "expect": set(expect)}


def _compact(session: str) -> dict:
    return {"source": "synthetic", "label": f"{session} PreCompact", "session": session, "compact": True,
            "expect": set()}


def synthetic_events() -> list[dict]:
    out: list[dict] = []
    for k in range(1, 5):  # four sessions of the same work: first touches, repeats, a compaction, again
        s = f"syn-{k}"
        out += [
            _syn(s, "Read", {"file_path": "{root}/svc/ledger/book.py"}, {"ledger-lock"}),
            _syn(s, "Edit", {"file_path": "{root}/svc/ledger/book.py", "old_string": "a", "new_string": "b"}),
            _syn(s, "Grep", {"pattern": "retry_budget", "path": "{root}/svc"}, {"retry-budget"}),
            _syn(s, "Bash", {"command": "cat db/migrations/001_init.sql | head -50"}, {"migrations"}),
            _syn(s, "Bash", {"command": "grep -n retry_budget svc/http.py"}),
            _syn(s, "NotebookEdit", {"notebook_path": "{root}/notebooks/explore.ipynb", "new_source": "df.head()"},
                 {"notebooks"}),
            _syn(s, "Glob", {"pattern": "**/*.proto"}),
            _syn(s, "Read", {"file_path": "{root}/api/v1/service.proto"}, {"proto"}),
            _syn(s, "Bash", {"command": "rg -n 'Store::flush_all' src"}, {"qualified"}),
            _syn(s, "Read", {"file_path": "{root}/docs/schema.md"}, {"schema-doc"}),
            _compact(s),
            _syn(s, "Read", {"file_path": "{root}/svc/ledger/entry.py"}, {"ledger-lock"}),
            _syn(s, "Write", {"file_path": "{root}/db/migrations/009_add_index.sql", "content": "CREATE INDEX"},
                 {"migrations"}),
            _syn(s, "Bash", {"command": "pytest -q svc/tests/memory_core/index/test_http.py -k retry_budget"}, {"retry-budget"}),
            _syn(s, "Read", {"file_path": "{root}/svc/ledger/entry.py"}),
        ]
    s = "syn-relative"
    out += [
        _syn(s, "Read", {"file_path": "ledger/book.py"}, {"ledger-lock"}, cwd="svc"),
        _syn(s, "Read", {"file_path": "../db/migrations/002_users.sql"}, {"migrations"}, cwd="svc"),
        _syn(s, "Read", {"file_path": "/etc/hostname"}, cwd="svc"),
        _syn(s, "Read", {"file_path": "../../elsewhere/svc/ledger/x.py"}, cwd="svc"),
        _syn(s, "Bash", {"command": "python -m pytest ../api/v1/service.proto::x"}, {"proto"}, cwd="svc"),
        _syn(s, "Bash", {"command": "LedgerLock=1 ./run.sh"}),  # already delivered by its path
    ]
    s = "syn-symbols"
    out += [
        _syn(s, "Edit", {"file_path": "{root}/svc/http.py", "old_string": "budget = retry_budget(req)",
                         "new_string": "budget = retry_budget(req, cap)"}, {"retry-budget"}),
        _syn(s, "MultiEdit", {"file_path": "{root}/svc/locks.py", "edits": [
            {"old_string": "with LedgerLock():", "new_string": "with LedgerLock(timeout=5):"}]}, {"ledger-lock"}),
        _syn(s, "Grep", {"pattern": "Store::flush_all\\(", "glob": "*.rs"}, {"qualified"}),
    ]
    # near misses, each in its own session so dedup cannot hide a false alarm
    near = [
        ("Read", {"file_path": "{root}/svc/ledger_archive/x.py"}),
        ("Read", {"file_path": "{root}/svc/ledgers/book.py"}),
        ("Read", {"file_path": "{root}/db/migrations_old/001.sql"}),
        ("Read", {"file_path": "{root}/db/migrations/README.md"}),
        ("Read", {"file_path": "{root}/db/migrations/nested/001.sql"}),
        ("Read", {"file_path": "{root}/docs/schema.md.bak"}),
        ("Read", {"file_path": "{root}/docs/other/schema.md"}),
        ("Read", {"file_path": "{root}/notebooks/deep/x.ipynb"}),
        ("Read", {"file_path": "{root}/api/v1/service.protobuf"}),
        ("Grep", {"pattern": "retry_budgets", "path": "{root}/svc"}),
        ("Grep", {"pattern": "LedgerLockFactory", "path": "{root}/lib"}),
        ("Grep", {"pattern": "retry_budget_ms"}),
        ("Bash", {"command": "ls svc"}),
        ("Bash", {"command": "git log --oneline -- svc/ledger_arch"}),
        ("Bash", {"command": "echo flush_all done"}),
        ("Bash", {"command": "curl -s https://example.com/svc/ledger/book.py"}),
        ("Glob", {"pattern": "svc/**/*.py", "path": "{root}"}),
        ("Glob", {"pattern": "*.md"}),
        ("WebFetch", {"url": "https://example.com/docs/schema.md", "prompt": "read it"}),
        ("TodoWrite", {"todos": [{"content": "fix retry_budget in svc/ledger/book.py", "status": "pending"}]}),
    ]
    for round_ in range(6):
        for i, (tool, tool_input) in enumerate(near):
            out.append(_syn(f"syn-near-{round_}-{i}", tool, tool_input))
    return out


def all_events() -> list[dict]:
    return real_events() + synthetic_events()


_FIRED = re.compile(r"^- \[[^\]]+\] (\S+) \(", re.M)


def fired_names(context: str | None) -> set[str]:
    return set(_FIRED.findall(context or ""))


def payload_for(event: dict, root: str) -> tuple[str, dict]:
    """(hook event, payload) for one labeled event, paths mapped onto `root`."""
    session = event["session"]
    if event.get("compact"):
        return "pre-compact", {"session_id": session, "cwd": root, "hook_event_name": "PreCompact",
                               "trigger": "auto"}
    if event["source"] == "real":
        cwd = event["cwd"]
        tool_input = _remap(event["input"], cwd, root) if cwd else event["input"]
        where = root
    else:
        tool_input = json.loads(json.dumps(event["input"]).replace("{root}", root))
        where = os.path.join(root, event["cwd"]) if event["cwd"] else root
    return "pre-tool", {"session_id": session, "cwd": where, "hook_event_name": "PreToolUse",
                        "tool_name": event["tool"], "tool_input": tool_input,
                        "transcript_path": os.path.join(root, "t.jsonl")}


def replay(root: str, events: list[dict], command: list[str], env=None, timeout_s: float = 30.0) -> list[set[str]]:
    """Run every event through the real hook subprocess; return the item names each fired."""
    import subprocess

    out = []
    for event in events:
        hook, body = payload_for(event, root)
        proc = subprocess.run(command + ["hook", hook], input=json.dumps(body).encode(), cwd=root,
                              capture_output=True, timeout=timeout_s, env=env)
        context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout else None
        out.append(fired_names(context))
    return out


def score(events: list[dict], fired: list[set[str]]) -> dict:
    tp = fp = fn = 0
    false_alarms, misses = [], []
    for event, got in zip(events, fired, strict=True):
        want = event["expect"]
        tp += len(got & want)
        if got - want:
            fp += len(got - want)
            false_alarms.append((event["label"], sorted(got - want)))
        if want - got:
            fn += len(want - got)
            misses.append((event["label"], sorted(want - got)))
    tool_events = [e for e in events if not e.get("compact")]
    return {"events": len(tool_events), "real": sum(e["source"] == "real" for e in tool_events),
            "must_fire": sum(bool(e["expect"]) for e in events), "tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0,
            "false_alarms": false_alarms, "misses": misses}
