"""The real embedding model the suite tests meaning with: its numpy forward pass against the
published similarities, its Ollama-compatible server on loopback, and memhealth's gate and
client reading that server as a healthy 384-dim embedder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from memory_core.index.embed import EmbedError, OllamaClient
from tests.conftest import REPO, clean_env, run_cli
from tests.support import minilm
from tests.support.model_server import BUSY_BODY, ModelServer, configure_project

QUICKSTART = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]


def test_the_forward_pass_reproduces_the_sentence_transformers_quickstart(real_model):
    # sentence-transformers' quickstart for all-MiniLM-L6-v2 prints these similarities
    # (sbert.net, "Quickstart"): 0.6660, 0.1046 and 0.1411
    v = real_model.embed(QUICKSTART)
    assert v.shape == (3, 384)
    sims = v @ v.T
    assert abs(float(sims[0, 1]) - 0.6660) < 1e-4
    assert abs(float(sims[0, 2]) - 0.1046) < 1e-4
    assert abs(float(sims[1, 2]) - 0.1411) < 1e-4
    assert all(abs(float(n) - 1.0) < 1e-5 for n in (v * v).sum(axis=1))


def test_a_batch_gives_each_text_the_vector_it_gets_alone(real_model):
    # padding a batch to its longest member must not move a shorter text's vector
    alone = [real_model.embed([t])[0] for t in QUICKSTART]
    batched = real_model.embed(QUICKSTART + ["a much longer sentence " * 20])
    for a, b in zip(alone, batched, strict=False):
        assert float(a @ b) > 0.99999


def test_text_past_256_tokens_is_truncated_as_the_model_was_trained(real_model):
    long = "connection pool limits " * 200
    assert real_model.overflows(long) and real_model.tokens(long) == 256
    head = " ".join(long.split()[:300])  # still over 256 tokens: the same first 256
    assert float(real_model.embed([long])[0] @ real_model.embed([head])[0]) > 0.99999
    assert not real_model.overflows("a short sentence")


def test_the_cached_files_carry_the_pinned_hash():
    root = minilm.installed()
    if root is None:
        minilm.require_model()  # fails in CI, skips elsewhere, saying why
    assert minilm._sha256(os.path.join(root, "model.safetensors")) == minilm.SAFETENSORS_SHA256


def test_a_tampered_cache_is_not_read_as_installed(tmp_path, monkeypatch):
    root = minilm.installed()
    if root is None:
        minilm.require_model()
    fake = tmp_path / "minilm" / minilm.VERSION
    fake.mkdir(parents=True)
    for name in minilm.FILES:
        (fake / name).write_bytes(b"x")
    monkeypatch.setenv("MEMHEALTH_E2E_CACHE", str(tmp_path))
    assert minilm.installed() is None  # no VERIFIED stamp
    (fake / "VERIFIED").write_text("0" * 64 + "\n")
    assert minilm.installed() is None  # a stamp for another hash
    with pytest.raises(minilm.Unavailable, match="make real-model"):
        minilm.MiniLM.load()


def test_the_server_speaks_ollamas_embedding_api(model_server, real_model):
    client = OllamaClient(model_server.url, "all-minilm", 384, read_timeout_s=10.0)
    vectors = client.embed(QUICKSTART)
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)
    direct = real_model.embed(QUICKSTART)
    assert abs(sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True)) - float(direct[0] @ direct[1])) < 1e-6
    assert client.has_model(client.tags())
    show = client.show()
    assert show["model_info"]["bert.embedding_length"] == 384
    assert show["model_info"]["bert.context_length"] == 256
    assert client.ps()[0]["name"] == "all-minilm:latest"
    assert httpx.get(model_server.url + "/api/version").json()["version"]
    legacy = httpx.post(model_server.url + "/api/embeddings", json={"model": "all-minilm", "prompt": QUICKSTART[0]})
    assert legacy.status_code == 200 and len(legacy.json()["embedding"]) == 384
    assert client.last_response["prompt_eval_count"] == sum(real_model.tokens(t) for t in QUICKSTART)


def test_the_server_refuses_what_ollama_refuses(model_server):
    url = model_server.url
    missing = httpx.post(url + "/api/embed", json={"model": "nomic-embed-text", "input": "x"})
    assert missing.status_code == 404 and missing.json() == {"error": "model 'nomic-embed-text' not found"}
    with pytest.raises(EmbedError) as exc:
        OllamaClient(url, "nomic-embed-text", 384).embed(["x"])
    assert exc.value.reason == "model_missing"
    with pytest.raises(EmbedError) as exc:
        OllamaClient(url, "all-minilm", 768).embed(["x"])
    assert exc.value.reason == "dimension_mismatch"
    assert httpx.post(url + "/api/embed", json={"model": "all-minilm", "input": [1, 2]}).status_code == 400
    assert httpx.post(url + "/api/embed", content=b"not json").json() == {"error": "missing request body"}
    long = "word " * 400
    refused = httpx.post(url + "/api/embed", json={"model": "all-minilm", "input": long, "truncate": False})
    assert refused.status_code == 400 and "exceeds the context length" in refused.json()["error"]
    cut = httpx.post(url + "/api/embed", json={"model": "all-minilm", "input": long})
    assert cut.status_code == 200 and cut.json()["prompt_eval_count"] == 256


def test_the_server_bounds_what_one_request_may_ask(real_model):
    with ModelServer(real_model, max_body_bytes=2000, max_inputs=4, max_pending=0) as server:
        big = httpx.post(server.url + "/api/embed", json={"model": "all-minilm", "input": "x" * 5000})
        assert big.status_code == 413
        many = httpx.post(server.url + "/api/embed", json={"model": "all-minilm", "input": ["a"] * 5})
        assert many.status_code == 400 and "too many inputs" in many.json()["error"]
        busy = httpx.post(server.url + "/api/embed", json={"model": "all-minilm", "input": ["a"]})
        assert busy.status_code == 503 and busy.json() == BUSY_BODY
    with pytest.raises(ValueError, match="loopback only"):
        ModelServer(real_model, host="0.0.0.0")


def test_a_model_busy_past_the_queue_timeout_answers_503(real_model):
    with ModelServer(real_model, queue_timeout_s=0.05) as server:
        server._run.acquire()  # another batch holds the model
        try:
            with pytest.raises(EmbedError) as exc:
                OllamaClient(server.url, "all-minilm", 384, read_timeout_s=5.0).embed(["hello"])
            assert exc.value.reason == "busy"
        finally:
            server._run.release()


def test_the_gate_reads_the_real_model_server_as_healthy(project, model_server):
    configure_project(project, model_server.url)
    run = run_cli("gate", "--project", str(project), "--json")
    checks = {c["name"]: c for c in json.loads(run.stdout)["checks"]}
    assert checks["embedding_path"]["status"] == "green", checks["embedding_path"]
    assert checks["embedding_path"]["detail"].startswith("end-to-end embed OK: 384-dim"), checks["embedding_path"]


def test_the_gate_reds_a_wrong_width_and_a_missing_model_on_the_real_server(project, model_server):
    configure_project(project, model_server.url, dim=768)
    checks = {c["name"]: c for c in json.loads(run_cli("gate", "--project", str(project), "--json").stdout)["checks"]}
    assert checks["embedding_path"]["status"] == "red" and "384" in checks["embedding_path"]["detail"]
    configure_project(project, model_server.url, model="nomic-embed-text")
    checks = {c["name"]: c for c in json.loads(run_cli("gate", "--project", str(project), "--json").stdout)["checks"]}
    assert checks["embedding_path"]["status"] == "red" and "nomic-embed-text" in checks["embedding_path"]["detail"]


def test_the_server_runs_as_a_process_and_exits_when_its_parent_closes_stdin(real_model):
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.model_server", "--max-seconds", "120"],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env())
    try:
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else b"")
        vectors = OllamaClient(url, "all-minilm", 384, read_timeout_s=10.0).embed(["hello world"])
        assert len(vectors[0]) == 384
        proc.stdin.close()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
