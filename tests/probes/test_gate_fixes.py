"""Every alarm is actionable: for each gate check, produce its RED for real, apply its FIX as
printed (the command it names, through the real CLI; or the config or file edit it names),
and show the next `memhealth gate` is no longer RED for it ("a fix clears its RED").

A RED about a past event (a hook that did not fire, a webhook delivery that failed) says
when it happened and offers `memhealth gate --ack CHECK`; the acknowledgement clears that
finding, is visible in `memhealth report`, and a later event is reported again.

Each scenario is registered under the check it exercises; a test holds the registry to the
gate's list of checks, so a new check cannot ship without its round trip.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from memory_core.outbox import decisions, heartbeat
from memory_core.store.db import write
from memory_core.store.meta import set_meta
from probes import gate as gate_mod
from probes import novelty
from tests.conftest import clean_env, payload, rows, run_cli, run_hook, sqlite3
from tests.support.gate_fix_helpers import check, commands_in, gate, run_fix, set_config
from tests.support.gate_helpers import open_store
from tests.support.ollama_standin import OllamaStandin, closed_url
from tests.support.otlp_receiver import OtlpReceiver

SCENARIOS: dict[str, list] = {}


def scenario(check_name: str):
    def register(fn):
        SCENARIOS.setdefault(check_name, []).append(fn)
        return fn
    return register


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("# Ledger\n\nThe snapshot compactor runs every 10,000 events.\n\n"
                                    "## Writer queue\n\nAll appends go through one writer queue.\n")
    assert run_cli("init", "--project", str(root)).returncode == 0
    set_config(root, "ingest", "git", False)  # not a repository: keep the integrations note out
    return root


def _ingest(root) -> None:
    proc = run_cli("ingest", "--project", str(root))
    assert proc.returncode == 0, proc.stderr


def _red(root, name: str, env=None) -> dict:
    result = check(root, name, env)
    assert result["status"] == "red", result
    assert result["fix"], result
    return result


def _not_red(root, name: str, env=None) -> dict:
    result = check(root, name, env)
    assert result["status"] in ("green", "note"), result
    return result


def _embedding(root, url: str, dim: int = 8) -> None:
    for key, value in (("url", url), ("dim", dim), ("timeout_s", 1.0), ("warmup_timeout_s", 1.0),
                       ("connect_timeout_s", 0.2)):
        set_config(root, "embedding", key, value)


def _prompt(root, sid: str, raw: bytes | None = None) -> None:
    body = raw if raw is not None else payload("UserPromptSubmit", root, session_id=sid,
                                               prompt="what did we decide about the writer queue")
    assert run_hook("prompt", body, str(root)).returncode == 0


def _session_start(root, sid: str) -> str:
    run = run_hook("session-start", payload("SessionStart", root, session_id=sid, source="startup"), str(root))
    assert run.returncode == 0, run.stderr
    return run.context()


# -- ingest_freshness ------------------------------------------------------------------------

@scenario("ingest_freshness")
def never_ingested(root):
    red = _red(root, "ingest_freshness")
    assert commands_in(red["fix"]) == ["memhealth ingest"]
    run_fix(root, "memhealth ingest")
    assert check(root, "ingest_freshness")["status"] == "green"


@scenario("ingest_freshness")
def stale_while_sessions_ran(root):
    _ingest(root)
    old = time.time_ns() - int(5 * 86400e9)
    conn = open_store(root)
    with write(conn):
        conn.execute("UPDATE watermarks SET updated_ns = ?", (old,))
    conn.close()
    _prompt(root, "s1")  # a session ran after the watermarks
    red = _red(root, "ingest_freshness")
    assert "behind the latest session" in red["detail"]
    for command in commands_in(red["fix"]):
        run_fix(root, command)
    assert check(root, "ingest_freshness")["status"] == "green"


# -- vector_coverage -------------------------------------------------------------------------

@scenario("vector_coverage")
def chunks_without_vectors(root):
    _ingest(root)  # BM25-only: no vectors yet
    with OllamaStandin("healthy", dim=8) as ollama:
        _embedding(root, ollama.url)
        red = _red(root, "vector_coverage")
        assert commands_in(red["fix"]) == ["memhealth embed"]
        run_fix(root, "memhealth embed")
        checks = gate(root)
    assert checks["vector_coverage"]["status"] == "green"
    assert checks["embedding_path"]["status"] == "green"


@scenario("vector_coverage")
def table_width_differs_from_config(root):
    _ingest(root)
    with OllamaStandin("healthy", dim=8) as ollama:
        _embedding(root, ollama.url)
        run_fix(root, "memhealth embed")
        set_config(root, "embedding", "dim", 16)  # someone changed dim without re-embedding
        red = _red(root, "vector_coverage")
        assert "8-d" in red["detail"] and "set [embedding].dim = 8 back" in red["fix"]
        set_config(root, "embedding", "dim", 8)  # the first way out the fix names
        assert check(root, "vector_coverage")["status"] == "green"


@scenario("vector_coverage")
def backfill_not_moving(root):
    """Ingest runs whose budget the text uses up embed nothing: the backfill is stuck, and
    that is a RED (a backfill that moves is a NOTE, tests/memory_core/ingest/test_ingest_text_first.py)."""
    _ingest(root)
    with OllamaStandin("healthy", dim=8) as ollama:
        _embedding(root, ollama.url)
        proc = run_cli("ingest", "--budget-s", "0.000001", "--project", str(root))
        assert proc.returncode == 0, proc.stderr
        red = _red(root, "vector_coverage")
        assert "the backfill is not moving" in red["detail"] and "embedded 0" in red["detail"]
        assert commands_in(red["fix"]) == ["memhealth embed"]
        run_fix(root, "memhealth embed")
        assert check(root, "vector_coverage")["status"] == "green"


# -- hook_heartbeats -------------------------------------------------------------------------

@scenario("hook_heartbeats")
def hooks_not_wired(root):
    os.remove(root / ".claude" / "settings.local.json")
    red = _red(root, "hook_heartbeats")
    assert commands_in(red["fix"]) == ["memhealth init"]
    run_fix(root, "memhealth init")
    assert check(root, "hook_heartbeats")["status"] == "green"


@scenario("hook_heartbeats")
def session_start_missed_a_session_is_acknowledged(root):
    """The issue's case: `memhealth init` changes nothing, the RED used to stay for days."""
    _ingest(root)
    _session_start(root, "s-one")
    _prompt(root, "s-one")
    _prompt(root, "s-two")  # prompts of a session SessionStart never saw
    red = _red(root, "hook_heartbeats")
    assert "session-start did not fire for 1 session" in red["detail"] and " ago)" in red["detail"]
    commands = commands_in(red["fix"])
    assert commands == ["memhealth init", "memhealth gate --ack hook_heartbeats"]
    assert "nothing changed" in run_fix(root, commands[0]).stdout
    assert check(root, "hook_heartbeats")["status"] == "red"  # the wiring was fine: a past event
    ack = run_cli(*commands[1].split()[1:], "--project", str(root))
    assert "acknowledged hook_heartbeats" in ack.stdout and "session-start did not fire" in ack.stdout
    assert ack.returncode == 0, ack.stdout
    assert check(root, "hook_heartbeats")["status"] == "green"
    report = run_cli("report", "--project", str(root))
    assert "hook_heartbeats" in report.stdout.split("Acknowledged gate findings")[1].split("\n\n")[0]
    _prompt(root, "s-three")  # a new miss after the acknowledgement is reported again
    assert "session-start did not fire for 1 session" in _red(root, "hook_heartbeats")["detail"]


