"""A project on the HTTP hook transport: `memhealth serve` on 127.0.0.1:0 (a real process),
then `[serve] listen` set to the port it bound and `memhealth init --transport http`, so the
settings point at it with the project's secret (no free-port race).

    hs = HookServe.start(root)            # serve running, settings wired to it
    code, body = hs.post("pre-tool", payload)
    hs.kill()                             # SIGKILL: the transport dies as a crash would

Used by tests/memhealth/test_http_transport.py, tests/probes/test_gate_fixes.py, tests/e2e and
benchmarks/bench_session.py.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import threading

from tests.conftest import clean_env, memhealth_cmd, run_cli


def set_listen(root, listen: str) -> None:
    from tests.support.gate_fix_helpers import set_config

    set_config(root, "serve", "listen", listen)


class HookServe:
    """One project's serve process with the HTTP hook transport wired to it."""

    def __init__(self, root, proc: subprocess.Popen, port: int):
        self.root = str(root)
        self.proc = proc
        self.port = port

    @classmethod
    def start(cls, root, *args: str, env: dict | None = None, wire: bool = True) -> HookServe:
        proc = subprocess.Popen(
            memhealth_cmd() + ["serve", "--project", str(root), "--listen", "127.0.0.1:0", "--no-probes",
                               "--no-export", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or clean_env(),
            stdin=subprocess.DEVNULL)
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(30)
        if not first or "listening on" not in first[0]:
            proc.kill()
            raise AssertionError(f"serve did not start: {first!r} {proc.stderr.read()}")
        port = int(first[0].split("listening on ", 1)[1].split()[0].rsplit(":", 1)[1])
        hs = cls(root, proc, port)
        if wire:
            hs.wire()
        return hs

    def wire(self) -> None:
        set_listen(self.root, f"127.0.0.1:{self.port}")
        proc = run_cli("init", "--project", self.root, "--transport", "http", "--no-templates")
        assert proc.returncode == 0, proc.stderr

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def secret(self) -> str:
        with open(os.path.join(self.root, ".memhealth", "hook-secret"), encoding="ascii") as fh:
            return fh.read().strip()

    def request(self, method: str, path: str, body: bytes | None = None,
                authorization: str | None = "secret", headers: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if authorization == "secret":
            hdrs["Authorization"] = f"Bearer {self.secret}"
        elif authorization is not None:
            hdrs["Authorization"] = authorization
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def post(self, event: str, payload, **kw) -> tuple[int, bytes]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        return self.request("POST", f"/memhealth/hook/{event}", body, **kw)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
