"""The CLI surface: every command has help; the hook path stays cheap to import."""

from __future__ import annotations

import json

import pytest

from memhealth.cli import COMMANDS, build_parser, main
from memhealth.cliutil import PROJECT_HELP
from tests.conftest import clean_env, memhealth_cmd, payload, run_cli


def available_commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_in_the_table_is_registered_with_help_text(name, capsys):
    choices = available_commands()
    assert list(choices) == COMMANDS
    assert choices[name].description and len(choices[name].description) > 20
    with pytest.raises(SystemExit) as info:
        main([name, "--help"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith(f"usage: memhealth {name}")


@pytest.mark.parametrize("name", COMMANDS)
def test_a_one_command_parser_parses_and_helps_as_the_whole_table_does(name):
    """`memhealth NAME ...` registers only NAME's subparser: the same help, the same defaults."""
    def sub(parser):
        return next(a for a in parser._actions if a.dest == "command").choices

    alone, whole = sub(build_parser(name)), sub(build_parser())
    assert list(alone) == [name]
    assert alone[name].format_help() == whole[name].format_help()
    assert [a.dest for a in alone[name]._actions] == [a.dest for a in whole[name]._actions]


def test_a_one_command_run_imports_no_other_command_module():
    import subprocess
    import sys

    probe = ("import sys; from memhealth.cli import build_parser; build_parser('gate'); "
             "print(sorted(m for m in sys.modules if m.startswith('memhealth.cmd_')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "['memhealth.cmd_gate']"), out.stderr


def test_help_through_the_installed_entry_point():
    proc = run_cli("gate", "--help")
    assert proc.returncode == 0 and "usage: memhealth gate" in proc.stdout


def test_a_command_module_that_is_missing_fails_loudly(monkeypatch):
    import memhealth.cli as cli

    monkeypatch.setattr(cli, "COMMANDS", [*COMMANDS, "vanished"])
    with pytest.raises(ModuleNotFoundError, match="memhealth.cmd_vanished"):
        cli.build_parser()


@pytest.mark.parametrize("argv, complaint", [
    (["serve", "--allow"], "unrecognized arguments: --allow"),  # never a prefix of --allow-remote
    (["search", "x", "--js"], "unrecognized arguments: --js"),
    (["embed", "--batch", "0"], "argument --batch: must be positive, not 0"),
    (["search", "x", "--k", "0"], "argument --limit/--k: must be positive, not 0"),
    (["ingest", "--budget-s", "-1"], "argument --budget-s: must be positive, not -1"),
    (["report", "--days", "nan"], "argument --days: 'nan' is not a finite number"),
    (["embed", "--batch", "many"], "argument --batch: 'many' is not a number"),
])
def test_usage_errors_exit_2_before_anything_runs(argv, complaint, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert complaint in capsys.readouterr().err


def test_an_empty_search_query_is_a_usage_error(project, cli):
    run = cli("search", "  ", "--project", project)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith("memhealth search: QUERY is empty")


def test_project_help_says_the_nearest_memhealth_directory_is_used():
    for name, sub in available_commands().items():
        action = next((a for a in sub._actions if a.dest == "project"), None)
        if action is None:
            continue
        if name == "init":  # init sets up the directory it is given; it does not look upward
            assert action.default == "." and "directory to set up" in action.help
            continue
        assert action.default is None and action.help == PROJECT_HELP, name
        assert "(default: .)" not in action.help


def test_project_is_found_from_a_subdirectory(project, cli, monkeypatch):
    sub = project / "src" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    run = cli("report", "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["window"]["days"] == 7.0
    assert cli("search", "anything", "--project", sub).returncode == 0


def test_a_project_directory_that_does_not_exist_is_exit_2(tmp_path, cli):
    run = cli("report", "--project", tmp_path / "nope")
    assert run.returncode == 2
    assert run.stderr.strip() == f"memhealth report: --project {tmp_path / 'nope'}: no such directory"


def test_every_packages_error_base_is_one_line_not_a_traceback():
    import importlib
    import inspect

    from memhealth.cli import caught_errors

    caught = caught_errors()
    for package in ("memhealth", "memory_core", "probes", "telemetry"):
        module = importlib.import_module(f"{package}.errors")
        assert module.__doc__ and "└──" in module.__doc__, package  # the tree, drawn
        bases = [cls for _n, cls in inspect.getmembers(module, inspect.isclass)
                 if cls.__module__ == module.__name__ and Exception in cls.__bases__]
        assert len(bases) == 1, (package, bases)
        assert issubclass(bases[0], caught), package


HEAVY = ("httpx", "prometheus_client", "opentelemetry", "argparse", "tomllib", "sqlite_vec", "grpc", "mcp",
         "tree_sitter", "tree_sitter_language_pack")


@pytest.mark.parametrize("prompt", ["thanks, looks good", "<task-notification>\n<task-id>x</task-id>"])
def test_the_prompt_hook_on_a_non_intent_prompt_imports_nothing_heavy(project, prompt):
    import subprocess

    # warm the config cache the way a real session does after its first hook
    subprocess.run(memhealth_cmd() + ["hook", "stop"], input=json.dumps(payload("stop", project)).encode(),
                   cwd=str(project), env=clean_env(), capture_output=True, timeout=30)
    proc = subprocess.run(memhealth_cmd() + ["hook", "prompt"],
                          input=json.dumps(payload("prompt", project, prompt=prompt)).encode(),
                          cwd=str(project), env=clean_env(PYTHONPROFILEIMPORTTIME="1"),
                          capture_output=True, timeout=30)
    assert proc.returncode == 0
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert "memhealth.hooks" in loaded  # the measurement saw the hook path
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    # the import budget: growing the hook path means changing this list on purpose
    ours = {m for m in loaded if m.split(".")[0] in ("memhealth", "memory_core", "probes", "telemetry")}
    assert ours <= HOOK_PATH_MODULES, sorted(ours - HOOK_PATH_MODULES)


HOOK_PATH_MODULES = {
    "memhealth", "memhealth.cli", "memhealth.config", "memhealth.errors", "memhealth.handlers",
    "memhealth.hooks", "memhealth.project",
    "memory_core", "memory_core.errors", "memory_core.text",
    "memory_core.store", "memory_core.store.db", "memory_core.store.layout",
    "memory_core.store.schema", "memory_core.store.tx",
    "memory_core.outbox", "memory_core.outbox.spans", "memory_core.outbox.decisions",
    "memory_core.outbox.rollups", "memory_core.outbox.heartbeat",
    # the start journal (a started line before stdin or a lock can block) and the spill it
    # writes through: stdlib only, on every hook on purpose
    "memory_core.outbox.journal", "memory_core.outbox.spill",
    "memory_core.delivery", "memory_core.delivery.intent",
    "memory_core.delivery.cues",  # prompt cues (symbols, on: prompt): indexed lookups, stdlib re/os only
    "telemetry", "telemetry.catalog",
}


def test_cli_commands_leave_their_spans_in_the_outbox(project, tmp_path, cli, monkeypatch):
    from tests.conftest import rows

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no transcripts of the developer's
    env = {"MEMHEALTH_INGEST_GIT": "false"}
    (project / "README.md").write_text("# Notes\n\nThe snapshot compactor folds streams.\n")
    assert cli("ingest", "--project", project, env=env).returncode == 0
    found = cli("search", "compactor", "--project", project)
    assert found.returncode == 0 and "README.md" in found.stdout  # what ingest indexed
    gate = cli("gate", "--project", project)
    assert gate.returncode == 0, gate.stdout
    spans = rows(project, "SELECT name, parent_span_id IS NULL, trace_id FROM spans")
    roots = {name: trace for name, is_root, trace in spans if is_root}
    assert {"memhealth ingest", "memhealth search", "memhealth gate"} <= set(roots)
    children = {(name, trace) for name, is_root, trace in spans if not is_root}
    assert ("memory.search", roots["memhealth search"]) in children
    assert ("probe ingest_freshness", roots["memhealth gate"]) in children
    assert any(trace == roots["memhealth ingest"] for _name, trace in children)
