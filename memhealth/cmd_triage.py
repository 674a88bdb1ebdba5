"""`memhealth triage`: keep few of the captured decisions, dead ends and corrections."""

from __future__ import annotations

import argparse
import sys

from memhealth.cliutil import UsageError, add_json_option, add_parser, add_project_option

USAGE = ("memhealth triage [list] [--json] | confirm ID [--supersedes ID] | reject ID | "
         "retitle ID TITLE | merge ID INTO ID | --apply FILE.json | --interactive")


def register(sub):
    p = add_parser(
        sub, "triage", help="review captured decisions, dead ends and corrections",
        description="List the candidates the session-end capture proposed, and decide on them: "
                    "confirm (becomes a memory file under .memhealth/memory/records/, indexed at "
                    "once), reject (kept so it is never proposed again), retitle, or merge one into "
                    "another. In a terminal with no action, asks about each pending candidate. "
                    "Exit 1 when a decision could not apply, 2 on a usage error.",
        epilog="batch file (--apply): a JSON list of {\"id\": 3, \"action\": \"confirm\"}, "
               "{\"id\": 4, \"action\": \"reject\"}, {\"id\": 5, \"action\": \"retitle\", \"title\": \"...\"}, "
               "{\"id\": 6, \"action\": \"merge\", \"into\": 3}")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    listing = add_parser(actions, "list", help="list the candidates (the default)",
                         description="List the pending candidates (--all: every one).")
    confirm = add_parser(actions, "confirm", help="confirm a candidate into a memory file",
                         description="Confirm a candidate: it becomes a memory file under "
                                     ".memhealth/memory/records/, indexed at once.")
    confirm.add_argument("id", metavar="ID", help="the candidate's id")
    confirm.add_argument("--supersedes", metavar="ID", help="the confirmed decision this one "
                         "replaces (a lineage thread, shown newest first)")
    reject = add_parser(actions, "reject", help="reject a candidate (never proposed again)",
                        description="Reject a candidate: kept so it is never proposed again.")
    reject.add_argument("id", metavar="ID", help="the candidate's id")
    retitle = add_parser(actions, "retitle", help="give a candidate a new title",
                         description="Give a candidate a new title before confirming it.")
    retitle.add_argument("id", metavar="ID", help="the candidate's id")
    retitle.add_argument("title", nargs="+", metavar="TITLE", help="the new title")
    merge = add_parser(actions, "merge", help="merge a candidate into another",
                       description="Merge a candidate into another: `merge ID INTO ID` (the word "
                                   "`into` may be left out).")
    merge.add_argument("id", metavar="ID", help="the candidate merged away")
    merge.add_argument("into", nargs="+", metavar="INTO", help="[into] the id it merges into")
    for parser, child in ((p, False), (listing, True), (confirm, True), (reject, True),
                          (retitle, True), (merge, True)):
        add_json_option(parser, "the candidates, or what a decision did", child=child)
        add_project_option(parser, child=child)
    for parser in (p, listing):
        parser.add_argument("--all", action="store_true", default=argparse.SUPPRESS if parser is listing else False,
                            help="list every candidate, not only pending ones")
    p.add_argument("--apply", metavar="FILE", help="apply a JSON list of decisions")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--interactive", "-i", action="store_true", default=None,
                      help="ask about each pending candidate (the default in a terminal)")
    mode.add_argument("--list", dest="interactive", action="store_false",
                      help="list even in a terminal")
    p.set_defaults(func=run, action=None, supersedes=None)
    return p


class Usage(UsageError):
    """A malformed action: exit 2, with the usage line."""

    def __init__(self, message: str):
        super().__init__(f"{message}\nusage: {USAGE}")


def _int(text: str) -> int:
    try:
        return int(text.lstrip("#"))
    except ValueError:
        raise Usage(f"expected a candidate id, got {text!r}") from None


def request_of(args) -> tuple[str, int, dict] | None:
    """(action, id, extra) of a decision sub-action; None for a listing."""
    action = args.action
    if action in (None, "list"):
        return None
    if action in ("confirm", "reject"):
        return action, _int(args.id), {}
    if action == "retitle":
        return action, _int(args.id), {"title": " ".join(args.title)}
    into = args.into[1:] if len(args.into) == 2 and args.into[0].lower() == "into" else args.into
    if len(into) != 1:
        raise Usage("merge takes ID INTO ID")
    return action, _int(args.id), {"into": _int(into[0])}


def _show(item: dict, index: str = "") -> str:
    from memory_core.records.triage import provenance

    head = f"{index}#{item['id']} {item['kind']} [{item['state']}]  {item['title']}"
    lines = [head, f"    {item['statement']}", f"    from {provenance(item)}"]
    lines += [f"    also #{a['id']}: {a['statement']}" for a in item.get("also") or []]
    return "\n".join(lines)


