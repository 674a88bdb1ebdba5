"""`memhealth hook EVENT` (help text only: the real dispatch happens in cli.main before
argparse loads)."""

from __future__ import annotations

from memhealth.cliutil import add_parser
from memhealth.hooks import EVENTS


def register(sub):
    p = add_parser(
        sub, "hook", help="run a Claude Code hook (reads the hook JSON on stdin; always exits 0)",
        description="Run one Claude Code hook invocation. Reads the hook JSON from stdin, writes "
                    "a heartbeat before any work, emits context as hookSpecificOutput JSON, and "
                    "always exits 0.")
    p.add_argument("event", choices=list(EVENTS), help="the hook event")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.hooks import main

    main([args.event])
    return 0
