"""A spill that cannot be written is not "recorded": with `.memhealth/` read-only or the disk
full, the row goes to the user-state fallback and the hook says where; with both refused,
the hook says NOT recorded. The next gate drains the fallback and names the cause.

Disk full is real and deterministic without root: RLIMIT_FSIZE in the hook's process makes
the kernel refuse writes past N bytes (EFBIG, the same short-write path as ENOSPC), and a
spill already past N bytes — rows left by an earlier lock — cannot grow."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time

import pytest

from tests.conftest import clean_env, memhealth_cmd, payload, rows
from tests.faults.helpers import TIMEOUTS, check, gate, heartbeats, read_only

LIMIT = 4096  # bytes: under the size of a WAL frame (32 + 24 + 4096), over a spill line


def _prefill_spill(root, n: int = 40) -> None:
    """Rows an earlier lock left in the spill: valid, and together over LIMIT bytes."""
    hour_ago = time.time_ns() - 3600 * 10**9
    with open(os.path.join(str(root), ".memhealth", "spill.ndjson"), "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"kind": "heartbeat", "hook": "prompt", "session_id": "earlier", "pid": 1,
                                 "trace_id": f"t{i}", "started_ns": hour_ago + i,
                                 "ended_ns": hour_ago + 100_000_000 + i, "outcome": "error",
                                 "reason": "db_locked", "detail": "database is locked"}) + "\n")


def _hook_with_file_limit(root, env, event="prompt", **fields):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))

    return subprocess.run(memhealth_cmd() + ["hook", event], cwd=str(root), capture_output=True,
                          input=json.dumps(payload(event, root, **fields)).encode(), env=env,
                          preexec_fn=limit, timeout=TIMEOUTS[event])


def _fallback_files(state: str) -> list[str]:
    base = os.path.join(state, "memhealth", "spill")
    return [os.path.join(base, f) for f in os.listdir(base)] if os.path.isdir(base) else []


def test_disk_full_spills_to_the_user_state_dir_and_the_gate_names_it(project, tmp_path):
    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state)
    _prefill_spill(project)
    run = _hook_with_file_limit(project, env, prompt="thanks")
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    (fallback,) = _fallback_files(state)
    assert f"recorded in {fallback}".encode() in run.stderr and b"EFBIG" in run.stderr
    assert os.stat(fallback).st_mode & 0o777 == 0o600
    spilled = [json.loads(line) for line in open(fallback)]
    assert [r["kind"] for r in spilled] == ["heartbeat", "decision"]  # the decision went with it
    assert spilled[0]["spill_cause"] == "disk_full"

    verdict = gate(project, env=env)  # space is back: the first gate drains and names the cause
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and "prompt: last run" in hb["detail"] and "disk full" in hb["detail"]
    assert "df -h .memhealth" in hb["fix"]
    assert _fallback_files(state) == [] or all(os.path.getsize(f) == 0 for f in _fallback_files(state))
    # nothing lost: the 40 earlier rows, this prompt and its decision
    assert [h[:2] for h in heartbeats(project, "prompt")] == [("prompt", "error")] * 41
    assert rows(project, "SELECT outcome FROM decisions") == [("error",)]
    # the fix works: the next hook is ok, and the gate says so
    ok = subprocess.run(memhealth_cmd() + ["hook", "prompt"], cwd=str(project), env=env, capture_output=True,
                        input=json.dumps(payload("prompt", project, prompt="thanks")).encode(), timeout=10)
    assert ok.returncode == 0 and ok.stderr == b""
    assert "latest ok" in check(gate(project, env=env), "hook_heartbeats")["detail"]


def test_disk_full_everywhere_says_not_recorded(project, tmp_path):
    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state)
    _prefill_spill(project)
    os.makedirs(os.path.join(state, "memhealth", "spill"))
    from memory_core.outbox.spill import fallback_path

    with open(fallback_path(os.path.join(str(project), ".memhealth", "spill.ndjson"), env), "w") as fh:
        fh.write("x" * (LIMIT + 1) + "\n")
    with open(os.path.join(str(project), ".memhealth", "journal.ndjson"), "w") as fh:
        fh.write("x" * (LIMIT + 1) + "\n")  # and the journal: no file takes even the failure
    run = _hook_with_file_limit(project, env, prompt="thanks")
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    assert b"NOT recorded" in run.stderr and b"recorded in" not in run.stderr
    assert run.stderr.count(b"EFBIG") == 2  # both places, each named


def test_a_read_only_state_dir_spills_to_the_user_state_dir(project, tmp_path):
    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state)
    state_dir = os.path.join(str(project), ".memhealth")
    with read_only(state_dir):
        run = subprocess.run(memhealth_cmd() + ["hook", "stop"], cwd=str(project), capture_output=True,
                             env=env, input=json.dumps(payload("stop", project)).encode(), timeout=10)
        assert not os.path.exists(os.path.join(state_dir, "spill.ndjson"))
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    (fallback,) = _fallback_files(state)
    assert f"recorded in {fallback}".encode() in run.stderr
    assert b"EACCES" in run.stderr or b"EPERM" in run.stderr
    verdict = gate(project, env=env)  # writable again: the gate drains and names the cause
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and "stop: last run" in hb["detail"] and "readonly" in hb["detail"]
    assert "chmod u+rwx .memhealth" in hb["fix"]
    assert [h[:2] for h in heartbeats(project, "stop")] == [("stop", "error")]


@pytest.fixture
def full_tmpfs(tmp_path):
    """A 2 MB tmpfs (root only; skipped where mounting is not permitted): a real ENOSPC."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the RLIMIT_FSIZE tests cover disk full here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(mount_point)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"tmpfs mount not permitted here: {done.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_a_really_full_disk_spills_outside_and_the_gate_names_it(full_tmpfs, tmp_path):
    root = full_tmpfs / "proj"
    root.mkdir()
    assert run_cli_ok("init", "--project", str(root))
    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state)
    filler = full_tmpfs / "filler"
    with open(filler, "wb") as fh:  # fill the disk to the last page
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    run = subprocess.run(memhealth_cmd() + ["hook", "prompt"], cwd=str(root), capture_output=True, env=env,
                         input=json.dumps(payload("prompt", root, prompt="thanks")).encode(),
                         timeout=TIMEOUTS["prompt"])
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    assert b"ENOSPC" in run.stderr and b"recorded in" in run.stderr
    os.unlink(filler)  # the fix: free space
    verdict = gate(root, env=env)
    hb = check(verdict, "hook_heartbeats")
    assert verdict["exit"] == 1 and "disk full" in hb["detail"] and "df -h .memhealth" in hb["fix"]
    assert [h[:2] for h in heartbeats(root, "prompt")] == [("prompt", "error")]
    assert rows(root, "SELECT outcome FROM decisions") == [("error",)]


