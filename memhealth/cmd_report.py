"""`memhealth report`: the numbers appendix from the store (telemetry/report.py)."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option, positive_float


def register(sub):
    p = add_parser(
        sub, "report", help="print the numbers appendix: invocations, failures, injection window, gate history",
        description="Summarise the last N days from the store: hook invocations and failures per "
                    "day by hook and failure family, killed hooks, the injection window (prompts, "
                    "intent-bearing, injections, cascade outcomes, retrieval latency median/p90), "
                    "gate verdict history, degradations, alert decisions and the telemetry outbox.")
    add_project_option(p)
    p.add_argument("--days", type=positive_float, default=7.0, metavar="N", help="window in days (default: 7)")
    p.add_argument("--ablation", action="store_true",
                   help="compare the arms of the registered ablation (memhealth ablation) instead")
    add_json_option(p, "the report (instead of text tables)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.cliutil import emit_json, open_project
    from telemetry.report import build_ablation, build_report, render_ablation, render_text

    if args.ablation:
        with open_project(args) as ctx:
            data = build_ablation(ctx.conn)
        emit_json(data) if args.json else print(render_ablation(data), end="")
        return 0
    with open_project(args) as ctx:
        data = build_report(ctx.conn, args.days, killed_after_s=ctx.cfg["hooks"]["killed_after_s"])
    emit_json(data) if args.json else print(render_text(data), end="")
    return 0
