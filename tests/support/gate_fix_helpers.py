"""Helpers for the "a fix clears its RED" tests: run the gate through the real CLI, read
one check, apply a printed FIX (a command through the real CLI, or the config/file edit it
names) and edit `.memhealth/config.toml` the way a person would."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess

from tests.conftest import clean_env, run_cli


def gate(root, env: dict | None = None) -> dict:
    """{check name: check dict} from `memhealth gate --json` (exit 0 or 1 by its verdict)."""
    proc = run_cli("gate", "--json", "--project", str(root), env=env or clean_env(), timeout=90)
    data = json.loads(proc.stdout)
    assert proc.returncode == (1 if data["red"] else 0), proc.stderr
    return {c["name"]: c for c in data["checks"]}


def check(root, name: str, env: dict | None = None) -> dict:
    return gate(root, env)[name]


def commands_in(fix: str) -> list[str]:
    """The `memhealth …` / `sqlite3 …` commands a FIX names, in order: the one it starts
    with, then the backquoted ones."""
    found = re.findall(r"`((?:memhealth|sqlite3) [^`]+)`", fix)
    if fix.startswith(("memhealth ", "sqlite3 ")):
        found.insert(0, re.split(r" \(|;", fix)[0].strip())
    return found


def run_fix(root, command: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run one printed command from the project directory, `memhealth` through the same
    launcher the hooks use."""
    argv = shlex.split(command)
    if argv[0] == "memhealth":
        proc = run_cli(*argv[1:], cwd=str(root), env=env or clean_env(), timeout=90)
    else:
        proc = subprocess.run(argv, cwd=str(root), capture_output=True, text=True, timeout=60,
                              env=env or clean_env())
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    return proc


def set_config(root, section: str, key: str, value) -> None:
    """Set `[section].key` in .memhealth/config.toml (under its existing header)."""
    path = os.path.join(str(root), ".memhealth", "config.toml")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    rendered = f"{key} = {json.dumps(value)}"
    header = lines.index(f"[{section}]")
    end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    for i in range(header + 1, end):
        if re.match(rf"{re.escape(key)}\s*=", lines[i]):
            lines[i] = rendered
            break
    else:
        lines.insert(header + 1, rendered)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
