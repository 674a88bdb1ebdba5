"""`serve --all`'s view of each registered project: served, or why not, and the FIX.

    state, detail = absent_state(project)      # ("no_store", "...") or None: the store is there
    fix_for("corrupt", project.root)           # the shell line that brings it back
    registry.register(ProjectsCollector(app))  # every store's series with a `project` label,
                                               # and one up/state pair per registered project

A registered project that is deleted, unreadable or corrupt keeps a series on /metrics
(`memhealth_project_up` 0, `memhealth_project_state` its reason) instead of dropping out of
the exposition, so the rule MemhealthProjectNotServed can say so; the reasons are the
catalog's PROJECT_STATES.
"""

from __future__ import annotations

import os
import shlex

from memory_core.store import repair
from telemetry.catalog import CATALOG, PROJECT_STATES

# a store read's failure family (memory_core.errors reasons; "busy": a scrape still reading)
_READ_STATES = {"db_corrupt": "corrupt", "db_locked": "locked", "busy": "locked",
                "db_readonly": "unreadable", "db_io": "unreadable", "db_symlink": "unreadable",
                "db_not_file": "unreadable", "shm_deleted": "unreadable", "wal_deleted": "unreadable"}


def read_state(reason: str | None) -> str:
    """The project state of a store read that ended with failure family `reason` (None: read)."""
    return "served" if reason is None else _READ_STATES.get(reason, "error")


def absent_state(project) -> tuple[str, str] | None:
    """(state, detail) when the project's directory or store is not there to read, else None;
    absent_cause(project) says which path refused to be looked at."""
    found = _absent(project)
    return None if found is None else found[:2]


def absent_cause(project) -> OSError | None:
    """The OSError (its .filename the path) that made absent_state say "unreadable", else None."""
    found = _absent(project)
    return None if found is None else found[2]


def _absent(project) -> tuple[str, str, OSError | None] | None:
    for path, state, what in ((project.root, "no_root", "the project directory is gone"),
                              (project.db_path, "no_store", ".memhealth/memory.db is missing")):
        try:
            os.stat(path)
        except FileNotFoundError:
            return state, what, None
        except OSError as exc:  # permission denied on the way: the store is there, not readable
            where = "the project directory" if path == project.root else ".memhealth/memory.db"
            exc.filename = path
            return "unreadable", f"{where}: {exc.strerror or exc}", exc  # the path stays out of pages
    return None


def entry_error_state(exc: BaseException) -> str:
    """The state of a project whose entry could not be opened (its config, its directory)."""
    if getattr(exc, "reason", None) == "config":  # memhealth.errors.ConfigError
        return "config_error"
    if isinstance(exc, OSError):
        return "unreadable"
    return "error"


def fix_for(state: str, root: str, state_dir: str | None = None, cause: BaseException | None = None,
            reason: str | None = None) -> str:
    """The shell line that brings a project in `state` back (or, its directory gone, takes it
    off the registry), as an operator runs it; `state_dir` is its .memhealth/, by default under
    `root`. `cause` is what failed (the store read's StoreError, the entry's ConfigError or
    OSError) and `reason` the read's failure family: the FIX is the command for that cause,
    built by the same function the gate's FIX quotes (memory_core.store.repair). Where only a
    live process can clear it (a lock), the line shows that process and names it in a comment.
    A project that moved is registered again by `memhealth init` in its new place."""
    state_dir = state_dir or os.path.join(root, ".memhealth")
    db = os.path.join(state_dir, "memory.db")
    sd, qdb = shlex.quote(state_dir), shlex.quote(db)
    root = shlex.quote(root)
    init = f"memhealth init --project {root}"
    refill = f"{init} && memhealth ingest --project {root}"
    reason = reason or getattr(cause, "reason", None)
    if state == "no_root":
        return f"{init} --unregister"
    if state == "no_store":
        return refill
    if state == "corrupt":
        # the -wal and -shm go with it: an old WAL beside a new database would be replayed into it
        return f"mkdir -p {sd}/corrupt && mv {sd}/memory.db* {sd}/corrupt/ && {refill}"
    if state == "config_error":
        command = getattr(cause, "command", "")
        if command:
            key = getattr(cause, "key", None)
            return f"{command}  # {key or 'the line'} does not load; commented out, its default applies"
    elif state == "locked" and reason == "busy":  # serve's own previous scrape is still reading
        return (f"{repair.holders_command(qdb)}  # this serve's previous scrape is still reading the "
                "store (a slow filesystem?); served again when that read ends or its deadline passes")
    elif state == "locked":
        holders = repair.lock_holders(db, exclude=os.getpid())
        return (f"{repair.holders_command(qdb)}  # the write lock is held by {repair.holders_text(holders)}; "
                "the project is served again once it ends, nothing else to do")
    elif state == "unreadable":
        fix = _unreadable_fix(cause, reason, state_dir, init, refill)
        if fix:
            return fix
    # an unexpected error (or a cause with no command): the line that prints it, as the gate meets it
    return f"memhealth gate --project {root}"