def _transcript_prompt(path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "sessionId": "x", "uuid": os.urandom(4).hex(),
                             "message": {"role": "user", "content": text}}) + "\n")


@scenario("hook_heartbeats")
def prompts_the_prompt_hook_never_saw_are_acknowledged(root):
    _ingest(root)
    transcript = root / "s-one.jsonl"
    transcript.write_text("")
    run = run_hook("session-start", payload("SessionStart", root, session_id="s-one", source="startup",
                                            transcript_path=str(transcript)), str(root))
    assert run.returncode == 0
    _transcript_prompt(transcript, "why does the writer queue stall?")  # the prompt hook never ran
    red = _red(root, "hook_heartbeats")
    assert "prompt hook left no rows in session s-one" in red["detail"] and " ago)" in red["detail"]
    assert commands_in(red["fix"]) == ["memhealth init", "memhealth hook prompt < payload.json",
                                       "memhealth gate --ack hook_heartbeats"]
    run_fix(root, "memhealth init")  # the wiring is fine: nothing changes, the past stays true
    assert check(root, "hook_heartbeats")["status"] == "red"
    run_fix(root, "memhealth gate --ack hook_heartbeats")
    assert check(root, "hook_heartbeats")["status"] == "green"
    time.sleep(0.05)  # past the file system's coarse clock: the next growth is after the ack
    _transcript_prompt(transcript, "and now?")  # missed again, after the acknowledgement
    assert "prompt hook left no rows" in _red(root, "hook_heartbeats")["detail"]


@scenario("hook_heartbeats")
def killed_run_is_acknowledged(root):
    _ingest(root)
    conn = open_store(root)
    heartbeat.start(conn, "prompt", "s1", "t" * 32, time.time_ns() - int(2000e9))  # never finished
    conn.close()
    red = _red(root, "hook_heartbeats")
    assert "prompt: last run (33 min ago) was killed" in red["detail"]
    assert "memhealth gate --ack hook_heartbeats" in commands_in(red["fix"])
    run_fix(root, "memhealth gate --ack hook_heartbeats")
    assert check(root, "hook_heartbeats")["status"] == "green"


