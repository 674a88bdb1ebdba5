"""`probes`, `telemetry` and `memory_core` are top-level names; `telemetry` is also an unrelated
distribution on the package index. When another installation answers to one of them, `gate`
and `init` say so with a RED and its fix instead of running someone else's code."""

from __future__ import annotations

import json

from memhealth.install_check import FIX, foreign_packages
from tests.conftest import clean_env, memhealth_cmd

FOREIGN = "TELEMETRY = 'somebody else'\n"


def plant(tmp_path):
    """A foreign top-level `telemetry` package in a directory put first on sys.path."""
    site = tmp_path / "foreign-site"
    (site / "telemetry").mkdir(parents=True)
    (site / "telemetry" / "__init__.py").write_text(FOREIGN)
    return site


def run(args, tmp_path, site):
    import subprocess

    # cwd is not the checkout: `python -m` would put the checkout first on sys.path
    return subprocess.run(memhealth_cmd() + args, cwd=str(tmp_path), capture_output=True, text=True,
                          env=clean_env(PYTHONPATH=str(site)), timeout=60)


def test_our_own_install_has_no_foreign_packages():
    assert foreign_packages() == []


def test_the_gate_reports_a_shadowed_telemetry_package_as_red_with_its_fix(project, tmp_path):
    site = plant(tmp_path)
    proc = run(["gate", "--project", str(project)], tmp_path, site)
    assert proc.returncode == 1, proc.stderr
    head, red = proc.stdout.splitlines()
    assert head == "MEMORY-HEALTH: 0/1 GREEN (1 RED)"
    assert red.startswith("  RED install: memhealth's top-level packages are shadowed by another "
                          f"installation: `telemetry` is {site / 'telemetry' / '__init__.py'}")
    assert red.endswith(f"FIX: {FIX}") and "pipx install" in red
    assert proc.stderr == ""  # a verdict, not a traceback

    as_json = json.loads(run(["gate", "--json", "--project", str(project)], tmp_path, site).stdout)
    assert (as_json["red"], as_json["checks"][0]["name"]) == (1, "install")


def test_init_refuses_to_wire_hooks_to_a_shadowed_install(tmp_path):
    site = plant(tmp_path)
    target = tmp_path / "proj"
    target.mkdir()
    proc = run(["init", "--project", str(target)], tmp_path, site)
    assert proc.returncode == 1
    assert proc.stderr.startswith("memhealth init: RED install: ")
    assert f"FIX: {FIX}" in proc.stderr
    assert list(target.iterdir()) == []  # nothing wired that would run the wrong code
