"""`memhealth init`: set up a project and wire the Claude Code hooks."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser

# init_project reports what it did in the past tense; a dry run says what it would do.
_DRY = {"created": "would create", "wrote": "would write", "added": "would add",
        "updated": "would update", "removed": "would remove",
        "registered": "would register"}


def register(sub):
    p = add_parser(
        sub, "init", help="create .memhealth/ and merge hook entries into Claude Code settings",
        description="Create .memhealth/ (config, database) and merge memhealth's hook entries "
                    "into .claude/settings.local.json (or settings.json). Idempotent; an "
                    "unparsable settings file is left untouched (exit 2).")
    # Not the shared --project: init creates the project here, it does not look upward.
    p.add_argument("--project", default=".", metavar="DIR",
                   help="directory to set up (default: the current directory)")
    p.add_argument("--settings", choices=["local", "shared"], default="local",
                   help="local = .claude/settings.local.json (default), shared = .claude/settings.json")
    p.add_argument("--transport", choices=["command", "http"], default=None,
                   help="command = a process per hook event (the default for a new project); http = UserPromptSubmit, "
                        "PreToolUse, PostToolUse and Stop are POSTed to `memhealth serve` at "
                        "[serve] listen with the project's secret (local settings only; serve must "
                        "run: `memhealth serve --detach`, or [serve] hook_autostart = true). "
                        "`--transport command` goes back; without the option, init keeps the "
                        "transport the settings already use")
    p.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    p.add_argument("--no-templates", dest="templates", action="store_false",
                   help="do not install the convention files (MEMORY.md with its resume anchor, "
                        "invariants.md, the decisions ledger, CONSTITUTION.md)")
    p.add_argument("--unregister", action="store_true",
                   help="remove this project from the per-user registry that `memhealth serve --all` "
                        "reads ($XDG_STATE_HOME/memhealth/projects.json); nothing else changes")
    add_json_option(p, "what changed (or would)")
    p.set_defaults(func=run)
    return p


def dry_run_line(action: str) -> str:
    """"created X" -> "would create X"."""
    verb, sep, rest = action.partition(" ")
    return f"{_DRY[verb]}{sep}{rest}" if verb in _DRY else f"would: {action}"


def run(args) -> int:
    import os

    from memhealth.cliutil import emit_json, json_error
    from memhealth.installer import NOTE, init_project

    if args.unregister:
        from memory_core.store import registry

        root = os.path.abspath(args.project)
        try:
            removed = registry.unregister(root)
        except registry.RegistryError as exc:
            if args.json:
                json_error("init", str(exc), 1)
            else:
                print(f"memhealth init: {exc}")
            return 1
        if args.json:
            emit_json({"project": root, "unregistered": removed, "registry": registry.registry_path()})
            return 0
        print(f"memhealth init: {'removed' if removed else 'was not registered:'} {root} "
              f"{'from' if removed else 'in'} {registry.registry_path()}")
        return 0

    actions = init_project(args.project, settings=args.settings, dry_run=args.dry_run,
                           templates=args.templates, transport=args.transport)
    changes = [a for a in actions if not a.startswith(NOTE)]
    shown = [line if line.startswith(NOTE) or not args.dry_run else dry_run_line(line) for line in actions]
    follow = []
    if changes and not args.dry_run:
        follow.append("next: `memhealth ingest` to index docs, memory files and history, then `memhealth gate`")
    if args.transport == "http" and not args.dry_run:
        follow.append("the HTTP transport needs `memhealth serve` running for this project: "
                      "`memhealth serve --detach` (or [serve] hook_autostart = true: SessionStart starts it)")
    if args.json:
        emit_json({"project": os.path.abspath(args.project), "settings": args.settings,
                   "dry_run": args.dry_run, "changed": bool(changes),
                   "actions": [line for line in shown if not line.startswith(NOTE)],
                   "notes": [line[len(NOTE):] for line in shown if line.startswith(NOTE)],
                   "next": [line.removeprefix("next: ") for line in follow]})
        return 0
    if not changes:
        print("memhealth init: already set up; nothing changed")
    for line in shown + follow:
        print(line)
    return 0
