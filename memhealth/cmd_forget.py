"""`memhealth forget`: delete a memory item's file and its cues."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "forget", help="delete a memory item (its file and its cues)",
        description="Delete the memory file of item ID (its number from `memhealth cues`, its name "
                    "or its file path) and remove the item and its cues from the store at once. "
                    "Exit 1 when no item matches.")
    p.add_argument("id", metavar="ID", help="item number, name or memory file path")
    p.add_argument("--json", action="store_true", help="print what was forgotten as JSON")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="project directory (default: nearest .memhealth/ at or above the cwd)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import json
    import os

    from memhealth.config import load
    from memhealth.errors import MemhealthError
    from memhealth.project import Project
    from memory_core.cuespec import find_item
    from memory_core.db import connect
    from memory_core.ingest import run_ingest
    from memory_core.outbox import command_trace

    project = Project.find(args.project)
    cfg = load(project.state_dir)
    conn = connect(project.db_path)
    try:
        found = find_item(conn, args.id)
        if found is None:
            raise MemhealthError(f"no memory item {args.id!r}; see `memhealth cues`")
        item_id, name, rel = found
        full = rel if os.path.isabs(rel) else os.path.join(project.root, rel)
        try:
            os.remove(full)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise MemhealthError(f"cannot delete {rel}: {exc.strerror or exc}") from None
        with command_trace(conn, "memhealth forget") as trace:
            run_ingest(conn, project.root, cfg, sources=["memory"], trace=trace)
        left = conn.execute("SELECT count(*) FROM memory_items WHERE id = ?", (item_id,)).fetchone()[0]
    finally:
        conn.close()
    if left:
        raise MemhealthError(f"deleted {rel} but item #{item_id} is still compiled; run `memhealth ingest memory`")
    if args.json:
        print(json.dumps({"id": item_id, "name": name, "path": rel}, ensure_ascii=False))
    else:
        print(f"forgot #{item_id} {name} ({rel})")
    return 0
