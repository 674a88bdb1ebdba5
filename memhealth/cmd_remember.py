"""`memhealth remember`: write a memory file with its cues and make it effective at once."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "remember", help="record a memory that fires on a file, symbol or event",
        description="Write TEXT as a memory file (frontmatter + text) into .memhealth/memory/ and "
                    "compile its cues into the store at once: the next hook that touches a --path "
                    "glob, names a --symbol or sees an --on event delivers it, once per session and "
                    "again after each compaction. --pinned items come back at every session start.")
    p.add_argument("text", metavar="TEXT", help="what to remember (the memory's body)")
    p.add_argument("--kind", default=None, metavar="K",
                   help="gotcha, invariant, decision, dead_end, correction, feedback, reference, ... "
                        "(default: gotcha with a --path or --symbol, else note)")
    p.add_argument("--name", default=None, metavar="N", help="a short name (default: from the text)")
    p.add_argument("--path", action="append", default=[], metavar="GLOB",
                   help="fire on the first touch of a file matching this project-relative glob "
                        "(** spans directories); repeatable")
    p.add_argument("--symbol", action="append", default=[], metavar="S",
                   help="fire when this identifier appears (word boundaries); repeatable")
    p.add_argument("--on", action="append", default=[], metavar="EVENT",
                   help="fire on session-start, compact, prompt or stop; repeatable")
    p.add_argument("--pinned", action="store_true", help="deliver at every session start")
    p.add_argument("--expires", default=None, metavar="DATE", help="stop firing after this day (YYYY-MM-DD)")
    add_json_option(p, "the new item")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def record(ctx, text: str, *, kind: str | None = None, name: str | None = None,
           paths=(), symbols=(), on=(), pinned: bool = False, expires: str | None = None,
           trace=None) -> dict:
    """Write TEXT as a memory file with its cues and compile it into the store; return the
    item ({id, name, kind, pinned, path, cues}). Raises UsageError for a bad spec and
    MemhealthError when the file was written but not compiled. `memhealth remember` and the
    MCP `remember` tool both call this; `trace` (the caller's) gets the ingest spans, else
    they go under a `memhealth remember` root."""
    import os

    from memhealth.cliutil import UsageError
    from memhealth.errors import MemhealthError
    from memory_core.ingest import run_ingest
    from memory_core.items.authoring import SpecError, memory_file_text, slug
    from memory_core.outbox.spans import command_trace
    from memory_core.store.layout import MEMORY_DIR, STATE_DIR

    for label, value in (("the text", text), ("--name", name), ("--kind", kind), ("--expires", expires),
                         *(("--path", p) for p in paths), *(("--symbol", v) for v in symbols)):
        try:
            (value or "").encode("utf-8")
        except UnicodeEncodeError as exc:  # undecodable bytes from the shell ($'\xff')
            raw = (value or "").encode("utf-8", "surrogateescape")[exc.start:exc.start + 1]
            raise UsageError(f"not recorded: {label} is not valid UTF-8 (byte 0x{raw.hex() or '??'} at "
                             f"{exc.start}); nothing was written") from None
    paths, symbols, on = list(paths), list(symbols), list(on)
    kind = (kind or ("gotcha" if paths or symbols else "note")).strip().lower()
    name = (name or slug(text, 40)).strip()
    try:
        text = memory_file_text(text, kind=kind, name=name, paths=paths, symbols=symbols,
                                on=on, pinned=pinned, expires=expires)
    except SpecError as exc:
        raise UsageError(f"not recorded: {exc}") from None
    directory = os.path.join(ctx.project.root, STATE_DIR, MEMORY_DIR)
    os.makedirs(directory, exist_ok=True)
    base = slug(name)
    for n in range(1, 10_000):
        path = os.path.join(directory, f"{base}.md" if n == 1 else f"{base}-{n}.md")
        try:
            with open(path, "x", encoding="utf-8") as fh:  # never overwrite another memory
                fh.write(text)
            break
        except FileExistsError:
            continue
    rel = os.path.relpath(path, ctx.project.root).replace(os.sep, "/")
    if trace is not None:  # the caller's trace (the MCP tool call) owns the spans
        run_ingest(ctx.conn, ctx.project.root, ctx.cfg, sources=["memory"], trace=trace)
    else:
        with command_trace(ctx.conn, "memhealth remember") as own:
            run_ingest(ctx.conn, ctx.project.root, ctx.cfg, sources=["memory"], trace=own)
    from memory_core.items import reads as item_reads

    row = item_reads.item_at(ctx.conn, rel)
    cues = item_reads.cues_of(ctx.conn, row[0]) if row else []
    in_memory_source = any(os.path.abspath(os.path.join(ctx.project.root, e)) == os.path.abspath(directory)
                           for e in ctx.cfg["ingest"]["memory"])
    if row is None:
        raise MemhealthError(f"wrote {rel} but it was not compiled"
                             + ("" if in_memory_source else f": {STATE_DIR}/{MEMORY_DIR} is not in [ingest].memory"))
    return {"id": row[0], "name": row[1], "kind": row[2], "pinned": bool(row[3]), "path": rel,
            "cues": [{"trigger": t, "pattern": p} for t, p in cues]}


def run(args) -> int:
    from memhealth.cliutil import emit_json, open_project

    with open_project(args) as ctx:
        item = record(ctx, args.text, kind=args.kind, name=args.name, paths=args.path,
                      symbols=args.symbol, on=args.on, pinned=args.pinned, expires=args.expires)
    rel, cues = item["path"], [(c["trigger"], c["pattern"]) for c in item["cues"]]
    row = (item["id"], item["name"], item["kind"], item["pinned"])
    if args.json:
        emit_json(item)
        return 0
    triggers = ", ".join(f"{t} {p}" for t, p in cues) + (", pinned" if row[3] else "")
    print(f"remembered #{row[0]} {row[1]} ({row[2]}) in {rel}; fires on: {triggers.strip(', ') or 'nothing (no cue given)'}")
    return 0
