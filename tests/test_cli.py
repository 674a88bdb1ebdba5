"""The CLI surface: every command has help; the hook path stays cheap to import."""

from __future__ import annotations

import json

import pytest

from memhealth.cli import COMMANDS, build_parser
from tests.conftest import clean_env, memhealth_cmd, payload, run_cli


def available_commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices


def test_every_command_has_help_text():
    choices = available_commands()
    assert {"init", "hook", "demo"} <= set(choices)
    for name, sub in choices.items():
        assert name in COMMANDS
        assert sub.description and len(sub.description) > 20, name
        proc = run_cli(name, "--help")
        assert proc.returncode == 0 and "usage:" in proc.stdout, name


def test_no_command_prints_help_and_exits_2():
    proc = run_cli()
    assert proc.returncode == 2 and "COMMAND" in proc.stdout


HEAVY = ("httpx", "prometheus_client", "opentelemetry", "argparse", "tomllib", "sqlite_vec", "grpc")


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
    "memory_core", "memory_core.db", "memory_core.errors", "memory_core.heartbeat", "memory_core.intent",
    "memory_core.layout", "memory_core.outbox", "memory_core.schema", "memory_core.text", "memory_core.tx",
    # the start journal (a started line before stdin or a lock can block) and the spill it
    # writes through: stdlib only, on every hook on purpose (issue 9)
    "memory_core.journal", "memory_core.spill",
    "telemetry", "telemetry.catalog",
}


def test_cli_commands_leave_their_spans_in_the_outbox(project):
    from tests.conftest import rows

    (project / "README.md").write_text("# Notes\n\nThe snapshot compactor folds streams.\n")
    for args in (["ingest", "--project", str(project)], ["search", "compactor", "--project", str(project)],
                 ["gate", "--project", str(project)]):
        assert run_cli(*args).returncode in (0, 1), args
    spans = rows(project, "SELECT name, parent_span_id IS NULL, trace_id FROM spans")
    roots = {name: trace for name, is_root, trace in spans if is_root}
    assert {"memhealth ingest", "memhealth search", "memhealth gate"} <= set(roots)
    children = {(name, trace) for name, is_root, trace in spans if not is_root}
    assert ("memory.search", roots["memhealth search"]) in children
    assert ("probe ingest_freshness", roots["memhealth gate"]) in children
    assert any(trace == roots["memhealth ingest"] for _name, trace in children)
