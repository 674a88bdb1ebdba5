#!/usr/bin/env python3
"""The fault campaign: real hook processes under every fault class, each run judged by an oracle.

    python benchmarks/fault_campaign.py                  # the full campaign (~350 runs)
    python benchmarks/fault_campaign.py --quick          # one run per class and variant
    python benchmarks/fault_campaign.py --only lock_kill --json out.json
    python benchmarks/run.py fault_campaign              # the same, as a benchmark module

Every run is `memhealth hook EVENT` as Claude Code starts it (JSON on stdin, the project as
cwd) in a project made by `memhealth init`, under one fault: a SIGKILL at a point in the hook,
a lock held past the busy timeout, a full disk (a small tmpfs), an immutable state directory,
planted symlinks, a deleted store or -shm, a directory or garbage where the store should be,
a skewed wall clock, a dead or hung embedding server, a closed stdout, hostile stdin, long
inputs, a bad stored schedule or config value. Each run carries an oracle: the heartbeat row
(or spilled row) its pid must leave, with outcome and reason; the decision row a prompt must
leave; and what the next `memhealth gate --json` must say (the check that is RED, words of its
detail and of its FIX), or that it stays free of new REDs. A run is then

- correct:       the row and the gate say what the oracle says;
- misclassified: a row or finding exists, but of the wrong kind, reason or FIX (a false kill
                 is one: an extra row of the wrong kind), or the hook broke its own contract
                 (a non-zero exit, over its timeout, a traceback);
- silent:        the fault left a row nobody reports, or no row and a GREEN gate;
- lost:          rows written or promised (committed before the fault, or "recorded" on
                 stderr, or a prompt's decision) are gone.

Kill points and the clock are injected from outside the code under test: a `sitecustomize`
on PYTHONPATH that (by environment variable) SIGKILLs the process at a named function, or
shifts time.time/time.time_ns. Every subprocess has a timeout; the campaign is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PAYLOADS = os.path.join(REPO, "tests", "fixtures", "payloads")
SCRUB_HOME, SCRUB_PROJECT = "/home/dev", "/home/dev/ledger-service"  # the fixtures' placeholders

EVENTS = ("session-start", "prompt", "pre-tool", "post-tool", "pre-compact", "stop", "session-end")
# Claude Code kills a hook after its `timeout` (seconds; `memhealth init` writes these)
TIMEOUTS = {"session-start": 30, "prompt": 10, "pre-tool": 5, "post-tool": 5, "pre-compact": 10,
            "stop": 5, "session-end": 5}
FIXTURE = {"session-start": "session_start_startup", "prompt": "user_prompt_submit",
           "pre-tool": "pre_tool_use_read", "post-tool": "post_tool_use_read", "pre-compact": "pre_compact",
           "stop": "stop", "session-end": "session_end"}
VERDICTS = ("correct", "misclassified", "silent", "lost")
KILLED = "killed before its heartbeat"
LOCK_FIX = "fuser .memhealth/memory.db"

# Injected into the hook process by PYTHONPATH: a kill point or a skewed wall clock.
SITECUSTOMIZE = r'''
import os as _os
_skew = _os.environ.get("MHC_SKEW_NS")
if _skew:
    import time as _time
    _off, _tn, _t = int(_skew), _time.time_ns, _time.time
    _time.time_ns = lambda: _tn() + _off
    _time.time = lambda: _t() + _off / 1e9
# this process only: a child (the capture worker SessionEnd spawns) must not inherit the kill
_at = _os.environ.pop("MHC_KILL_AT", None)
if _at:
    import signal as _signal

    def _die(*_a, **_k):
        _os.kill(_os.getpid(), _signal.SIGKILL)

    if _at == "before_finish":  # the heartbeat row is in, the work done, nothing completed
        from memory_core.outbox import heartbeat as _h
        _h.finish = _die
    elif _at == "mid_transaction":  # inside the completing transaction, before its commit
        from memory_core.outbox import heartbeat as _h
        _orig = _h.complete_row

        def _complete(*a, **k):
            _orig(*a, **k)
            _die()
        _h.complete_row = _complete
    elif _at == "after_commit":  # the row is committed, the journal's end line not yet written
        from memory_core.outbox import journal as _j
        _j.ended = _die
    elif _at == "mid_spill":  # half of a spill line written, then the kill
        from memory_core.outbox import spill as _s

        def _half(path, data, _fl=_s.APPEND_FLAGS, _orig=_s.write_line):
            if not (_os.path.basename(path).startswith("spill") or
                    _os.path.basename(_os.path.dirname(path)) == "spill"):
                return _orig(path, data)  # the journal's lines (it imports this function) stay whole
            fd = _os.open(path, _fl, 0o600)
            _os.write(fd, data[: len(data) // 2])
            _die()
        _s.write_line = _half
'''


# ---------------------------------------------------------------- the parts a run is made of

# the store's own SQLite library: two libraries in one process release each other's POSIX locks
from memory_core.store.db import sqlite3  # noqa: E402


def launcher() -> list[str]:
    from memhealth.installer import launcher_argv

    return launcher_argv()


def real_payload(event: str, root: str, n: str, **fields) -> dict:
    """The payload the real CLI sent for `event` (tests/fixtures/payloads), moved into `root`,
    with this run's own session, prompt and tool ids."""
    with open(os.path.join(PAYLOADS, FIXTURE[event] + ".json"), encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace(SCRUB_PROJECT, root).replace(SCRUB_HOME, os.path.dirname(root))
    body = json.loads(text)
    body.update({"session_id": f"camp-{n}", "cwd": root, "transcript_path": os.path.join(root, f"t-{n}.jsonl")})
    if event == "prompt":
        body.update({"prompt": "should we keep the retry budget in the client?", "prompt_id": f"p-{n}"})
    if event in ("pre-tool", "post-tool"):
        body["tool_use_id"] = f"toolu-{n}"
    body.update(fields)
    return body


class Run:
    """One hook process: its pid, exit code, output and wall seconds."""

    def __init__(self, event: str, pid: int, rc, out: bytes, err: bytes, seconds: float, killed: bool,
                 timed_out: bool):
        self.event, self.pid, self.rc, self.out, self.err = event, pid, rc, out, err
        self.seconds, self.timed_out = seconds, timed_out
        self.killed = killed or rc == -signal.SIGKILL  # by the harness, or at an injected kill point


class Cell:
    """A project made by `memhealth init`, its own per-user state dir, and the hooks run in it."""

    def __init__(self, base: str, name: str, inject_dir: str, root: str | None = None):
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        self.root = root or os.path.join(self.dir, "proj")
        os.makedirs(self.root, exist_ok=True)
        self.state = os.path.join(self.root, ".memhealth")
        self.db = os.path.join(self.state, "memory.db")
        self.xdg = os.path.join(self.dir, "xdg")
        os.makedirs(self.xdg)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
        self.env.update({"XDG_STATE_HOME": self.xdg, "PYTHONPATH": inject_dir})
        self.cli("init", "--project", self.root, "--no-templates", check=True)
        self.n = 0

    def cli(self, *args, env: dict | None = None, check: bool = False, timeout: float = 60):
        proc = subprocess.run(launcher() + list(args), cwd=self.root, capture_output=True, text=True,
                              timeout=timeout, env={**self.env, **(env or {})})
        if check and proc.returncode != 0:
            raise RuntimeError(f"memhealth {' '.join(args)}: {proc.stderr.strip()}")
        return proc

    def payload(self, event: str, **fields) -> bytes:
        self.n += 1
        return json.dumps(real_payload(event, self.root, f"{os.path.basename(self.dir)}-{self.n}", **fields)).encode()

    def hook(self, event: str, body: bytes | None = None, *, env: dict | None = None, stdin_open: bool = False,
             kill_when=None, stdout=None, prlimit: list[str] | None = None) -> Run:
        """Run `memhealth hook EVENT` bounded by its Claude Code timeout. `kill_when`: a
        predicate polled until true, then SIGKILL (as Claude Code's timeout does)."""
        body = self.payload(event) if body is None else body
        argv = launcher() + ["hook", event]
        if prlimit:
            argv = ["prlimit", *prlimit, "--"] + argv
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stdout or subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=self.root, env={**self.env, **(env or {})})
        killed = timed_out = False
        try:
            proc.stdin.write(body)
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        if not stdin_open:
            proc.stdin.close()
        limit = t0 + TIMEOUTS[event]
        if kill_when is not None:
            while time.monotonic() < limit and proc.poll() is None and not kill_when(proc.pid):
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed = True
        try:
            proc.wait(max(0.1, limit - time.monotonic()))
        except subprocess.TimeoutExpired:  # Claude Code's timeout: the same SIGKILL
            proc.kill()
            proc.wait(10)
            timed_out = True
        seconds = time.monotonic() - t0
        with contextlib.suppress(ValueError, OSError):
            proc.stdin.close()
        out = proc.stdout.read() if proc.stdout else b""
        err = proc.stderr.read()
        for fh in (proc.stdout, proc.stderr):
            if fh:
                fh.close()
        return Run(event, proc.pid, proc.returncode, out, err, seconds, killed, timed_out)

    def gate(self, env: dict | None = None) -> dict:
        proc = self.cli("gate", "--json", env=env)
        try:
            verdict = json.loads(proc.stdout)
        except ValueError:
            verdict = {"checks": [], "unparsed": (proc.stdout + proc.stderr)[-500:]}
        verdict["exit"] = proc.returncode
        return verdict

    def rows(self, sql: str) -> list[tuple]:
        if not os.path.isfile(self.db) or os.path.islink(self.db):
            return []
        try:
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
            try:
                return conn.execute(sql).fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            return []

    def heartbeats(self) -> list[dict]:
        keys = ("id", "hook", "pid", "outcome", "reason", "detail", "trace_id", "session_id")
        return [dict(zip(keys, r, strict=True)) for r in self.rows(f"SELECT {', '.join(keys)} FROM heartbeats "
                                                      "WHERE hook != 'gate' ORDER BY id")]

    def decisions(self) -> set[str]:
        return {r[0] for r in self.rows("SELECT trace_id FROM decisions")}

    def pending(self) -> list[dict]:
        """Rows not yet in the store: spill files (the project's and the per-user fallback)
        and the journal's failure lines."""
        found = []
        for d in (self.state, self.xdg):
            for dirpath, _dirs, files in os.walk(d):
                for f in files:
                    if not (f.startswith(("spill", "journal")) or os.path.basename(dirpath) == "spill"):
                        continue
                    with contextlib.suppress(OSError), open(os.path.join(dirpath, f), "rb") as fh:
                        for line in fh.read().splitlines():
                            with contextlib.suppress(ValueError):
                                rec = json.loads(line)
                                if not isinstance(rec, dict):
                                    continue
                                if f.startswith("journal"):  # only failure lines hold rows
                                    found.extend(rec.get("rows") or [])
                                else:
                                    found.append(rec)
        return [r for r in found if isinstance(r, dict)]


