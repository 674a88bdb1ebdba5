"""Store faults: a read-only database, a corrupt one, one truncated to 5,000 or 0 bytes.
Each hook exits 0 in time and spills its row; the gate names the cause with a fix that
works; a store recreated empty where one existed is a store reset, said once."""

from __future__ import annotations

import os

from tests.conftest import payload, run_cli, run_hook
from tests.faults.helpers import TIMEOUTS, check, db_path, follow_fix, gate, heartbeats, read_only


def _prompt(project):
    run = run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project))
    assert run.returncode == 0 and run.seconds < TIMEOUTS["prompt"] and len(run.stderr.splitlines()) == 1
    return run


def test_a_read_only_database_is_named_without_a_false_index_red(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    with read_only(db_path(project)):
        run = _prompt(project)
        assert b"db_readonly" in run.stderr or b"not writable" in run.stderr
        verdict = gate(project)
        assert verdict["exit"] == 1
        reds = {c["name"]: c for c in verdict["checks"] if c["status"] == "red"}
        assert "index_integrity" not in reds, reds.get("index_integrity")
        named = " ".join(c["detail"] + " " + c["fix"] for c in reds.values())
        assert "memory.db*" in named
    verdict = gate(project)  # the fix: writable again; the spilled row lands and is named
    assert [h[:3] for h in heartbeats(project, "prompt")] == [("prompt", "error", "db_readonly")]
    assert "db_readonly" in check(verdict, "hook_heartbeats")["detail"]


def test_a_corrupt_database_is_named_with_a_fix_that_works(project):
    with open(db_path(project), "r+b") as fh:
        fh.write(b"this is not a database, " * 200)
    _prompt(project)
    out = run_cli("gate", cwd=str(project))
    assert out.returncode == 1 and "move .memhealth/memory.db aside" in out.stdout
    os.replace(db_path(project), db_path(project) + ".corrupt")  # the fix, as the FIX line says it
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db_path(project) + suffix):
            os.unlink(db_path(project) + suffix)
    assert run_cli("init", "--project", str(project)).returncode == 0
    verdict = gate(project)
    assert [h[:3] for h in heartbeats(project, "prompt")] == [("prompt", "error", "db_corrupt")]
    assert "store reset" in check(verdict, "hook_heartbeats")["detail"]


def test_a_database_truncated_to_5000_bytes_is_corrupt_not_silently_new(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    os.truncate(db_path(project), 5000)
    run = _prompt(project)
    assert b"db_corrupt" in run.stderr or b"malformed" in run.stderr or b"corrupt" in run.stderr
    out = run_cli("gate", cwd=str(project))
    assert out.returncode == 1 and "store" in out.stdout


def test_a_database_truncated_to_0_bytes_is_a_store_reset_said_once(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    for suffix in ("-wal", "-shm"):
        if os.path.exists(db_path(project) + suffix):
            os.unlink(db_path(project) + suffix)
    os.truncate(db_path(project), 0)
    _ok = run_hook("stop", payload("stop", project), cwd=str(project))
    assert _ok.returncode == 0
    first = gate(project)
    hb = check(first, "hook_heartbeats")
    assert first["exit"] == 1 and "store reset" in hb["detail"] and "history" in hb["detail"]
    assert "backup" in hb["fix"]
    second = check(gate(project), "hook_heartbeats")
    assert "store reset" not in second["detail"]


def test_a_directory_in_place_of_the_database_is_named_with_a_fix_that_works(project):
    assert run_hook("stop", payload("stop", project), cwd=str(project)).returncode == 0
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db_path(project) + suffix):
            os.unlink(db_path(project) + suffix)
    os.mkdir(db_path(project))
    run = _prompt(project)
    assert b"is a directory" in run.stderr
    verdict = gate(project)
    reds = [c for c in verdict["checks"] if c["status"] == "red"]
    assert verdict["exit"] == 1 and "memory.db is a directory" in reds[0]["detail"]
    assert "chmod" not in reds[0]["fix"] and "not writable" not in reds[0]["detail"]
    follow_fix(reds[0]["fix"], project)  # the fix, as printed
    assert os.path.isdir(db_path(project) + ".aside")
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    after = gate(project)
    assert not [c for c in after["checks"] if c["status"] == "red" and "directory" in c["detail"]]
    assert ("prompt", "error", "db_not_file") in [h[:3] for h in heartbeats(project, "prompt")]


def test_a_deleted_store_reports_a_reset_never_false_kills(project):
    for _ in range(5):
        assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db_path(project) + suffix):
            os.unlink(db_path(project) + suffix)
    missing = gate(project)  # before any hook recreates it: named, with a fix that works
    assert missing["exit"] == 1 and "no database" in missing["checks"][0]["detail"]
    follow_fix(missing["checks"][0]["fix"], project)
    assert run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project)).returncode == 0
    verdict = gate(project)
    hb = check(verdict, "hook_heartbeats")
    assert "store reset" in hb["detail"], hb
    assert "killed" not in hb["detail"] and "fuser" not in hb["fix"], hb
    assert [h for h in heartbeats(project) if h[1] == "killed"] == []
    # a hook really killed after the reset is still caught
    import json
    import signal

    from tests.faults.helpers import journal_has, lock_held, start_hook, wait_for

    body = json.dumps(payload("prompt", project, prompt="hello")).encode()
    with lock_held(project):
        proc = start_hook("prompt", body, str(project))
        wait_for(lambda: journal_has(project, "prompt"), what="the journal's started line")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    gate(project)
    assert [h[:3] for h in heartbeats(project) if h[1] == "killed"] == [("prompt", "killed", "killed")]
