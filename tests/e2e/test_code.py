"""What exists, said from the code, in a real Claude Code session: a real repository
(Starlette 0.46.2 from its PyPI sdist, tests/fixtures/coderepos) with no hand-written memory,
`memhealth init` and `memhealth ingest docs code`, then the real CLI against the scripted
model. Assertions read what reached the model."""

from __future__ import annotations

import os
import re

import pytest

from tests.conftest import rows
from tests.e2e.harness import Session, hook_env
from tests.e2e.messages_api import ScriptedModel
from tests.e2e.reached import hook_blocks, position, request_with
from tests.support import code_eval

REPROPOSAL = "add a middleware that gzips responses"
NEAR_MISS = "add gzip compression to the nightly database backup script"


@pytest.fixture
def starlette(tmp_path, claude_binary):
    root = code_eval.build_project("starlette", str(tmp_path), env=hook_env())
    model = ScriptedModel(log_path=str(tmp_path / "api.ndjson")).start()
    try:
        yield root, model, Session(claude_binary, root, home=tmp_path / "home", model=model)
    finally:
        model.stop()


def test_a_re_proposal_gets_do_not_rebuild_from_the_code_and_a_near_miss_nothing(starlette):
    root, model, session = starlette
    assert rows(root, "SELECT count(*) FROM chunks WHERE source = 'memory'") == [(0,)]  # no memory at all
    head = code_eval.git(root, "rev-parse", "HEAD").strip()

    run = session.run(REPROPOSAL)
    body = request_with(model.agent_requests(), REPROPOSAL)
    [block] = hook_blocks(body, "UserPromptSubmit")
    assert re.search(r'^DO-NOT-REBUILD\? "GZipMiddleware" already exists in the code \(class at '
                     rf"starlette/middleware/gzip\.py:\d+\) — read from the code at {head[:12]};", block, re.M), block
    assert "mentioned in: docs/middleware.md" in block, block
    assert position(body, REPROPOSAL) < position(body, "UserPromptSubmit hook additional context"), body
    assert rows(root, "SELECT outcome FROM decisions WHERE session_id = ?", (run.session_id,)) == [("injected",)]

    near = session.run(NEAR_MISS)
    body = request_with(model.agent_requests(), NEAR_MISS)
    assert hook_blocks(body, "UserPromptSubmit") == [], body
    # build intent, judged and refused: GZipMiddleware's "middleware" is not said
    assert rows(root, "SELECT outcome, intent FROM decisions WHERE session_id = ?", (near.session_id,)) == [
        ("below_relevance", "build")]


CODE = '"""Response compression."""\n\n\nclass GZipper:\n    """Gzips response bodies above a minimum size."""\n'
MEMORY = ("---\nname: response compression\ntype: subsystem\npath: app/compress.py\nsymbols: GZipper\n"
          "description: response bodies are gzipped by GZipper in app/compress.py\n---\n"
          "Responses above 500 bytes are gzipped by `GZipper`; extend it rather than adding a second one.\n")
STALE_PROMPT = "let's build response compression that gzips large bodies"


@pytest.fixture
def renamed(tmp_path, claude_binary):
    """A project whose memory says GZipper lives in app/compress.py, after a commit that moved
    it to app/gzipping.py and an ingest of the code."""
    root = str(tmp_path / "proj")
    os.makedirs(os.path.join(root, "app"))
    with open(os.path.join(root, "app", "compress.py"), "w", encoding="utf-8") as fh:
        fh.write(CODE)
    env = hook_env()
    code_eval.git(root, "init", "-q", "-b", "main", env=env)
    code_eval.git(root, "add", "app", env=env)
    code_eval.git(root, "commit", "-q", "-m", "compression", env=env)
    code_eval.memhealth("init", "--project", root, env=env)
    os.makedirs(os.path.join(root, ".memhealth", "memory"), exist_ok=True)
    with open(os.path.join(root, ".memhealth", "memory", "compression.md"), "w", encoding="utf-8") as fh:
        fh.write(MEMORY)
    code_eval.git(root, "mv", "app/compress.py", "app/gzipping.py", env=env)
    code_eval.git(root, "commit", "-q", "-m", "rename the compression module", env=env)
    code_eval.memhealth("ingest", "--project", root, "memory", "code", env=env)
    model = ScriptedModel(log_path=str(tmp_path / "api.ndjson")).start()
    try:
        yield root, model, Session(claude_binary, root, home=tmp_path / "home", model=model)
    finally:
        model.stop()


def test_a_memory_whose_symbol_moved_reaches_the_model_as_stale_claim_naming_the_new_place(renamed):
    root, model, session = renamed
    head = code_eval.git(root, "rev-parse", "HEAD").strip()
    session.run(STALE_PROMPT)
    [block] = hook_blocks(request_with(model.agent_requests(), STALE_PROMPT), "UserPromptSubmit")
    assert "DO-NOT-REBUILD" not in block, block
    assert ('STALE-CLAIM: "response compression" (a subsystem inventory entry) — app/compress.py no longer '
            f"exists; `GZipper` is now defined at app/gzipping.py:4 (read from the code at {head[:12]})") in block, block
