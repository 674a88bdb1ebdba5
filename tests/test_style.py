"""House style that a machine can check: ruff clean over the whole tree, and no module over 600 lines."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_the_tree_is_ruff_clean():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    proc = subprocess.run([ruff, "check", "--no-cache", REPO], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]


MAX_MODULE_LINES = 600
PACKAGES = ("memory_core", "probes", "telemetry", "memhealth")


def test_no_module_of_ours_is_over_600_lines():
    """Small modules named for what they do: one that outgrows 600 lines holds more than one
    concern and is split by concern (docs/internals/architecture.md). Generated data (the
    sample project's files, tree-sitter queries) is not Python and is not counted."""
    over = []
    for package in PACKAGES:
        for dirpath, dirs, files in os.walk(os.path.join(REPO, package)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as fh:
                        n = sum(1 for _ in fh)
                    if n > MAX_MODULE_LINES:
                        over.append(f"{os.path.relpath(path, REPO)}: {n} lines")
    assert over == []