@scenario("hook_heartbeats")
def failed_run_clears_with_the_next_good_run(root):
    _ingest(root)
    _prompt(root, "s1", raw=b"{not json")
    red = _red(root, "hook_heartbeats")
    assert "prompt: last run" in red["detail"] and "malformed_json" in red["detail"]
    assert "next good run clears this" in red["fix"]
    _prompt(root, "s1")  # the fix: whatever sent the bad payload is fixed; the next run is good
    result = _not_red(root, "hook_heartbeats")
    assert result["status"] == "note" and "1 error recently, latest ok" in result["detail"]
    assert result["audience"] == "operator"


@scenario("hook_heartbeats")
def spilled_rows_drain_once_the_store_is_writable(root):
    _ingest(root)
    db = root / ".memhealth" / "memory.db"
    holder = sqlite3.connect(str(db), timeout=10, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        run = run_hook("prompt", payload("UserPromptSubmit", root, session_id="s1", prompt="hello there"),
                       str(root), env=clean_env(MEMHEALTH_HOOKS_BUSY_TIMEOUT_S="0.05"))
        assert run.returncode == 0 and os.path.exists(root / ".memhealth" / "spill.ndjson")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # the lock is gone (the fix's first half); the gate drains the file and reports the
    # locked run as the prompt hook's latest failure, which its next good run clears
    red = _red(root, "hook_heartbeats")
    assert "db_locked" in red["detail"] and "next good run clears this" in red["fix"]
    assert not os.path.exists(root / ".memhealth" / "spill.ndjson")
    _prompt(root, "s1")
    assert _not_red(root, "hook_heartbeats")["status"] == "note"


# -- capture_queue, lineage_freshness: fed by external pipelines -----------------------------

@scenario("capture_queue")
def capture_backlog_drained_by_its_pipeline(root):
    _ingest(root)
    conn = open_store(root)
    with write(conn):
        set_meta(conn, "capture.pending", 41)  # the capture pipeline's count
    red = _red(root, "capture_queue")
    assert "capture pipeline" in red["fix"] and not commands_in(red["fix"])  # no `memhealth triage`
    with write(conn):
        set_meta(conn, "capture.pending", 2)  # the pipeline's triage lowers it
    conn.close()
    assert check(root, "capture_queue")["status"] == "green"


@scenario("lineage_freshness")
def lineage_rebuilt_by_its_builder_not_by_ingest(root):
    _ingest(root)
    now = time.time_ns()
    conn = open_store(root)
    with write(conn):
        set_meta(conn, "lineage.built_ns", now - int(9 * 86400e9))
        set_meta(conn, "lineage.source_ns", now - int(5 * 86400e9))
    red = _red(root, "lineage_freshness")
    assert "does not rebuild lineage" in red["fix"]
    _ingest(root)  # the old FIX: `memhealth ingest` never touched the stamps
    assert check(root, "lineage_freshness")["status"] == "red"
    with write(conn):
        set_meta(conn, "lineage.built_ns", time.time_ns())  # the builder ran
    conn.close()
    assert check(root, "lineage_freshness")["status"] == "green"


# -- index_integrity -------------------------------------------------------------------------

@scenario("index_integrity")
def full_text_index_out_of_step(root):
    _ingest(root)
    conn = open_store(root)
    with write(conn):
        cid, title, content = conn.execute("SELECT id, title, content FROM chunks LIMIT 1").fetchone()
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, title, content) VALUES ('delete', ?, ?, ?)",
                     (cid, title, content))
    conn.close()
    red = _red(root, "index_integrity")
    commands = commands_in(red["fix"])
    assert len(commands) == 1 and commands[0].startswith("sqlite3 ")
    run_fix(root, commands[0])
    assert check(root, "index_integrity")["status"] == "green"


@scenario("index_integrity")
def kept_chunk_counts_drifted(root):
    _ingest(root)
    conn = open_store(root)
    with write(conn):  # a write that went around the triggers (a restored copy, a hand edit)
        conn.execute("UPDATE chunk_counts SET n = n + 5, changes = 0")
    conn.close()
    red = _red(root, "index_integrity")
    assert "kept on write disagree" in red["detail"]
    commands = commands_in(red["fix"])
    assert len(commands) == 1 and commands[0].startswith("sqlite3 ")
    run_fix(root, commands[0])
    assert check(root, "index_integrity")["status"] == "green"


