"""The semantic cue trigger's threshold is the model's: all-minilm's, measured on labeled
pairs (benchmarks/bench_cue_threshold.py), and the conservative 0.75 for a model nobody
measured; `[injection].semantic_cue_min_cosine` overrides both. With the real model behind
its Ollama-compatible server, a paraphrase of a cue's query fires through the real prompt
hook and a prompt on the same topic does not."""

from __future__ import annotations

import pytest

from memhealth.config import ConfigError, defaults, load
from memory_core.delivery import cue_semantic as cues
from tests.conftest import clean_env, payload, rows, run_cli, run_hook
from tests.support.model_server import configure_project

# a tuned pair of tests/fixtures/semantic-cues/pairs.jsonl (c00): all-minilm puts the
# paraphrase at cosine 0.57 to the query and the same-topic prompt at 0.40
QUERY = "the WAL checkpoint stalls every append while it runs"
PARAPHRASE = "why do appends freeze whenever the write-ahead log is checkpointed?"
SAME_TOPIC = "how big may the WAL file grow before sqlite truncates it?"


def _cfg(model: str, override: float = 0.0) -> dict:
    cfg = defaults()
    cfg["embedding"]["model"] = model
    cfg["injection"]["semantic_cue_min_cosine"] = override
    return cfg


def test_the_threshold_is_the_one_measured_for_the_model_and_the_conservative_one_otherwise():
    for name in ("all-minilm", "all-minilm:latest", "ALL-MINILM", "all-minilm:22m"):
        assert cues.semantic_min_cosine(_cfg(name)) == 0.448, name
    # another model (the default nomic-embed-text, all-minilm's 12-layer tag) was not measured
    for name in ("nomic-embed-text", "all-minilm:33m", "mxbai-embed-large"):
        assert cues.semantic_min_cosine(_cfg(name)) == cues.SEMANTIC_MIN_COSINE == 0.75, name
    assert cues.semantic_min_cosine(_cfg("nomic-embed-text", 0.6)) == 0.6
    assert cues.semantic_min_cosine(_cfg("all-minilm", 0.9)) == 0.9


def test_a_threshold_outside_zero_to_one_is_refused_with_the_key_named(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[injection]\nsemantic_cue_min_cosine = 1.5\n")
    with pytest.raises(ConfigError, match=r"\[injection\]\.semantic_cue_min_cosine: 1\.5 is outside 0\.0\.\.1\.0"):
        load(str(tmp_path), environ={})


def _cue_project(project, url: str):
    directory = project / ".memhealth" / "memory"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "wal.md").write_text(f"---\nname: wal-stall\nsemantic: {QUERY}\n---\n"
                                      "Move that work to the idle loop; see the storage notes.\n")
    configure_project(str(project), url)
    proc = run_cli("ingest", "memory", "--project", str(project), env=clean_env())
    assert proc.returncode == 0, proc.stderr


def _cued(project, text: str, session: str, **env) -> bool:
    """Whether the prompt hook delivered the cue as a cue (framed `- [kind] name (path...`)."""
    run = run_hook("prompt", payload("UserPromptSubmit", project, session_id=session, prompt=text),
                   cwd=str(project), env=clean_env(MEMHEALTH_EMBEDDING_TIMEOUT_S="30", **env), timeout=120)
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    return "] wal-stall (.memhealth/memory/wal.md" in (run.context() if run.stdout else "")


def test_with_the_real_model_a_paraphrase_fires_and_a_same_topic_prompt_does_not(project, model_server):
    _cue_project(project, model_server.url)
    assert _cued(project, PARAPHRASE, "para")
    assert not _cued(project, SAME_TOPIC, "topic")
    # at the old constant the paraphrase stays silent: the per-model threshold is what fires it
    assert not _cued(project, PARAPHRASE, "old", MEMHEALTH_INJECTION_SEMANTIC_CUE_MIN_COSINE="0.75")
    audit = rows(project, "SELECT session_id, outcome, coalesce(reason, ''), detail FROM cue_audit "
                          "WHERE trigger = 'semantic' ORDER BY id")
    by_session = {a[0]: a for a in audit}
    assert by_session["para"][1] == "fired" and by_session["para"][3].startswith(QUERY[:40])
    cos_para = float(by_session["para"][3].rsplit("cos ", 1)[1])
    assert 0.448 <= cos_para < 0.75
    assert by_session["topic"][1:3] == ("skipped", "no_match") and by_session["topic"][3].endswith("< 0.448")
    assert by_session["old"][1:3] == ("skipped", "no_match") and by_session["old"][3].endswith("< 0.75")