class Oracle:
    """What one run must leave: the row for its pid (`outcome`, `reason`: in the store, or
    still pending in a spill while the fault stands), a decision for a prompt, and the gate's
    finding: `check` RED with `detail` and `fix` words and none of the `forbid` words, or
    (check=None) no RED the baseline lacks. No run may leave a killed row it was not."""

    def __init__(self, outcome: str, reason: str | None = None, check: str | None = "hook_heartbeats",
                 detail: tuple = (), fix: tuple = (), decision: bool = True, any_reason: tuple = (),
                 forbid: tuple = ()):
        self.outcome, self.reason, self.check = outcome, reason, check
        self.detail, self.fix, self.decision, self.any_reason = detail, fix, decision, any_reason
        self.forbid = forbid


def ok() -> Oracle:
    return Oracle("ok", check=None)


def _red(verdict: dict) -> dict[str, dict]:
    return {c["name"]: c for c in verdict.get("checks", []) if c.get("status") == "red"}


def judge(cell: Cell, run: Run, want: Oracle, verdict: dict, baseline: set[str], prior: list[dict],
          prior_decisions: set[str], rows_verdict: dict | None = None) -> tuple[str, str]:
    """(verdict word, why) for one run. `verdict` is the gate while the fault stands;
    rows are read after `rows_verdict` (a gate after the fault was repaired), if any."""
    hbs = cell.heartbeats()
    have = {h["id"] for h in hbs}
    gone = [p for p in prior if p["id"] not in have]
    if gone:
        return "lost", f"{len(gone)} earlier heartbeat row(s) gone"
    decided = cell.decisions()
    if prior_decisions - decided:
        return "lost", f"{len(prior_decisions - decided)} earlier decision row(s) gone"
    if run.rc not in (0, None) and not run.killed:
        return "misclassified", f"the hook exited {run.rc}"
    if b"Traceback" in run.err or len(run.err.splitlines()) > 1:
        return "misclassified", f"stderr is not one line: {run.err[:200]!r}"
    if run.timed_out:
        return "misclassified", f"the hook ran past its {TIMEOUTS[run.event]} s timeout and was killed"
    mine = [h for h in hbs if h["pid"] == run.pid and h["hook"] == run.event]
    pending = [r for r in cell.pending() if r.get("pid") == run.pid and r.get("kind", "heartbeat") == "heartbeat"
               and r.get("hook") == run.event]
    red = _red(verdict)
    finding = red.get(want.check) if want.check else None
    if not mine and not pending:
        said = b"recorded" in run.err and b"NOT recorded" not in run.err
        if said or want.outcome == "ok":
            return "lost", "no row for the run" + (" though stderr said recorded" if said else "")
        if finding is not None or (red.keys() - baseline):
            return "misclassified", f"no row for the run; the gate is RED on {sorted(red.keys() - baseline)}"
        return "silent", "no row for the run and no RED in the gate"
    if len(mine) > 1:
        return "misclassified", f"{len(mine)} rows for one run: {[(h['outcome'], h['reason']) for h in mine]}"
    row = mine[0] if mine else pending[-1]
    if row.get("outcome") != want.outcome:
        return "misclassified", f"row is {row.get('outcome')}/{row.get('reason')}, want {want.outcome}/{want.reason}"
    if want.reason and row.get("reason") != want.reason and row.get("reason") not in want.any_reason:
        return "misclassified", f"reason {row.get('reason')!r}, want {want.reason!r}"
    if run.event == "prompt" and want.decision and want.outcome != "killed":
        pend_dec = {r.get("row", r).get("trace_id") for r in cell.pending() if r.get("kind") == "decision"}
        if row.get("trace_id") not in decided | pend_dec:
            return "lost", "the prompt's decision row is missing"
    kills = [h for h in hbs if h["outcome"] == "killed" and h["pid"] != run.pid]
    if kills:
        return "misclassified", f"{len(kills)} false killed row(s) besides the run's"
    if want.check is None:
        extra = red.keys() - baseline
        if extra:
            return "misclassified", f"a clean run, yet the gate is RED on {sorted(extra)}: " + \
                "; ".join(red[n]["detail"][:160] for n in sorted(extra))
        return "correct", ""
    if finding is None:
        named = [n for n in red if n not in baseline]
        if named:
            return "misclassified", f"{want.check} not RED; RED instead: {named}"
        return "silent", f"{want.check} is not RED (the row says {row.get('outcome')}/{row.get('reason')})"
    text = finding.get("detail", "")
    missing = [w for w in want.detail if w not in text] + [w for w in want.fix if w not in finding.get("fix", "")]
    missing += [f"not {w!r}" for w in want.forbid if w in text + finding.get("fix", "")]
    if missing:
        return "misclassified", f"{want.check} RED but lacks {missing}: {text[:200]} FIX {finding.get('fix', '')[:200]}"
    return "correct", ""


