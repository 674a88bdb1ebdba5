"""The gate's import budget: `memhealth gate` runs inside every SessionStart, so what it loads
is paid per session. Each module named here once cost the gate tens of millions of
instructions (docs/internals/benchmarks.md, "Instructions: the regression traced")."""

from __future__ import annotations

import subprocess

from tests.conftest import clean_env, memhealth_cmd

# module -> why it must stay out of a plain `memhealth gate`
KEPT_OUT = {
    "dataclasses": "imports inspect, ast, dis, tokenize (~51 M instructions)",
    "inspect": "through dataclasses",
    "subprocess": "only for git, and only inside a repository",
    "memory_core.ingest.runner": "the ingest run: every ingester",
    "memory_core.ingest.code": "the code index's parser",
    "memhealth.cmd_search": "another command's module: only the named command is registered",
    "memhealth.cmd_ingest": "another command's module",
    "memory_core.store.migrations": "the DDL, for a store behind the latest version only",
}


def test_a_gate_outside_a_repository_loads_none_of_the_expensive_modules(project):
    proc = subprocess.run(memhealth_cmd() + ["gate", "--project", str(project)], cwd=str(project),
                          env=clean_env(PYTHONPROFILEIMPORTTIME="1"), capture_output=True, timeout=120)
    assert proc.stdout.startswith(b"MEMORY-HEALTH:"), proc.stdout[-500:]
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert "probes.gate" in loaded and "memory_core.ingest.filesource" in loaded  # it ran the checks
    unwanted = set(KEPT_OUT) & loaded
    assert not unwanted, {m: KEPT_OUT[m] for m in unwanted}
