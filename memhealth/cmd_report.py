"""`memhealth report`: the numbers appendix from the store (telemetry/report.py)."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "report", help="print the numbers appendix: invocations, failures, injection window, gate history",
        description="Summarise the last N days from the store: hook invocations and failures per "
                    "day by hook and failure family, killed hooks, the injection window (prompts, "
                    "intent-bearing, injections, cascade outcomes, retrieval latency median/p90), "
                    "gate verdict history, degradations, alert decisions and the telemetry outbox.")
    p.add_argument("--project", default=".", metavar="DIR", help="project root (default: .)")
    p.add_argument("--days", type=float, default=7.0, metavar="N", help="window in days (default: 7)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text tables")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import json

    from memhealth.config import load
    from memhealth.errors import MemhealthError
    from memhealth.project import Project
    from memory_core.db import connect
    from telemetry.report import build_report, render_text

    if not args.days > 0:
        err = MemhealthError(f"--days must be a positive number, not {args.days:g}")
        err.exit_code = 2
        raise err
    project = Project.find(args.project)
    cfg = load(project.state_dir)
    conn = connect(project.db_path)
    try:
        data = build_report(conn, args.days, killed_after_s=cfg["hooks"]["killed_after_s"])
    finally:
        conn.close()
    print(json.dumps(data, indent=2) if args.json else render_text(data), end="" if not args.json else "\n")
    return 0
