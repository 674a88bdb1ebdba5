"""Agreement in meaning before memory speaks, with the real model (all-MiniLM-L6-v2 behind its
Ollama-compatible server on loopback) and the real corpus: a near miss that shares an
inventory entry's words but means another system stays silent, a re-proposal is delivered,
and both decision rows carry the cosine and its threshold beside the IDF arithmetic. The
prompt hook runs as a real subprocess with JSON on stdin."""

from __future__ import annotations

import json

import pytest

from memory_core.delivery import meaning
from tests.conftest import clean_env, payload, rows, run_hook
from tests.support import dnr_eval
from tests.support.model_server import configure_project
from tests.support.ollama_standin import OllamaStandin, closed_url

NEAR_MISS = "add a static files bucket on S3 with CloudFront for the marketing site's images"
# the near miss names its target ("the marketing site's images"): the target check holds it
# before the meaning gate is asked (tests/memory_core/delivery/test_inject_target.py); these tests are the gate's
GATE_ALONE = {"MEMHEALTH_INJECTION_FOREIGN_TARGET": "off"}
REPROPOSAL = "implement background tasks that run after the response has been sent"
# said in other words than the entry's: no rare word of "Session objects" in it
PATIENT = {"embedding": {"timeout_s": 60.0}, "hooks": {"timeout_s": 600}}
OTHER_WORDS = "create a wrapper that persists cookies and default headers across calls to the same API"


@pytest.fixture(scope="module")
def stores(tmp_path_factory, model_server):
    base = str(tmp_path_factory.mktemp("meaning"))
    return {name: dnr_eval.build_project(name, base, embedding_url=model_server.url)
            for name in ("starlette", "requests")}


def _decision(root, session):
    [(outcome, detail)] = rows(root, "SELECT outcome, detail FROM decisions WHERE session_id = ? AND hook = 'prompt'",
                               (session,))
    return outcome, json.loads(detail)


# the corpus stores no vectors (embedding all of it takes minutes on a loaded box): an offered
# item is embedded with the prompt, so these hooks get more than the hook-path second
ROOMY = {"MEMHEALTH_INJECTION_MEANING_TIMEOUT_S": "5", "MEMHEALTH_EMBEDDING_TIMEOUT_S": "5"}


def _prompt(root, text, session, **env):
    run = run_hook("prompt", payload("prompt", root, prompt=text, session_id=session), cwd=root,
                   env=clean_env(**env), timeout=60)
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    return run


def test_a_near_miss_stays_silent_and_a_reproposal_is_delivered_both_with_the_cosine_in_the_decision_row(stores):
    root = stores["starlette"]
    # the rare-word cascade alone reads the near miss as the static files entry
    lexical = _prompt(root, NEAR_MISS, "lexical-near", MEMHEALTH_INJECTION_MEANING="off", **ROOMY, **GATE_ALONE)
    assert 'DO-NOT-REBUILD? "static files"' in lexical.context()

    silent = _prompt(root, NEAR_MISS, "meaning-near", **ROOMY, **GATE_ALONE)
    assert silent.stdout == b""
    outcome, detail = _decision(root, "meaning-near")
    assert outcome == "below_relevance" and "agrees in meaning" in detail["reason"]
    assert detail["dnr"][0]["name"] == "static files" and detail["dnr"][0]["idf_sum"] > 0  # the IDF arithmetic
    m = detail["meaning"]
    assert m["status"] == "checked" and m["threshold"] == 0.355 and m["model"] == "all-minilm"
    [item] = m["items"]
    assert item["block"] == "dnr" and item["agrees"] is False and item["cosine"] < m["threshold"]

    spoke = _prompt(root, REPROPOSAL, "meaning-repro", **ROOMY)
    assert 'DO-NOT-REBUILD? "background tasks"' in spoke.context()
    outcome, detail = _decision(root, "meaning-repro")
    assert outcome == "injected"
    [item] = detail["meaning"]["items"]
    assert item["agrees"] is True and item["cosine"] >= detail["meaning"]["threshold"]
    assert detail["items"][0]["cosine"] == item["cosine"] and detail["items"][0]["idf_sum"] == detail["idf_sum"]


