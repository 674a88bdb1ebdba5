"""Every FIX `serve --all` prints for a project it cannot serve clears what it names. Each
fault is built for real on a project made by `memhealth init` (a symbolic link, a directory
or FIFO where a store file belongs, a bad config value, a store with no schema, a write lock
held by another process, a -shm or -wal deleted under one, file modes); a real `serve --all`
on 127.0.0.1:0 reports the project's state and prints the FIX in /healthz; the FIX, run
exactly as printed with `bash -c`, brings the project back to `memhealth_project_up 1` on the
next scrape. A lock held by a live process has no command that clears it: its FIX shows the
holder (and names it), and the project comes back once the holder exits, with nothing run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.faults.helpers import db_path, wait_for
from tests.faults.test_lost_project import project_series
from tests.telemetry.test_serve_all import ServeAll, _env, _init


def printed_fix(app: ServeAll, name: str) -> tuple[str, str]:
    """(state, FIX) serve --all prints in /healthz for `name`: under not_served (a project it
    could not open) or under projects (a served project whose store read failed)."""
    health = json.loads(app.get("/healthz"))
    if name in health["not_served"]:
        state, _, rest = health["not_served"][name].partition(": ")
        return state, rest.split("; FIX: ", 1)[1]
    project = health["projects"][name]
    return project["state"], project["fix"]


def in_bash(fix: str, env: dict) -> subprocess.CompletedProcess:
    """Run a FIX exactly as printed, in bash, with this checkout's memhealth first on PATH."""
    shell_env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}
    return subprocess.run(["bash", "-c", fix], capture_output=True, text=True, timeout=300, env=shell_env)


