"""The Ollama client against a real stand-in server: reasons, options, guard, retries, breaker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memhealth.config import defaults
from memory_core.index import vectors
from memory_core.index.embed import (
    REASONS,
    EmbedError,
    OllamaClient,
    circuit_open,
    embedding_length,
    forget_process_state,
    log_degradation_once,
)
from memory_core.outbox.spans import Trace
from memory_core.store import db
from tests.conftest import REPO
from tests.support.ollama_standin import OllamaStandin, closed_url, vector

DIM = 8
MODEL = "nomic-embed-text"


@pytest.fixture(autouse=True)
def fresh_process_state():
    forget_process_state()
    yield
    forget_process_state()


@pytest.fixture
def ollama():
    with OllamaStandin(mode="healthy", dim=DIM, models=[MODEL]) as server:
        yield server


def client_for(url: str, read_timeout_s: float = 2.0, connect_timeout_s: float = 0.5,
               **kw) -> OllamaClient:
    return OllamaClient(url, MODEL, DIM, keep_alive="4h", num_ctx=8192,
                        connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s, **kw)



def test_healthy_server_returns_one_unit_vector_per_text_of_the_configured_width(ollama):
    vectors = client_for(ollama.url).embed(["alpha", "beta", "alpha"])
    assert [len(v) for v in vectors] == [DIM, DIM, DIM]
    assert vectors[0] == vectors[2] != vectors[1]
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-9
    assert vectors[0] == pytest.approx(vector("alpha", DIM))


def test_every_request_carries_the_same_keep_alive_and_num_ctx(ollama):
    client = client_for(ollama.url)
    client.embed(["one"])
    client.show()
    client.embed(["two", "three"])
    ollama.mode = "context_overflow"
    ollama.max_chars = 1500
    client.embed(["x" * 5000])
    ollama.mode = "legacy"
    forget_process_state()
    client.embed(["four"])
    posts = [r for r in ollama.requests if r.method == "POST" and r.body is not None]
    assert {r.path for r in posts} == {"/api/embed", "/api/embeddings", "/api/show"}
    assert len(posts) >= 6
    assert {json.dumps([r.body["keep_alive"], r.body["options"]]) for r in posts} == {
        json.dumps(["4h", {"num_ctx": 8192}])}


@pytest.mark.parametrize("mode, reason", [
    ("hung", "timeout"),
    ("model_missing", "model_missing"),
    ("busy", "busy"),
    ("wrong_width", "dimension_mismatch"),
    ("not_ollama", "malformed"),
])
def test_each_fault_mode_maps_to_its_embed_error_reason(ollama, mode, reason):
    ollama.mode = mode
    ollama.hang_s = 5.0
    with pytest.raises(EmbedError) as info:
        client_for(ollama.url, read_timeout_s=0.3).embed(["a question"])
    assert info.value.reason == reason
    assert reason in REASONS


def test_a_closed_port_is_unreachable():
    with pytest.raises(EmbedError) as info:
        client_for(closed_url()).embed(["a question"])
    assert info.value.reason == "unreachable"


@pytest.mark.parametrize("body_form", ["short", "pull"])
def test_both_model_missing_bodies_are_model_missing_and_never_fall_back_to_legacy(ollama, body_form):
    ollama.mode = "model_missing"
    ollama.missing_body = body_form
    with pytest.raises(EmbedError) as info:
        client_for(ollama.url).embed(["q"])
    assert info.value.reason == "model_missing"
    assert info.value.status == 404
    assert "not found" in info.value.body_head
    assert "/api/embeddings" not in ollama.paths()


def test_busy_error_keeps_ollamas_two_space_body_head(ollama):
    ollama.mode = "busy"
    with pytest.raises(EmbedError) as info:
        client_for(ollama.url).embed(["q"])
    assert info.value.status == 503
    assert "try again.  maximum pending requests exceeded" in info.value.body_head


def test_unconfigured_embedding_is_not_configured():
    with pytest.raises(EmbedError) as info:
        OllamaClient.from_config(defaults())
    assert info.value.reason == "not_configured"


def test_from_config_uses_hook_timeout_and_bulk_timeout_for_bulk():
    cfg = defaults()
    cfg["embedding"]["url"] = "http://127.0.0.1:11434/"
    assert OllamaClient.from_config(cfg).read_timeout_s == cfg["embedding"]["timeout_s"]
    bulk = OllamaClient.from_config(cfg, bulk=True)
    assert bulk.read_timeout_s == cfg["embedding"]["bulk_timeout_s"]
    assert bulk.url == "http://127.0.0.1:11434"


def test_wrong_width_vectors_are_refused_and_counted(ollama):
    ollama.mode = "wrong_width"
    client = client_for(ollama.url)
    with pytest.raises(EmbedError) as info:
        client.embed(["a", "b", "c"])
    assert info.value.reason == "dimension_mismatch"
    assert f"{DIM + 1}-dim" in str(info.value)
    assert client.refused == 3
    assert circuit_open(ollama.url) is None  # a config error, not an outage: reported every call


def test_context_overflow_retries_with_a_truncated_head(ollama):
    ollama.mode = "context_overflow"
    ollama.max_chars = 5000
    text = "w" * 30000
    [vec] = client_for(ollama.url).embed([text])
    sent = [len(b["input"][0]) for b in ollama.bodies("/api/embed")]
    assert sent == [30000, 24000, 12000, 6000, 3000]
    assert vec == pytest.approx(vector(text[:3000], DIM))


def test_context_overflow_below_the_smallest_head_is_reported(ollama):
    ollama.mode = "context_overflow"
    ollama.max_chars = 500
    with pytest.raises(EmbedError) as info:
        client_for(ollama.url).embed(["z" * 2000])
    assert info.value.reason == "context_overflow"
    assert [len(b["input"][0]) for b in ollama.bodies("/api/embed")] == [2000, 1500, 1000]


def test_an_old_server_without_api_embed_is_served_by_the_legacy_endpoint(ollama):
    ollama.mode = "legacy"
    client = client_for(ollama.url)
    vectors = client.embed(["a", "b"])
    assert vectors == [pytest.approx(vector("a", DIM)), pytest.approx(vector("b", DIM))]
    client.embed(["c"])  # remembered: no second probe of /api/embed
    assert ollama.paths().count("/api/embed") == 1
    assert ollama.paths().count("/api/embeddings") == 3


def test_circuit_breaker_skips_the_second_call_in_the_same_process(ollama):
    ollama.mode = "hung"
    client = client_for(ollama.url, read_timeout_s=0.3)
    with pytest.raises(EmbedError) as first:
        client.embed(["q"])
    assert first.value.reason == "timeout"
    seen = len(ollama.requests)
    with pytest.raises(EmbedError) as second:
        client_for(ollama.url).embed(["q"])
    assert second.value.reason == "circuit_open"
    assert len(ollama.requests) == seen  # skipped without a request: nothing to wait for


def test_a_new_process_retries_an_endpoint_whose_circuit_opened(ollama):
    ollama.mode = "busy"
    with pytest.raises(EmbedError):
        client_for(ollama.url).embed(["q"])
    assert circuit_open(ollama.url) is not None
    ollama.mode = "healthy"
    code = (f"from memory_core.index.embed import OllamaClient\n"
            f"print(len(OllamaClient({ollama.url!r}, {MODEL!r}, {DIM}).embed(['q'])[0]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(DIM)


def test_a_hung_server_call_costs_the_read_timeout_not_connect_plus_read(ollama):
    ollama.mode = "hung"  # hangs 30 s, then drops the connection unanswered
    with pytest.raises(EmbedError) as info:
        client_for(ollama.url, read_timeout_s=0.4, connect_timeout_s=60.0).embed(["q"])
    # connected at once, so the read timeout (0.4 s) ends it: a client that waited connect +
    # read (60.4 s) would meet the dropped connection at 30 s instead, not a timeout
    assert info.value.reason == "timeout"


def test_cold_server_answers_after_its_load_delay_and_reports_it(ollama):
    ollama.mode = "cold"
    ollama.load_delay_s = 0.3
    client = client_for(ollama.url)
    assert client.ps() == []
    client.embed(["warm me"])
    assert client.last_response["load_duration"] >= 0.25e9
    assert [m["name"] for m in client.ps()] == [MODEL]


def test_probe_calls_expose_tags_show_and_ps(ollama):
    client = client_for(ollama.url)
    models = client.tags()
    assert client.has_model(models)
    assert not client.has_model(models, "mxbai-embed-large")
    assert embedding_length(client.show()) == DIM
    ollama.mode = "model_missing"
    with pytest.raises(EmbedError) as info:
        client.show()
    assert info.value.reason == "model_missing"
    ollama.mode = "not_ollama"
    with pytest.raises(EmbedError) as info:
        client.tags()
    assert info.value.reason == "malformed"


def test_embeddings_span_follows_genai_conventions(ollama):
    trace = Trace()
    client_for(ollama.url).embed(["q"], trace=trace)
    ollama.mode = "busy"
    with pytest.raises(EmbedError):
        client_for(ollama.url).embed(["q"], trace=trace)
    ok, failed = trace.spans
    assert ok.name == f"embeddings {MODEL}" and ok.kind == "client"
    assert ok.attributes["gen_ai.operation.name"] == "embeddings"
    assert ok.attributes["gen_ai.provider.name"] == "ollama"
    assert ok.attributes["gen_ai.request.model"] == MODEL
    assert ok.attributes["gen_ai.embeddings.dimension.count"] == DIM
    assert ok.attributes["server.address"] == "127.0.0.1"
    assert ok.status_code == "unset" and ok.end_ns is not None
    assert failed.status_code == "error"
    assert failed.attributes["error.type"] == "busy"


def test_degradation_is_logged_once_per_process_and_reason(tmp_path):
    conn = db.connect(tmp_path / "memory.db")
    assert log_degradation_once(conn, "timeout", "no answer in 2s")
    assert not log_degradation_once(conn, "timeout", "again")
    assert log_degradation_once(conn, "busy")
    rows = conn.execute("SELECT component, reason, detail FROM degradations ORDER BY id").fetchall()
    assert rows == [("embedding", "timeout", "no answer in 2s"), ("embedding", "busy", "")]


def test_importing_the_client_does_not_import_httpx():
    code = "import sys, memory_core.index.embed; print('httpx' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=30)
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_embed_command_backfills_and_prints_coverage(project, cli):
    conn = db.connect(project / ".memhealth" / "memory.db")
    for i in range(5):
        conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                     "VALUES ('docs', 'a.md', ?, ?, 1)", (f"chunk {i}", str(i)))
    conn.close()
    with OllamaStandin(mode="healthy", dim=DIM) as server:
        env = {"MEMHEALTH_EMBEDDING_URL": server.url, "MEMHEALTH_EMBEDDING_DIM": DIM}
        proc = cli("embed", "--batch", "2", "--project", project, env=env)
        assert proc.returncode == 0, proc.stderr
        assert "vectors: 5/5 chunks (100.0%)" in proc.stdout
        assert len(server.bodies("/api/embed")) == 3
        server.mode = "wrong_width"
        proc = cli("embed", "--rebuild", "--project", project, env=env)
    assert proc.returncode == 1
    assert "vectors: 0/5 chunks" in proc.stdout
    assert "9-dim vectors" in proc.stderr and len(proc.stderr.splitlines()) == 1
    conn = db.connect(project / ".memhealth" / "memory.db")
    assert vectors.vec_ready(conn) and vectors.table_dim(conn) == DIM
    assert conn.execute("SELECT reason FROM degradations").fetchall() == [("dimension_mismatch",)]


def test_the_embed_command_refuses_a_width_change_without_rebuild(project, cli):
    conn = db.connect(project / ".memhealth" / "memory.db")
    vectors.ensure_vec_table(conn, DIM)
    conn.close()
    env = {"MEMHEALTH_EMBEDDING_URL": closed_url(), "MEMHEALTH_EMBEDDING_DIM": 16}
    proc = cli("embed", "--project", project, env=env)
    assert proc.returncode == 1
    assert "memhealth embed --rebuild" in proc.stderr
