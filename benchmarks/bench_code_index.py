"""The code index at the paper's scale: several large PyPI sdists committed into one git
repository (well over the paper's 633,446 lines), indexed by `memhealth ingest code`.

Rows:
- lines and files the index read, definitions, components, mentions (code_refs rows);
- the cold index: wall seconds, CPU seconds (user + sys of memhealth and its git children)
  and peak memory (max RSS of the memhealth process). Wall time on a shared box is the
  box's load as much as ours; CPU seconds are the work. Target: cold within 120 s;
- the incremental index after a commit touching 10 files (target 2 s), and a run with
  nothing committed since (the fast path);
- the store's size on disk;
- the read API the hook path will use (memory_core.index.code: components, definitions,
  definition_at) in milliseconds, in process, at that size;
- the prompt hook on that store as ratios to the interpreter floor measured in the same
  run (non-intent ≤ 1.3x, intent ≤ 2x), and the same hook on a store without the code
  index, so "flat with size" is read off the same run; then the prompt hook and
  SessionStart (which runs the gate, code_index included) in instructions (callgrind),
  indexed store against the store without code: wall time on a loaded box moves more than
  the store does.

The sdists are fetched once with `pip download --no-binary :all: --no-deps NAME==VER` into
the cache directory (MEMHEALTH_BENCH_CACHE, default ~/.cache/memhealth-bench/sdists) and
unpacked under a temporary directory deleted after the run.

    python benchmarks/bench_code_index.py [--quick]
    python benchmarks/run.py code_index
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _p in (HERE, REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import compile_packages, floor, memhealth_cmd, row, summary, time_cmd  # noqa: E402

SDISTS = (("Django", "5.1.4"), ("SQLAlchemy", "2.0.36"), ("sympy", "1.13.3"))
PAPER_LINES = 633_446
CACHE = os.environ.get("MEMHEALTH_BENCH_CACHE",
                       os.path.expanduser("~/.cache/memhealth-bench/sdists"))
NON_INTENT = "thanks, that looks good"
INTENT = "add a middleware that compresses responses with gzip"
TOUCHED = 10


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}


def _git(root: str, *args: str) -> str:
    env = dict(_env(), GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.org",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.org")
    return subprocess.run(["git", "-C", root, *args], check=True, capture_output=True, env=env,
                          timeout=600).stdout.decode()


def fetch() -> list[str]:
    """The sdist archives, downloaded into CACHE the first time."""
    os.makedirs(CACHE, exist_ok=True)
    paths = []
    for name, version in SDISTS:
        found = [f for f in os.listdir(CACHE) if f.lower().startswith(f"{name.lower()}-{version}")
                 and f.endswith((".tar.gz", ".zip"))]
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
                            "--no-deps", "--no-build-isolation", f"{name}=={version}", "-d", CACHE],
                           check=True, timeout=600)
            found = [f for f in os.listdir(CACHE) if f.lower().startswith(f"{name.lower()}-{version}")]
        paths.append(os.path.join(CACHE, sorted(found)[0]))
    return paths


def _extract(tar: tarfile.TarFile, into: str) -> None:
    """Unpack with the "data" filter (no absolute paths, links out or devices) where this
    Python has it (3.11.4 and later)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
    else:
        tar.extractall(into)


def build_repo(tmp: str, archives: list[str]) -> str:
    root = os.path.join(tmp, "corpus")
    os.makedirs(root)
    for archive in archives:
        with tarfile.open(archive) as tar:
            _extract(tar, root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "sdists")
    return root


