"""`memhealth gate`: run every health check and print the verdict."""

from __future__ import annotations

from memhealth.cliutil import add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "gate", help="run every health check and print the verdict (exit 1 on any RED)",
        description="Run the memory health gate: every check, one verdict line "
                    "(MEMORY-HEALTH: N/N GREEN, or G/N GREEN (R RED)), then one line per RED with "
                    "its fix and one per NOTE. Exit 0 when nothing is RED, 1 when something is, "
                    "2 on a usage error. Records a gate run, its checks and its own heartbeat.")
    add_project_option(p)
    p.add_argument("--json", action="store_true",
                   help='print {"total", "green", "red", "checks": [...]} instead of text')
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.cliutil import open_project
    from memory_core.errors import StoreError
    from memory_core.outbox import command_trace
    from probes import gate
    from probes.evidence import Evidence

    try:
        with open_project(args, create=False) as ctx:
            with command_trace(ctx.conn, "memhealth gate") as trace:
                verdict = gate.run(Evidence(ctx.project.root, ctx.conn, ctx.cfg), trace=trace)
    except StoreError as exc:  # the store itself is the failure: a verdict, not a traceback
        verdict = gate.store_failure(exc)
    print(gate.dumps(verdict) if args.json else verdict.text(), flush=True)
    return 1 if verdict.red else 0