def states(app: ServeAll, want: dict[str, str], what: str) -> dict[str, float]:
    """Wait until /metrics says `want` ({project: state}); the projects' memhealth_project_up."""
    seen: list = []

    def reached():
        seen[:] = [project_series(app)]
        return all(seen[0][1].get(n) == v for n, v in want.items())

    try:
        wait_for(reached, timeout=30, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen {seen[0][1] if seen else None}") from None
    return {n: seen[0][0][n] for n in want}


def _holder(db: str, body: str) -> subprocess.Popen:
    """Another process with the store open (`body` runs on its connection `c`), until its stdin
    closes; it prints 'ready' once it holds what `body` takes."""
    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
            f"c = sqlite3.connect({db!r}, isolation_level=None)\n{body}\n"
            "print('ready', flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.stdin.close()
        proc.wait(10)


def test_each_store_and_config_fault_clears_by_its_printed_fix(tmp_path):
    env = _env(tmp_path / "xdg")
    names = ("kept", "link", "walink", "dir", "shmfifo", "badvalue", "badtoml", "noschema")
    roots = {name: tmp_path / name for name in names}
    for root in roots.values():
        _init(root, env)
    # a config is read when serve opens the project: these two are broken before it starts
    config = roots["badvalue"] / ".memhealth" / "config.toml"  # init's file: every key commented out
    text = config.read_text(encoding="utf-8")
    assert "\n# heartbeat_max_age_days = " in text
    config.write_text(text.replace("\n# heartbeat_max_age_days = ", '\nheartbeat_max_age_days = "a week" # was '),
                      encoding="utf-8")
    with open(roots["badtoml"] / ".memhealth" / "config.toml", "a", encoding="utf-8") as fh:
        fh.write("\n[serve\n")
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        served = [n for n in names if not n.startswith("bad")]
        assert states(app, {n: "served" for n in served}, "every other project served") == {n: 1.0 for n in served}

        db = {n: db_path(r) for n, r in roots.items()}
        os.rename(db["link"], db["link"] + ".real")  # memory.db a link to a store elsewhere
        os.symlink(db["link"] + ".real", db["link"])
        os.symlink(str(tmp_path / "nowhere"), db["walink"] + "-wal")  # a dangling -wal link
        os.rename(db["dir"], db["dir"] + ".real")  # memory.db a directory
        os.mkdir(db["dir"])
        os.mkfifo(db["shmfifo"] + "-shm")  # a FIFO where the WAL index belongs
        for suffix in ("", "-wal", "-shm"):  # a valid SQLite file with no memhealth schema
            if os.path.exists(db["noschema"] + suffix):
                os.unlink(db["noschema"] + suffix)
        subprocess.run([sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                        "c.execute('CREATE TABLE notes (body TEXT)'); c.commit()", db["noschema"]], check=True)

        lost = {"kept": "served", "link": "unreadable", "walink": "unreadable", "dir": "unreadable",
                "shmfifo": "unreadable", "badvalue": "config_error", "badtoml": "config_error",
                "noschema": "error"}
        assert states(app, lost, "each fault's state") == {n: 1.0 if n == "kept" else 0.0 for n in names}

        fixes = {}
        for name in names[1:]:
            state, fixes[name] = printed_fix(app, name)
            assert state == lost[name], (name, state)
        # the command for the cause, never the gate that only names it
        q = {n: str(roots[n] / ".memhealth") for n in names}
        assert fixes["link"] == f"rm {q['link']}/memory.db && memhealth init --project {roots['link']}"
        assert fixes["walink"] == f"rm {q['walink']}/memory.db-wal"
        assert fixes["dir"].startswith(f"mv {q['dir']}/memory.db {q['dir']}/memory.db.aside && memhealth init")
        assert fixes["shmfifo"] == f"mv {q['shmfifo']}/memory.db-shm {q['shmfifo']}/memory.db-shm.aside"
        assert fixes["badvalue"].startswith("sed -i '") and "[gate].heartbeat_max_age_days" in fixes["badvalue"]
        assert fixes["badtoml"].startswith("sed -i '") and "config.toml" in fixes["badtoml"]
        # an unexpected error: the command that meets it as serve did, printing what it is
        assert fixes["noschema"] == f"memhealth gate --project {roots['noschema']}"

        for name in names[1:]:
            done = in_bash(fixes[name], env)
            if name == "noschema":  # the gate opens the store as serve does, and migrates it
                assert "MEMORY-HEALTH" in done.stdout, done.stdout + done.stderr
            else:
                assert done.returncode == 0, (name, fixes[name], done.stdout, done.stderr)
        back = states(app, {n: "served" for n in names}, "every fixed project served again")
        assert back == {n: 1.0 for n in names}
        assert json.loads(app.get("/healthz"))["status"] == "ok"
        # what the FIX moved aside or unlinked is kept: the link's target, the directory
        assert os.path.exists(db["link"] + ".real") and os.path.isdir(db["dir"] + ".aside")
    finally:
        app.stop()


def test_a_lock_held_by_a_live_process_is_shown_and_clears_when_it_exits(tmp_path):
    env = _env(tmp_path / "xdg")
    root = tmp_path / "held"
    _init(root, env)
    app = ServeAll(env, "--no-export", "--no-probes")
    holder = None
    try:
        assert states(app, {"held": "served"}, "the project served") == {"held": 1.0}
        # exclusive locking mode: the only lock a WAL store's reader waits for
        holder = _holder(db_path(root), "c.execute('PRAGMA locking_mode = EXCLUSIVE')\nc.execute('BEGIN EXCLUSIVE')")
        assert states(app, {"held": "locked"}, "the project locked") == {"held": 0.0}
        state, fix = printed_fix(app, "held")
        assert state == "locked"
        assert fix.startswith(f"fuser {root}/.memhealth/memory.db  # ")
        assert f"pid {holder.pid} (" in fix and "memory_core.store.db" in fix, fix  # the holder, named
        shown = in_bash(fix, env)
        assert shown.returncode == 0 and str(holder.pid) in shown.stdout.split(), (shown.stdout, shown.stderr)
        assert states(app, {"held": "locked"}, "still locked while it lives") == {"held": 0.0}
        _end(holder)  # nothing else is run
        assert states(app, {"held": "served"}, "served once the holder exits") == {"held": 1.0}
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait(10)
        app.stop()


def test_a_deleted_shm_or_wal_under_a_live_process_clears_by_its_printed_fix(tmp_path):
    env = _env(tmp_path / "xdg")
    roots = {name: tmp_path / name for name in ("shm", "wal")}
    for root in roots.values():
        _init(root, env)
    app = ServeAll(env, "--no-export", "--no-probes")
    holders = {}
    try:
        assert states(app, {"shm": "served", "wal": "served"}, "both served") == {"shm": 1.0, "wal": 1.0}
        for name, root in roots.items():  # a writer with rows in the WAL, its files open
            holders[name] = _holder(db_path(root), "c.execute(\"INSERT INTO meta (key, value) VALUES "
                                                   "('held', 'row in the wal')\")")
        os.unlink(db_path(roots["shm"]) + "-shm")
        os.unlink(db_path(roots["wal"]) + "-wal")
        assert states(app, {"shm": "unreadable", "wal": "unreadable"}, "both unreadable") == {"shm": 0.0, "wal": 0.0}
        _, shm_fix = printed_fix(app, "shm")
        _, wal_fix = printed_fix(app, "wal")
        assert shm_fix.startswith(f"kill {holders['shm'].pid}  # pid {holders['shm'].pid} ("), shm_fix
        assert wal_fix.startswith(f"cp /proc/{holders['wal'].pid}/fd/"), wal_fix
        assert wal_fix.split("  #")[0].endswith(f" {roots['wal']}/.memhealth/memory.db-wal"), wal_fix
        for fix in (shm_fix, wal_fix):
            done = in_bash(fix, env)
            assert done.returncode == 0, (fix, done.stdout, done.stderr)
        assert states(app, {"shm": "served", "wal": "served"}, "both served again") == {"shm": 1.0, "wal": 1.0}
        assert holders["shm"].wait(10) != 0  # the FIX ended it
        _end(holders["wal"])
        # the WAL put back kept the holder's row
        check = subprocess.run([sys.executable, "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1])"
                                ".execute(\"SELECT value FROM meta WHERE key = 'held'\").fetchone()[0])",
                                db_path(roots["wal"])], capture_output=True, text=True, timeout=30)
        assert check.stdout.strip() == "row in the wal", check.stdout + check.stderr
    finally:
        for proc in holders.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        app.stop()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes: chmod cannot make a store "
                    "unreadable or read-only for it (run as a normal user to cover db_readonly)")
def test_a_read_only_state_directory_clears_by_its_printed_chmod(tmp_path):
    env = _env(tmp_path / "xdg")
    root = tmp_path / "ro"
    _init(root, env)
    state_dir = root / ".memhealth"
    for suffix in ("-wal", "-shm"):  # no side files: a reader must create them, and cannot
        if os.path.exists(db_path(root) + suffix):
            os.unlink(db_path(root) + suffix)
    app = ServeAll(env, "--no-export", "--no-probes")
    try:
        assert states(app, {"ro": "served"}, "the project served") == {"ro": 1.0}
        os.chmod(state_dir, 0o500)
        assert states(app, {"ro": "unreadable"}, "the project unreadable") == {"ro": 0.0}
        state, fix = printed_fix(app, "ro")
        assert fix == f"chmod u+rwx {state_dir} && chmod u+rw {state_dir}/memory.db*", fix
        done = in_bash(fix, env)
        assert done.returncode == 0, done.stderr
        assert states(app, {"ro": "served"}, "served again") == {"ro": 1.0}
    finally:
        os.chmod(state_dir, 0o700)
        app.stop()
