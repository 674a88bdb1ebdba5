"""What SessionStart puts in Claude's context, through the real hook subprocess:
the verdict line and memory, nothing for the operator; no false RED from a render that
rightly did not change; a model still loading is cold-or-wedged-undecided, never wedged,
until `memhealth gate` has waited the full warm-up."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from memory_core.delivery.render import session_render
from memory_core.store.db import connect, write
from probes.gate import CHECKS
from tests.conftest import REPO, clean_env, payload, run_cli, run_hook
from tests.support.gate_fix_helpers import check, set_config
from tests.support.ollama_standin import OllamaStandin, closed_url


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory):
    """The demo's healthy sample project, made once by `memhealth demo` (copied per test)."""
    base = tmp_path_factory.mktemp("demo")
    proc = run_cli("demo", "--dir", str(base), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return base / "ledgerline"


@pytest.fixture
def demo(demo_template, tmp_path):
    root = tmp_path / "ledgerline"
    shutil.copytree(demo_template, root, symlinks=True)
    # settle: the copy's first ingest re-reads what moved with it (paths), not our edits
    assert run_cli("ingest", "--project", str(root)).returncode == 0
    return root


def _start(root, sid: str, env=None) -> dict:
    run = run_hook("session-start", payload("SessionStart", root, session_id=sid, source="startup",
                                            transcript_path=str(root / f"{sid}.jsonl")),
                   str(root), env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stderr == b"", run.stderr
    return json.loads(run.stdout)


def _render(root) -> str:
    conn = connect(str(root / ".memhealth" / "memory.db"))
    try:
        return session_render(conn, "startup")
    finally:
        conn.close()


N = len(CHECKS)


def _memory(context: str, root) -> str:
    """The context after the verdict line, checked to be the pinned block (every pinned item,
    each with its provenance) followed by the render."""
    rest = context.split("\n", 1)[1] if "\n" in context else ""  # nothing to say: the verdict alone
    conn = connect(str(root / ".memhealth" / "memory.db"))
    try:
        pinned = [name for (name,) in conn.execute("SELECT name FROM memory_items WHERE pinned = 1")]
    finally:
        conn.close()
    if pinned:
        head, *items = rest.split("\n")[:1 + len(pinned)]
        assert head.startswith(f"memhealth memory, pinned at session start (startup): {len(pinned)} items")
        assert sorted(item.split("] ", 1)[1].split(" (", 1)[0] for item in items) == sorted(pinned)
        assert all("verify before building on it" in item for item in items)
        rest = rest.split("\n", 1 + len(pinned))[-1]
    return rest


# -- Claude's context is for Claude ----------------------------------------------------------

def _forget_notes_shown(root) -> None:
    """As if the person had not been told yet (the demo's own session starts told them)."""
    from memhealth.handlers import OPERATOR_NOTES_SHOWN

    conn = connect(str(root / ".memhealth" / "memory.db"))
    with write(conn):
        conn.execute("DELETE FROM meta WHERE key = ?", (OPERATOR_NOTES_SHOWN,))
    conn.close()


def test_a_healthy_projects_context_is_exactly_the_verdict_line_and_memory(demo):
    _forget_notes_shown(demo)
    out = _start(demo, "healthy-1")
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[0] == f"MEMORY-HEALTH: {N}/{N} GREEN"
    assert _memory(context, demo) == _render(demo)
    # the operator's notes went to the person instead
    notice = out["systemMessage"]
    assert "Claude does not see this" in notice and "NOTE integrations:" in notice
    assert "NOTE" not in context and "webhook" not in context


def test_operator_notes_are_shown_when_they_change_not_at_every_session_start(demo):
    _forget_notes_shown(demo)
    first = _start(demo, "notes-1")
    assert "NOTE integrations:" in first["systemMessage"]
    # the same notes again: the person was told; Claude's context is unchanged either way
    second = _start(demo, "notes-2")
    assert "systemMessage" not in second
    assert second["hookSpecificOutput"]["additionalContext"] == first["hookSpecificOutput"]["additionalContext"]
    # a new operator finding (an exporter configured and behind) is a RED: shown at once
    env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=closed_url())
    conn = connect(str(demo / ".memhealth" / "memory.db"))
    old = 1_000_000_000 * (int(__import__("time").time()) - 7200)
    with write(conn):
        conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES (?,?,?,?,?)",
                     ("e" * 32, "f" * 16, "memhealth.hook prompt", old, old))
    conn.close()
    third = _start(demo, "notes-3", env=env)
    assert "RED telemetry_pipeline" in third["systemMessage"]
    assert "NOTE integrations:" not in third["systemMessage"]  # unchanged, already told
    # `memhealth gate` always prints every note
    gate_out = run_cli("gate", "--project", str(demo)).stdout
    assert "NOTE integrations:" in gate_out


