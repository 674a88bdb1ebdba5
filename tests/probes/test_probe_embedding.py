"""The embedding probe against a real stand-in Ollama server in each fault mode: the right
state, status and fix, within timeout + warm-up + 1 s."""

from __future__ import annotations

import json
import time

import pytest

from memory_core.index import embed
from probes.embedding import embedding_path
from telemetry.catalog import EMBEDDING_STATES
from tests.conftest import clean_env, run_cli
from tests.support.gate_helpers import evidence, make_project, open_store
from tests.support.ollama_standin import OllamaStandin, closed_url

TIMEOUT_S, WARMUP_S = 0.3, 1.2


@pytest.fixture
def proj(tmp_path):
    root = make_project(tmp_path / "proj")
    conn = open_store(root)
    yield root, conn
    conn.close()
    embed.forget_process_state()


def probe(proj, url: str, dim: int = 8, **emb):
    root, conn = proj
    ev = evidence(root, conn, now=time.time())
    ev.cfg["embedding"].update(url=url, dim=dim, timeout_s=TIMEOUT_S, warmup_timeout_s=WARMUP_S,
                               connect_timeout_s=0.1, **emb)
    t0 = time.monotonic()
    result = embedding_path(ev)
    return result, time.monotonic() - t0



def test_a_healthy_server_is_green_ok_and_uses_the_real_request_options(proj):
    with OllamaStandin("healthy", dim=8) as ollama:
        r, _ = probe(proj, ollama.url)
        bodies = ollama.bodies("/api/embed")
    assert (r.status, r.state) == ("green", "ok") and "8-dim" in r.detail
    assert bodies and all(b["keep_alive"] == "4h" and b["options"] == {"num_ctx": 8192} for b in bodies)


def test_a_cold_server_reports_green_with_the_warmup_noted(proj):
    with OllamaStandin("cold", dim=8, load_delay_s=0.8) as ollama:
        r, elapsed = probe(proj, ollama.url)
    assert (r.status, r.state) == ("green", "cold")
    assert "cold start: warmed in" in r.detail and r.extra["warmup_s"] >= 0.7
    assert elapsed < TIMEOUT_S + WARMUP_S + 1.0


def test_an_unreachable_server_is_red_fast_with_a_start_fix(proj):
    url = closed_url()
    r, elapsed = probe(proj, url)
    assert (r.status, r.state) == ("red", "unreachable") and "ollama serve" in r.fix
    # said once: not "unreachable at URL (unreachable at URL (Connection refused))"
    assert r.detail.startswith(f"Ollama server unreachable at {url} (")
    assert r.detail.count("unreachable") == 1
    assert elapsed < TIMEOUT_S + WARMUP_S + 1.0


def test_a_hung_server_is_wedged_after_one_warmup_retry_within_the_budget(proj):
    with OllamaStandin("hung", dim=8, hang_s=10) as ollama:
        r, elapsed = probe(proj, ollama.url)
        embeds = ollama.paths().count("/api/embed")
    assert (r.status, r.state) == ("red", "wedged") and "warm-up retry" in r.detail
    assert "ollama ps" in r.fix
    assert embeds == 2  # the first attempt and exactly one warm-up retry
    # both timeouts were waited out (a timeout never fires early); far below the 10 s hang
    assert TIMEOUT_S + WARMUP_S <= elapsed < TIMEOUT_S + WARMUP_S + 3.0


def test_a_missing_model_is_red_with_the_pull_fix(proj):
    with OllamaStandin("model_missing", dim=8) as ollama:
        r, _ = probe(proj, ollama.url)
    assert (r.status, r.state, r.fix) == ("red", "model_missing", "ollama pull nomic-embed-text")


def test_a_busy_server_is_a_note_not_an_outage(proj):
    with OllamaStandin("busy", dim=8) as ollama:
        r, _ = probe(proj, ollama.url)
    assert r.status == "note" and "busy" in r.detail


def test_a_wrong_width_is_a_dimension_mismatch_naming_both_widths(proj):
    with OllamaStandin("wrong_width", dim=8) as ollama:
        r, _ = probe(proj, ollama.url)
    assert (r.status, r.state) == ("red", "dimension_mismatch")
    assert "9-d" in r.detail and "dim = 8" in r.detail and "--rebuild" in r.fix


