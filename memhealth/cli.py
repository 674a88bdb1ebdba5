"""The `memhealth` command: a thin argparse layer over the libraries.

`memhealth hook EVENT` is dispatched before argparse is imported: the hook path runs on
every prompt and must not pay for a CLI framework. Every other command lives in a
`memhealth/cmd_<name>.py` module exposing `register(subparsers)`; its heavy imports happen
inside its run function. Errors become one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import sys

# Command modules, in help order. Each defines register(subparsers) -> parser with
# set_defaults(func=run), where run(args) -> int.
COMMANDS = ["init", "hook", "gate", "ingest", "triage", "search", "embed", "serve", "export", "report",
            "demo", "generate"]


def build_parser():
    import argparse
    import importlib

    from memhealth import __version__

    parser = argparse.ArgumentParser(
        prog="memhealth",
        description="Per-project memory for Claude Code, with a health gate, heartbeats and "
                    "OpenTelemetry/Prometheus export.")
    parser.add_argument("--version", action="version", version=f"memhealth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"memhealth.cmd_{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"memhealth.cmd_{name}":
                raise
            continue  # a command not built yet
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hook"] and len(argv) >= 2 and not argv[1].startswith("-"):
        from memhealth.hooks import main as hook_main

        hook_main(argv[1:])  # never returns: exits 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from memhealth.errors import MemhealthError
    from memory_core.errors import MemoryCoreError

    try:
        code = args.func(args)
    except (MemhealthError, MemoryCoreError) as exc:
        print(f"memhealth {args.command}: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
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
