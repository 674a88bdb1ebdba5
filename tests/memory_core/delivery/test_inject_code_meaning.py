"""A component read from the code goes through the same agreement in meaning as an inventory
entry, with the real model: the re-proposal's DO-NOT-REBUILD from the code carries its cosine
in the decision row, and a threshold it does not reach silences it. Real `memhealth init` and
`ingest` over a real repository (tests/fixtures/coderepos), the prompt hook as a subprocess."""

from __future__ import annotations

import json

import pytest

from tests.conftest import clean_env, payload, rows, run_hook
from tests.support import code_eval
from tests.support.model_server import configure_project

REPROPOSAL = "add a middleware that gzips responses"
ROOMY = {"MEMHEALTH_INJECTION_MEANING_TIMEOUT_S": "10", "MEMHEALTH_EMBEDDING_TIMEOUT_S": "30"}  # a loaded box


@pytest.fixture(scope="module")
def starlette(tmp_path_factory, model_server):
    root = code_eval.build_project("starlette", str(tmp_path_factory.mktemp("code-meaning")))
    configure_project(root, model_server.url)
    return root


def _prompt(root, session, **env):
    run = run_hook("prompt", payload("UserPromptSubmit", root, prompt=REPROPOSAL, session_id=session),
                   cwd=root, env=clean_env(**ROOMY, **env), timeout=90)
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    [(outcome, detail)] = rows(root, "SELECT outcome, detail FROM decisions WHERE session_id = ?", (session,))
    return run, outcome, json.loads(detail)


def test_a_code_component_is_delivered_with_its_cosine_in_the_decision_row(starlette):
    run, outcome, detail = _prompt(starlette, "code-agrees")
    assert outcome == "injected" and 'DO-NOT-REBUILD? "GZipMiddleware"' in run.context()
    checked = detail["meaning"]
    assert checked["status"] == "checked"
    [item] = [i for i in checked["items"] if i["block"] == "code"]
    assert item["agrees"] and item["cosine"] >= checked["threshold"] and "code_id" in item
    assert [i.get("cosine") for i in detail["items"] if i["block"] == "code"] == [item["cosine"]]


def test_a_code_component_below_the_meaning_threshold_stays_silent(starlette):
    run, outcome, detail = _prompt(starlette, "code-disagrees", MEMHEALTH_INJECTION_MEANING_THRESHOLD="0.99")
    assert run.stdout == b"" and outcome == "below_relevance"
    assert "agrees in meaning" in detail["reason"]
    assert [i["agrees"] for i in detail["meaning"]["items"] if i["block"] == "code"] == [False]