def run_cli_ok(*args) -> bool:
    from tests.conftest import run_cli

    return run_cli(*args).returncode == 0


def _hook_limited(root, env, limit: int, event="prompt", **fields):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(memhealth_cmd() + ["hook", event], cwd=str(root), capture_output=True,
                          input=json.dumps(payload(event, root, **fields)).encode(), env=env,
                          preexec_fn=set_limit, timeout=TIMEOUTS[event])


def test_both_spill_targets_full_is_a_recorded_failure_not_a_kill(project, tmp_path):
    """The spill and its fallback refuse the row, the journal's small line still fits: the
    failure (and the prompt's decision) is kept there, never reaped as a kill."""
    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state)
    _prefill_spill(project)
    os.makedirs(os.path.join(state, "memhealth", "spill"))
    from memory_core.outbox.spill import fallback_path

    with open(fallback_path(os.path.join(str(project), ".memhealth", "spill.ndjson"), env), "w") as fh:
        fh.write("x" * (LIMIT + 1) + "\n")
    run = _hook_with_file_limit(project, env, prompt="thanks")
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1
    assert b"NOT recorded" not in run.stderr and b"journal.ndjson" in run.stderr, run.stderr
    os.unlink(fallback_path(os.path.join(str(project), ".memhealth", "spill.ndjson"), env))  # space is back
    verdict = gate(project, env=env)
    hb = check(verdict, "hook_heartbeats")
    prompts = heartbeats(project, "prompt")
    assert [h for h in prompts if h[1] == "killed"] == [], prompts
    assert prompts[-1][:2] == ("prompt", "error") and len(prompts) == 41
    assert "disk full" in hb["detail"] and "df -h .memhealth" in hb["fix"] and "fuser" not in hb["fix"], hb
    assert rows(project, "SELECT outcome FROM decisions") == [("error",)]


