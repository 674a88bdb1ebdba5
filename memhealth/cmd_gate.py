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
    # the same names as probes.gate.ACKABLE (a test keeps them equal; importing the gate
    # here would load it for every command)
    p.add_argument("--ack", metavar="CHECK", choices=("hook_heartbeats", "integrations", "cue_delivery", "hook_witness"),
                   default=None,
                   help="acknowledge CHECK's RED about a past event (a hook that did not fire, a "
                        "failed webhook delivery, a compaction that dropped pinned items): recorded, "
                        "shown by `memhealth report`; later events are reported again. CHECK: "
                        "hook_heartbeats, integrations, cue_delivery, hook_witness")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.cliutil import open_project
    from memory_core.errors import StoreError
    from memory_core.outbox.spans import command_trace
    from probes import gate
    from probes.evidence import Evidence

    try:
        with open_project(args, create=False) as ctx:
            if args.ack:
                _acknowledge(ctx.conn, args.ack, quiet=args.json)
            with command_trace(ctx.conn, "memhealth gate") as trace:
                # witness=True: this gate runs outside any hook, so the transcript witness may
                # read what the transcripts gained since its last reconciliation
                verdict = gate.run(Evidence(ctx.project.root, ctx.conn, ctx.cfg, witness=True), trace=trace)
    except StoreError as exc:  # the store itself is the failure: a verdict, not a traceback
        verdict = gate.store_failure(exc)
    if args.json:
        from memhealth.cliutil import emit_json

        emit_json(verdict.to_json())
    else:
        print(verdict.text(), flush=True)
    return 1 if verdict.red else 0


def _acknowledge(conn, check: str, quiet: bool) -> None:
    import time

    from memory_core.outbox import gate_log
    from probes import gate

    detail = gate_log.last_red_detail(conn, check)
    gate.acknowledge(conn, check, time.time_ns(), detail if detail is not None else "")
    if not quiet:
        print(f"memhealth gate: acknowledged {check} up to now"
              + (f" ({detail[:200]})" if detail is not None else "") + "; later events are reported again")
