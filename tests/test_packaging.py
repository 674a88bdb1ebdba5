"""What `pip install .` ships: every package and subpackage, and the demo's sample project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

from tests.conftest import REPO


def test_the_wheel_holds_every_package_and_the_sample_project(tmp_path):
    # build from a clean copy: an in-tree build/ directory would carry files from older builds
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "benchmarks"))
    out = tmp_path / "wheel"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = [p for p in os.listdir(out) if p.endswith(".whl")]
    names = set(zipfile.ZipFile(out / wheel).namelist())
    for top in ("memory_core", "probes", "telemetry", "memhealth"):
        for dirpath, _dirs, files in os.walk(os.path.join(REPO, top)):
            if "__init__.py" not in files:
                continue
            for name in files:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, name), REPO).replace(os.sep, "/")
                    assert rel in names, f"{rel} is not in the wheel"
    sample = os.path.join(REPO, "memhealth", "sample_project")
    for dirpath, _dirs, files in os.walk(sample):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), REPO).replace(os.sep, "/")
            assert rel in names, f"{rel} is not in the wheel"
