"""The per-user project registry: every project `memhealth init` set up on this machine,
so one `memhealth serve --all` can expose them all.

    register("/home/me/src/app")      # -> "app" (its name; "app-3f2a9c" when "app" is taken)
    entries()                          # -> [Entry(name="app", root="/home/me/src/app", ...)]
    unregister("/home/me/src/app")     # -> True when it was there

The file is `$XDG_STATE_HOME/memhealth/projects.json` (default ~/.local/state), mode 0600,
replaced atomically under an exclusive lock so two `init`s at once never lose an entry.
A project's name is fixed when it is registered: the directory's basename, or the basename
with a short hash of the path when another registered project already has that name. The
name is what serve puts in the `project` label; the path never leaves this file.
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass

from memory_core.store.layout import STATE_DIR

REGISTRY_NAME = "projects.json"
MAX_PROJECTS = 256  # the `project` label's cardinality is bounded by the registry
MAX_NAME_CHARS = 64
VERSION = 1


@dataclass(frozen=True)
class Entry:
    name: str
    root: str
    added: float


def state_home(environ=None) -> str:
    """$XDG_STATE_HOME/memhealth (an unset or relative value means ~/.local/state: XDG spec)."""
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "memhealth")


def registry_path(environ=None) -> str:
    return os.path.join(state_home(environ), REGISTRY_NAME)


def base_name(root: str) -> str:
    """A label-safe word from the directory's basename (bounded; never empty)."""
    word = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(os.path.normpath(root))).strip("-.")
    return (word or "project")[:MAX_NAME_CHARS]


def unique_name(root: str, taken: set[str]) -> str:
    """The basename, or basename-<6 hex of the path> when taken (then a counter, defensively)."""
    from hashlib import sha256

    name = base_name(root)
    if name not in taken:
        return name
    digest = sha256(os.path.abspath(root).encode("utf-8", "replace")).hexdigest()
    candidate = f"{name[:MAX_NAME_CHARS - 7]}-{digest[:6]}"
    n = 2
    while candidate in taken:
        candidate = f"{name[:MAX_NAME_CHARS - 10]}-{digest[:6]}{n}"
        n += 1
    return candidate


def _parse(text: str) -> list[Entry]:
    """Entries of a registry file; an unreadable file or malformed entry is skipped, never fatal
    (serve must keep serving the projects it can read)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out, seen_names, seen_roots = [], set(), set()
    for item in data.get("projects", []) if isinstance(data, dict) else []:
        if not isinstance(item, dict):
            continue
        name, root = item.get("name"), item.get("root")
        if not (isinstance(name, str) and isinstance(root, str) and name and os.path.isabs(root)):
            continue
        if name in seen_names or root in seen_roots:
            continue
        seen_names.add(name)
        seen_roots.add(root)
        added = item.get("added")
        out.append(Entry(name[:MAX_NAME_CHARS], root, float(added) if isinstance(added, (int, float)) else 0.0))
        if len(out) >= MAX_PROJECTS:
            break
    return out


def read(path: str) -> list[Entry]:
    try:
        with open(path, encoding="utf-8") as fh:
            return _parse(fh.read())
    except OSError:
        return []


def entries(environ=None) -> list[Entry]:
    """The registered projects, in registration order."""
    return read(registry_path(environ))


def stamp(path: str) -> tuple | None:
    """What changes when the registry is rewritten (inode, size, mtime): one stat, so a
    scrape can tell cheaply whether to re-read it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@contextmanager
def _locked(path: str):
    import fcntl

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path + ".lock", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write(path: str, items: list[Entry]) -> None:
    text = json.dumps({"version": VERSION, "projects": [
        {"name": e.name, "root": e.root, "added": e.added} for e in items]}, indent=2) + "\n"
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RegistryError(Exception):
    """The registry cannot take this change (full, or a file that is not a registry)."""


class RegistryFull(RegistryError):
    """The registry holds MAX_PROJECTS entries already."""


def _read_for_update(path: str) -> list[Entry]:
    """The entries, refusing a file that does not parse: rewriting it would drop every
    project it lists (an unreadable registry is the operator's to look at, not ours)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("projects"), list):
        raise RegistryError(f"{path} is not a memhealth project registry; left untouched "
                            "(fix or remove it)")
    return _parse(text)


def register(root: str, environ=None) -> tuple[str, bool]:
    """Add `root` (idempotent); return (its name, whether it was added now)."""
    root = os.path.abspath(root)
    path = registry_path(environ)
    with _locked(path):
        items = _read_for_update(path)
        for e in items:
            if e.root == root:
                return e.name, False
        if len(items) >= MAX_PROJECTS:
            # full: drop projects whose directory no longer holds .memhealth/ (deleted or
            # moved); only then, so a project on an unmounted disk keeps its name otherwise
            items = [e for e in items if os.path.isdir(os.path.join(e.root, STATE_DIR))]
        if len(items) >= MAX_PROJECTS:
            raise RegistryFull(f"{path} already lists {MAX_PROJECTS} projects; "
                               "remove one with `memhealth init --unregister` in its directory")
        name = unique_name(root, {e.name for e in items})
        _write(path, [*items, Entry(name, root, round(time.time(), 3))])
        return name, True


def unregister(root: str, environ=None) -> bool:
    """Remove `root`; True when it was registered."""
    root = os.path.abspath(root)
    path = registry_path(environ)
    with _locked(path):
        items = _read_for_update(path)
        kept = [e for e in items if e.root != root]
        if len(kept) == len(items):
            return False
        _write(path, kept)
        return True
