"""`memhealth inventory`: what the code index counts as components, and proposing them."""

from __future__ import annotations

from memhealth.cliutil import (
    UsageError,
    add_json_option,
    add_parser,
    add_project_option,
    positive_int,
)


def register(sub):
    p = add_parser(
        sub, "inventory", help="list the components read from the code; propose them for triage",
        usage="%(prog)s [propose] [--limit N] [--json] [--project DIR]",
        description="List what the code index (`memhealth ingest code`) counts as components -- "
                    "documented modules and packages, public classes, exported types, interfaces, "
                    "traits and structs, folders with a README -- most mentioned by other files "
                    "first, with where each is defined and whether the curated inventory has it. "
                    "`propose` puts the top ones that are neither curated nor proposed before in "
                    "the triage queue: `memhealth triage confirm ID` makes one an inventory entry "
                    "(type: subsystem), `retitle` names it the way people say it, `reject` keeps "
                    "it from being proposed again.")
    p.add_argument("action", nargs="?", choices=("list", "propose"), default="list",
                   help="list (default) or propose")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="at most N components (list: all; propose: 10)")
    add_json_option(p, "the components (list) or what was queued (propose)")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def _line(d: dict) -> str:
    mark = "curated" if d["curated"] else (
        f"#{d['candidate']['id']} {d['candidate']['state']}" if d["candidate"] else "")
    head = f"{d['rank']:>5g}  {d['kind']:<9} {d['qualname']}  {d['path']}:{d['line_start']}"
    return head + (f"  [{mark}]" if mark else "") + (f"\n       {d['summary']}" if d["summary"] else "")


def run(args) -> int:
    import json

    from memhealth.cliutil import open_project
    from memory_core.index import code as code_index
    from memory_core.records import inventory

    with open_project(args) as ctx:
        conn = ctx.conn
        commit = code_index.indexed_commit(conn)
        if args.action == "propose":
            if commit is None and not conn.execute("SELECT 1 FROM code_defs LIMIT 1").fetchone():
                raise UsageError("the code has not been indexed yet: run `memhealth ingest code` first")
            report = inventory.propose(conn, limit=args.limit or 10)
            if args.json:
                print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
                return 0
            for a in report.added:
                print(f"#{a['id']} {a['kind']} {a['name']}  {a['path']}:{a['line']}")
            print(f"memhealth inventory: {len(report.added)} component(s) queued for triage "
                  f"({report.curated} already curated, {report.known} proposed before); "
                  "review with `memhealth triage`")
            return 0
        items = inventory.listing(conn, args.limit)
        if args.json:
            print(json.dumps({"commit": commit, "components": items}, indent=2, ensure_ascii=False))
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