def test_the_outbox_count_never_reaches_claude_even_when_the_exporter_fails(demo):
    env = clean_env(MEMHEALTH_TELEMETRY_OTLP_ENDPOINT=closed_url())
    conn = connect(str(demo / ".memhealth" / "memory.db"))
    old = 1_000_000_000 * (int(__import__("time").time()) - 7200)
    with write(conn):
        conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES (?,?,?,?,?)",
                     ("c" * 32, "d" * 16, "memhealth.hook prompt", old, old))
        conn.execute("UPDATE spans SET end_ns = ? WHERE id = (SELECT min(id) FROM spans)", (old,))
    conn.close()
    out = _start(demo, "exporter-down", env=env)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[0] == f"MEMORY-HEALTH: {N - 1}/{N} GREEN (1 RED)"
    assert "RED telemetry_pipeline: not on the memory path" in context
    assert "span" not in context and "outbox" not in context and "export" not in context
    assert re.search(r"RED telemetry_pipeline: exporter behind .* \d+ span\(s\) in the outbox",
                     out["systemMessage"])


def test_a_session_on_a_real_ish_project_has_no_red_and_no_operator_notes_in_context(tmp_path):
    """This repository's own README, docs and benchmark notes as a project's docs, with a
    memory index."""
    root = tmp_path / "realish"
    shutil.copytree(os.path.join(REPO, "docs"), root / "docs", ignore=shutil.ignore_patterns("*.png"))
    shutil.copy(os.path.join(REPO, "README.md"), root / "README.md")
    for name in os.listdir(os.path.join(REPO, "benchmarks")):
        if name.endswith(".md"):
            shutil.copy(os.path.join(REPO, "benchmarks", name), root / "docs" / name)
    (root / "resume.md").write_text("Stopped after wiring the gate into CI.\n")
    (root / "MEMORY.md").write_text("# Memory\n\n- the gate runs at every session start\n\n"
                                    "## LATEST\n\n[resume](resume.md)\n")
    assert run_cli("init", "--project", str(root)).returncode == 0
    set_config(root, "ingest", "git", False)
    assert run_cli("ingest", "--project", str(root)).returncode == 0
    out = _start(root, "real-1")
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines()[0] == f"MEMORY-HEALTH: {N}/{N} GREEN"
    assert "RED" not in context and "NOTE" not in context
    assert _memory(context, root) == _render(root)
    assert "NOTE vector_coverage: embeddings not configured" in out["systemMessage"]


# -- no false RED from an unchanged render ---------------------------------------------------

def test_edit_a_doc_ingest_and_start_three_sessions_is_not_red(demo):
    contexts = [_start(demo, "edit-1")["hookSpecificOutput"]["additionalContext"]]
    ops = demo / "docs" / "operations.md"
    text = ops.read_text()
    ops.write_text(text.replace("the", "thee", 1))  # a real edit; same sections, same chunk count
    ingest = run_cli("ingest", "--project", str(demo))
    assert ingest.returncode == 0 and "1 of" in ingest.stdout and "docs +" in ingest.stdout, ingest.stdout
    contexts += [_start(demo, sid)["hookSpecificOutput"]["additionalContext"] for sid in ("edit-2", "edit-3")]
    bodies = {"\n".join(x for x in c.splitlines()[1:] if not x.startswith("  ")) for c in contexts}
    assert len(bodies) == 1  # the render rightly did not change: its inputs did not
    assert all("RED" not in c for c in contexts), contexts
    result = check(demo, "render_novelty")
    assert result["status"] == "green" and "so are its inputs" in result["detail"]


# -- cold is not wedged ----------------------------------------------------------------------

def test_a_model_slower_than_the_hook_budget_is_undecided_then_the_gate_decides(demo):
    with OllamaStandin("cold", dim=8, load_delay_s=4.0) as ollama:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_DIM="8",
                        MEMHEALTH_EMBEDDING_TIMEOUT_S="0.5", MEMHEALTH_EMBEDDING_WARMUP_TIMEOUT_S="30",
                        MEMHEALTH_EMBEDDING_CONNECT_TIMEOUT_S="0.2", MEMHEALTH_GATE_HOOK_BUDGET_S="2")
        out = _start(demo, "cold-1", env=env)
        context = out["hookSpecificOutput"]["additionalContext"]
        line = next(x for x in context.splitlines() if "embedding_path" in x)
        assert line.startswith("  NOTE embedding_path: ") and "cold or wedged, undecided" in line
        assert "RED embedding_path" not in context and "wedged" not in line.split("undecided")[1]
        # durations as a person reads them: "0.5 s", never "0.4999 s"
        assert re.findall(r"\d+(?:\.\d)? s\b", line) and not re.search(r"\d\.\d{2,}", line)
        # `memhealth gate` waits the full warm-up, and the model was only loading
        result = check(demo, "embedding_path", env=env)
    assert (result["status"], result["state"]) in (("green", "cold"), ("green", "ok")), result
    assert not re.search(r"\d\.\d{2,} s", result["detail"])
