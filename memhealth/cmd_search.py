"""`memhealth search`: hybrid search over the project's memory from the command line."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_limit_option, add_parser, add_project_option


def register(sub):
    p = add_parser(
        sub, "search", help="search the project's memory (BM25 + vectors, fused)",
        description="Search chunks with FTS5 BM25 and, when an embedding server is configured "
                    "and vectors exist, sqlite-vec KNN, fused with reciprocal rank (k=60) and "
                    "weighted by source. Falls back to BM25 alone, within [embedding].timeout_s, "
                    "when the server is down; the reason is printed to stderr.")
    p.add_argument("query", metavar="QUERY", help="what to look for (free text)")
    add_limit_option(p, 10, "results", aliases=("--k",))
    add_json_option(p)
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from memhealth.cliutil import UsageError, emit_json, open_project
    from memory_core.index.search import search
    from memory_core.outbox.spans import command_trace

    if not args.query.strip():
        raise UsageError("QUERY is empty: say what to look for, e.g. `memhealth search \"wal checkpoint\"`")
    with open_project(args) as ctx:
        with command_trace(ctx.conn, "memhealth search") as trace:
            result = search(ctx.conn, args.query, ctx.cfg, k=args.limit, trace=trace)
    if args.json:
        emit_json({"query": args.query, "limit": args.limit, **result.as_dict()})
        return 0
    if result.degraded and result.degraded != "not_configured":
        print(f"note: BM25 only ({result.degraded}) {result.degraded_detail}".rstrip(), file=sys.stderr)
    if not result.hits:
        print("no results")
        return 0
    for n, hit in enumerate(result.hits, start=1):
        where = f"{hit.path}:{hit.lines}" if hit.lines else hit.path
        print(f"{n:>2}. {hit.score:.4f}  {hit.source:<10} {where}  [{'+'.join(hit.legs)}]")
        head = f"{hit.title} — " if hit.title else ""
        print(f"    {head}{hit.snippet}")
    return 0
