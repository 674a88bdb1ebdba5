"""House style that a machine can check: ruff clean over the whole tree (the house habit: ruff clean)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_the_tree_is_ruff_clean():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    proc = subprocess.run([ruff, "check", "--no-cache", REPO], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
