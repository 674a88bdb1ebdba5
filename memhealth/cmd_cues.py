"""`memhealth cues`: the compiled cues with their state, and the audit of every evaluation."""

from __future__ import annotations

import time

from memhealth.cliutil import add_json_option, add_limit_option, add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "cues", help="list memory cues and their state, or the audit of evaluations",
        description="List every memory item that can fire (pinned, or with path, symbol, event or "
                    "semantic triggers) and each cue's state: active, expired, inactive (and why), "
                    "or stale (no file matches its paths any more). `memhealth cues audit` lists the "
                    "newest evaluations: fired, or skipped with a reason (no_match, deduped, expired, "
                    "over_budget, ablation, inactive).")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = add_parser(actions, "list", help="every cue and its state (the default)",
                         description="Every memory item that can fire, with each cue's state.")
    audit = add_parser(actions, "audit", help="the newest cue evaluations, fired or skipped",
                       description="The newest cue evaluations: fired, or skipped with a reason.")
    audit.add_argument("--session", default=None, metavar="ID", help="only this session")
    for parser, child in ((p, False), (listing, True), (audit, True)):
        add_limit_option(parser, 100, "cues or audit rows", child=child)
        add_json_option(parser, "the cues (or the audit rows)", child=child)
        add_project_option(parser, child=child)
    p.set_defaults(func=run, action="list", session=None)
    return p


def _day(ns) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ns / 1e9)) if ns else "-"


def run(args) -> int:
    from memhealth.cliutil import emit_json, open_project
    from memory_core.items.listing import audit_rows, list_cues

    with open_project(args) as ctx:
        if args.action == "audit":
            rows = audit_rows(ctx.conn, args.session, args.limit)
        else:
            items = list_cues(ctx.conn, ctx.project.root, ctx.cfg)[:args.limit]
    if args.action == "audit":
        if args.json:
            emit_json({"audit": rows})
            return 0
        if not rows:
            print("no cue evaluations recorded" + (f" for session {args.session}" if args.session else ""))
            return 0
        for r in rows:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts_ns"] / 1e9))
            what = f"#{r['item_id']} {r['item'] or ''}".strip() if r["item_id"] else "-"
            outcome = r["outcome"] if r["outcome"] == "fired" else f"skipped: {r['reason']}"
            print(f"{when}  {(r['session_id'] or '-')[:12]:<12} e{r['epoch'] or 0} {r['event']:<13} "
                  f"{r['trigger']:<8} {what:<32} {outcome:<20} {r['detail'] or ''}".rstrip())
        return 0
    if args.json:
        emit_json({"cues": items})
        return 0
    if not items:
        print("no cues: write one with `memhealth remember TEXT --path GLOB` or a memory file's "
              "frontmatter (paths:, symbols:, on:, pinned:)")
        return 0
    for item in items:
        flags = [item["kind"]] + (["pinned"] if item["pinned"] else []) + \
            ([f"expires {_day(item['expires_ns'] - 1)}"] if item["expires_ns"] else [])
        print(f"#{item['id']} {item['name']} ({', '.join(flags)}) {item['path']}:{item['line']}, "
              f"recorded {_day(item['recorded_ns'])}, fired {item['fired']}x")
        for cue in item["cues"]:
            print(f"    {cue['trigger']:<8} {cue['pattern']:<40} {cue['state']}")
        for _key, message in item["errors"]:
            print(f"    error    {message}")
    return 0