# ---------------------------------------------------------------- fault helpers

@contextlib.contextmanager
def lock_held(db: str, env: dict):
    """Another process holds the database's write lock until the block ends."""
    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
            f"c = sqlite3.connect({db!r}, isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=REPO, env=env)
    try:
        line = holder.stdout.readline().strip()
        if line != b"locked":
            raise RuntimeError("the lock holder did not start")
        yield holder
    finally:
        holder.stdin.close()
        try:
            holder.wait(10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait(10)


@contextlib.contextmanager
def holder(db: str, env: dict):
    """A process with the store open (a reader that keeps its connection and -shm mapped)."""
    code = ("import sys\nfrom memory_core.store.db import sqlite3\n"
            f"c = sqlite3.connect({db!r}, isolation_level=None)\n"
            "c.execute('SELECT count(*) FROM heartbeats').fetchall()\nprint('open', flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            cwd=REPO, env=env)
    try:
        if proc.stdout.readline().strip() != b"open":
            raise RuntimeError("the holder did not start")
        yield proc
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def journal_has_pid(cell: Cell, pid: int) -> bool:
    try:
        with open(os.path.join(cell.state, "journal.ndjson"), "rb") as fh:
            return any(f'"pid":{pid},'.encode() in line for line in fh)
    except OSError:
        return False


@contextlib.contextmanager
def tmpfs(path: str, size: str = "1m"):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], check=True, timeout=10,
                   capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], timeout=10, capture_output=True)


