"""The CLI's one vocabulary: the options every command shares, the argument types, the usage
error, and the open-project-config-store sequence.

    def register(sub):
        p = add_parser(sub, "search", help="...", description="...")
        add_project_option(p)
        p.add_argument("--k", type=positive_int, default=10)

    def run(args):
        with open_project(args) as ctx:      # ctx.project, ctx.cfg, ctx.conn (closed on exit)
            ...

Not imported on the hook path (`memhealth hook EVENT` is dispatched before argparse loads).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager

from memhealth.errors import ProjectNotFound, UsageError

__all__ = ["PROJECT_HELP", "ProjectContext", "UsageError", "add_json_option", "add_parser",
           "add_project_option", "open_project", "positive_float", "positive_int", "project_root"]

PROJECT_HELP = ("project directory; the nearest .memhealth/ at or above it is used "
                "(default: the current directory)")


def add_parser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand parser without prefix matching: `serve --all` must not become
    `--allow-remote`."""
    return sub.add_parser(name, allow_abbrev=False, **kwargs)


def add_project_option(parser: argparse.ArgumentParser) -> None:
    """`--project DIR`, the same flag, default and help in every command."""
    parser.add_argument("--project", default=None, metavar="DIR", help=PROJECT_HELP)


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def _number(text: str, kind):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer > 0 (`--batch 0` exits 2 instead of meaning "default")."""
    return _number(text, int)


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (`--budget-s -1`, `--days nan` exit 2)."""
    return _number(text, float)


def project_root(args) -> str | None:
    """The start directory from `--project`; a named directory that does not exist is a
    usage error rather than a search upward from somewhere else."""
    start = getattr(args, "project", None)
    if start is not None and not os.path.isdir(start):
        raise ProjectNotFound(f"--project {start}: no such directory")
    return start


class ProjectContext:
    """What a command works on. A plain class: dataclasses imports inspect, ~5 ms a command."""

    __slots__ = ("project", "cfg", "conn")

    def __init__(self, project, cfg, conn):
        self.project = project  # memhealth.project.Project
        self.cfg = cfg          # the loaded config
        self.conn = conn        # the store's connection (None when opened with store=False)


@contextmanager
def open_project(args, *, store: bool = True, create: bool = True) -> Iterator[ProjectContext]:
    """Find the project for `args.project`, load its config and open its store; the
    connection is closed on the way out, whatever happens inside."""
    from memhealth.config import load
    from memhealth.project import Project

    project = Project.find(project_root(args))
    cfg = load(project.state_dir)
    if not store:
        yield ProjectContext(project, cfg, None)
        return
    from memory_core.store.db import connect

    conn = connect(project.db_path, create=create)
    try:
        yield ProjectContext(project, cfg, conn)
    finally:
        conn.close()
