"""Hook payloads as the real Claude Code CLI sent them (tests/fixtures/payloads/*.json,
captured by tests/e2e/test_full_session.py), for the unit tests of the hooks.

    p = real_payload("post_tool_use_read", project)          # paths moved into `project`
    p = real_payload("user_prompt_submit", project, prompt="should we rebuild the ingest?")

The fixtures are scrubbed: the test's project directory reads `/home/dev/ledger-service`
and its isolated HOME `/home/dev`; real_payload() puts the caller's directories back.
"""

from __future__ import annotations

import json
import os
import re

PAYLOAD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "payloads")
SCRUB_HOME = "/home/dev"
SCRUB_PROJECT = "/home/dev/ledger-service"


def slug(path: str) -> str:
    """Claude Code's transcript directory name for a project path."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _replace(value, pairs):
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _replace(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, pairs) for v in value]
    return value


def scrub(payload: dict, project: str, home: str, extra: tuple = ()) -> dict:
    """The payload with the test's directories replaced by the placeholders."""
    return _replace(payload, [*extra, (project, SCRUB_PROJECT), (slug(project), slug(SCRUB_PROJECT)),
                              (home, SCRUB_HOME)])


def payload_name(payload: dict) -> str:
    """session_start_startup, user_prompt_submit, pre_tool_use_read, ..., session_end."""
    event = payload.get("hook_event_name", "")
    name = re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()
    if event == "SessionStart":
        return f"{name}_{payload.get('source')}"
    if event in ("PreToolUse", "PostToolUse"):
        return f"{name}_{str(payload.get('tool_name', '')).lower()}"
    return name


def shape(value):
    """Keys and value types, recursively: what a new CLI version may change."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def real_payload(name: str, project, home=None, **overrides) -> dict:
    """A captured payload with its paths moved into `project` (and `home`), fields overridden."""
    with open(os.path.join(PAYLOAD_DIR, f"{name}.json"), encoding="utf-8") as fh:
        payload = json.load(fh)
    project = os.path.abspath(str(project))
    home = os.path.abspath(str(home)) if home is not None else os.path.join(os.path.dirname(project), "home")
    payload = _replace(payload, [(SCRUB_PROJECT, project), (slug(SCRUB_PROJECT), slug(project)),
                                 (SCRUB_HOME, home)])
    payload.update(overrides)
    return payload
