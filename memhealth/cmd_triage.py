"""`memhealth triage`: keep few of the captured decisions, dead ends and corrections."""

from __future__ import annotations

import sys

from memhealth.cliutil import UsageError, add_parser, add_project_option

USAGE = ("memhealth triage [--json] | confirm ID [--supersedes ID] | reject ID | retitle ID TITLE | "
         "merge ID INTO ID | --apply FILE.json | --interactive")


def register(sub):
    p = add_parser(
        sub, "triage", help="review captured decisions, dead ends and corrections",
        usage=USAGE.replace("memhealth triage", "%(prog)s") + " [--project DIR]",
        description="List the candidates the session-end capture proposed, and decide on them: "
                    "confirm (becomes a memory file under .memhealth/memory/records/, indexed at "
                    "once), reject (kept so it is never proposed again), retitle, or merge one into "
                    "another. In a terminal with no action, asks about each pending candidate. "
                    "Exit 1 when a decision could not apply, 2 on a usage error.",
        epilog="batch file (--apply): a JSON list of {\"id\": 3, \"action\": \"confirm\"}, "
               "{\"id\": 4, \"action\": \"reject\"}, {\"id\": 5, \"action\": \"retitle\", \"title\": \"...\"}, "
               "{\"id\": 6, \"action\": \"merge\", \"into\": 3}")
    p.add_argument("words", nargs="*", metavar="ACTION",
                   help="confirm ID | reject ID | retitle ID TITLE | merge ID INTO ID (none: list)")
    p.add_argument("--json", action="store_true", help="list as JSON")
    p.add_argument("--all", action="store_true", help="list every candidate, not only pending ones")
    p.add_argument("--apply", metavar="FILE", help="apply a JSON list of decisions")
    p.add_argument("--supersedes", metavar="ID", help="with confirm: the confirmed decision this one "
                   "replaces (a lineage thread, shown newest first)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--interactive", "-i", action="store_true", default=None,
                      help="ask about each pending candidate (the default in a terminal)")
    mode.add_argument("--list", dest="interactive", action="store_false",
                      help="list even in a terminal")
    add_project_option(p)
    p.set_defaults(func=run)
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


def parse_words(words: list[str]) -> tuple[str, int, dict] | None:
    """(action, id, extra) from the positional words; None for a listing."""
    if not words:
        return None
    action, rest = words[0], words[1:]
    if action in ("confirm", "reject"):
        if len(rest) != 1:
            raise Usage(f"{action} takes one id")
        return action, _int(rest[0]), {}
    if action == "retitle":
        if len(rest) < 2:
            raise Usage("retitle takes an id and a title")
        return action, _int(rest[0]), {"title": " ".join(rest[1:])}
    if action == "merge":
        if len(rest) == 3 and rest[1].lower() == "into":
            rest = [rest[0], rest[2]]
        if len(rest) != 2:
            raise Usage("merge takes ID INTO ID")
        return action, _int(rest[0]), {"into": _int(rest[1])}
    raise Usage(f"unknown action {action!r}")


def _show(item: dict, index: str = "") -> str:
    from memory_core.records.triage import provenance

    head = f"{index}#{item['id']} {item['kind']} [{item['state']}]  {item['title']}"
    lines = [head, f"    {item['statement']}", f"    from {provenance(item)}"]
    lines += [f"    also #{a['id']}: {a['statement']}" for a in item.get("also") or []]
    return "\n".join(lines)


def run(args) -> int:
    import json

    from memhealth.cliutil import open_project
    from memory_core.records import triage

    request = parse_words(args.words)
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
            print(triage.apply_one(conn, project.root, cfg, action, cid, extra))
            return 0
        if batch is not None:
            failed = 0
            for action, cid, extra in batch:
                try:
                    print(triage.apply_one(conn, project.root, cfg, action, cid, extra))
                except triage.TriageError as exc:
                    failed += 1
                    print(f"#{cid} {action}: {exc}", file=sys.stderr)
            print(f"memhealth triage: {len(batch) - failed} applied, {failed} failed")
            return 1 if failed else 0
        interactive = args.interactive
        if interactive is None:
            interactive = not args.json and sys.stdin.isatty() and sys.stdout.isatty()
        if interactive:
            return _interactive(conn, project.root, cfg)
        items = triage.pending(conn, ("pending", "confirmed", "rejected", "merged") if args.all else ("pending",))
        if args.json:
            print(json.dumps(items, indent=2, ensure_ascii=False))
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
