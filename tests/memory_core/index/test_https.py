"""The transport rule, and the https path against a real TLS stand-in.

One call per process (hooks, gate, search) goes through memory_core.index.http; bulk embedding and
every https:// URL go through httpx. The stand-in's certificate is self-signed, made here with
the openssl CLI; the client trusts it only when told to ([embedding].ca_file), never by
turning verification off.
"""

from __future__ import annotations

import json
import ssl
import subprocess

import pytest

from memhealth.config import defaults
from memory_core.index import embed
from memory_core.index.embed import EmbedError, OllamaClient
from tests.conftest import require_binary, rows
from tests.support.ollama_standin import OllamaStandin

DIM = 8


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    """(certificate PEM path, key PEM path) for 127.0.0.1, valid for a day."""
    openssl = require_binary("openssl")
    d = tmp_path_factory.mktemp("tls")
    crt, key = d / "cert.pem", d / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(crt), "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return str(crt), str(key)


@pytest.fixture
def tls_ollama(cert):
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*cert)
    with OllamaStandin("healthy", dim=DIM, tls=ctx) as ollama:
        yield ollama
    embed.forget_process_state()


def test_the_transport_rule_small_client_for_one_call_httpx_for_bulk_and_tls():
    cfg = defaults()
    cfg["embedding"]["url"] = "http://127.0.0.1:11434"
    assert OllamaClient.from_config(cfg).transport == "small"          # hooks, gate, search
    assert OllamaClient.from_config(cfg, bulk=True).transport == "httpx"  # ingest, embed
    cfg["embedding"]["url"] = "https://ollama.example:443"
    assert OllamaClient.from_config(cfg).transport == "httpx"          # TLS, whoever calls


def test_https_with_the_ca_file_trusted_embeds_through_httpx(tls_ollama, cert):
    assert tls_ollama.url.startswith("https://127.0.0.1:")
    client = OllamaClient(tls_ollama.url, "nomic-embed-text", DIM, ca_file=cert[0])
    with client:
        vectors = client.embed(["why does the checkpoint stall"])
    assert len(vectors) == 1 and len(vectors[0]) == DIM
    assert tls_ollama.paths() == ["/api/embed"]


def test_https_with_an_untrusted_certificate_is_refused_and_says_how_to_trust_it(tls_ollama):
    client = OllamaClient(tls_ollama.url, "nomic-embed-text", DIM)  # the system store only
    with client, pytest.raises(EmbedError) as info:
        client.embed(["q"])
    assert info.value.reason == "unreachable"
    message = str(info.value)
    assert message.startswith(f"Ollama server unreachable at {tls_ollama.url} (TLS certificate not trusted")
    assert "[embedding].ca_file" in message
    assert tls_ollama.paths() == []  # the handshake failed: no request was ever read


def test_memhealth_embed_over_https_with_ca_file_from_the_config(tls_ollama, cert, project, cli):
    from memory_core.store.db import connect

    conn = connect(str(project / ".memhealth" / "memory.db"))
    with conn:
        for i in range(3):
            conn.execute("INSERT INTO chunks(source, path, content, content_hash, created_ns) "
                         "VALUES ('docs', ?, ?, ?, 0)", (f"d{i}.md", f"text {i}", f"h{i}"))
    conn.close()
    run = cli("embed", "--json", "--project", project, env={
        "MEMHEALTH_EMBEDDING_URL": tls_ollama.url, "MEMHEALTH_EMBEDDING_DIM": DIM,
        "MEMHEALTH_EMBEDDING_CA_FILE": cert[0]})
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert (out["stored"], out["with_vector"], out["chunks"], out["error"]) == (3, 3, 3, None)
    assert tls_ollama.paths() == ["/api/embed"]  # one batch
    assert rows(project, "SELECT count(*) FROM degradations") == [(0,)]


def test_one_plain_http_call_never_imports_httpx_and_bulk_work_does(tmp_path):
    """The rule, observed in a fresh interpreter: what a process imports, not a flag."""
    import sys

    from tests.conftest import REPO

    code = ("import sys\n"
            "from memhealth.config import defaults\n"
            "from memory_core.index.embed import OllamaClient\n"
            "cfg = defaults(); cfg['embedding'].update(url=sys.argv[1], dim=8)\n"
            "with OllamaClient.from_config(cfg, bulk=sys.argv[2] == 'bulk') as client:\n"
            "    assert len(client.embed(['q'])[0]) == 8\n"
            "print('httpx' in sys.modules)\n")
    with OllamaStandin("healthy", dim=DIM) as ollama:
        seen = {mode: subprocess.run([sys.executable, "-c", code, ollama.url, mode], cwd=REPO,
                                     capture_output=True, text=True, timeout=60)
                for mode in ("one", "bulk")}
    for mode, proc in seen.items():
        assert proc.returncode == 0, (mode, proc.stderr)
    assert seen["one"].stdout.strip() == "False"
    assert seen["bulk"].stdout.strip() == "True"


def test_the_session_end_hook_hands_bulk_work_to_its_worker_and_imports_no_httpx(project):
    """session-end records the boundary and spawns the capture worker (which ingests and
    embeds in bulk, over httpx): the hook itself neither ingests nor imports httpx."""
    import json as _json

    from tests.conftest import clean_env, memhealth_cmd, payload

    (project / "README.md").write_text("# Notes\n\nThe compactor folds snapshot streams.\n")
    with OllamaStandin("healthy", dim=DIM) as ollama:
        proc = subprocess.run(memhealth_cmd() + ["hook", "session-end"],
                              input=_json.dumps(payload("SessionEnd", project, reason="exit")).encode(),
                              cwd=str(project), capture_output=True, timeout=60,
                              env=clean_env(MEMHEALTH_EMBEDDING_URL=ollama.url, MEMHEALTH_EMBEDDING_DIM=DIM,
                                            MEMHEALTH_INGEST_GIT="false", PYTHONPROFILEIMPORTTIME="1"))
    assert proc.returncode == 0
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert "memhealth.hooks" in loaded  # the measurement saw the hook path
    assert "memory_core.ingest" not in loaded
    assert not [m for m in loaded if m.split(".")[0] == "httpx"]