def test_something_that_is_not_ollama_has_its_own_state_and_fix(proj):
    with OllamaStandin("not_ollama", dim=8) as ollama:
        r, _ = probe(proj, ollama.url)
    assert (r.status, r.state) == ("red", "not_ollama") and "does not answer like" in r.detail


def test_a_fallback_whose_width_can_never_match_is_caught_from_metadata_without_loading(proj):
    with OllamaStandin("healthy", dim=8, models=["nomic-embed-text", "all-minilm"]) as ollama:
        r, _ = probe(proj, ollama.url, dim=9, fallback_model="all-minilm")
        paths = ollama.paths()
    assert (r.status, r.state) == ("red", "fallback_mismatch") and "8-d" in r.detail
    assert "/api/embed" not in paths  # read from /api/show, nothing loaded


def test_a_fallback_that_is_not_installed_is_a_fallback_mismatch(proj):
    with OllamaStandin("healthy", dim=8) as ollama:
        r, _ = probe(proj, ollama.url, fallback_model="mxbai-embed-large")
    assert (r.state, r.fix) == ("fallback_mismatch", "ollama pull mxbai-embed-large, or clear "
                                "[embedding].fallback_model")


def test_no_embedding_url_is_a_note_not_configured(proj):
    r, _ = probe(proj, "")
    assert (r.status, r.state) == ("note", "not_configured")


def test_the_gate_cli_records_the_embedding_state_and_probe_gauges(tmp_path):
    root = make_project(tmp_path / "proj")
    with OllamaStandin("cold", dim=8, load_delay_s=0.6) as ollama:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_DIM=8,
                        MEMHEALTH_EMBEDDING_TIMEOUT_S=TIMEOUT_S, MEMHEALTH_EMBEDDING_WARMUP_TIMEOUT_S=3)
        proc = run_cli("gate", "--json", "--project", root, env=env)
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "embedding_path")
    assert (check["status"], check["state"]) == ("green", "cold")
    conn = open_store(root)
    gauges = dict(conn.execute("SELECT labels, value FROM rollups WHERE metric = 'memhealth_embedding_state'"))
    warm = conn.execute("SELECT value FROM rollups WHERE metric = 'memhealth_embedding_warmup_seconds'").fetchone()
    conn.close()
    assert gauges['{"state":"cold"}'] == 1.0 and sum(gauges.values()) == 1.0 and len(gauges) == len(EMBEDDING_STATES)
    assert warm[0] >= 0.5


def test_inside_a_hook_there_is_no_warmup_retry_and_the_verdict_is_left_to_the_gate(proj):
    root, conn = proj
    with OllamaStandin("hung", dim=8, hang_s=10) as ollama:
        ev = evidence(root, conn, now=time.time(), deadline=time.monotonic() + 1.6)
        ev.cfg["embedding"].update(url=ollama.url, dim=8, timeout_s=TIMEOUT_S, warmup_timeout_s=30.0,
                                   connect_timeout_s=0.1)
        t0 = time.monotonic()
        r = embedding_path(ev)
        elapsed = time.monotonic() - t0
    # the retry was cut short by the deadline: undecided, never wedged; bounded by
    # the hook's 1.6 s deadline, not the 30 s warm-up (slack for a loaded machine)
    assert (r.status, r.state) == ("note", "cold") and elapsed < 1.6 + 3.0
    assert "undecided" in r.detail and "memhealth gate" in r.fix


def test_the_session_start_hook_never_waits_longer_than_its_gate_budget_on_a_hung_server(tmp_path):
    """A wedged server must not hold every session start for the full warm-up: inside the
    hook the gate has [gate].hook_budget_s; `memhealth gate` is where the full wait happens."""
    from tests.conftest import payload, run_hook

    root = tmp_path / "proj"
    root.mkdir()
    assert run_cli("init", "--project", str(root)).returncode == 0
    with OllamaStandin("hung", dim=8, hang_s=30) as ollama:
        env = clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_DIM="8",
                        MEMHEALTH_EMBEDDING_TIMEOUT_S="0.5", MEMHEALTH_EMBEDDING_WARMUP_TIMEOUT_S="30",
                        MEMHEALTH_GATE_HOOK_BUDGET_S="2")
        run = run_hook("session-start", payload("session-start", root, source="startup"), cwd=str(root),
                       env=env, timeout=40)
    assert run.returncode == 0
    assert run.seconds < 2 + 1.5, run.seconds  # budget + interpreter and store overhead
    text = run.context()
    assert "embedding_path" in text and ("undecided" in text or "wedged" in text)