def run(args) -> int:
    import json

    from memhealth.cliutil import emit_json, open_project
    from memory_core.records import triage

    request = request_of(args)
    if args.supersedes is not None:
        if request is None or request[0] != "confirm":
            raise Usage("--supersedes goes with confirm ID")
        request[2]["supersedes"] = _int(args.supersedes)
    if request is not None and (args.apply or args.interactive):
        raise Usage("give an action, --apply or --interactive, not several")
    batch = None
    if args.apply:
        try:
            with open(args.apply, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict) and isinstance(data.get("decisions"), list):
                data = data["decisions"]
            if not isinstance(data, list):
                raise ValueError("expected a JSON list of decisions")
            batch = []
            for n, entry in enumerate(data, 1):
                try:
                    batch.append(triage.parse_decision(entry))
                except ValueError as exc:
                    raise ValueError(f"entry {n}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{args.apply}: {exc}; nothing applied") from None

    with open_project(args) as ctx:
        conn, project, cfg = ctx.conn, ctx.project, ctx.cfg
        if request is not None:
            action, cid, extra = request
            said = triage.apply_one(conn, project.root, cfg, action, cid, extra)
            if args.json:
                emit_json({"action": action, "id": cid, "result": said})
            else:
                print(said)
            return 0
        if batch is not None:
            results = []
            for action, cid, extra in batch:
                try:
                    said = triage.apply_one(conn, project.root, cfg, action, cid, extra)
                    results.append({"action": action, "id": cid, "result": said})
                    if not args.json:
                        print(said)
                except triage.TriageError as exc:
                    results.append({"action": action, "id": cid, "error": str(exc)})
                    if not args.json:
                        print(f"#{cid} {action}: {exc}", file=sys.stderr)
            failed = sum(1 for r in results if "error" in r)
            if args.json:
                emit_json({"applied": len(batch) - failed, "failed": failed, "decisions": results})
            else:
                print(f"memhealth triage: {len(batch) - failed} applied, {failed} failed")
            return 1 if failed else 0
        interactive = args.interactive
        if interactive is None:
            interactive = not args.json and sys.stdin.isatty() and sys.stdout.isatty()
        if interactive:
            return _interactive(conn, project.root, cfg)
        items = triage.pending(conn, ("pending", "confirmed", "rejected", "merged") if args.all else ("pending",))
        if args.json:
            emit_json({"candidates": items})
        elif not items:
            print("memhealth triage: nothing pending")
        else:
            for item in items:
                print(_show(item))
            print(f"{len(items)} candidate(s). Decide with: {USAGE}")
        return 0


PROMPT = "[c]onfirm [r]eject [t]itle [m]erge into [s]kip [q]uit > "


def _ask(prompt: str) -> str | None:
    try:
        return input(prompt).strip()
    except EOFError:
        return None


def _interactive(conn, root: str, cfg) -> int:
    from memory_core.records import triage

    items = triage.pending(conn)
    if not items:
        print("memhealth triage: nothing pending")
        return 0
    done = {"confirmed": 0, "rejected": 0, "merged": 0, "skipped": 0}
    for n, item in enumerate(items, 1):
        while True:
            current = triage.get(conn, item["id"])
            if current["state"] != "pending":
                break  # merged into by an earlier answer
            print(_show(current, f"[{n}/{len(items)}] "))
            answer = _ask(PROMPT)
            if answer is None or answer.lower() in ("q", "quit"):
                print(_summary(done))
                return 0
            key = answer[:1].lower()
            try:
                if key == "c":
                    print(f"  confirmed → {triage.confirm(conn, root, cfg, item['id'])}")
                    done["confirmed"] += 1
                elif key == "r":
                    triage.reject(conn, root, cfg, item["id"])
                    print("  rejected (it will not be proposed again)")
                    done["rejected"] += 1
                elif key == "t":
                    title = _ask("  new title: ")
                    if title:
                        triage.retitle(conn, root, cfg, item["id"], title)
                    continue  # show it again with its new title
                elif key == "m":
                    into = _ask("  merge into id: ")
                    if into:
                        triage.merge(conn, root, cfg, item["id"], _int(into))
                        print(f"  merged into #{into.lstrip('#')}")
                        done["merged"] += 1
                    else:
                        continue
                elif key == "s" or not key:
                    done["skipped"] += 1
                else:
                    print("  answer c, r, t, m, s or q")
                    continue
            except (triage.TriageError, Usage) as exc:
                print(f"  {exc}")
                continue
            break
    print(_summary(done))
    return 0


def _summary(done: dict) -> str:
    return "memhealth triage: " + ", ".join(f"{v} {k}" for k, v in done.items())
