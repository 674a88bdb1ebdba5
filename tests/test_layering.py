"""The dependency direction in DESIGN.md, checked on the source.

- memory_core imports no sibling package except telemetry.record;
- probes imports memory_core, telemetry.record, telemetry.catalog and telemetry.slo (pure
  data, stdlib only);
- telemetry.record and telemetry.catalog import only the standard library (record: + catalog);
- telemetry never imports the application (memhealth);
- heavy libraries are imported at module level only where they are the point.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

from tests.conftest import REPO

OURS = ("memory_core", "probes", "telemetry", "memhealth")
HEAVY = ("httpx", "prometheus_client", "opentelemetry", "grpc", "google")
HEAVY_AT_TOP_LEVEL_OK = {"telemetry/collector.py", "telemetry/export.py", "telemetry/serve.py",
                         "telemetry/generate.py"}


def modules(package: str):
    for dirpath, _dirs, files in os.walk(os.path.join(REPO, package)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, REPO), ast.parse(open(path, encoding="utf-8").read())


def imported(tree: ast.AST, top_level_only: bool = False) -> set[str]:
    """Absolute module names imported (`from a import b` counts as a.b when b is a module of ours)."""
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module in OURS:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def ours(names: set[str]) -> set[str]:
    return {n for n in names if n.split(".")[0] in OURS}


@pytest.mark.parametrize("path, tree", list(modules("memory_core")), ids=lambda v: v if isinstance(v, str) else "")
def test_the_memory_core_imports_only_itself_and_the_recorder(path, tree):
    bad = {n for n in ours(imported(tree)) if n.split(".")[0] != "memory_core"} - {"telemetry", "telemetry.record"}
    assert bad == set(), path


@pytest.mark.parametrize("path, tree", list(modules("probes")), ids=lambda v: v if isinstance(v, str) else "")
def test_probes_import_the_memory_core_and_the_recorder_only(path, tree):
    allowed = {"telemetry", "telemetry.record", "telemetry.catalog", "telemetry.slo"}
    bad = {n for n in ours(imported(tree)) if n.split(".")[0] not in ("memory_core", "probes")} - allowed
    assert bad == set(), path


@pytest.mark.parametrize("name, allowed", [("record", {"telemetry.catalog"}), ("catalog", set()),
                                           ("slo", set())])
def test_the_recorder_and_the_catalog_import_only_the_standard_library(name, allowed):
    tree = ast.parse(open(os.path.join(REPO, "telemetry", f"{name}.py"), encoding="utf-8").read())
    names = imported(tree) - {"__future__"} - allowed - {"telemetry"}
    non_stdlib = {n for n in names if n.split(".")[0] not in sys.stdlib_module_names}
    assert non_stdlib == set()


@pytest.mark.parametrize("path, tree", list(modules("telemetry")), ids=lambda v: v if isinstance(v, str) else "")
def test_telemetry_never_imports_the_application(path, tree):
    assert not {n for n in imported(tree) if n.split(".")[0] == "memhealth"}, path


@pytest.mark.parametrize("package", OURS)
def test_heavy_libraries_load_at_module_level_only_where_they_are_the_point(package):
    offenders = []
    for path, tree in modules(package):
        heavy = {n for n in imported(tree, top_level_only=True) if n.split(".")[0] in HEAVY}
        if heavy and path not in HEAVY_AT_TOP_LEVEL_OK:
            offenders.append((path, sorted(heavy)))
    assert offenders == []