def fill(directory: str) -> None:
    """Fill the filesystem holding `directory` to the last byte."""
    with open(os.path.join(directory, "ballast"), "wb", buffering=0) as fh:
        chunk = b"\0" * 65536
        with contextlib.suppress(OSError):
            while True:
                fh.write(chunk)
                fh.flush()
        for size in (4096, 512, 64, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * size)


def can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = tempfile.mkdtemp(prefix="mhc-probe-")
    try:
        ok_ = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], capture_output=True,
                             timeout=10).returncode == 0
        if ok_:
            subprocess.run(["umount", probe], capture_output=True, timeout=10)
        return ok_
    finally:
        os.rmdir(probe)


@contextlib.contextmanager
def immutable(path: str):
    """The directory `path` and every file in it refuse writes (a read-only state dir, as a
    read-only mount gives): chattr +i as root, who ignores modes; else chmod a-w."""
    paths = [path] + [os.path.join(path, f) for f in os.listdir(path)]
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *paths], check=True, capture_output=True, timeout=10)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *paths], capture_output=True, timeout=10)
        return
    modes = {p: os.stat(p).st_mode & 0o777 for p in paths}
    for p, m in modes.items():
        os.chmod(p, m & ~0o222)
    try:
        yield
    finally:
        for p, m in modes.items():
            os.chmod(p, m)


class EmbedServer:
    """A loopback HTTP server: `hung` answers nothing for `hang_s`; `404` answers 404 to every
    path (not Ollama); `500` fails every request at once; `dead` is a closed port."""

    def __init__(self, mode: str, hang_s: float = 300.0):  # released by close(), never waited out
        self.mode, self.stop = mode, threading.Event()
        if mode == "dead":
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.url = f"http://127.0.0.1:{s.getsockname()[1]}"
            s.close()
            self.server = None
            return
        stop, hang = self.stop, hang_s

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                if mode == "hung":
                    stop.wait(hang)
                    return
                code = 404 if mode == "404" else 500  # a server that is not Ollama; one failing at once
                body = b"<html>not found</html>" if code == 404 else b'{"error": "internal"}'
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        if self.server:
            self.server.shutdown()
            self.server.server_close()


# ---------------------------------------------------------------- the classes

class Campaign:
    """The runs and their verdicts. `quick`: one repetition; `sample`: also one event (or
    variant) per class, rotating so that every event is covered across the classes."""

    def __init__(self, base: str, quick: bool, sample: bool = False):
        self.base, self.quick, self.sample, self.rot = base, quick or sample, sample, 0
        self.inject = os.path.join(base, "inject")
        os.makedirs(self.inject)
        with open(os.path.join(self.inject, "sitecustomize.py"), "w") as fh:
            fh.write(SITECUSTOMIZE)
        self.results: list[dict] = []
        self.k = 0
        self.baseline = set(_red(Cell(base, "baseline", self.inject).gate()))

    def cell(self, name: str, root: str | None = None) -> Cell:
        self.k += 1
        return Cell(self.base, f"{self.k:04d}-{name}", self.inject, root)

    def record(self, cls: str, defect: str, variant: str, event: str, verdict: str, why: str, seconds: float):
        self.results.append({"class": cls, "defect": defect, "variant": variant, "event": event,
                             "verdict": verdict, "why": why, "seconds": round(seconds, 3)})

    def one(self, cls, defect, variant, event, fn) -> None:
        """Run one faulted run (fn(cell) -> (run, oracle, verdict, prior, prior_decisions[, rows_verdict]))
        in a fresh project and judge it; a harness failure is reported, never counted as correct."""
        t0 = time.monotonic()
        try:
            c = self.cell(f"{cls}-{event}")
            got = fn(c)
            word, why = judge(c, *got[:2], got[2], self.baseline, *got[3:])
        except Exception as exc:  # noqa: BLE001 - a broken harness step is shown, not hidden
            word, why = "misclassified", f"harness: {type(exc).__name__}: {exc}"
        self.record(cls, defect, variant, event, word, why, time.monotonic() - t0)

    def reps(self, n: int) -> range:
        return range(1 if self.quick else n)

    def pick(self, seq) -> list:
        seq = list(seq)
        if not self.sample:
            return seq
        self.rot += 1
        return [seq[self.rot % len(seq)]]


def _good(c: Cell, k: int = 2) -> tuple[list[dict], set[str]]:
    """k good prompts first: the rows a fault must not take with it."""
    for _ in range(k):
        c.hook("prompt")
    return c.heartbeats(), c.decisions()


def cls_control(camp: Campaign):
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c, 1)
                run = c.hook(ev)
                return run, ok(), c.gate(), prior, pd
            camp.one("control", "-", "no fault", ev, fn)


