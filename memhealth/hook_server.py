"""The HTTP transport's hook runner inside `memhealth serve`: one project's hook events,
run by memhealth.hooks on a connection serve keeps open.

    runner = HookRunner(project)
    runner.run("pre-tool", body, out)       # the same contract as `memhealth hook pre-tool`
    runner.close()

What stays warm across events: the open store (no connect and migration check per event),
every module the handlers import (intent lists, compiled patterns, the search code), and
process state such as the embedding client's circuit breaker (memory_core.index.embed keeps
it per process). A command hook's breaker lives for one event; serve's would live forever, so
the runner closes it every BREAKER_COOLDOWN_S: a dead Ollama is retried at most once per
cool-down instead of by every prompt, and a recovered one is used again within it.
Events run one at a time on that connection (a PreToolUse takes about a millisecond; Claude
Code's parallel tool calls queue behind each other for that long). A database file deleted
or replaced under serve is noticed by its inode and reopened, as serve's other readers do.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from memhealth import hooks

BREAKER_COOLDOWN_S = 30.0


class HookRunner:
    """Runs hook events for `project` on one long-lived connection (see module doc)."""

    def __init__(self, project, clock=time.monotonic):
        self.project = project
        self._lock = threading.Lock()
        self._conn = None
        self._opened: tuple[int, int] | None = None
        self._clock = clock
        self._breaker_since = clock()

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.project.db_path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _connection(self):
        """The open connection, reopened when the file changed under it; None when it cannot
        be opened (the hook runner then opens it itself and spills what the store refuses)."""
        if self._conn is not None and self._identity() != self._opened:
            self._close()
        if self._conn is None:
            from memhealth.errors import MemhealthError
            from memory_core.errors import MemoryCoreError
            from memory_core.store.db import connect

            try:
                self._conn = connect(self.project.db_path)
            except (MemoryCoreError, MemhealthError, OSError):
                return None
            self._opened = self._identity()
        return self._conn

    def _cool_down_breaker(self) -> None:
        now = self._clock()
        if now - self._breaker_since < BREAKER_COOLDOWN_S:
            return
        self._breaker_since = now
        embed = sys.modules.get("memory_core.index.embed")  # never imported: no circuit to close
        if embed is not None:
            embed.reset_circuit()

    def run(self, event: str, raw: bytes, out, truncated: bool = False) -> None:
        with self._lock:
            self._cool_down_breaker()
            conn = self._connection()
            hooks.serve_event(event, raw, self.project, conn, out, truncated=truncated)
            if conn is not None and conn.in_transaction:  # a handler bug left one open
                try:
                    conn.execute("ROLLBACK")
                except conn.Error:
                    self._close()

    def rejected(self, reason: str) -> None:
        """Count a request serve refused (memhealth_hook_http_rejected_total)."""
        from memory_core.outbox.rollups import bump
        from memory_core.store.tx import write

        with self._lock:
            conn = self._connection()
            if conn is None:
                return
            conn.execute("PRAGMA busy_timeout = 1000")
            with write(conn):
                bump(conn, "memhealth_hook_http_rejected_total", {"reason": reason})

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a connection to a deleted file may fail to close
                pass
        self._conn = self._opened = None

    def close(self) -> None:
        with self._lock:
            self._close()


# -- starting serve in the background (`memhealth serve --detach`, [serve] hook_autostart) ------

SERVE_LOG = "serve.log"
SERVE_PID = "serve.pid"


def start_detached(project, listen: str, wait_s: float = 10.0, extra: list[str] | None = None,
                   argv: list[str] | None = None) -> tuple[int, str, str]:
    """Start `memhealth serve --project ROOT --listen LISTEN` in its own session (it outlives
    the caller, and Claude Code's kill of a hook's process group does not reach it), its output
    appended to .memhealth/serve.log, its pid in .memhealth/serve.pid; wait at most `wait_s`
    for its hook endpoint to answer. Returns (pid, state, detail): state "ok" or the ping's
    last state ("exited" when it stopped, with the log's last line)."""
    import subprocess
    import time

    from memhealth.installer import launcher_argv
    from memory_core.store import secret
    from probes.transport import ping

    state_dir = project.state_dir
    log_path = os.path.join(state_dir, SERVE_LOG)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    cmd = (argv or launcher_argv()) + ["serve", "--project", project.root, "--listen", listen, *(extra or ())]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=project.root,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(fd)
    pid_fd = os.open(os.path.join(state_dir, SERVE_PID), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(pid_fd, "w") as fh:
        fh.write(f"{proc.pid}\n")
    value = secret.read(state_dir)
    auth = secret.header(value) if value else None
    base = "http://" + listen
    deadline = time.monotonic() + wait_s
    state, detail = "unreachable", "not started"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc.pid, "exited", f"exited {proc.returncode}: {_last_line(log_path)}"
        state, detail = ping(base, auth, timeout_s=0.5)
        if state == "ok":
            return proc.pid, state, detail
        time.sleep(0.05)
    return proc.pid, state, detail


def _last_line(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 2000))
            lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no output"