@scenario("index_integrity")
def vectors_of_deleted_chunks(root):
    _ingest(root)
    with OllamaStandin("healthy", dim=8) as ollama:
        _embedding(root, ollama.url)
        run_fix(root, "memhealth embed")
        conn = open_store(root)
        with write(conn):
            conn.execute("DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
        conn.close()
        red = _red(root, "index_integrity")
        assert "more vectors than chunks" in red["detail"]
        assert commands_in(red["fix"]) == ["memhealth embed"]
        run_fix(root, "memhealth embed")
        assert check(root, "index_integrity")["status"] == "green"


# -- memory_files ----------------------------------------------------------------------------

@scenario("memory_files")
def index_too_long(root):
    _ingest(root)
    (root / "resume.md").write_text("where we stopped\n")
    body = "".join(f"- memory {i}\n" for i in range(300))
    (root / "MEMORY.md").write_text("# Memory\n\n## LATEST\n[resume](resume.md)\n\n" + body)
    red = _red(root, "memory_files")
    assert red["fix"].startswith("trim MEMORY.md")
    (root / "MEMORY.md").write_text("# Memory\n\n## LATEST\n[resume](resume.md)\n\n- memory 1\n")
    assert check(root, "memory_files")["status"] == "green"


@scenario("memory_files")
def anchor_points_at_a_missing_file(root):
    _ingest(root)
    (root / "MEMORY.md").write_text("# Memory\n\n## LATEST\n[resume](gone.md)\n")
    red = _red(root, "memory_files")
    assert "point the LATEST link in MEMORY.md at the current resume file" == red["fix"]
    (root / "resume.md").write_text("where we stopped\n")
    (root / "MEMORY.md").write_text("# Memory\n\n## LATEST\n[resume](resume.md)\n")
    assert check(root, "memory_files")["status"] == "green"


# -- render_novelty --------------------------------------------------------------------------

@scenario("render_novelty")
def a_stale_render_is_replaced_by_the_next_session_start(root):
    _ingest(root)
    conn = open_store(root)
    base = time.time_ns() - int(3600e9)
    for i, sid in enumerate(["a", "b", "c"]):
        # a stuck producer: new decisions each session, the same render every time
        with write(conn):
            conn.execute("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                         "content_hash, created_ns) VALUES ('memory', ?, 1, 2, 'decision', ?, ?, ?, 0)",
                         (f"memory/d{i}.md", f"decision {i}", f"we chose {i}", f"h{i}"))
        novelty.record_render(conn, sid, "a cached render", novelty.inputs_signature(conn), base + i)
    conn.close()
    red = _red(root, "render_novelty")
    assert "next session start" in red["fix"]
    _session_start(root, "d")  # the fix: a session start that renders from the store
    assert check(root, "render_novelty")["status"] == "green"


# -- embedding_path --------------------------------------------------------------------------

@scenario("embedding_path")
def ollama_unreachable(root):
    _ingest(root)
    _embedding(root, closed_url())
    red = _red(root, "embedding_path")
    assert red["state"] == "unreachable" and "point [embedding].url at it" in red["fix"]
    with OllamaStandin("healthy", dim=8) as ollama:  # start Ollama, point the url at it
        _embedding(root, ollama.url)
        run_fix(root, "memhealth embed")
        assert check(root, "embedding_path")["state"] == "ok"


@scenario("embedding_path")
def model_missing(root):
    _ingest(root)
    with OllamaStandin("model_missing", dim=8) as ollama:
        _embedding(root, ollama.url)
        red = _red(root, "embedding_path")
        assert red["state"] == "model_missing" and red["fix"] == "ollama pull nomic-embed-text"
        ollama.mode = "healthy"  # what `ollama pull` leaves behind: the model is installed
        assert check(root, "embedding_path")["state"] == "ok"


@scenario("embedding_path")
def wedged_after_the_full_warm_up(root):
    _ingest(root)
    with OllamaStandin("hung", dim=8, hang_s=20) as ollama:
        _embedding(root, ollama.url)
        set_config(root, "embedding", "timeout_s", 0.3)
        set_config(root, "embedding", "warmup_timeout_s", 0.6)
        red = _red(root, "embedding_path")
        assert red["state"] == "wedged" and "restart Ollama" in red["fix"]
        assert "0.3 s" in red["detail"] and "0.6 s" in red["detail"]
        ollama.mode = "healthy"  # restarted
        assert check(root, "embedding_path")["state"] == "ok"


@scenario("embedding_path")
def model_width_differs_from_config(root):
    _ingest(root)
    with OllamaStandin("wrong_width", dim=8) as ollama:  # answers 9-d vectors
        _embedding(root, ollama.url)
        red = _red(root, "embedding_path")
        assert red["state"] == "dimension_mismatch"
        assert red["fix"].startswith("set [embedding].dim = 9 and run `memhealth embed --rebuild`")
        set_config(root, "embedding", "dim", 9)
        for command in commands_in(red["fix"]):
            run_fix(root, command)
        checks = gate(root)
    assert checks["embedding_path"]["state"] == "ok"
    assert checks["vector_coverage"]["status"] == "green"


@scenario("embedding_path")
def fallback_never_installed(root):
    _ingest(root)
    with OllamaStandin("healthy", dim=8) as ollama:
        _embedding(root, ollama.url)
        run_fix(root, "memhealth embed")
        set_config(root, "embedding", "fallback_model", "all-minilm")
        red = _red(root, "embedding_path")
        assert red["state"] == "fallback_mismatch" and "clear [embedding].fallback_model" in red["fix"]
        set_config(root, "embedding", "fallback_model", "")
        assert check(root, "embedding_path")["state"] == "ok"


