"""The `memhealth` command: a thin argparse layer over the libraries.

`memhealth hook EVENT` is dispatched before argparse is imported: the hook path runs on
every prompt and must not pay for a CLI framework. Every other command lives in a
`memhealth/cmd_<name>.py` module exposing `register(subparsers)`; its heavy imports happen
inside its run function; shared options, argument types and the open-project sequence
live in memhealth/cliutil.py. Every package's error base (caught_errors) becomes one line on
stderr and a non-zero exit; usage errors exit 2, as argparse's own do.
"""

from __future__ import annotations

import sys

# Command modules, in help order. Each defines register(subparsers) -> parser with
# set_defaults(func=run), where run(args) -> int.
COMMANDS = ["init", "hook", "gate", "ingest", "triage", "inventory", "search", "embed", "serve", "export", "report", "ablation",
            "demo", "generate", "remember", "cues", "forget", "mcp"]

# How `memhealth --help` groups them (a test keeps every command in exactly one group).
GROUPS = (
    ("set up", ("init", "demo")),
    ("every day", ("ingest", "search", "gate", "triage", "inventory", "remember", "cues", "forget")),
    ("run alongside", ("serve", "export", "embed", "mcp")),
    ("measure", ("report", "ablation")),
    ("build", ("generate",)),
    ("called by Claude Code", ("hook",)),
)
EXAMPLES = (
    "memhealth init && memhealth ingest && memhealth gate",
    'memhealth search "wal checkpoint" --limit 5',
    "memhealth triage                       # decide on what session ends captured",
    "memhealth remember \"never reorder migrations\" --path 'db/migrations/**'",
    "memhealth serve                        # console, /metrics, probes: http://127.0.0.1:9464/",
    "memhealth gate --json                  # one JSON object, errors too",
)


def _epilog() -> str:
    lines = ["commands by use:"]
    lines += [f"  {group + ':':<23}{', '.join(names)}" for group, names in GROUPS]
    lines += ["", "examples:"] + [f"  {example}" for example in EXAMPLES]
    lines += ["", "`memhealth COMMAND --help` for a command's options; docs/reference/cli.md for all."]
    return "\n".join(lines)


def build_parser(command: str | None = None):
    """The argument parser; with `command` (a name in COMMANDS), only that command's
    subparser is registered: importing all 18 command modules costs a one-command run more
    than its own work (`memhealth gate`: ~40 M instructions). Help and unknown commands get
    the whole table."""
    import argparse
    import importlib

    from memhealth import __version__

    parser = argparse.ArgumentParser(
        prog="memhealth", allow_abbrev=False, epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Per-project memory for Claude Code, with a health gate, heartbeats and "
                    "OpenTelemetry/Prometheus export.")
    parser.add_argument("--version", action="version", version=f"memhealth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if command not in COMMANDS else (command,):
        # No ModuleNotFoundError guard: a command in the table whose module is missing is a
        # broken install, and must fail loudly rather than vanish from the help.
        importlib.import_module(f"memhealth.cmd_{name}").register(sub)
    return parser


def caught_errors() -> tuple[type[BaseException], ...]:
    """Every package's error base: the CLI prints these as one line, never a traceback."""
    from memhealth.errors import MemhealthError
    from memory_core.errors import MemoryCoreError
    from probes.errors import ProbeError
    from telemetry.errors import TelemetryError

    return (MemhealthError, MemoryCoreError, ProbeError, TelemetryError)


def _refuse_foreign(args, foreign: list[tuple[str, str]]) -> int:
    """Another distribution's `telemetry` (or `probes`, `memory_core`) would run under our
    name: the gate says so as its verdict, every other command as one line; exit 1."""

    from memhealth import install_check

    if args.command == "gate":
        if getattr(args, "json", False):
            from memhealth.cliutil import emit_json

            emit_json(install_check.verdict_json(foreign))
        else:
            print(install_check.verdict_text(foreign), flush=True)
    else:
        print(f"memhealth {args.command}: RED install: {install_check.detail(foreign)}  "
              f"FIX: {install_check.FIX}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"] and len(argv) >= 2 and not argv[1].startswith("-"):
        from memhealth.hooks import main as hook_main

        hook_main(argv[1:])  # never returns: exits 0
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from memhealth.install_check import foreign_packages

    foreign = foreign_packages()  # before anything imports probes, telemetry or memory_core
    if foreign:
        return _refuse_foreign(args, foreign)
    caught = caught_errors()
    try:
        code = args.func(args)
    except caught as exc:
        exit_code = getattr(exc, "exit_code", 1)
        if getattr(args, "json", False):
            from memhealth.cliutil import json_error

            json_error(args.command, str(exc), exit_code)
        else:
            fix = getattr(exc, "fix", "")  # a ConfigError's line, a store file's link: the command
            print(f"memhealth {args.command}: {exc}" + (f"; FIX: {fix}" if fix else ""), file=sys.stderr)
        return exit_code
    except KeyboardInterrupt:
        print(f"memhealth {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
