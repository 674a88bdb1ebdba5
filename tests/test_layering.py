"""The dependency rules of docs/internals/architecture.md, checked on the source.

- memory_core is the ground floor: it owns the store and its whole write path, and imports
  no sibling except the metric catalog (telemetry.catalog: pure data, stdlib only);
- inside memory_core, subpackages form layers (LAYERS, low to high) and a module imports
  only its own layer or lower ones;
- probes imports memory_core, the catalog and the SLO data (telemetry.slo: windows,
  thresholds and the gate-check table shared with the rules; pure data, stdlib only);
- the catalog and the SLO data import only the standard library;
- telemetry reads the store and exports: it may import memory_core and probes, never the
  application (memhealth); nothing below telemetry imports it (but the catalog);
- no cycle between packages;
- heavy libraries are imported at module level only where they are the point.
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

from tests.conftest import REPO

OURS = ("memory_core", "probes", "telemetry", "memhealth")
HEAVY = ("httpx", "prometheus_client", "opentelemetry", "grpc", "google", "tree_sitter",
         "tree_sitter_language_pack")
HEAVY_AT_TOP_LEVEL_OK = {"telemetry/collector.py", "telemetry/export.py", "telemetry/serve.py",
                         "telemetry/serve_all.py"}


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


CATALOG = {"telemetry", "telemetry.catalog"}  # `from telemetry import catalog` names both
SLO = {"telemetry.slo"}
DATA = ("telemetry.catalog", "telemetry.slo")  # stdlib-only data: a leaf of the package graph


@pytest.mark.parametrize("path, tree", list(modules("memory_core")), ids=lambda v: v if isinstance(v, str) else "")
def test_the_memory_core_imports_only_itself_and_the_catalog(path, tree):
    bad = {n for n in ours(imported(tree)) if n.split(".")[0] != "memory_core"} - CATALOG
    assert bad == set(), path


@pytest.mark.parametrize("path, tree", list(modules("probes")), ids=lambda v: v if isinstance(v, str) else "")
def test_probes_import_the_memory_core_and_the_data_modules_only(path, tree):
    bad = {n for n in ours(imported(tree)) if n.split(".")[0] not in ("memory_core", "probes")} - CATALOG - SLO
    assert bad == set(), path


@pytest.mark.parametrize("name", ["catalog", "slo"])
def test_the_data_modules_import_only_the_standard_library(name):
    tree = ast.parse(open(os.path.join(REPO, "telemetry", f"{name}.py"), encoding="utf-8").read())
    names = imported(tree) - {"__future__"}
    non_stdlib = {n for n in names if n.split(".")[0] not in sys.stdlib_module_names}
    assert non_stdlib == set()


def test_the_write_path_lives_in_the_memory_core():
    """Transactions, heartbeats, spans, decisions and the spill are the store's: telemetry has no writer module."""
    assert not os.path.exists(os.path.join(REPO, "telemetry", "record.py"))
    for name in ("store/tx", "store/meta", "store/layout", "outbox/spans", "outbox/decisions",
                 "outbox/rollups", "outbox/heartbeat", "outbox/spill", "outbox/journal"):
        assert os.path.exists(os.path.join(REPO, "memory_core", f"{name}.py")), name


# -- layers inside memory_core ---------------------------------------------------------------

# Low to high. "" is the package root: errors.py (the exception tree) and text.py (text
# hygiene), which every layer uses. A module may import its own layer and the ones before it.
LAYERS = ("", "store", "outbox", "index", "delivery", "items", "ingest", "records")


def layer_of(module: str) -> str:
    """`memory_core.index.fts` -> "index"; `memory_core.errors` -> ""."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS):
        return parts[1]
    return ""


def layer_violations(path: str, tree: ast.AST) -> list[str]:
    """The imports in `path` (a memory_core module) of a higher layer, or of an unknown one."""
    here = layer_of(path[:-3].replace(os.sep, ".").removesuffix(".__init__"))
    bad = []
    for name in sorted(ours(imported(tree))):
        if name.split(".")[0] != "memory_core" or name == "memory_core":
            continue
        there = layer_of(name)
        if there not in LAYERS or LAYERS.index(there) > LAYERS.index(here):
            bad.append(f"{path} ({here or 'root'}) imports {name} ({there or 'root'})")
    return bad


def test_every_memory_core_module_sits_in_a_known_layer():
    for path, _tree in modules("memory_core"):
        parts = path.split(os.sep)
        assert len(parts) == 2 or parts[1] in LAYERS, f"{path}: a subpackage not in LAYERS"


def test_the_root_of_the_memory_core_holds_only_the_shared_leaves():
    root = sorted(name for name in os.listdir(os.path.join(REPO, "memory_core")) if name.endswith(".py"))
    assert root == ["__init__.py", "errors.py", "text.py"]


@pytest.mark.parametrize("path, tree", list(modules("memory_core")), ids=lambda v: v if isinstance(v, str) else "")
def test_memory_core_modules_import_only_their_layer_or_lower(path, tree):
    assert layer_violations(path, tree) == []


@pytest.mark.parametrize("source, expected", [
    ("from memory_core.records.triage import confirm", 1),        # store -> records: up
    ("from memory_core.delivery import inject", 1),               # `from pkg import module`
    ("def f():\n    from memory_core.ingest import run_ingest", 1),  # a deferred import counts
    ("from memory_core.store.tx import write", 0),                 # its own layer
    ("from memory_core.errors import StoreError", 0),              # the root: below everything
])
def test_the_layer_rule_catches_an_import_against_the_order(source, expected):
    """A test of the test: the rule sees an upward import wherever it is written."""
    path = os.path.join("memory_core", "store", "db.py")
    assert len(layer_violations(path, ast.parse(source))) == expected


def package_graph() -> dict[str, set[str]]:
    """Package -> packages it imports; the data modules are a leaf of their own ("data")."""
    graph: dict[str, set[str]] = {p: set() for p in OURS + ("data",)}
    data_paths = {os.path.join(*name.split(".")) + ".py" for name in DATA}
    for package in OURS:
        for path, tree in modules(package):
            src = "data" if path in data_paths else package
            for name in ours(imported(tree)) - {"telemetry"}:  # `from telemetry import x` also names x
                dst = "data" if name in DATA else name.split(".")[0]
                if dst != src:
                    graph[src].add(dst)
    return graph


def test_no_cycle_between_packages():
    graph = package_graph()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            assert state.get(nxt) != 1, " -> ".join(path + [nxt])
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_nothing_below_telemetry_imports_it_except_the_data_modules():
    graph = package_graph()
    assert "telemetry" not in graph["memory_core"] | graph["probes"] | graph["data"]


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
