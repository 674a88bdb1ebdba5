"""Config faults: an invalid config.toml is recorded by every hook (reason `config`, the
key named) while the hook still runs on defaults, even when the bad file is restored with
`cp -p` (same mtime, same size) over a good one the cache has seen."""

from __future__ import annotations

import os
import shutil

from tests.conftest import payload, run_cli, run_hook
from tests.faults.helpers import heartbeats

GOOD = '[hooks]\nbusy_timeout_s = 1.50\n'
BAD = '[hooks]\nbusy_timeout_s = "1s"\n'  # same length as GOOD: only the content differs


def test_an_invalid_config_restored_with_cp_p_is_still_caught(project, tmp_path):
    assert len(GOOD) == len(BAD)
    config = project / ".memhealth" / "config.toml"
    config.write_text(GOOD)
    stamp = os.stat(config)
    assert run_hook("stop", payload("stop", project), cwd=str(project)).stderr == b""  # cached now
    saved = tmp_path / "config.toml"
    saved.write_text(BAD)
    os.utime(saved, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    shutil.copy2(saved, config)  # cp -p: the same mtime and size as the file the cache saw
    assert (os.stat(config).st_mtime_ns, os.stat(config).st_size) == (stamp.st_mtime_ns, stamp.st_size)

    run = run_hook("stop", payload("stop", project), cwd=str(project))
    assert run.returncode == 0 and b"[hooks].busy_timeout_s" in run.stderr
    assert heartbeats(project)[-1][:3] == ("stop", "error", "config")
    gate = run_cli("gate", cwd=str(project))
    assert gate.returncode == 2 and "[hooks].busy_timeout_s" in gate.stderr
    config.write_text(GOOD)  # the fix
    assert run_hook("stop", payload("stop", project), cwd=str(project)).stderr == b""
    assert heartbeats(project)[-1][:3] == ("stop", "ok", None)


def test_a_config_that_is_not_toml_is_recorded_and_the_hook_runs_on_defaults(project):
    (project / ".memhealth" / "config.toml").write_text("[hooks\nbusy_timeout_s = \n")
    run = run_hook("prompt", payload("prompt", project, prompt="thanks"), cwd=str(project))
    assert run.returncode == 0 and b"not valid TOML" in run.stderr
    assert heartbeats(project)[-1][:3] == ("prompt", "error", "config")
