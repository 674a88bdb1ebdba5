"""What exists, said from the code: DO-NOT-REBUILD read from the code index on real
repositories with no hand-written memory (tests/fixtures/coderepos, scored by
tests/support/code_eval.py), its block and decision row, the precedence of hand-written memory, and
STALE-CLAIM when the code no longer has what a memory names. Every store is built by the
real `memhealth init` and `memhealth ingest` over a real git repository."""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import payload, rows, run_hook
from tests.support import code_eval


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("coderepos")
    return {name: code_eval.build_project(name, str(base)) for name in code_eval.PROJECTS}


def _scored(built, part: str, session: str) -> dict:
    results = []
    for name, root in built.items():
        results += code_eval.evaluate(root, code_eval.prompts_for(name, part=part), session=session)
    return code_eval.summary(results)


def _prompt(root: str, text: str, session: str = "s1") -> str | None:
    run = run_hook("prompt", payload("UserPromptSubmit", root, prompt=text, session_id=session), cwd=root)
    assert run.returncode == 0 and run.stderr == b"", run.stderr
    return run.context() if run.stdout else None


def _line_of(root: str, rel: str, needle: str) -> int:
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        return next(n for n, line in enumerate(fh, 1) if needle in line)


def _head(root: str) -> str:
    return code_eval.git(root, "rev-parse", "HEAD").strip()


def test_on_the_tuning_prompts_four_of_five_re_proposals_are_caught_and_none_falsely(built):
    s = _scored(built, "tuned", "tuned")
    assert s["reproposals"] == 34 and s["silent"] == 34
    assert s["recall"] >= 0.8, s
    assert s["false_dnr_blocks"] == 0 and s["false_dnr_on_silent"] == 0, s


def test_the_held_out_parts_stay_at_what_was_measured(built):
    # floors, not targets: the figures measured once each part was run, reported in
    # docs/internals/evaluation-code.md; a change that loses one fails here
    first = _scored(built, "heldout", "heldout")
    assert first["hits"] >= 11 and first["false_dnr_blocks"] == 0, first
    second = _scored(built, "heldout2", "heldout2")
    assert second["hits"] >= HELDOUT2_HITS and second["false_dnr_blocks"] <= HELDOUT2_FALSE, second


def test_a_re_proposal_by_the_words_of_a_name_cites_the_definition_its_doc_and_the_commit(built):
    root = built["starlette"]
    text = _prompt(root, "add a middleware that gzips responses")
    line = _line_of(root, "starlette/middleware/gzip.py", "class GZipMiddleware")
    head = (f'DO-NOT-REBUILD? "GZipMiddleware" already exists in the code (class at '
            f"starlette/middleware/gzip.py:{line}) — read from the code at {_head(root)[:12]}")
    assert text is not None and head in text, text
    assert "  shares: gzip, middleware (its name)" in text
    # where the docs mention it, as for an inventory entry
    assert re.search(r'^  mentioned in: docs/middleware\.md:\d+-\d+ "GZipMiddleware" \(docs\)$', text, re.M), text
    # nothing came from memory: the project has none
    assert rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory'") == [(0,)]


def test_a_written_identifier_names_its_definition_with_its_one_line_doc(built):
    root = built["chi"]
    text = _prompt(root, "write a NoCache middleware that sets the headers to stop clients caching responses")
    line = _line_of(root, "middleware/nocache.go", "func NoCache(")
    assert f'"NoCache" already exists in the code (function at middleware/nocache.go:{line})' in text, text
    assert "  definition: func NoCache(h http.Handler) http.Handler" in text
    assert re.search(r"^  doc: NoCache is a simple piece of middleware that sets a number of HTTP headers", text, re.M)


def test_the_decision_row_records_what_matched_and_why(built):
    root = built["axios"]
    _prompt(root, "create a toFormData helper that serializes nested objects into FormData", session="dr")
    [(outcome, detail)] = rows(root, "SELECT outcome, detail FROM decisions WHERE session_id = 'dr'")
    code = json.loads(detail)["code"]
    assert outcome == "injected"
    assert code["dnr"]["name"] == "toFormData" and code["dnr"]["path"] == "lib/helpers/toFormData.js"
    assert code["dnr"]["why"] == "identifier" and code["identifiers"] == ["toFormData", "FormData"]
    assert json.loads(detail)["items"][0]["block"] == "code"


def test_a_near_miss_and_new_work_get_nothing_and_the_decision_says_why(built):
    root = built["chi"]
    assert _prompt(root, "add request id fields to the support ticket form", session="nm") is None
    assert _prompt(root, "implement CSRF protection with double-submit cookies", session="nw") is None
    near = json.loads(rows(root, "SELECT detail FROM decisions WHERE session_id = 'nm'")[0][0])
    # RequestID was named, and refused: its name qualifies another noun there
    assert {"name": "RequestID", "modifier": "request id fields"}.items() <= next(
        s for s in near["code"]["code_scored"] if s["name"] == "RequestID").items(), near["code"]


def test_one_do_not_rebuild_per_session_for_the_same_component(built):
    root = built["starlette"]
    assert "GZipMiddleware" in _prompt(root, "add a middleware that gzips responses", session="cap")
    assert _prompt(root, "ok, now write that gzip middleware", session="cap") is None
    assert rows(root, "SELECT outcome FROM decisions WHERE session_id = 'cap' ORDER BY id") == [
        ("injected",), ("capped",)]


HELDOUT2_HITS = 14
HELDOUT2_FALSE = 3


def test_a_hand_written_inventory_entry_keeps_precedence_over_the_code(tmp_path):
    root = code_eval.build_project("chi", str(tmp_path))
    memory = os.path.join(root, ".memhealth", "memory")
    os.makedirs(memory, exist_ok=True)
    with open(os.path.join(memory, "nocache.md"), "w", encoding="utf-8") as fh:
        fh.write("---\nname: no-cache headers\ntype: subsystem\npath: middleware/nocache.go\n"
                 "description: the NoCache middleware sets the headers that stop clients caching responses\n---\n"
                 "NoCache sets Expires, Cache-Control, Pragma and X-Accel-Expires; extend it.\n")
    code_eval.memhealth("ingest", "--project", root, "memory")
    text = _prompt(root, "write a NoCache middleware that sets the headers to stop clients caching responses",
                   session="pre")
    assert 'DO-NOT-REBUILD? "no-cache headers" may already exist (lives in middleware/nocache.go)' in text, text
    assert "already exists in the code" not in text  # one DO-NOT-REBUILD: the curated one
    [(detail,)] = rows(root, "SELECT detail FROM decisions WHERE session_id = 'pre'")
    decided = json.loads(detail)
    assert "code" not in decided and decided["dnr"][0]["name"] == "no-cache headers", decided


def test_the_common_name_words_kept_at_ingest_decide_as_counting_them_per_prompt_does(tmp_path):
    from memory_core.delivery import exists
    from memory_core.store.db import connect, write

    root = code_eval.build_project("axios", str(tmp_path))
    prompts = code_eval.prompts_for("axios", part="tuned")
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        assert exists.common_words(conn) == {"axios"}  # the project's own prefix, and nothing else
        kept = code_eval.evaluate(root, prompts, session="kept")
        with write(conn):
            conn.execute("DELETE FROM meta WHERE key = ?", (exists.META_COMMON,))
        assert exists.common_words(conn) is None
        counted = code_eval.evaluate(root, prompts, session="counted")
    finally:
        conn.close()
    assert [r["cited"] for r in kept] == [r["cited"] for r in counted]
    assert code_eval.summary(kept)["hits"] == 10