def _run(cmd: list[str], cwd: str, ok: tuple[int, ...] = (0,)) -> tuple[float, float, float, str]:
    """(wall s, CPU s of the process and its children, max RSS MB, stdout) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=_env(), timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024, proc.stdout


def indexed_lines(root: str) -> tuple[int, int]:
    """(lines, files) of the files the index read (status ok or failed)."""
    conn = _connect(root)
    try:
        paths = [p for (p,) in conn.execute(
            "SELECT path FROM code_files WHERE status != 'skipped' AND lang != 'readme'")]
    finally:
        conn.close()
    lines = 0
    for p in paths:
        with open(os.path.join(root, p), "rb") as fh:
            lines += fh.read().count(b"\n")
    return lines, len(paths)


def _connect(root: str):
    from memory_core.store.db import sqlite3

    return sqlite3.connect(os.path.join(root, ".memhealth", "memory.db"), timeout=30)


def touch_files(root: str, n: int) -> list[str]:
    """Add a documented function to `n` Python files and commit them."""
    conn = _connect(root)
    try:
        paths = [p for (p,) in conn.execute(
            "SELECT path FROM code_files WHERE lang = 'python' AND status = 'ok' ORDER BY path")]
    finally:
        conn.close()
    step = max(len(paths) // n, 1)
    chosen = paths[::step][:n]
    for i, p in enumerate(chosen):
        with open(os.path.join(root, p), "a", encoding="utf-8") as fh:
            fh.write(f"\n\ndef bench_added_{i}(x):\n    \"\"\"Added by the benchmark.\"\"\"\n    return x\n")
    _git(root, "add", *chosen)
    _git(root, "commit", "-q", "-m", f"touch {n} files")
    return chosen


def read_api_ms(root: str, repeat: int) -> dict[str, float]:
    from memory_core.index import code as code_index

    conn = _connect(root)
    try:
        names = [n for (n,) in conn.execute(
            "SELECT name FROM code_defs WHERE component = 1 ORDER BY id LIMIT 50")]
        spots = list(conn.execute("SELECT path, line_start + 1 FROM code_defs ORDER BY id LIMIT 50"))
        out = {}
        for label, fn in (("components(limit=20)", lambda i: code_index.components(conn, 20)),
                          ("definitions(name)", lambda i: code_index.definitions(conn, names[i % len(names)])),
                          ("definition_at(path, line)",
                           lambda i: code_index.definition_at(conn, *spots[i % len(spots)])),
                          ("indexed_commit", lambda i: code_index.indexed_commit(conn))):
            fn(0)
            samples = []
            for i in range(repeat):
                t0 = time.perf_counter()
                fn(i)
                samples.append((time.perf_counter() - t0) * 1000)
            out[label] = statistics.median(samples)
        return out
    finally:
        conn.close()


def hook_ratios(root: str, base: float, repeat: int) -> dict[str, float]:
    cmd = memhealth_cmd()
    common = {"session_id": "bench", "cwd": root, "transcript_path": os.path.join(root, "t.jsonl")}
    out = {}
    for label, prompt in (("non-intent", NON_INTENT), ("intent", INTENT)):
        payload = {**common, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
        s = summary(time_cmd(cmd + ["hook", "prompt"], stdin=json.dumps(payload).encode(), env=_env(),
                             cwd=root, repeat=repeat))
        out[label] = s["median"] / base
    return out


def hook_instructions(root: str, floor_i: int) -> dict[str, float]:
    """The prompt hook and SessionStart in instructions (valgrind's callgrind, the hook's own
    process), as ratios to the floor's: the figure a loaded box cannot move."""
    from bench_instructions import instructions

    cmd = memhealth_cmd()
    common = {"session_id": "bench", "cwd": root, "transcript_path": os.path.join(root, "t.jsonl")}
    cases = {"non-intent": {**common, "hook_event_name": "UserPromptSubmit", "prompt": NON_INTENT},
             "intent": {**common, "hook_event_name": "UserPromptSubmit", "prompt": INTENT},
             "session-start": {**common, "hook_event_name": "SessionStart", "source": "startup"}}
    out = {}
    for label, payload in cases.items():
        hook = "session-start" if label == "session-start" else "prompt"
        out[label] = instructions(cmd + ["hook", hook], stdin=json.dumps(payload).encode(), cwd=root) / floor_i
    return out


def _store_bytes(root: str) -> int:
    base = os.path.join(root, ".memhealth", "memory.db")
    return sum(os.path.getsize(base + s) for s in ("", "-wal") if os.path.exists(base + s))


