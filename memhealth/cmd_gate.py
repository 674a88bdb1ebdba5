"""`memhealth gate`: run every health check and print the verdict."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "gate", help="run every health check and print the verdict (exit 1 on any RED)",
        description="Run the memory health gate: every check, one verdict line "
                    "(MEMORY-HEALTH: N/N GREEN, or G/N GREEN (R RED)), then one line per RED with "
                    "its fix and one per NOTE. Exit 0 when nothing is RED, 1 when something is, "
                    "2 on a usage error. Records a gate run, its checks and its own heartbeat.")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="project directory (default: the nearest .memhealth/ at or above the cwd)")
    p.add_argument("--json", action="store_true",
                   help='print {"total", "green", "red", "checks": [...]} instead of text')
    # the same names as probes.gate.ACKABLE (a test keeps them equal; importing the gate
    # here would load it for every command)
    p.add_argument("--ack", metavar="CHECK", choices=("hook_heartbeats", "integrations"), default=None,
                   help="acknowledge CHECK's RED about a past event (a hook that did not fire, a "
                        "failed webhook delivery): recorded, shown by `memhealth report`; later "
                        "events are reported again. CHECK: hook_heartbeats, integrations")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import os

    from memhealth.config import load
    from memhealth.errors import ProjectNotFound
    from memhealth.project import Project
    from memory_core.db import connect
    from memory_core.errors import StoreError
    from memory_core.outbox import command_trace
    from probes import gate
    from probes.evidence import Evidence

    if args.project is not None and not os.path.isdir(args.project):
        raise ProjectNotFound(f"--project {args.project}: no such directory")
    project = Project.find(args.project or os.getcwd())
    cfg = load(project.state_dir)
    try:
        conn = connect(project.db_path, create=False)
    except StoreError as exc:  # the store itself is the failure: a verdict, not a traceback
        verdict = gate.store_failure(exc)
        print(gate.dumps(verdict) if args.json else verdict.text(), flush=True)
        return 1
    try:
        if args.ack:
            import time

            row = conn.execute("SELECT detail FROM gate_checks WHERE name = ? AND status = 'red' "
                               "ORDER BY run_id DESC LIMIT 1", (args.ack,)).fetchone()
            gate.acknowledge(conn, args.ack, time.time_ns(), row[0] if row else "")
            if not args.json:
                print(f"memhealth gate: acknowledged {args.ack} up to now"
                      + (f" ({row[0][:200]})" if row else "") + "; later events are reported again")
        with command_trace(conn, "memhealth gate") as trace:
            verdict = gate.run(Evidence(project.root, conn, cfg), trace=trace)
    finally:
        conn.close()
    print(gate.dumps(verdict) if args.json else verdict.text(), flush=True)
    return 1 if verdict.red else 0
