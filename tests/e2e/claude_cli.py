"""The real Claude Code CLI: install it once into a cache, run scripted sessions with it.

    python -m tests.e2e.claude_cli install      # what .ci/run does before pytest; prints the binary
    python -m tests.e2e.claude_cli version      # the pinned version

CLI_VERSION is the one place the tested version is pinned. `MEMHEALTH_E2E_CLI_VERSION`
overrides it (a version number, or `latest`) to rerun the suite against a newer client.
The npm package `@anthropic-ai/claude-code` ships a native binary inside a per-platform
package (`@anthropic-ai/claude-code-linux-x64`, ...); its postinstall only links the wrapper,
so the binary is called directly and the wrapper's Node version requirement never applies.

The cache (`$MEMHEALTH_E2E_CACHE`, default `~/.cache/memhealth-e2e`) holds one directory
per version: `<cache>/<version>/node_modules/...`. An install runs under a file lock, so two
test processes never install into the same directory at once.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time

CLI_VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT_S = 600.0
SESSION_TIMEOUT_S = 120.0


class Unavailable(Exception):
    """The CLI cannot be had here (no npm, no network): the reason, for a skip or a failure."""


def wanted_version() -> str:
    return os.environ.get("MEMHEALTH_E2E_CLI_VERSION") or CLI_VERSION


def cache_dir() -> str:
    return os.environ.get("MEMHEALTH_E2E_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "memhealth-e2e")


def platform_package() -> str:
    """The npm package that holds this machine's native binary."""
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    if arch is None or system is None:
        raise Unavailable(f"no Claude Code binary package for {sys.platform}/{machine}")
    musl = system == "linux" and any(name.startswith("ld-musl") for name in _listdir("/lib"))
    return f"{PACKAGE}-{system}-{arch}{'-musl' if musl else ''}"


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def binary_path(version: str | None = None) -> str:
    root = os.path.join(cache_dir(), version or wanted_version())
    name = "claude.exe" if sys.platform == "win32" else "claude"
    return os.path.join(root, "node_modules", *platform_package().split("/"), name)


def installed_version(binary: str) -> str:
    """`claude --version` says e.g. `2.1.332 (Claude Code)`."""
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise Unavailable(f"{binary} --version exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    return proc.stdout.split()[0] if proc.stdout.split() else ""


def install(version: str | None = None, log=None) -> str:
    """Install the CLI into the cache unless it is there; return the native binary's path."""
    version = version or wanted_version()
    binary = binary_path(version)
    if version != "latest" and os.access(binary, os.X_OK):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed: the end-to-end tests need it to install "
                          f"{PACKAGE}@{version} (Debian: apt-get install npm)")
    root = os.path.join(cache_dir(), version)
    os.makedirs(root, exist_ok=True)
    import fcntl

    with open(os.path.join(root, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing: wait for it
        if version != "latest" and os.access(binary, os.X_OK):
            return binary
        manifest = os.path.join(root, "package.json")
        if not os.path.exists(manifest):  # else npm walks up and installs into a parent
            with open(manifest, "w", encoding="utf-8") as fh:
                json.dump({"private": True, "description": "memhealth e2e: the Claude Code CLI"}, fh)
        t0 = time.monotonic()
        try:
            proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", root,
                                   f"{PACKAGE}@{version}"], cwd=root, capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"npm install {PACKAGE}@{version} took over {INSTALL_TIMEOUT_S:.0f} s") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise Unavailable(f"npm install {PACKAGE}@{version} failed (exit {proc.returncode}): "
                              + " | ".join(tail))
        if log is not None:
            print(f"installed {PACKAGE}@{version} in {time.monotonic() - t0:.1f} s", file=log)
    if not os.access(binary, os.X_OK):
        raise Unavailable(f"npm installed {PACKAGE}@{version} but {binary} is missing "
                          f"(is {platform_package()} published for this platform?)")
    return binary


def session_env(base: dict, home: str, api_url: str) -> dict:
    """The CLI's environment: an isolated HOME, the scripted model, nothing phoning home."""
    env = {k: v for k, v in base.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update({
        "HOME": home,
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-scripted",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    })
    return env


def main(argv: list[str]) -> int:
    if argv[:1] == ["version"]:
        print(wanted_version())
        return 0
    if argv[:1] != ["install"]:
        print("usage: python -m tests.e2e.claude_cli install|version", file=sys.stderr)
        return 2
    try:
        binary = install(log=sys.stderr)
    except Unavailable as exc:
        print(f"claude-e2e: {exc}", file=sys.stderr)
        return 1
    print(binary)
    print(f"claude-e2e: {installed_version(binary)} at {binary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