def test_a_prompt_no_block_would_answer_costs_no_embedding_call(stores, model_server):
    root = stores["starlette"]
    before = model_server.requests
    run = _prompt(root, "add a dark mode toggle to the documentation theme", "quiet", **ROOMY)
    assert run.stdout == b""
    outcome, detail = _decision(root, "quiet")
    assert outcome == "below_relevance" and "meaning" not in detail
    assert model_server.requests == before


def test_meaning_off_is_the_bm25_only_cascade(stores, model_server):
    root = stores["starlette"]
    prompts = dnr_eval.prompts_for("starlette")
    off = dnr_eval.evaluate(root, prompts, {"meaning": "off"}, session="off")
    configure_project(root, "")  # BM25-only: no [embedding].url at all
    try:
        bm25 = dnr_eval.evaluate(root, prompts, session="bm25")
    finally:
        configure_project(root, model_server.url)
    assert [(r["id"], r["outcome"], r["text"]) for r in off] == [(r["id"], r["outcome"], r["text"]) for r in bm25]
    assert not any("meaning" in (r.get("detail") or {}) for r in off + bm25)


def test_a_dead_server_keeps_the_lexical_decision_and_is_logged_once_per_process(tmp_path):
    root = dnr_eval.build_project("starlette", str(tmp_path))
    configure_project(root, closed_url())
    got = dnr_eval.evaluate(root, [{"id": "a", "label": "reproposal", "prompt": REPROPOSAL},
                                   {"id": "b", "label": "reproposal", "prompt": NEAR_MISS}],
                           {"foreign_target": "off"}, session="dead")
    assert [r["dnr"] for r in got] == [["background tasks"], ["static files"]]  # the lexical decision
    assert got[0]["detail"]["meaning"] == {"threshold": 0.355, "model": "all-minilm", "status": "degraded",
                                           "reason": "unreachable"}
    assert got[1]["detail"]["meaning"]["reason"] == "circuit_open"  # the breaker: no second attempt
    assert rows(root, "SELECT reason FROM degradations WHERE component = 'meaning'") == [("unreachable",)]


def test_a_hung_server_costs_the_hook_its_bounded_wait_not_the_hook_timeout(tmp_path):
    root = dnr_eval.build_project("starlette", str(tmp_path))
    with OllamaStandin(mode="hung", hang_s=60, dim=384, models=["all-minilm"]) as hung:
        configure_project(root, hung.url, timeout_s=0.3)
        run = _prompt(root, REPROPOSAL, "hung")  # run_hook's own 60 s bound would fail the test
    assert 'DO-NOT-REBUILD? "background tasks"' in run.context()
    _outcome, detail = _decision(root, "hung")
    assert detail["meaning"]["status"] == "degraded" and detail["meaning"]["reason"] == "timeout"
    assert rows(root, "SELECT count(*) FROM degradations WHERE component = 'meaning'") == [(1,)]


def test_the_timeout_is_bounded_by_the_client_and_the_hook():
    cfg = {"injection": {"meaning_timeout_s": 5.0}, "embedding": {"timeout_s": 2.0}, "hooks": {"timeout_s": 4}}
    assert meaning.timeout_s(cfg) == 1.0  # a quarter of the hook's 4 s
    cfg["hooks"]["timeout_s"] = 600
    assert meaning.timeout_s(cfg) == 2.0  # the client's hook-path timeout
    cfg["injection"]["meaning_timeout_s"] = 0.5
    assert meaning.timeout_s(cfg) == 0.5


# Since intent reads requests by their grammar and small stores get a rarity floor, the
# lexical cascade itself catches OTHER_WORDS; this one it still misses, and its cosine to the
# entry is below the rescue threshold (measured: the rescue's held-out gain was on prompts the
# lexical cascade now catches)
LEXICAL_MISS = "write a helper that keeps login state and common headers for a series of calls to one server"


