"""`memhealth serve --all`: the per-user registry `memhealth init` writes, and one serve that
exposes every registered project with a `project` label, scraped by a real Prometheus, with
projects added and removed while it runs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memory_core.store import registry
from tests.conftest import clean_env, memhealth_cmd, payload, run_cli, run_hook, stop_process
from tests.telemetry.test_prometheus_e2e import GRAFANA_VARS, Prometheus, _panel_queries, wait_for


def _env(xdg) -> dict:
    return clean_env(XDG_STATE_HOME=str(xdg))


def _init(root, env) -> str:
    root.mkdir(parents=True, exist_ok=True)
    proc = run_cli("init", "--project", str(root), "--no-templates", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _prompts(root, env, n: int) -> None:
    for i in range(n):
        run = run_hook("prompt", payload("prompt", root, prompt=f"question {i}"), cwd=str(root), env=env)
        assert run.returncode == 0, run.stderr


class ServeAll:
    """`memhealth serve --all --listen 127.0.0.1:0` in a subprocess; .url is its base URL."""

    def __init__(self, env, *args):
        self.proc = subprocess.Popen(memhealth_cmd() + ["serve", "--all", "--listen", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        if not first or "listening on" not in first[0]:
            self.proc.kill()
            raise AssertionError(f"serve --all did not start: {first!r} {self.proc.stderr.read()}")
        self.first_line = first[0]
        self.url = first[0].split("listening on ", 1)[1].split()[0]

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            return resp.read()

    def projects(self) -> set[str]:
        """The project labels on /metrics now (from memhealth_build_info: one per project)."""
        out = set()
        for family in text_string_to_metric_families(self.get("/metrics").decode()):
            if family.name == "memhealth_build_info":
                out |= {s.labels["project"] for s in family.samples}
        return out

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc.stdout.close()
        self.proc.stderr.close()


# -- the registry --------------------------------------------------------------------------------

def test_init_registers_once_with_a_unique_name_in_a_private_file(tmp_path):
    env = _env(tmp_path / "xdg")
    out = _init(tmp_path / "a" / "app", env)
    assert "registered this project as 'app'" in out
    _init(tmp_path / "b" / "app", env)
    again = _init(tmp_path / "a" / "app", env)
    assert "registered" not in again  # idempotent: a second init registers nothing
    path = tmp_path / "xdg" / "memhealth" / "projects.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    entries = registry.read(str(path))
    assert [e.root for e in entries] == [str(tmp_path / "a" / "app"), str(tmp_path / "b" / "app")]
    # the second `app` keeps its basename with a hash of its path: stable, never the path itself
    assert entries[0].name == "app"
    assert entries[1].name.startswith("app-") and len(entries[1].name) == len("app-") + 6
    assert str(tmp_path) not in entries[1].name


def test_concurrent_inits_lose_no_entry(tmp_path):
    env = _env(tmp_path / "xdg")
    roots = [tmp_path / f"p{i}" for i in range(6)]
    for root in roots:
        root.mkdir()
    procs = [subprocess.Popen(memhealth_cmd() + ["init", "--project", str(r), "--no-templates"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for r in roots]
    for proc in procs:
        assert proc.wait(60) == 0, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    path = str(tmp_path / "xdg" / "memhealth" / "projects.json")
    assert sorted(e.root for e in registry.read(path)) == sorted(str(r) for r in roots)


def test_dry_run_and_unregister(tmp_path):
    env = _env(tmp_path / "xdg")
    root = tmp_path / "svc"
    root.mkdir()
    dry = run_cli("init", "--project", str(root), "--dry-run", env=env)
    assert dry.returncode == 0 and "would register this project in" in dry.stdout, dry.stdout
    path = tmp_path / "xdg" / "memhealth" / "projects.json"
    assert not path.exists()
    _init(root, env)
    assert [e.name for e in registry.read(str(path))] == ["svc"]
    gone = run_cli("init", "--project", str(root), "--unregister", env=env)
    assert gone.returncode == 0 and "removed" in gone.stdout, gone.stdout
    assert registry.read(str(path)) == []
    assert (root / ".memhealth" / "memory.db").exists()  # unregistering touches nothing else


def test_a_corrupt_registry_is_left_untouched_and_init_still_succeeds(tmp_path):
    env = _env(tmp_path / "xdg")
    path = tmp_path / "xdg" / "memhealth" / "projects.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    out = _init(tmp_path / "app", env)
    assert "not registered for `memhealth serve --all`" in out and "left untouched" in out
    assert path.read_text() == "{not json"


def test_a_full_registry_drops_gone_projects_first_and_otherwise_only_notes(tmp_path):
    env = _env(tmp_path / "xdg")
    path = tmp_path / "xdg" / "memhealth" / "projects.json"
    path.parent.mkdir(parents=True)
    live = []
    for i in range(registry.MAX_PROJECTS):
        root = tmp_path / "live" / f"p{i}"
        (root / ".memhealth").mkdir(parents=True)
        live.append({"name": f"p{i}", "root": str(root), "added": 1.0})
    gone = {"name": "gone", "root": str(tmp_path / "deleted"), "added": 1.0}
    path.write_text(json.dumps({"version": 1, "projects": [gone, *live[1:]]}))
    # full, one entry's directory gone: it makes room
    assert "registered this project as 'extra'" in _init(tmp_path / "extra", env)
    names = [e.name for e in registry.read(str(path))]
    assert "gone" not in names and "extra" in names and len(names) == registry.MAX_PROJECTS
    # full of live projects: init says so and is otherwise set up; a rerun changes nothing
    out = _init(tmp_path / "late", env)
    assert "note: not registered for `memhealth serve --all`" in out and "256 projects" in out
    assert "nothing changed" in run_cli("init", "--project", str(tmp_path / "late"),
                                        "--no-templates", env=env).stdout
    assert "late" not in [e.name for e in registry.read(str(path))]


def test_serve_all_refuses_a_project_flag(tmp_path):
    proc = run_cli("serve", "--all", "--project", str(tmp_path), env=_env(tmp_path / "xdg"))
    assert proc.returncode == 2 and "--all" in proc.stderr, proc.stderr


def test_serve_all_help_says_what_it_serves():
    proc = run_cli("serve", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "--all" in text and "project=<name>" in text and "without a restart" in text


# -- serve --all under a real Prometheus ---------------------------------------------------------

@pytest.fixture
def three(tmp_path):
    """Three registered projects (two share the basename `app`) with 1, 2 and 3 prompts."""
    env = _env(tmp_path / "xdg")
    roots = [tmp_path / "a" / "app", tmp_path / "b" / "app", tmp_path / "c" / "lib"]
    for n, root in enumerate(roots, start=1):
        _init(root, env)
        _prompts(root, env, n)
    path = str(tmp_path / "xdg" / "memhealth" / "projects.json")
    names = {e.root: e.name for e in registry.read(path)}
    return env, roots, [names[str(r)] for r in roots]


def test_serve_all_with_prometheus_per_project_series_and_live_changes(tmp_path, three):
    env, roots, names = three
    app = ServeAll(env, "--no-export")
    prom = None
    try:
        assert "for 3 project(s)" in app.first_line
        assert app.projects() == set(names)
        prom = Prometheus(tmp_path, app.url.split("://", 1)[1].rstrip("/"))

        # each project's own store, under its own label: 1, 2 and 3 prompts
        def prompts_by_project():
            result = prom.query('sum by (project) (memhealth_hook_invocations_total{hook="prompt"})')
            got = {r["metric"].get("project"): float(r["value"][1]) for r in result["data"]["result"]}
            return got if len(got) == 3 else None
        assert wait_for("three projects' prompts", prompts_by_project) == {
            names[0]: 1.0, names[1]: 2.0, names[2]: 3.0}
        # probed each: the scheduled gate ran in every project's own store
        wait_for("a gate run per project", lambda: len(prom.query(
            "sum by (project) (memhealth_gate_runs_total) > 0")["data"]["result"]) == 3, timeout=60)
        # the recording rules keep projects apart (one target, three projects)
        wait_for("per-project recorded rates", lambda: {
            r["metric"].get("project") for r in prom.query(
                "instance_project:memhealth_hook_invocations:rate5m")["data"]["result"]} == set(names))
        # the project label is the name, never the path
        series = prom.query("memhealth_build_info")["data"]["result"]
        assert {s["metric"]["project"] for s in series} == set(names)
        assert not any(str(tmp_path) in json.dumps(s["metric"]) for s in series)

        # a project registered while serve runs shows up without a restart
        new = tmp_path / "d" / "newcomer"
        _init(new, env)
        _prompts(new, env, 4)
        wait_for("the newcomer in Prometheus", lambda: prom.query(
            'memhealth_hook_invocations_total{project="newcomer",hook="prompt"} == 4')["data"]["result"])

        # every dashboard panel evaluates with one project selected
        errors = []
        for dashboard, title, ref, expr in _panel_queries():
            answer = prom.query(expr.replace('project=~".*"', 'project=~"lib"'))
            if answer.get("status") != "success":
                errors.append(f"{dashboard} / {title} {ref}: {answer.get('error')}")
        assert not errors, errors
        assert GRAFANA_VARS["$project"] == ".*"
        one = prom.query('sum(memhealth_hook_invocations_total{instance=~".*",project=~"lib",hook="prompt"})')
        assert float(one["data"]["result"][0]["value"][1]) == 3.0

        # one removed (unregistered) and one whose store is gone: both leave /metrics
        assert run_cli("init", "--project", str(roots[0]), "--unregister", env=env).returncode == 0
        os.remove(roots[2] / ".memhealth" / "memory.db")
        wait_for("the removed projects to leave /metrics",
                 lambda: app.projects() == {names[1], "newcomer"}, timeout=20)
        health = json.loads(app.get("/healthz"))
        assert set(health["projects"]) == {names[1], "newcomer"}
        assert "lib" in health["not_served"] and "missing" in health["not_served"]["lib"]
        index = app.get("/").decode()
        assert "newcomer" in index and names[1] in index and str(tmp_path) not in index
    finally:
        if prom is not None:
            prom.stop()
        app.stop()