def test_a_partial_spill_write_never_glues_the_next_row_onto_it(project, tmp_path):
    """A write cut short (the file-size limit) leaves a fragment; the next hook's row still
    lands whole, so nothing is dropped and no false kill appears."""
    from tests.faults.helpers import lock_held

    state = str(tmp_path / "state")
    env = clean_env(XDG_STATE_HOME=state, MEMHEALTH_HOOKS_BUSY_TIMEOUT_S="0.2")
    spill_file = os.path.join(str(project), ".memhealth", "spill.ndjson")
    with lock_held(project):
        first = subprocess.run(memhealth_cmd() + ["hook", "prompt"], cwd=str(project), capture_output=True,
                               env=env, input=json.dumps(payload("prompt", project, prompt="one")).encode(),
                               timeout=TIMEOUTS["prompt"])
        assert first.returncode == 0 and os.path.getsize(spill_file) > 0
        second = _hook_limited(project, env, os.path.getsize(spill_file) + 100, prompt="two")
        assert second.returncode == 0 and b"recorded in" in second.stderr, second.stderr
        third = subprocess.run(memhealth_cmd() + ["hook", "prompt"], cwd=str(project), capture_output=True,
                               env=env, input=json.dumps(payload("prompt", project, prompt="three")).encode(),
                               timeout=TIMEOUTS["prompt"])
        assert third.returncode == 0
    gate(project, env=env)
    prompts = heartbeats(project, "prompt")
    assert [h[:3] for h in prompts] == [("prompt", "error", "db_locked")] * 3, prompts
    assert rows(project, "SELECT count(*) FROM decisions WHERE outcome = 'error'") == [(3,)]


def test_a_file_size_limit_the_store_meets_is_named_with_its_fix_not_a_disk_io_error(project, tmp_path):
    """The fault campaign's `prlimit --fsize` run: the store's first WAL frame passes the limit
    and SQLite says only "disk I/O error"; the spill line still fits. The row read db_io with
    the fix `df -h`/`dmesg`, which shows a healthy disk. It is db_full, naming the limit, with
    the `ulimit -f` fix; the next hook without the limit clears it."""
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "state"))
    gate(project, env=env)  # a clean close: the next writer starts a fresh WAL, past the limit at once
    run = _hook_with_file_limit(project, env, event="stop")
    assert run.returncode == 0 and len(run.stderr.splitlines()) == 1 and b"recorded in" in run.stderr, run.stderr
    hb = check(gate(project, env=env), "hook_heartbeats")
    assert [h[:3] for h in heartbeats(project, "stop")] == [("stop", "error", "db_full")], heartbeats(project)
    assert "stop: last run" in hb["detail"] and "file-size limit" in hb["detail"], hb
    assert "ulimit -f" in hb["fix"], hb
    ok = subprocess.run(memhealth_cmd() + ["hook", "stop"], cwd=str(project), env=env, capture_output=True,
                        input=json.dumps(payload("stop", project)).encode(), timeout=10)
    assert ok.returncode == 0 and ok.stderr == b""
    assert check(gate(project, env=env), "hook_heartbeats")["status"] != "red"