def test_a_reproposal_in_other_words_passes_the_gate_and_a_rescue_is_asked_only_when_on(stores, model_server):
    root = stores["requests"]
    caught = dnr_eval.evaluate(root, [{"id": "x", "label": "reproposal", "prompt": OTHER_WORDS}],
                               {"meaning_timeout_s": 10.0}, PATIENT, session="r-caught")[0]
    assert caught["dnr"] == ["Session objects"], json.dumps(caught["detail"])
    assert caught["detail"]["meaning"]["status"] == "checked" and "rescue" not in caught["detail"]["meaning"]
    before = model_server.requests
    off = dnr_eval.evaluate(root, [{"id": "x", "label": "reproposal", "prompt": LEXICAL_MISS}], session="r-off")[0]
    assert off["dnr"] == [] and "meaning" not in off["detail"]  # silent, and nothing was asked
    assert model_server.requests == before
    on = dnr_eval.evaluate(root, [{"id": "x", "label": "reproposal", "prompt": LEXICAL_MISS}],
                           {"meaning_rescue": "on", "meaning_timeout_s": 10.0}, PATIENT, session="r-on")[0]
    rescue = on["detail"]["meaning"]
    assert model_server.requests > before and rescue["status"] == "checked", json.dumps(on["detail"])
    assert rescue["rescue_threshold"] == 0.503 and "rescued" not in rescue
    assert on["dnr"] == [] and all(b["cosine"] < 0.503 for b in rescue["best"])  # never below its bar


def test_an_item_with_a_stored_vector_is_not_embedded_again(project, model_server):
    memory = project / ".memhealth" / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "retries.md").write_text(
        "---\nname: retry policy\ntype: subsystem\npath: src/retry.py\ndescription: the HTTP adapter retries "
        "failed requests with exponential backoff and a status_forcelist\n---\nRetries live in src/retry.py: "
        "max_retries with a urllib3 Retry object, backoff_factor, status_forcelist for 429 and 503.\n")
    (project / "src").mkdir()
    (project / "src" / "retry.py").write_text("# retries\n")
    configure_project(project, model_server.url)
    from tests.conftest import run_cli

    ingest = run_cli("ingest", "--project", str(project), timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    assert rows(project, "SELECT count(*) FROM chunk_vectors")[0][0] >= 1
    run = _prompt(str(project), "implement retries with exponential backoff and a status_forcelist", "stored", **ROOMY)
    assert 'DO-NOT-REBUILD? "retry policy"' in run.context()
    _outcome, detail = _decision(str(project), "stored")
    assert [i["vector"] for i in detail["meaning"]["items"]] == ["stored"]


def test_a_dead_end_and_a_lineage_block_go_through_the_same_gate(tmp_path, model_server):
    from tests.memory_core.delivery.test_inject_dead_end import (
        DEAD,
        REPROPOSE,
        decide,
        project,
        render_record,
    )

    root = project(tmp_path, {"dead_end-7-wal.md": render_record(DEAD, "2026-11-30T22:00:00Z")})
    configure_project(root, model_server.url, timeout_s=5.0)
    from tests.support.gate_fix_helpers import set_config

    set_config(root, "injection", "meaning_timeout_s", 10.0)  # the items are embedded now, on a loaded box
    dead = decide(root, REPROPOSE)
    assert dead.outcome == "injected" and dead.text.count("DEAD-END: ") == 1, dead.detail
    [item] = dead.detail["meaning"]["items"]
    assert item["block"] == "dead_end" and item["agrees"] and item["cosine"] >= 0.355
    assert dead.detail["items"][0]["cosine"] == item["cosine"]
    lineage = decide(root, "How does the WAL checkpoint inside append() work?", "investigation", session="s2")
    blocks = {i["block"] for i in lineage.detail["meaning"]["items"]}
    assert blocks == {"thread"} and lineage.detail["meaning"]["status"] == "checked"
    kept = [i for i in lineage.detail["meaning"]["items"] if i["agrees"]]
    assert lineage.outcome == "injected" and kept
    assert [i["chunk_id"] for i in lineage.detail["items"]] == [i["chunk_id"] for i in kept][:2]