def bench(quick: bool = False) -> list[dict]:
    compile_packages()
    repeat = 7 if quick else 15
    archives = fetch()
    load_before = os.getloadavg()
    cmd = memhealth_cmd()
    out = []
    with tempfile.TemporaryDirectory(prefix="memhealth-code-bench-") as tmp:
        root = build_repo(tmp, archives)
        subprocess.run(cmd + ["init", "--project", root, "--no-templates"], check=True,
                       capture_output=True, env=_env(), timeout=120)
        empty = os.path.join(tmp, "empty")  # the same hook on a store without the code index
        os.makedirs(empty)
        subprocess.run(cmd + ["init", "--project", empty, "--no-templates"], check=True,
                       capture_output=True, env=_env(), timeout=120)
        ingest = cmd + ["ingest", "code", "--json", "--budget-s", "3600", "--project", root]

        wall, cpu, rss, stdout = _run(ingest, root)
        code = json.loads(stdout)["sources"]["code"]["code"]
        lines, files = indexed_lines(root)
        conn = _connect(root)
        try:
            (refs,) = conn.execute("SELECT count(*) FROM code_refs").fetchone()
            (comps,) = conn.execute("SELECT count(*) FROM code_defs WHERE component = 1").fetchone()
        finally:
            conn.close()
        corpus = " + ".join(f"{n} {v}" for n, v in SDISTS)
        out.append(row("code index: lines read", lines, "lines", f">= {PAPER_LINES:,}",
                       f"{files} files from {corpus}; {code['failed']} failed to parse, "
                       f"{code['skipped']} skipped, {code['vendored']} vendored or symlinks"))
        out.append(row("code index: definitions", code["defs_added"], "rows",
                       note=f"{comps} components, {refs} mention rows"))
        out.append(row("code index: cold", wall, "s", "<= 120 s",
                       f"{cpu:.1f} s CPU (memhealth + git); load average before "
                       f"{load_before[0]:.1f} on {os.cpu_count()} cores"))
        out.append(row("code index: cold peak memory", rss, "MB"))
        out.append(row("code index: store size", _store_bytes(root) / 1e6, "MB",
                       note=f"{_store_bytes(root) / max(lines, 1):.1f} bytes per line read"))

        wall_noop, cpu_noop, _rss, _ = _run(ingest, root)
        out.append(row("code index: nothing committed since", wall_noop, "s",
                       note=f"{cpu_noop:.2f} s CPU"))
        touched = touch_files(root, TOUCHED)
        wall_inc, cpu_inc, _rss, stdout = _run(ingest, root)
        inc = json.loads(stdout)["sources"]["code"]["code"]
        assert inc["parsed"] == len(touched), inc
        out.append(row(f"code index: incremental, a commit touching {TOUCHED} files", wall_inc, "s",
                       "<= 2 s", f"{cpu_inc:.2f} s CPU; {inc['parsed']} parsed, {inc['new_names']} new "
                       "names looked for in the other files"))

        for label, ms in read_api_ms(root, repeat * 10).items():
            out.append(row(f"code index read: {label}", ms, "ms", note="median, in process"))

        base = summary(floor(repeat))["median"]
        for label, ratio in hook_ratios(root, base, repeat).items():
            target = "<= 1.3x" if label == "non-intent" else "<= 2x"
            out.append(row(f"prompt hook, {label}, on the indexed store", ratio, "x floor", target))
        for label, ratio in hook_ratios(empty, base, repeat).items():
            out.append(row(f"prompt hook, {label}, on a store without code", ratio, "x floor",
                           note="same run, for comparison"))
        # the first gate of the day runs the daily scans (PRAGMA quick_check over the whole
        # store, the code tables included); the instruction counts below are of warm hooks
        for label, where in (("indexed store", root), ("store without code", empty)):
            first = _run(cmd + ["gate", "--json", "--project", where], where, ok=(0, 1))[0]
            again = _run(cmd + ["gate", "--json", "--project", where], where, ok=(0, 1))[0]
            out.append(row(f"memhealth gate, first of the day / again, {label}", first, "s",
                           note=f"again {again:.2f} s (the daily integrity scans run once a day)"))
        if shutil.which("valgrind"):
            from bench_instructions import instructions

            floor_i = instructions([sys.executable, "-c", "import sqlite3, json"])
            indexed, plain = hook_instructions(root, floor_i), hook_instructions(empty, floor_i)
            for label in indexed:
                out.append(row(f"{label} hook in instructions, indexed store / store without code",
                               indexed[label], "x floor",
                               note=f"without code {plain[label]:.2f}x; ratio {indexed[label] / plain[label]:.3f}"))
        out.append(row("load average after", os.getloadavg()[0], "", note=f"{os.cpu_count()} cores"))
        shutil.rmtree(root, ignore_errors=True)
    return out


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for r in bench(args.quick):
        print(json.dumps(r))
