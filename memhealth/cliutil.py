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

__all__ = ["JSON_VERSION", "PROJECT_HELP", "ProjectContext", "UsageError", "add_json_option",
           "add_limit_option", "add_parser", "add_project_option", "emit_json", "json_error",
           "open_project", "positive_float", "positive_int", "project_root"]

# Every `--json` output is one object on one line with this key first; it grows when a field
# changes meaning or goes away (added fields do not change it).
JSON_VERSION = 1

PROJECT_HELP = ("project directory; the nearest .memhealth/ at or above it is used "
                "(default: the current directory)")


def add_parser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand parser without prefix matching: `serve --all` must not become
    `--allow-remote`."""
    return sub.add_parser(name, allow_abbrev=False, **kwargs)


def _child_default(default, child: bool):
    """A sub-action's copy of a shared option keeps the command's value: argparse would
    otherwise overwrite `memhealth cues --json audit` with the sub-action's default."""
    return argparse.SUPPRESS if child else default


def add_project_option(parser: argparse.ArgumentParser, child: bool = False) -> None:
    """`--project DIR`, the same flag, default and help in every command."""
    parser.add_argument("--project", default=_child_default(None, child), metavar="DIR", help=PROJECT_HELP)


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result", child: bool = False) -> None:
    parser.add_argument("--json", action="store_true", default=_child_default(False, child),
                        help=f"print {what} as one JSON object (errors too)")


def add_limit_option(parser: argparse.ArgumentParser, default: int, what: str = "results",
                     aliases: tuple[str, ...] = (), child: bool = False) -> None:
    """`--limit N`, the result-size flag of every command that lists (older spellings kept as
    aliases)."""
    parser.add_argument("--limit", *aliases, dest="limit", type=positive_int,
                        default=_child_default(default, child), metavar="N",
                        help=f"at most N {what} (default: {default})")


# What each command's `--json` object holds (besides "version"), for docs/reference/json.md;
# a test runs the commands and fails on a field that is not listed here.
JSON_FIELDS: dict[str, dict[str, str]] = {
    "(every command, on error)": {
        "command": "the command that failed", "error": '{"message": ..., "exit": N}: the one-line error and the exit code'},
    "gate": {"total": "checks run", "green": "checks GREEN", "red": "checks RED",
             "checks": "one object per check: name, status, state, detail, fix, duration_ms"},
    "ingest": {"sources": "per source: files seen and changed, chunks added and removed, errors",
               "files_seen": "files read", "files_changed": "files whose content changed",
               "chunks_added": "chunks indexed", "chunks_removed": "chunks dropped",
               "errors": "files or records that could not be read", "elapsed_s": "wall seconds",
               "budget_s": "the run's budget", "budget_exhausted": "true when the budget ran out",
               "vectors": "the vector phase after the text: state, embedded, pending (chunks still "
                          "without a vector), detail, backfill (done, budget or degraded), with_vector, chunks",
               "capture": "capture work the run finished (when there was any)"},
    "search": {"query": "the query as given", "limit": "results asked for", "tokens": "query words used",
               "hits": "results: chunk_id, source, path, line_start, line_end, score, legs, title, snippet",
               "legs_answered": "bm25, vector", "degraded": "why a leg was left out, or null",
               "degraded_detail": "the reason in words", "timings_ms": "per leg"},
    "embed": {"stored": "vectors stored", "refused": "texts refused", "pruned": "orphan vectors removed",
              "seconds": "wall seconds", "with_vector": "chunks with a vector", "chunks": "all chunks",
              "coverage": "with_vector / chunks", "dim": "the vector width", "model": "the model",
              "error": "the embedding error, or null"},
    "export": {"ok": "the run shipped everything", "spans_sent": "spans shipped",
               "metrics_sent": "metric points shipped", "backlog": "spans still waiting",
               "dropped": "spans dropped by the outbox bound", "malformed": "rows that could not be read",
               "disabled": "no exporter configured", "seconds": "wall seconds", "error": "why it failed, or null"},
    "report": {"window": "the window in days and its bounds", "invocations": "per hook: ok, error, killed",
               "failures": "per hook and reason", "killed": "hooks killed before completing",
               "injection": "decisions by outcome, characters injected", "cues": "cue evaluations by outcome",
               "gate": "gate runs by verdict", "alerts": "alert decisions", "degradations": "by component",
               "telemetry": "export lag and backlog",
               "witness": "transcript witness findings by day, event and kind",
               "session_cost": "what memory cost each session: context characters and estimated "
                               "tokens by block kind, hook wall time, tool calls delayed, capture "
                               "and triage counts",
               "schedule": "report --ablation: the ablation schedule",
               "history": "report --ablation: the schedules registered before",
               "arms": "report --ablation: per arm, the outcomes compared"},
    "triage": {"candidates": "list: id, kind, state, title, statement, transcript, line, also",
               "action": "a decision: confirm, reject, retitle or merge", "id": "the candidate decided",
               "result": "what the decision did, in words", "applied": "--apply: decisions applied",
               "failed": "--apply: decisions that failed", "decisions": "--apply: one result per entry"},
    "cues": {"cues": "list: one memory item with its cues and each cue's state",
             "audit": "cues audit: the newest evaluations"},
    "ablation": {"schedule": "the schedule with `now` (the arm in force) and `active`, or null"},
    "remember": {"id": "the item", "name": "its name", "kind": "its kind", "path": "the memory file",
                 "pinned": "delivered at every session start", "cues": "its compiled cues"},
    "forget": {"id": "the item deleted", "name": "its name", "path": "the memory file deleted"},
    "init": {"project": "the project directory (absolute)", "settings": "local or shared: the settings file wired",
             "dry_run": "true: nothing was written; actions say what would be",
             "changed": "something was (or, with --dry-run, would be) created, written or updated",
             "actions": "list: one line per change, as the text output prints it (past tense, or "
                        "\"would ...\" on a dry run)",
             "notes": "list: what init reports and does not change (a foreign hook left alone, ...)",
             "next": "list: what to run next (ingest and gate after a first setup; serve for the HTTP transport)",
             "unregistered": "--unregister: true when the project was in the registry",
             "registry": "--unregister: the per-user registry file"},
    "inventory": {"commit": "the commit the code index was read at (null before a complete run)",
                  "components": "list: id, path, name, qualname, kind, line_start, line_end, signature, "
                                "doc, summary, exported, component, rank, curated, candidate",
                  "added": "propose: the candidates queued (id, name, kind, path, line)",
                  "known": "propose: components proposed before", "curated": "propose: already curated"},
}


def emit_json(obj: dict, file=None) -> None:
    """Print one `--json` result: `{"version": JSON_VERSION, ...obj}` on one line."""
    import json
    import sys

    print(json.dumps({"version": JSON_VERSION, **obj}, ensure_ascii=False, default=str),
          file=file or sys.stdout, flush=True)


def json_error(command: str, message: str, exit_code: int) -> None:
    """An error under `--json`: the same object shape, on stdout, with the exit code."""
    emit_json({"command": command, "error": {"message": message, "exit": exit_code}})


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
