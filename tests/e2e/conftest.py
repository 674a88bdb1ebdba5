"""Fixtures for the end-to-end tests: the real Claude Code CLI (installed once into a cache),
a sample project set up by the real `memhealth init`, an isolated HOME, the scripted model.

Without npm (or without the network the first time) the suite skips and says why; with
CI=true it fails instead: CI must run it."""

from __future__ import annotations

import os

import pytest

from tests.e2e.claude_cli import Unavailable, install, installed_version
from tests.e2e.harness import (
    SampleProject,
    Session,
    completed_heartbeats,
    expected_heartbeats,
    settled_capture_outcomes,
)
from tests.e2e.messages_api import ScriptedModel


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def claude_binary() -> str:
    try:
        binary = install()
        installed_version(binary)  # the binary runs here, not only exists
    except Unavailable as exc:
        if _in_ci():
            pytest.fail(f"CI must run the end-to-end tests: {exc}")
        pytest.skip(f"end-to-end tests need the Claude Code CLI: {exc}")
    return binary


class E2E:
    """One test's world: the project, the scripted model, a CLI session runner."""

    def __init__(self, project: SampleProject, model: ScriptedModel, session: Session):
        self.project = project
        self.model = model
        self.session = session

    def run(self, prompt: str, script=(), **kw):
        self.model.extend(list(script))
        return self.session.run(prompt, **kw)

    def assert_every_event_heartbeated(self) -> None:
        """Every event the CLI fired that init wired left exactly one completed ok heartbeat."""
        expected = expected_heartbeats(self.project.payloads())
        assert expected, "the CLI fired no event"
        assert completed_heartbeats(self.project.db_path) == expected
        ends = sum(p["hook_event_name"] == "SessionEnd" for p in self.project.payloads())
        if ends:
            # each SessionEnd hands capture and ingest to a detached worker: it ran, and finished ok
            outcomes = settled_capture_outcomes(self.project.db_path, at_least=ends)
            assert sum(outcomes.values()) >= ends and set(outcomes) == {"ok"}, outcomes


def make_world(binary: str, base, log_name: str = "api.ndjson", extra: dict[str, str] | None = None):
    project = SampleProject.create(base / "proj", capture_dir=base / "payloads", extra=extra)
    model = ScriptedModel(log_path=str(base / log_name)).start()
    return E2E(project, model, Session(binary, project.root, home=base / "home", model=model))


@pytest.fixture
def e2e(tmp_path, claude_binary):
    world = make_world(claude_binary, tmp_path)
    try:
        yield world
    finally:
        world.model.stop()