# -- integrations ----------------------------------------------------------------------------

@scenario("integrations")
def webhook_failures_acknowledged_after_the_receiver_is_fixed(root):
    _ingest(root)
    set_config(root, "alerts", "webhook_url", "http://127.0.0.1:9/hook")
    conn = open_store(root)
    with write(conn):
        decisions.insert_degradation(conn, "alerts", "webhook", "connection refused")
    red = _red(root, "integrations")
    assert "failed 1 time(s)" in red["detail"] and " ago " in red["detail"]
    assert red["audience"] == "operator"
    assert commands_in(red["fix"]) == ["memhealth gate --ack integrations"]
    run_fix(root, "memhealth gate --ack integrations")
    assert check(root, "integrations")["status"] == "green"
    time.sleep(0.01)  # a strictly later failure (ns clock) is reported again
    with write(conn):
        decisions.insert_degradation(conn, "alerts", "webhook", "connection refused again")
    conn.close()
    assert check(root, "integrations")["status"] == "red"


# -- telemetry_pipeline ----------------------------------------------------------------------

@scenario("telemetry_pipeline")
def configured_exporter_that_never_shipped(root):
    _ingest(root)
    rx = OtlpReceiver().up()
    try:
        set_config(root, "telemetry", "otlp_endpoint", rx.endpoint)
        old = time.time_ns() - int(2 * 3600e9)
        conn = open_store(root)
        with write(conn):
            conn.execute("INSERT INTO spans(trace_id, span_id, name, start_ns, end_ns) VALUES (?,?,?,?,?)",
                         ("a" * 32, "b" * 16, "memhealth.hook prompt", old, old))
        conn.close()
        red = _red(root, "telemetry_pipeline")
        assert red["audience"] == "operator" and "never ran" in red["detail"]
        assert commands_in(red["fix"]) == ["memhealth export --once"]
        run_fix(root, "memhealth export --once")
        assert check(root, "telemetry_pipeline")["status"] == "green"
        assert any(s.name == "memhealth.hook prompt" for s in rx.spans)
    finally:
        rx.down()


# -- cue_delivery ----------------------------------------------------------------------------

def _pinned(root, n: int) -> None:
    memory = root / ".memhealth" / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (memory / f"fact{i:02d}.md").write_text(f"---\nname: fact-{i:02d}\npinned: true\n---\n" + "word " * 130 + "\n")


def _compaction(root, sid: str) -> str:
    assert run_hook("pre-compact", payload("PreCompact", root, session_id=sid, trigger="auto"),
                    str(root)).returncode == 0
    run = run_hook("session-start", payload("SessionStart", root, session_id=sid, source="compact"), str(root))
    assert run.returncode == 0
    return run.context()


@scenario("cue_delivery")
def compaction_that_dropped_pinned_items(root):
    _pinned(root, 12)
    _ingest(root)
    _compaction(root, "s1")
    red = _red(root, "cue_delivery")
    # 12, not the invariants template init writes: headings and comments alone pin nothing
    assert "delivered" in red["detail"] and "of 12 pinned items" in red["detail"] and "over_budget" in red["detail"]
    assert commands_in(red["fix"]) == ["memhealth cues", "memhealth ingest memory", "memhealth forget ID",
                                       "memhealth gate --ack cue_delivery"]
    assert "fact-00" in run_fix(root, "memhealth cues").stdout
    for i in range(8):  # the file edit the fix names: unpin most of them
        path = root / ".memhealth" / "memory" / f"fact{i:02d}.md"
        path.write_text(path.read_text().replace("pinned: true", "pinned: false"))
    run_fix(root, "memhealth ingest memory")
    _not_red(root, "cue_delivery")
    text = _compaction(root, "s1")
    assert all(f"fact-{i:02d}" in text for i in range(8, 12))
    assert check(root, "cue_delivery")["status"] == "green"


@scenario("cue_delivery")
def tool_calls_left_without_a_cue_evaluation(root):
    _ingest(root)
    for _ in range(5):
        run = run_hook("pre-tool", payload("PreToolUse", root, session_id="s1", tool_name="Read",
                                           tool_input={"file_path": str(root / "README.md")}), str(root))
        assert run.returncode == 0
    conn = open_store(root)
    with write(conn):  # what a hook that stopped evaluating leaves: ok heartbeats, no audit rows
        conn.execute("DELETE FROM cue_audit WHERE event = 'pre-tool'")
    conn.close()
    red = _red(root, "cue_delivery")
    assert "cues stopped being evaluated: 5 of 5 tool calls" in red["detail"]
    assert commands_in(red["fix"]) == ["memhealth cues audit", "memhealth report", "memhealth gate --ack cue_delivery"]
    run_fix(root, "memhealth gate --ack cue_delivery")
    assert check(root, "cue_delivery")["status"] == "green"
    assert run_hook("pre-tool", payload("PreToolUse", root, session_id="s1", tool_name="Read",
                                        tool_input={"file_path": str(root / "README.md")}), str(root)).returncode == 0
    assert check(root, "cue_delivery")["status"] == "green"  # evaluated again: nothing new to report


