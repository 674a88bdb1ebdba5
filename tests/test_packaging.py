"""What `pip install .` ships: every package and subpackage, and the demo's sample project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # real servers, browsers or CLIs: `make test-fast` skips these


def test_the_wheel_holds_every_package_the_sample_project_and_the_runbook(wheel):
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
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
    # the code index reads one tree-sitter query file per language from the package
    queries = os.path.join(REPO, "memory_core", "ingest", "queries")
    scm = sorted(f for f in os.listdir(queries) if f.endswith(".scm"))
    assert scm and all(f"memory_core/ingest/queries/{f}" in names for f in scm)
    # serve's /runbook reads the packaged copy: the text itself, not a link to a checkout
    with open(os.path.join(REPO, "alerts", "runbook.md"), encoding="utf-8") as fh:
        assert archive.read("telemetry/runbook.md").decode("utf-8") == fh.read()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    """One wheel per test run, built from a clean copy: an in-tree build/ directory would
    carry files from older builds."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", "benchmarks"))
    out = tmp_path / "wheel"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "BuildBackendWarning" not in proc.stderr and "deprecated" not in proc.stderr, proc.stderr
    (wheel,) = [p for p in os.listdir(out) if p.endswith(".whl")]
    return str(out / wheel)


def test_hooks_run_from_a_wheel_installed_in_its_own_environment(tmp_path, wheel):
    """The wheel, not the checkout: a fresh venv whose only memhealth is the wheel (the
    dependencies come from this venv's site-packages through a .pth, so nothing is
    downloaded), then `init` and a hook exactly as Claude Code runs it."""
    import json
    import sysconfig
    import venv

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    # a directory added by a .pth is not a site dir: the editable checkout's .pth there is
    # not processed, so the wheel is the only memhealth this interpreter sees
    with open(os.path.join(site, "deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                           "--no-index", "-q", wheel], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "PYTHON"))}
    env.update(HOME=str(tmp_path / "home"), MEMHEALTH_INGEST_GIT="false")
    where = subprocess.run([str(py), "-c", "import memhealth, telemetry; print(memhealth.__file__); "
                            "print(telemetry.__file__)"], cwd=str(tmp_path), env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(site) for line in where.stdout.splitlines()), where.stdout

    project = tmp_path / "proj"
    project.mkdir()
    memhealth = env_dir / "bin" / "memhealth"
    init = subprocess.run([str(memhealth), "init", "--project", str(project)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=60)
    assert init.returncode == 0, init.stderr
    (project / "README.md").write_text("# Notes\n\nThe wheel carries the sample project.\n")
    ingest = subprocess.run([str(memhealth), "ingest", "--project", str(project)], cwd=str(tmp_path),
                            env=env, capture_output=True, text=True, timeout=60)
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command.startswith(str(memhealth))
    body = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup",
                       "cwd": str(project), "transcript_path": str(tmp_path / "t.jsonl")})
    hook = subprocess.run(command, shell=True, input=body, cwd=str(project), env=env,
                          capture_output=True, text=True, timeout=60)
    assert hook.returncode == 0 and hook.stderr == "", hook.stderr
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    head = context.splitlines()[0]
    assert head.startswith("MEMORY-HEALTH: ") and head.endswith(" GREEN"), context
    gate = subprocess.run([str(memhealth), "gate", "--project", str(project)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=60)
    assert "RED install" not in gate.stdout, gate.stdout


def test_the_editable_install_puts_the_checkout_on_sys_path_without_an_import_finder():
    """`make` installs editable; a finder module would be imported by every hook's interpreter."""
    import sysconfig

    purelib = sysconfig.get_paths()["purelib"]
    ours = [name for name in os.listdir(purelib) if "memhealth" in name and name.endswith(".pth")]
    if not ours:
        pytest.skip("memhealth is not installed editable in this environment")
    assert not [n for n in os.listdir(purelib) if n.startswith("__editable___memhealth") and n.endswith("finder.py")]
    with open(os.path.join(purelib, ours[0])) as fh:
        assert [line.strip() for line in fh if line.strip()] == [REPO]


def test_the_version_lives_in_one_place_and_the_wheel_carries_it_with_the_license(wheel):
    """pyproject.toml reads the version from memhealth/__init__.py; the wheel's metadata has
    that version and the LICENSE file."""
    import tomllib

    from memhealth import __version__

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as fh:
        project = tomllib.load(fh)["project"]
    assert "version" not in project and "version" in project["dynamic"]
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    assert f"\nVersion: {__version__}\n" in archive.read(metadata).decode("utf-8")
    assert any(n.endswith("licenses/LICENSE") for n in archive.namelist())
