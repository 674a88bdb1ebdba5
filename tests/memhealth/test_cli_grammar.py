"""One CLI grammar: real subparsers for sub-actions, `--limit` for result size, one JSON shape
(an object with a version key, on one line) from every command that reports, errors as that
object too under `--json`, and a grouped `--help` with examples."""

from __future__ import annotations

import argparse
import json

import pytest

from memhealth.cli import COMMANDS, GROUPS, build_parser
from tests.conftest import run_cli


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("# Notes\n\nThe checkpoint guard lives in the writer.\n")
    assert run_cli("init", "--project", str(root)).returncode == 0
    assert run_cli("ingest", "--project", str(root)).returncode == 0
    return root


def one_object(proc) -> dict:
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    data = json.loads(lines[0])
    assert isinstance(data, dict) and data["version"] == 1, data
    return data


@pytest.mark.parametrize("args", [
    ["gate"], ["ingest"], ["search", "checkpoint"], ["report"], ["report", "--ablation"],
    ["triage"], ["triage", "list", "--all"], ["cues"], ["cues", "audit"], ["ablation", "status"],
    ["inventory"], ["inventory", "list"], ["init"], ["init", "--unregister"],
])
def test_every_reporting_command_prints_one_versioned_object_under_json(project, args):
    proc = run_cli(*args, "--json", "--project", str(project), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr  # gate exits 1 on a RED; a verdict still
    one_object(proc)


@pytest.mark.parametrize("args", [
    ["gate"], ["ingest"], ["search", "checkpoint"], ["report"], ["report", "--ablation"], ["triage"],
    ["cues"], ["cues", "audit"], ["ablation", "status"], ["export", "--once"], ["embed"],
    ["remember", "the writer owns the checkpoint", "--path", "README.md"], ["inventory"],
    ["init"], ["init", "--dry-run", "--no-templates"], ["init", "--unregister"],
])
def test_every_json_field_a_command_prints_is_in_the_json_reference(project, args):
    from memhealth.cliutil import JSON_FIELDS

    data = one_object(run_cli(*args, "--json", "--project", str(project), timeout=120))
    documented = set(JSON_FIELDS[args[0]]) | set(JSON_FIELDS["(every command, on error)"]) | {"version"}
    assert set(data) - documented == set(), f"document these in JSON_FIELDS[{args[0]!r}]"


def test_lists_come_as_named_fields_of_the_object(project):
    assert one_object(run_cli("triage", "--json", "--project", str(project)))["candidates"] == []
    assert one_object(run_cli("cues", "--json", "--project", str(project)))["cues"] == []
    assert one_object(run_cli("ablation", "status", "--json", "--project", str(project)))["schedule"] is None


@pytest.mark.parametrize("args, code", [
    (["search", "   "], 2),                       # a usage error the command raises
    (["triage", "confirm", "999"], 1),            # an error of the library below it
    (["ablation", "stop"], 1),                    # a refusal: nothing running
    (["init", "--settings", "shared", "--transport", "http"], 2),  # init's own refusal
])
def test_errors_under_json_are_the_same_object_with_the_exit_code(project, args, code):
    proc = run_cli(*args, "--json", "--project", str(project))
    assert proc.returncode == code
    error = one_object(proc)["error"]
    assert error["exit"] == code and error["message"] and proc.stderr == ""


def test_limit_is_the_result_size_flag_and_k_still_works(project):
    new = one_object(run_cli("search", "checkpoint", "--limit", "1", "--json", "--project", str(project)))
    old = one_object(run_cli("search", "checkpoint", "--k", "1", "--json", "--project", str(project)))
    assert new["limit"] == old["limit"] == 1 and len(new["hits"]) <= 1
    assert run_cli("cues", "audit", "--limit", "5", "--project", str(project)).returncode == 0


def test_shared_options_work_before_and_after_a_sub_action(project):
    before = run_cli("cues", "--json", "audit", "--project", str(project))
    after = run_cli("cues", "audit", "--json", "--project", str(project))
    assert one_object(before) == one_object(after)


def test_commands_with_sub_actions_use_real_subparsers():
    parser = build_parser()
    subs = {name: sub for name, sub in parser._subparsers._group_actions[0].choices.items()}
    for name, actions in {"triage": {"list", "confirm", "reject", "retitle", "merge"},
                          "ablation": {"start", "status", "stop"}, "cues": {"list", "audit"}}.items():
        found = [a for a in subs[name]._actions if isinstance(a, argparse._SubParsersAction)]
        assert found and set(found[0].choices) == actions, name
    assert not any(a.dest == "words" for a in subs["triage"]._actions)  # no hand-parsed actions


def test_a_missing_or_unknown_sub_action_is_a_usage_error(project):
    assert run_cli("ablation", "--project", str(project)).returncode == 2
    assert run_cli("triage", "bogus", "--project", str(project)).returncode == 2
    assert run_cli("ablation", "status", "gate-off", "--project", str(project)).returncode == 2


def test_the_top_level_help_groups_every_command_once_and_shows_examples():
    grouped = [name for _group, names in GROUPS for name in names]
    assert sorted(grouped) == sorted(COMMANDS) and len(grouped) == len(set(grouped))
    out = run_cli("--help").stdout
    assert "commands by use:" in out and "examples:" in out
    for group, names in GROUPS:
        assert f"{group}:" in out and ", ".join(names) in out
