"""Long inputs on the hook path: the prompt hook's wall time with one long token (20,000 and
100,000 characters, a 2 MB prompt) as ratios to the same hook's floor (a short prompt)
measured in the same run, and the in-process cost of the identifier scan, old pattern beside
the current one, at two sizes (a linear scan grows 5x for 5x the input, a quadratic 25x)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time

from common import memhealth_cmd, row, summary, time_cmd

# the pattern the prompt path used before: it backtracks over every start of a long token
OLD_CANDIDATE = re.compile(r"--[A-Za-z][\w-]*|[A-Za-z_][a-z0-9]*[._=A-Z][\w.]*=?")


def _scan_s(fn, text: str, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


def bench(quick: bool = False) -> list[dict]:
    from memory_core.delivery.prompt import candidates

    repeat = 3 if quick else 7
    cmd = memhealth_cmd()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "proj")
        os.makedirs(root)
        subprocess.run(cmd + ["init", "--project", root, "--no-templates"], check=True, capture_output=True)

        def prompt(text: str) -> bytes:
            return json.dumps({"session_id": "s", "cwd": root, "hook_event_name": "UserPromptSubmit",
                               "prompt": text}).encode()

        base = summary(time_cmd(cmd + ["hook", "prompt"], prompt("implement the retry budget"), cwd=root,
                                repeat=repeat))["median"]
        for label, text in (("20,000-char token", "implement " + "x" * 20_000),
                            ("100,000-char token", "implement " + "x" * 100_000),
                            ("2 MB prompt", "implement " + "x" * 2_000_000)):
            t = summary(time_cmd(cmd + ["hook", "prompt"], prompt(text), cwd=root, repeat=repeat))["median"]
            out.append(row(f"prompt hook, {label}", t / base, "x floor", "< 3",
                           note=f"{t * 1000:.0f} ms; floor (short prompt) {base * 1000:.0f} ms; "
                                "Claude Code's prompt timeout is 10 s"))
    for name, fn in (("old pattern", lambda t: [m.group(0) for m in OLD_CANDIDATE.finditer(t)]),
                     ("current scan", candidates)):
        small, big = _scan_s(fn, "x" * 4_000), _scan_s(fn, "x" * 20_000)
        out.append(row(f"identifier scan, {name}: cost at 20,000 / at 4,000 chars", big / max(small, 1e-7),
                       "x", "about 5 (linear)", note=f"{small * 1000:.2f} ms and {big * 1000:.2f} ms"))
    return out