def cls_kill_stdin(camp: Campaign):
    """SIGKILL while the hook waits on a stdin that never closes (after its journal line)."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                run = c.hook(ev, b'{"session_id": "s1", "cwd": ', stdin_open=True,
                             kill_when=lambda pid: journal_has_pid(c, pid))
                return run, Oracle("killed", "killed", detail=(f"{ev}: last run", KILLED)), c.gate(), prior, pd
            camp.one("kill_stdin_open", "generic", "SIGKILL waiting on stdin", ev, fn)


def cls_kill_locked(camp: Campaign):
    """SIGKILL while the hook waits out busy_timeout on a held write lock (D1's kill kind)."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                with lock_held(c.db, c.env):
                    run = c.hook(ev, kill_when=lambda pid: journal_has_pid(c, pid), env={"MEMHEALTH_HOOKS_BUSY_TIMEOUT_S": "4"})
                return run, Oracle("killed", "killed", detail=(f"{ev}: last run", KILLED), fix=(LOCK_FIX,)), \
                    c.gate(), prior, pd
            camp.one("kill_locked", "D1", "SIGKILL on a held lock", ev, fn)


def cls_kill_points(camp: Campaign):
    """SIGKILL injected at points after the heartbeat row is in."""
    points = {"before_finish": "killed", "mid_transaction": "killed", "after_commit": "ok"}
    for point, outcome in points.items():
        for _ in camp.reps(2):
            for ev in camp.pick(EVENTS):
                def fn(c, ev=ev, point=point, outcome=outcome):
                    prior, pd = _good(c)
                    run = c.hook(ev, env={"MHC_KILL_AT": point})
                    want = ok() if outcome == "ok" else Oracle("killed", "killed", detail=(f"{ev}: last run", "killed"))
                    return run, want, c.gate(), prior, pd
                camp.one(f"kill_{point}", "generic", f"SIGKILL at {point}", ev, fn)


def cls_kill_mid_spill(camp: Campaign):
    """Lock held, the hook spills its error row and is killed half way through the line (D3);
    the next hook after the lock is released must land whole."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                with lock_held(c.db, c.env):
                    run = c.hook(ev, env={"MHC_KILL_AT": "mid_spill", "MEMHEALTH_HOOKS_BUSY_TIMEOUT_S": "0.3"})
                after = c.hook("stop")
                verdict = c.gate()
                mine = [h for h in c.heartbeats() if h["pid"] == after.pid]
                if [h["outcome"] for h in mine] != ["ok"]:
                    raise AssertionError(f"the hook after the fragment left {mine}")
                prior = prior + mine
                return run, Oracle("killed", "killed", detail=(f"{ev}: last run", KILLED)), verdict, prior, pd
            camp.one("kill_mid_spill", "D3", "SIGKILL mid spill line", ev, fn)


def cls_lock_busy(camp: Campaign):
    """A lock held past busy_timeout: the row spills as db_locked, the gate drains it (D6/D7)."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                with lock_held(c.db, c.env):
                    run = c.hook(ev, env={"MEMHEALTH_HOOKS_BUSY_TIMEOUT_S": "0.3"})
                if ev == "session-end" and not _boundary_kept(c):
                    raise AssertionError("the locked session-end kept no boundary for its capture (D7)")
                return run, Oracle("error", "db_locked", detail=(f"{ev}: last run", "db_locked"), fix=(LOCK_FIX,)), \
                    c.gate(), prior, pd
            camp.one("lock_past_busy_timeout", "D6/D7", "lock held past busy_timeout", ev, fn)


def _boundary_kept(c: Cell) -> bool:
    if c.rows("SELECT 1 FROM capture_queue LIMIT 1"):
        return True
    path = os.path.join(c.state, "boundaries.ndjson")
    return os.path.exists(path) and os.path.getsize(path) > 0


def cls_disk_full(camp: Campaign):
    """The project on a full tmpfs; the per-user state dir elsewhere takes the spill (D2)."""
    if not can_mount():
        return
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                mnt = os.path.join(c.dir, "full")
                with tmpfs(mnt, "16m"):
                    # the store moves onto the small filesystem, then the filesystem fills
                    os.makedirs(os.path.join(mnt, "s"))
                    for f in os.listdir(c.state):
                        shutil.move(os.path.join(c.state, f), os.path.join(mnt, "s", f))
                    os.rmdir(c.state)
                    os.symlink(os.path.join(mnt, "s"), c.state)
                    fill(mnt)
                    run = c.hook(ev)
                    verdict = c.gate()
                    os.remove(os.path.join(mnt, "ballast"))
                    after = c.gate()
                    os.remove(c.state)
                    shutil.copytree(os.path.join(mnt, "s"), c.state)
                return run, Oracle("error", "db_full", detail=("disk full",), fix=("df -h",),
                                   any_reason=("db_io", "disk_full")), verdict if _red(verdict) else after, \
                    prior, pd
            camp.one("disk_full", "D2", "project on a full tmpfs", ev, fn)


def cls_fsize(camp: Campaign):
    """A file-size limit (`prlimit --fsize`, no root needed) below a WAL frame: the store's
    writes fail as a full disk; the small spill line still fits, and the gate drains it."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                c.gate()  # a clean close: the next writer starts a fresh WAL, which the limit refuses
                prior, pd = c.heartbeats(), c.decisions()
                run = c.hook(ev, prlimit=["--fsize=2048"])
                return run, Oracle("error", "db_full", detail=(f"{ev}: last run", "db_full"), fix=("ulimit -f",),
                                   any_reason=("db_io",)), c.gate(), prior, pd
            camp.one("fsize_limit", "D2/D3", "prlimit --fsize=2048", ev, fn)


def cls_readonly(camp: Campaign):
    """The state directory and its files refuse writes (chattr +i as root, who ignores modes)."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                with immutable(c.state):
                    run = c.hook(ev)
                    during = c.gate()
                after = c.gate()
                want = Oracle("error", "db_readonly", detail=(f"{ev}: last run", "db_readonly"), fix=("chmod",))
                word = _red(during)
                if not (word.keys() - camp.baseline):
                    return run, want, during, prior, pd  # judged on the gate during: silent
                return run, want, after, prior, pd
            camp.one("readonly_state_dir", "generic", "immutable .memhealth/", ev, fn)


def cls_symlinks(camp: Campaign):
    """Planted links: the spill (D5), memory.db to another project's store (D9), a dangling -wal (D9)."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def spill_link(c, ev=ev):
                prior, pd = _good(c)
                os.symlink("/nonexistent", os.path.join(c.state, "spill.ndjson"))
                run = c.hook(ev, b'{"session_id": "s1", "cwd": ', stdin_open=True, kill_when=lambda pid: journal_has_pid(c, pid))
                return run, Oracle("killed", "killed", detail=(f"{ev}: last run", "spill.ndjson is a symbolic link")), \
                    c.gate(), prior, pd
            camp.one("symlink_spill", "D5", "spill.ndjson -> /nonexistent, SIGKILL", ev, spill_link)

            def db_link(c, ev=ev):
                other = camp.cell("other")
                before = len(other.heartbeats())
                prior, pd = _good(c)
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(c.db + suffix)
                os.symlink(other.db, c.db)
                run = c.hook(ev)
                verdict = c.gate()
                if len(other.heartbeats()) != before:
                    raise AssertionError("a hook wrote into another project's store through the link")
                return run, Oracle("error", "db_symlink", check="store", detail=("symbolic link",), fix=("rm",)), \
                    verdict, [], set()
            camp.one("symlink_db", "D9", "memory.db -> another project's store", ev, db_link)

            def wal_link(c, ev=ev):
                prior, pd = _good(c)
                with contextlib.suppress(FileNotFoundError):
                    os.remove(c.db + "-wal")
                os.symlink(os.path.join(c.dir, "gone-wal"), c.db + "-wal")
                run = c.hook(ev)
                return run, Oracle("error", "db_symlink", check="store", detail=("symbolic link",), fix=("rm",)), \
                    c.gate(), [], set()
            camp.one("symlink_wal", "D9", "dangling memory.db-wal link", ev, wal_link)


def cls_store_reset(camp: Campaign):
    """D1: prompts, then the store deleted; the next hook recreates it and no kill is invented."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                _good(c, 3)
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(c.db + suffix)
                run = c.hook(ev)
                verdict = c.gate()
                # the reset is said once to a person: by this hook's systemMessage, or by the gate
                if b"store reset" in run.out:
                    return run, ok(), verdict, [], set()
                return run, Oracle("ok", check="hook_heartbeats", detail=("store reset",), forbid=("killed", "fuser")), \
                    verdict, [], set()
            camp.one("store_reset", "D1", "rm memory.db after 3 prompts", ev, fn)


def cls_shm_deleted(camp: Campaign):
    """D4: -shm deleted under a process holding the store; then the holder exits."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev):
                prior, pd = _good(c)
                with holder(c.db, c.env):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(c.db + "-shm")
                    run = c.hook(ev)
                    during = c.gate()
                if not (_red(during).keys() - camp.baseline):
                    return run, Oracle("error", "shm_deleted", check="store", detail=("shm",), fix=("kill",)), during, prior, pd
                c.gate()  # the holder is gone: the spilled rows drain
                return run, Oracle("error", "shm_deleted", detail=(f"{ev}: last run",)), c.gate(), prior, pd
            camp.one("shm_deleted", "D4", "rm memory.db-shm under a holder", ev, fn)


def cls_wal_deleted(camp: Campaign):
    """-wal deleted while a holder keeps the rows in it: named with the `cp /proc/...` fix that
    puts it back; followed as printed, no row is lost."""
    import re

    for ev in camp.pick(EVENTS):
        def fn(c, ev=ev):
            with holder(c.db, c.env) as proc:
                prior, pd = _good(c)
                if not os.path.getsize(c.db + "-wal"):
                    raise AssertionError("the rows are not in the WAL")
                os.remove(c.db + "-wal")
                run = c.hook(ev)
                during = c.gate()
                store = next((x for x in during.get("checks", []) if x["name"] == "store"), {})
                cmd = re.search(r"`(cp /proc/\d+/fd/\d+ \S+-wal)`", store.get("fix", ""))
                if store.get("status") != "red" or "wal was deleted" not in store.get("detail", "").lower() or not cmd:
                    return run, Oracle("error", "wal_deleted", check="store", detail=("wal was deleted",),
                                       fix=("cp /proc/",)), during, prior, pd
                subprocess.run(cmd.group(1), shell=True, cwd=c.root, check=True, timeout=10)  # the fix, as printed
                proc.stdin.close()
                proc.wait(10)
            return run, Oracle("error", "wal_deleted", detail=(f"{ev}: last run", "wal_deleted")), c.gate(), prior, pd
        camp.one("wal_deleted", "generic", "rm memory.db-wal under a holder, then its fix", ev, fn)


def cls_not_a_file(camp: Campaign):
    """D10: memory.db replaced by a directory; garbage in place of the store."""
    for _ in camp.reps(2):
        for ev in camp.pick(EVENTS):
            def directory(c, ev=ev):
                _good(c)
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(c.db + suffix)
                os.mkdir(c.db)
                run = c.hook(ev)
                return run, Oracle("error", "db_not_file", detail=("directory",), fix=("mv",), check="store"), \
                    c.gate(), [], set()
            camp.one("db_is_directory", "D10", "memory.db is a directory", ev, directory)

            def corrupt(c, ev=ev):
                _good(c)
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(c.db + suffix)
                with open(c.db, "r+b") as fh:
                    fh.seek(0)
                    fh.write(b"this is not a sqlite database" * 200)
                run = c.hook(ev)
                return run, Oracle("error", "db_corrupt", check="store", detail=("corrupt",)), c.gate(), [], set()
            camp.one("db_corrupt", "generic", "garbage over the store's header", ev, corrupt)


SKEWS = {"-10 min": -600 * 10**9, "-3 d": -3 * 86400 * 10**9, "-1 y": -365 * 86400 * 10**9,
         "+1 h": 3600 * 10**9, "+1 y": 365 * 86400 * 10**9}


def cls_clock(camp: Campaign):
    """D11: the hook's wall clock skewed; a failing run must still be the latest, a kill still RED."""
    for label, skew in camp.pick([item for _ in camp.reps(2) for item in SKEWS.items()]):
        def failing(c, skew=skew):
            prior, pd = _good(c)
            run = c.hook("prompt", b"[1, 2, 3]", env={"MHC_SKEW_NS": str(skew)})
            return run, Oracle("error", "not_object", detail=("prompt: last run", "not_object")), \
                c.gate(), prior, pd
        camp.one("clock_skew", "D11", f"failing prompt at {label}", "prompt", failing)

        def killed(c, skew=skew):
            prior, pd = _good(c)
            run = c.hook("stop", b'{"session_id": "s1", "cwd": ', stdin_open=True, env={"MHC_SKEW_NS": str(skew)},
                         kill_when=lambda pid: journal_has_pid(c, pid))
            verdict = c.gate()
            if verdict["exit"] != 1:
                raise AssertionError(f"a killed hook at {skew} ns skew: gate exit {verdict['exit']}")
            return run, Oracle("killed", "killed", detail=("stop: last run", "killed")), verdict, prior, pd
        camp.one("clock_skew", "D11", f"killed stop at {label}", "stop", killed)


def cls_embedding(camp: Campaign):
    """A dead (closed port) or hung embedding server: hooks finish in time; the gate names it."""
    for mode, state in (("dead", "unreachable"), ("hung", "wedged"), ("404", "not_ollama"), ("500", "server_error")):
        if camp.sample and mode == "hung":
            continue  # a hung server costs the gate its whole warm-up wait: full runs only
        for ev in camp.pick(("session-start", "prompt", "pre-tool", "stop")):
            def fn(c, ev=ev, mode=mode, state=state):
                srv = EmbedServer(mode)
                env = {"MEMHEALTH_EMBEDDING_URL": srv.url, "MEMHEALTH_EMBEDDING_TIMEOUT_S": "1",
                       "MEMHEALTH_GATE_HOOK_BUDGET_S": "3"}
                try:
                    prior, pd = _good(c)
                    run = c.hook(ev, env=env)
                    verdict = c.gate(env=env)
                finally:
                    srv.close()
                want = ok()
                mine = [h for h in c.heartbeats() if h["pid"] == run.pid]
                if mine and mine[0]["outcome"] == "error" and "embed" in (mine[0]["reason"] or ""):
                    want = Oracle("error", mine[0]["reason"], check="embedding_path")
                emb = next((x for x in verdict.get("checks", []) if x["name"] == "embedding_path"), {})
                if emb.get("status") != "red" or emb.get("state") != state:
                    raise AssertionError(f"embedding_path is {emb.get('status')}/{emb.get('state')}: "
                                         f"{emb.get('detail', '')[:160]}")
                verdict = {**verdict, "checks": [x for x in verdict["checks"] if x["name"] != "embedding_path"]}
                return run, want, verdict, prior, pd
            camp.one("embedding_" + mode, "D17", f"{mode} embedding server", ev, fn)


def cls_stdout_closed(camp: Campaign):
    """stdout closed before the hook writes: an event with context to give records stdout_closed."""
    for ev in camp.pick(EVENTS):
        def fn(c, ev=ev):
            prior, pd = _good(c)
            probe = c.hook(ev, c.payload(ev))  # the same event with stdout open: does it write?
            prior, pd = c.heartbeats(), c.decisions()
            read_end, write_end = os.pipe()
            os.close(read_end)
            try:
                run = c.hook(ev, stdout=write_end)
            finally:
                os.close(write_end)
            want = Oracle("error", "stdout_closed", detail=(f"{ev}: last run", "stdout_closed")) if probe.out.strip() \
                else ok()
            return run, want, c.gate(), prior, pd
        camp.one("stdout_closed", "generic", "closed stdout", ev, fn)


STDINS = {"binary": (os.urandom(2048).replace(b"{", b"(").replace(b"[", b"("), "malformed_json"),
          "array": (b"[1, 2, 3]", "not_object"),
          "empty": (b"", "empty_stdin"),
          "truncated": (b'{"session_id": "s1", "cwd": "', "malformed_json"),
          "deeply nested": (b"[" * 100_000 + b"]" * 100_000, "malformed_json")}


def cls_stdin(camp: Campaign):
    """Hostile stdin: recorded with its reason, named by the gate; non-UTF-8 still decided."""
    for name, (data, reason) in STDINS.items():  # every shape, even in a sample
        for ev in camp.pick(EVENTS):
            def fn(c, ev=ev, data=data, reason=reason):
                prior, pd = _good(c)
                run = c.hook(ev, data)
                return run, Oracle("error", reason, detail=(f"{ev}: last run", reason)), c.gate(), prior, pd
            camp.one("stdin_" + name.replace(" ", "_"), "generic", name, ev, fn)
    for ev in camp.pick(EVENTS):
        def bad_utf8(c, ev=ev):
            prior, pd = _good(c)
            body = c.payload(ev).replace(b'"cwd"', b'"junk": "\xff\xfe", "cwd"', 1)
            run = c.hook(ev, body)
            return run, Oracle("error", "invalid_utf8", detail=(f"{ev}: last run", "invalid_utf8")), c.gate(), prior, pd
        camp.one("stdin_non_utf8", "generic", "invalid UTF-8 in the payload", ev, bad_utf8)


def cls_long_inputs(camp: Campaign):
    """D20: long tokens and long inputs finish within the hook's timeout, recorded ok."""
    cases = {"prompt": [("100k token", {"prompt": "a" + "0f" * 50_000}),
                        ("2 MB prompt", {"prompt": "implement " + "x" * 2_000_000}),
                        ("base64 blob", {"prompt": "decode " + "QUJD" * 40_000})],
             "pre-tool": [("huge tool_input", {"tool_input": {"file_path": "/x/" + "y" * 200_000}})],
             "post-tool": [("2 MB tool_response", {"tool_response": {"type": "text", "file": {
                 "filePath": "/x", "content": "z" * 2_000_000, "numLines": 1, "startLine": 1, "totalLines": 1}}})]}
    for ev in camp.pick(cases):
        for label, fields in camp.pick(cases[ev]):
            def fn(c, ev=ev, fields=fields):
                prior, pd = _good(c)
                run = c.hook(ev, c.payload(ev, **fields))
                return run, ok(), c.gate(), prior, pd
            camp.one("long_input", "D20", label, ev, fn)


def cls_stored_state(camp: Campaign):
    """D18: an unparsable stored ablation schedule; D19: a config value with CRLF."""
    for ev in camp.pick(EVENTS):
        def ablation(c, ev=ev):
            prior, pd = _good(c)
            conn = sqlite3.connect(c.db, isolation_level=None)
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('ablation.schedule', '{not json')")
            conn.close()
            run = c.hook(ev)
            return run, Oracle("error", "ablation", fix=("memhealth ablation stop",)), c.gate(), prior, pd
        camp.one("ablation_unreadable", "D18", "unparsable stored schedule", ev, ablation)

        def crlf(c, ev=ev):
            prior, pd = _good(c)
            run = c.hook(ev, env={"MEMHEALTH_EMBEDDING_URL": "http://127.0.0.1:11434\r\nX-Evil: 1"})
            return run, Oracle("error", "config", detail=(f"{ev}: last run", "control character"),
                               fix=(".memhealth/config.toml",)), c.gate(), prior, pd
        camp.one("config_crlf", "D19", "CRLF in [embedding].url", ev, crlf)


def cls_fifo(camp: Campaign):
    """D6: a FIFO at docs/x.md: session-end and `ingest --budget-s 2` never wait on it."""
    def fn(c):
        prior, pd = _good(c)
        os.makedirs(os.path.join(c.root, "docs"), exist_ok=True)
        os.mkfifo(os.path.join(c.root, "docs", "x.md"))
        run = c.hook("session-end")
        deadline = time.monotonic() + 30  # the worker SessionEnd spawned, bounded
        while time.monotonic() < deadline and not c.rows(
                "SELECT 1 FROM heartbeats WHERE hook = 'capture' AND outcome IS NOT NULL"):
            time.sleep(0.1)
        t0 = time.monotonic()
        proc = c.cli("ingest", "--budget-s", "2", timeout=30)
        if time.monotonic() - t0 > 20 or proc.returncode not in (0, 1):
            raise AssertionError(f"ingest on a FIFO took {time.monotonic() - t0:.1f} s, exit {proc.returncode}")
        verdict = c.gate()
        verdict = {**verdict, "checks": [x for x in verdict["checks"] if x["name"] != "ingest_freshness"]}
        return run, Oracle("ok", detail=("capture: last run", "docs/x.md", "not a regular file"),
                           fix=("memhealth ingest",)), verdict, prior, pd
    for _ in camp.reps(2):
        camp.one("fifo_in_docs", "D6", "FIFO at docs/x.md", "session-end", fn)


CLASSES = [cls_control, cls_kill_stdin, cls_kill_locked, cls_kill_points, cls_kill_mid_spill, cls_lock_busy,
           cls_disk_full, cls_fsize, cls_readonly, cls_symlinks, cls_store_reset, cls_shm_deleted, cls_wal_deleted, cls_not_a_file,
           cls_clock, cls_embedding, cls_stdout_closed, cls_stdin, cls_long_inputs, cls_stored_state, cls_fifo]


def campaign(quick: bool = False, only: list[str] | None = None, keep: str | None = None,
             sample: bool = False) -> list[dict]:
    """Run the classes (all, or `only`) and return one verdict dict per run."""
    base = keep or tempfile.mkdtemp(prefix="mhc-")
    try:
        camp = Campaign(base, quick, sample)
        for cls in CLASSES:
            if only and cls.__name__[4:] not in only:
                continue
            t0 = time.monotonic()
            n = len(camp.results)
            cls(camp)
            print(f"# {cls.__name__[4:]}: {len(camp.results) - n} runs in {time.monotonic() - t0:.1f} s",
                  file=sys.stderr, flush=True)
        return camp.results
    finally:
        if not keep:
            subprocess.run(["chattr", "-R", "-i", base], capture_output=True, timeout=30) \
                if os.geteuid() == 0 else None
            shutil.rmtree(base, ignore_errors=True)


def tally(results: list[dict]) -> dict[str, dict[str, int]]:
    """{class: {verdict: count}} plus a "total" row."""
    out: dict[str, dict[str, int]] = {}
    for r in results:
        for key in (r["class"], "total"):
            out.setdefault(key, dict.fromkeys(VERDICTS, 0))[r["verdict"]] += 1
    return out


def bench(quick: bool = False) -> list[dict]:
    """For benchmarks/run.py: the totals as figures."""
    t = tally(campaign(quick)).get("total", dict.fromkeys(VERDICTS, 0))
    n = sum(t.values())
    return [{"name": f"fault campaign: {v}", "value": t[v], "unit": "runs",
             "target": f"{n} of {n}" if v == "correct" else "0", "note": f"of {n} faulted hook runs"}
            for v in VERDICTS]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run per class and variant")
    parser.add_argument("--sample", action="store_true", help="one run per class (the CI sample)")
    parser.add_argument("--only", nargs="*", help="class names (e.g. kill_locked stdin)")
    parser.add_argument("--json", help="write every run's verdict here")
    parser.add_argument("--keep", help="work in this directory and keep it (for a post-mortem)")
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    t0 = time.monotonic()
    results = campaign(args.quick, args.only, args.keep, args.sample)
    table = tally(results)
    print(f"{'class':<28} {'runs':>5} " + " ".join(f"{v:>13}" for v in VERDICTS))
    for name, counts in sorted(table.items(), key=lambda kv: kv[0] == "total"):  # the total last
        print(f"{name:<28} {sum(counts.values()):>5} " + " ".join(f"{counts[v]:>13}" for v in VERDICTS))
    for r in results:
        if r["verdict"] != "correct":
            print(f"  {r['verdict'].upper():<13} {r['class']} {r['event']} ({r['variant']}): {r['why']}")
    print(f"# {len(results)} runs in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": results,
                       "tally": table}, fh, indent=1)
    return 0 if table.get("total", {}).get("correct", 0) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