def _unreadable_fix(cause, reason: str | None, state_dir: str, init: str, refill: str) -> str:
    """The command for an unreadable store, by the read's failure family ("" when none fits)."""
    sd = shlex.quote(state_dir)
    path = getattr(cause, "path", None) or getattr(cause, "filename", None)
    side = bool(path) and path.endswith(("-wal", "-shm", "-journal"))
    if reason == "db_symlink" and path:
        return repair.unlink_command(shlex.quote(path)) + ("" if side else f" && {init}")
    if reason == "db_not_file" and path:
        return repair.aside_command(shlex.quote(path)) + ("" if side else f" && {refill}")
    if reason == "shm_deleted" and getattr(cause, "pid", None):
        return (f"{repair.kill_command(cause.pid)}  # pid {cause.pid} ({repair.command_line(cause.pid)}) "
                "holds the deleted memory.db-shm; its rows are checkpointed as it exits")
    if reason == "wal_deleted" and getattr(cause, "pid", None):
        wal = shlex.quote(os.path.join(state_dir, "memory.db-wal"))
        return (f"{repair.wal_restore_command(cause.pid, cause.fd, wal)}  # put back from pid {cause.pid}, "
                "which still holds it open")
    if reason == "db_io":
        return f"{repair.disk_command(sd)}  # a disk I/O error: served again once the disk reads"
    if reason == "db_readonly":
        return repair.readonly_command(sd)
    if reason is None and isinstance(cause, OSError) and path:  # a directory refused a look
        if os.path.abspath(path) == os.path.abspath(os.path.dirname(state_dir)):
            return f"chmod u+rx {shlex.quote(path)}"
        return repair.readonly_command(sd)
    return ""


def project_families(states: dict[str, str]):
    """memhealth_project_up and memhealth_project_state for {registered name: state}."""
    from telemetry.collector import _empty_family

    up = _empty_family(CATALOG["memhealth_project_up"])
    enum = _empty_family(CATALOG["memhealth_project_state"])
    for name, state in sorted(states.items()):
        up.add_metric((name,), 1.0 if state == "served" else 0.0)
        for value in PROJECT_STATES:
            enum.add_metric((name, value), 1.0 if value == state else 0.0)
    return up, enum


class ProjectsCollector:
    """Every target's store as one exposition: each metric family once, each sample with a
    `project` label (the registered name; never the path); then one memhealth_project_up and
    memhealth_project_state per registered project, served or not."""

    def __init__(self, app):
        self.app = app

    def describe(self):
        from telemetry.catalog import METRICS
        from telemetry.collector import _empty_family

        for metric in METRICS:
            yield _empty_family(metric, ("project",))
        yield from project_families({})

    def collect(self):
        from telemetry.catalog import METRICS
        from telemetry.collector import _empty_family, to_prometheus

        targets = sorted(self.app.targets().values(), key=lambda t: t.name)
        lost = self.app.lost_states()
        # stores are read SCRAPE_WORKERS at a time, each bounded by its collector's deadline:
        # a slow store costs its own deadline, not one deadline per project after it
        read = [(t.name, {f.metric.name: f for f in families})
                for t, families in zip(targets, self.app.read_stores(targets), strict=True)]
        for metric in METRICS:
            out = _empty_family(metric, ("project",))
            for name, families in read:
                fam = families.get(metric.name)
                if fam is not None:
                    to_prometheus(fam, (name,), out)
            yield out
        states = {t.name: read_state(t.collector.last_reason) for t in targets}
        yield from project_families({**lost, **states})
