"""`memhealth init`: set up a project and wire the Claude Code hooks."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "init", help="create .memhealth/ and merge hook entries into Claude Code settings",
        description="Create .memhealth/ (config, database) and merge memhealth's hook entries "
                    "into .claude/settings.local.json (or settings.json). Idempotent; an "
                    "unparsable settings file is left untouched (exit 2).")
    p.add_argument("--project", default=".", metavar="DIR", help="project root (default: .)")
    p.add_argument("--settings", choices=["local", "shared"], default="local",
                   help="local = .claude/settings.local.json (default), shared = .claude/settings.json")
    p.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    p.add_argument("--no-templates", dest="templates", action="store_false",
                   help="do not install the convention files (MEMORY.md with its resume anchor, "
                        "invariants.md, the decisions ledger, CONSTITUTION.md)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    from memhealth.installer import init_project

    actions = init_project(args.project, settings=args.settings, dry_run=args.dry_run,
                           templates=args.templates)
    prefix = "would: " if args.dry_run else ""
    if not actions:
        print("memhealth init: already set up; nothing changed")
    for line in actions:
        print(f"{prefix}{line}")
    if actions and not args.dry_run:
        print("next: `memhealth ingest` to index docs, memory files and history, then `memhealth gate`")
    return 0
