"""Instructions executed by one hook or gate process, as a ratio to the floor's — counted by
valgrind's callgrind, so the figure is the same whatever else the machine is doing (wall
time on a shared 2-core box moves ±50 %). Skipped, with the reason, without valgrind.

Figures: the stop hook (heartbeat rows and the start journal), the prompt hook on a
non-intent prompt, and `memhealth gate` (BM25-only), each against
`python -c "import sqlite3, json"`. Packages are byte-compiled first, as an install does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from common import compile_packages, memhealth_cmd, row

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def instructions(cmd: list[str], stdin: bytes = b"", cwd: str | None = None) -> int:
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                          input=stdin, cwd=cwd, capture_output=True, timeout=300)
    match = re.search(rb"Collected : (\d+)", proc.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no total: {proc.stderr[-300:]!r}")
    return int(match.group(1))


def bench(quick: bool = False) -> list[dict]:
    if shutil.which("valgrind") is None:
        return [row("instruction counts", 0, "skipped", note="valgrind not installed")]
    compile_packages()
    cmd = memhealth_cmd()
    with tempfile.TemporaryDirectory() as root:
        subprocess.run(cmd + ["init", "--project", root], check=True, capture_output=True)
        subprocess.run(cmd + ["ingest", "--project", root], capture_output=True)

        def stdin(event: str, **fields) -> bytes:
            return json.dumps({"session_id": "bench", "cwd": root, "hook_event_name": event,
                               "transcript_path": os.path.join(root, "t.jsonl"), **fields}).encode()

        # warm: the config cache, the first gate's daily scans
        subprocess.run(cmd + ["hook", "stop"], input=stdin("Stop"), capture_output=True, cwd=root)
        subprocess.run(cmd + ["gate", "--project", root], capture_output=True)
        base = instructions([sys.executable, "-c", "import sqlite3, json"])
        out = [row("floor: python -c 'import sqlite3, json'", base / 1e6, "M instr")]
        cases = [
            ("hook stop (instructions)", cmd + ["hook", "stop"], stdin("Stop")),
            ("hook prompt, non-intent (instructions)", cmd + ["hook", "prompt"],
             stdin("UserPromptSubmit", prompt="thanks, that looks right")),
            ("memhealth gate, BM25-only (instructions)", cmd + ["gate", "--project", root], b""),
        ]
        for name, argv, data in cases:
            n = instructions(argv, data, cwd=root)
            out.append(row(name, n / base, "x floor", note=f"{n / 1e6:.0f}M instructions"))
    return out
