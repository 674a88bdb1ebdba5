"""`memhealth inventory`: what the code index counts as components, and proposing them."""

from __future__ import annotations

from memhealth.cliutil import (
    UsageError,
    add_json_option,
    add_limit_option,
    add_parser,
    add_project_option,
)


def register(sub):
    p = add_parser(
        sub, "inventory", help="list the components read from the code; propose them for triage",
        description="List what the code index (`memhealth ingest code`) counts as components -- "
                    "documented modules and packages, public classes, exported types, interfaces, "
                    "traits and structs, folders with a README -- most mentioned by other files "
                    "first, with where each is defined and whether the curated inventory has it. "
                    "`memhealth inventory propose` puts the top ones that are neither curated nor "
                    "proposed before in the triage queue: `memhealth triage confirm ID` makes one "
                    "an inventory entry (type: subsystem), `retitle` names it the way people say "
                    "it, `reject` keeps it from being proposed again.")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = add_parser(actions, "list", help="the components, most mentioned first (the default)",
                         description="The components the code index counts, most mentioned first.")
    propose = add_parser(actions, "propose", help="queue the top components for `memhealth triage`",
                         description="Queue the most mentioned components that are neither in the "
                                     "curated inventory nor proposed before as triage candidates "
                                     "of kind subsystem.")
    for parser, child, default, what in ((p, False, 50, "components"), (listing, True, 50, "components"),
                                         (propose, True, 10, "components queued")):
        add_limit_option(parser, default, what, child=child)
        add_json_option(parser, "the components (list) or what was queued (propose)", child=child)
        add_project_option(parser, child=child)
    # `propose` queues 10 unless told: its own default, not the listing's
    propose.set_defaults(limit=10)
    p.set_defaults(func=run, action="list")
    return p


def _line(d: dict) -> str:
    mark = "curated" if d["curated"] else (
        f"#{d['candidate']['id']} {d['candidate']['state']}" if d["candidate"] else "")
    head = f"{d['rank']:>5g}  {d['kind']:<9} {d['qualname']}  {d['path']}:{d['line_start']}"
    return head + (f"  [{mark}]" if mark else "") + (f"\n       {d['summary']}" if d["summary"] else "")


def run(args) -> int:
    from memhealth.cliutil import emit_json, open_project
    from memory_core.index import code as code_index
    from memory_core.records import inventory

    with open_project(args) as ctx:
        conn = ctx.conn
        commit = code_index.indexed_commit(conn)
        if args.action == "propose":
            from memory_core.index.reads import has_code_definitions

            if commit is None and not has_code_definitions(conn):
                raise UsageError("the code has not been indexed yet: run `memhealth ingest code` first")
            report = inventory.propose(conn, limit=args.limit)
            if args.json:
                emit_json(report.to_dict())
                return 0
            for a in report.added:
                print(f"#{a['id']} {a['kind']} {a['name']}  {a['path']}:{a['line']}")
            print(f"memhealth inventory: {len(report.added)} component(s) queued for triage "
                  f"({report.curated} already curated, {report.known} proposed before); "
                  "review with `memhealth triage`")
            return 0
        items = inventory.listing(conn, args.limit)
        if args.json:
            emit_json({"commit": commit, "components": items})
            return 0
        if not items:
            print("no components in the code index" + ("" if commit else
                  " (not indexed yet: `memhealth ingest code`)"))
            return 0
        print(f"components read from the code at {commit[:12] if commit else '(index incomplete)'}, "
              "most mentioned first (rank = other files mentioning the name):")
        for d in items:
            print(_line(d))
        return 0
