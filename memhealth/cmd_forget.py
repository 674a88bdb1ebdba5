"""`memhealth forget`: delete a memory item's file and its cues."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "forget", help="delete a memory item (its file and its cues)",
        description="Delete the memory file of item ID (its number from `memhealth cues`, its name "
                    "or its file path) and remove the item and its cues from the store at once. "
                    "Exit 1 when no item matches.")
    p.add_argument("id", metavar="ID", help="item number, name or memory file path")
    add_json_option(p, "what was forgotten")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import os

    from memhealth.cliutil import emit_json, open_project
    from memhealth.errors import MemhealthError
    from memory_core.ingest import run_ingest
    from memory_core.items.listing import find_item
    from memory_core.outbox.spans import command_trace

    with open_project(args) as ctx:
        found = find_item(ctx.conn, args.id)
        if found is None:
            raise MemhealthError(f"no memory item {args.id!r}; see `memhealth cues`")
        item_id, name, rel = found
        full = rel if os.path.isabs(rel) else os.path.join(ctx.project.root, rel)
        try:
            os.remove(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise MemhealthError(f"cannot delete {rel}: {exc.strerror or exc}") from None
        with command_trace(ctx.conn, "memhealth forget") as trace:
            run_ingest(ctx.conn, ctx.project.root, ctx.cfg, sources=["memory"], trace=trace)
        from memory_core.items.reads import item_exists

        left = item_exists(ctx.conn, item_id)
    if left:
        raise MemhealthError(f"deleted {rel} but item #{item_id} is still compiled; run `memhealth ingest memory`")
    if args.json:
        emit_json({"id": item_id, "name": name, "path": rel})
    else:
        print(f"forgot #{item_id} {name} ({rel})")
    return 0