# -- hook_wiring, hook_witness: hooks that do not run -----------------------------------------

@scenario("hook_wiring")
def pre_tool_entry_removed(root):
    settings = os.path.join(str(root), ".claude", "settings.local.json")
    with open(settings, encoding="utf-8") as fh:
        data = json.load(fh)
    del data["hooks"]["PreToolUse"]
    with open(settings, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    red = _red(root, "hook_wiring")
    assert "PreToolUse does not run memhealth" in red["detail"]
    assert commands_in(red["fix"]) == ["memhealth init"]
    run_fix(root, "memhealth init")
    assert check(root, "hook_wiring")["status"] == "green"


def _recorded_transcript(root, name: str) -> str:
    """A session recorded with the real CLI (tests/fixtures/transcripts/witness/witness-NAME.jsonl),
    its timestamps moved to the last minutes, in a transcript directory of its own."""
    from datetime import UTC, datetime

    from tests.conftest import FIXTURES

    with open(os.path.join(FIXTURES, "transcripts", "witness", f"witness-{name}.jsonl"), encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    stamps = [datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")) for r in records if r.get("timestamp")]
    shift = datetime.now(UTC) - min(stamps)  # the session starts now, after the store
    for r in records:
        if r.get("timestamp"):
            moved = datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")) + shift
            r["timestamp"] = moved.isoformat().replace("+00:00", "Z")
    sid = next(r["sessionId"] for r in records if r.get("sessionId"))
    folder = os.path.join(str(root), "..", "transcripts")
    os.makedirs(folder, exist_ok=True)
    path = os.path.abspath(os.path.join(folder, f"{sid}.jsonl"))
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    old = time.time() - 120  # the session is over: its last events are judged
    os.utime(path, (old, old))
    return path


def _replay_hooks(root, name: str, sid: str, path: str) -> None:
    """Run memhealth's hooks for the events of a recorded session that memhealth recorded
    then (its rows file), with the ids Claude Code gave them."""
    from tests.conftest import FIXTURES

    with open(os.path.join(FIXTURES, "transcripts", "witness", f"witness-{name}.rows.json"), encoding="utf-8") as fh:
        rows_ = json.load(fh)["heartbeats"]
    events = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse",
              "pre-tool": "PreToolUse", "stop": "Stop", "session-end": "SessionEnd"}
    for row in rows_:
        fields = {"session_id": sid, "transcript_path": path}
        if row["hook"] == "prompt":
            fields.update(prompt="read the api three times", prompt_id=row["event_ref"])
        elif row["hook"] in ("pre-tool", "post-tool"):
            fields.update(tool_name="Read", tool_input={"file_path": os.path.join(str(root), "README.md")},
                          tool_use_id=row["event_ref"])
        elif row["hook"] == "session-start":
            fields.update(source="startup")
        run = run_hook(row["hook"], payload(events[row["hook"]], root, **fields), str(root))
        assert run.returncode == 0, run.stderr


@scenario("hook_witness")
def pre_tool_command_exits_1(root):
    path = _recorded_transcript(root, "boom")
    sid = os.path.basename(path)[:-len(".jsonl")]
    # every hook of the recorded session ran as it did then, PreToolUse's excepted: its
    # command exited 1 before memhealth ran
    _replay_hooks(root, "boom", sid, path)
    red = _red(root, "hook_witness")
    assert "PreToolUse hook failed 3 time(s)" in red["detail"] and "stderr: boom" in red["detail"], red
    assert commands_in(red["fix"]) == ["memhealth init", "memhealth gate --ack hook_witness"], red["fix"]
    for command in commands_in(red["fix"]):
        run_fix(root, command)
    assert check(root, "hook_witness")["status"] == "green"
    assert rows(root, "SELECT count(*) FROM meta WHERE key = 'gate.ack.hook_witness'") == [(1,)]


def _replay_over_http(root, name: str, sid: str, path: str) -> None:
    """As _replay_hooks, with the events the HTTP transport carries POSTed to the serve the
    settings point at (its hook runner writes the rows), the others run as commands."""
    import http.client

    from tests.conftest import FIXTURES

    with open(os.path.join(FIXTURES, "transcripts", "witness", f"witness-{name}.rows.json"), encoding="utf-8") as fh:
        rows_ = json.load(fh)["heartbeats"]
    with open(root / ".claude" / "settings.local.json", encoding="utf-8") as fh:
        pre = json.load(fh)["hooks"]["PreToolUse"][0]["hooks"][0]
    host, port = pre["url"].split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    events = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "post-tool": "PostToolUse",
              "pre-tool": "PreToolUse", "stop": "Stop", "session-end": "SessionEnd"}
    for row in rows_:
        fields = {"session_id": sid, "transcript_path": path}
        if row["hook"] == "prompt":
            fields.update(prompt="read the api and fix its docstring", prompt_id=row["event_ref"])
        elif row["hook"] in ("pre-tool", "post-tool"):
            fields.update(tool_name="Read", tool_input={"file_path": os.path.join(str(root), "README.md")},
                          tool_use_id=row["event_ref"])
        elif row["hook"] == "session-start":
            fields.update(source="startup")
        body = payload(events[row["hook"]], root, **fields)
        if row["hook"] in ("prompt", "pre-tool", "post-tool", "stop"):
            conn = http.client.HTTPConnection(host, int(port), timeout=20)
            try:
                conn.request("POST", f"/memhealth/hook/{row['hook']}", body=json.dumps(body).encode(),
                             headers={"Authorization": pre["headers"]["Authorization"],
                                      "Content-Type": "application/json"})
                assert conn.getresponse().status == 200
            finally:
                conn.close()
        else:
            assert run_hook(row["hook"], body, str(root)).returncode == 0


@scenario("hook_witness")
def http_transport_killed_mid_session(root):
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(root)
    path = _recorded_transcript(root, "http-killed")
    sid = os.path.basename(path)[:-len(".jsonl")]
    try:
        _replay_over_http(root, "http-killed", sid, path)  # what serve answered before it died
    finally:
        hs.kill()
    red = _red(root, "hook_witness")
    assert "PreToolUse hook failed 1 time(s) over the HTTP transport" in red["detail"], red
    assert "stderr: connect ECONNREFUSED" in red["detail"] and "Stop hook failed 1 time(s)" in red["detail"], red
    commands = commands_in(red["fix"])
    assert commands == [f"memhealth serve --detach --project {root} --listen 127.0.0.1:{hs.port}",
                        "memhealth init --transport command", "memhealth gate --ack hook_witness"], red["fix"]
    assert _red(root, "hook_transport")["detail"].startswith(f"the HTTP hook transport at http://127.0.0.1:{hs.port}")
    try:
        run_fix(root, commands[0])  # serve again, where the settings send the hooks
        # "the next PreToolUse, PostToolUse, Stop memhealth records clears this": the next session
        time.sleep(1.0)  # its events come after the failures
        later = _recorded_transcript(root, "heldout-http-healthy")
        _replay_over_http(root, "heldout-http-healthy", os.path.basename(later)[:-len(".jsonl")], later)
        result = _not_red(root, "hook_witness")
        assert result["status"] == "note" and "recorded again since" in result["detail"], result
        assert check(root, "hook_transport")["status"] == "green"
    finally:
        _stop_detached(root)


@scenario("hook_witness")
def http_hooks_refused_for_a_stale_secret(root):
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(root)
    try:
        settings = root / ".claude" / "settings.local.json"
        settings.write_text(settings.read_text().replace(hs.secret, "f" * 64))  # an old secret
        path = _recorded_transcript(root, "heldout-http-wrong-secret")  # every POST answered 401
        _replay_over_http(root, "heldout-http-wrong-secret", os.path.basename(path)[:-len(".jsonl")], path)
        red = _red(root, "hook_witness")
        assert "PreToolUse hook failed 1 time(s) over the HTTP transport" in red["detail"], red
        assert "stderr: HTTP 401 from" in red["detail"], red
        commands = commands_in(red["fix"])
        assert commands[0] == "memhealth init --transport http", red["fix"]
        run_fix(root, commands[0])  # the project's secret back into the settings
        time.sleep(1.0)
        later = _recorded_transcript(root, "heldout-http-healthy")
        _replay_over_http(root, "heldout-http-healthy", os.path.basename(later)[:-len(".jsonl")], later)
        result = _not_red(root, "hook_witness")
        assert result["status"] == "note" and "recorded again since" in result["detail"], result
    finally:
        hs.kill()


# -- hook_transport: the HTTP hook transport -------------------------------------------------

def _stop_detached(root) -> None:
    """End the serve a printed FIX started in the background (its pid file), and wait."""
    import signal

    path = root / ".memhealth" / "serve.pid"
    if not path.exists():
        return
    pid = int(path.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


@scenario("hook_transport")
def transport_down_is_restarted_where_the_settings_point(root):
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(root)
    assert check(root, "hook_transport")["status"] == "green"
    hs.kill()  # serve dies as a crash would: Claude Code now skips prompt and tool events
    red = _red(root, "hook_transport")
    assert f"http://127.0.0.1:{hs.port}" in red["detail"] and "does not answer" in red["detail"]
    commands = commands_in(red["fix"])
    assert commands[0] == f"memhealth serve --detach --project {root} --listen 127.0.0.1:{hs.port}"
    assert commands[-1] == "memhealth init --transport command"
    try:
        run_fix(root, commands[0])
        assert check(root, "hook_transport")["status"] == "green"
    finally:
        _stop_detached(root)


@scenario("hook_transport")
def transport_refusing_the_settings_secret(root):
    from tests.support.hook_serve import HookServe

    hs = HookServe.start(root)
    try:
        path = root / ".claude" / "settings.local.json"
        path.write_text(path.read_text().replace(hs.secret, "f" * 64))  # an old secret
        red = _red(root, "hook_transport")
        assert "refuses the hook secret" in red["detail"]
        assert commands_in(red["fix"])[0] == "memhealth init --transport http"
        run_fix(root, "memhealth init --transport http")
        assert check(root, "hook_transport")["status"] == "green"
    finally:
        hs.kill()


@scenario("hook_transport")
def transport_down_going_back_to_command_hooks(root):
    from tests.support.hook_serve import HookServe

    HookServe.start(root).kill()
    red = _red(root, "hook_transport")
    run_fix(root, commands_in(red["fix"])[-1])  # memhealth init --transport command
    result = check(root, "hook_transport")
    assert (result["status"], result["state"]) == ("green", "command")


# -- code_index ------------------------------------------------------------------------------

def _git(root, *args, date: str | None = None):
    import subprocess

    env = dict(clean_env(), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env, timeout=60)


def _code_repo(root, date: str | None = None) -> None:
    (root / "app").mkdir(exist_ok=True)
    (root / "app" / "limiter.py").write_text('"""Rate limiting."""\n\nclass RateLimiter:\n    pass\n')
    _git(root, "init", "-q")
    _git(root, "add", "app", "README.md")
    _git(root, "commit", "-qm", "code", date=date)


@scenario("code_index")
def code_never_indexed(root):
    _code_repo(root)
    red = _red(root, "code_index")
    assert "never been indexed" in red["detail"]
    assert commands_in(red["fix"]) == ["memhealth ingest code"]
    run_fix(root, red["fix"])
    assert check(root, "code_index")["status"] == "green"


@scenario("code_index")
def code_index_behind_an_old_head(root):
    _code_repo(root)
    run_fix(root, "memhealth ingest code")
    (root / "app" / "queue.py").write_text("class WriterQueue:\n    pass\n")
    _git(root, "add", "app")
    old = time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(time.time() - 5 * 86400))
    _git(root, "commit", "-qm", "queue", date=old)  # committed 5 days ago, never ingested
    red = _red(root, "code_index")
    assert "1 commit(s) behind HEAD" in red["detail"]
    run_fix(root, commands_in(red["fix"])[0])
    assert check(root, "code_index")["status"] == "green"
    # a commit just made is not RED: the next ingest reads it
    (root / "app" / "more.py").write_text("class More:\n    pass\n")
    _git(root, "add", "app")
    _git(root, "commit", "-qm", "more")
    assert check(root, "code_index")["status"] == "note"


@scenario("code_index")
def code_mostly_failing_to_parse(root):
    _code_repo(root)
    (root / "templates").mkdir()
    for i in range(6):  # Jinja in .py files: not Python
        (root / "templates" / f"t{i}.py").write_text("{% for x in items %}\ndef {{ x }}(:\n{% endfor %}\n")
    _git(root, "add", "templates")
    _git(root, "commit", "-qm", "templates")
    run_fix(root, "memhealth ingest code")
    red = _red(root, "code_index")
    assert "6 of 7 source files failed to parse" in red["detail"] and "templates/t0.py" in red["detail"]
    assert "[ingest].code_exclude" in red["fix"]
    set_config(root, "ingest", "code_exclude", ["templates/**"])  # the edit the FIX names
    run_fix(root, commands_in(red["fix"])[0])
    assert check(root, "code_index")["status"] == "green"


# -- the registry ----------------------------------------------------------------------------

ALL = [fn for fns in SCENARIOS.values() for fn in fns]


def test_every_gate_check_has_a_red_to_green_round_trip():
    assert set(SCENARIOS) == {name for name, _fn in gate_mod.CHECKS}


@pytest.mark.parametrize("scenario_fn", ALL, ids=[fn.__name__ for fn in ALL])
def test_a_fix_clears_its_red(root, scenario_fn):
    scenario_fn(root)


def test_ack_is_only_for_checks_about_past_events(root):
    proc = run_cli("gate", "--ack", "ingest_freshness", "--project", str(root))
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    import argparse

    from memhealth import cmd_gate

    parser = cmd_gate.register(argparse.ArgumentParser().add_subparsers())
    ack = next(a for a in parser._actions if a.dest == "ack")
    assert tuple(ack.choices) == gate_mod.ACKABLE
    assert rows(root, "SELECT count(*) FROM meta WHERE key LIKE 'gate.ack.%'") == [(0,)]
