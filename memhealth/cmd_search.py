"""`memhealth search`: hybrid search over the project's memory from the command line."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option, positive_int


def register(sub):
    p = add_parser(
        sub, "search", help="search the project's memory (BM25 + vectors, fused)",
        description="Search chunks with FTS5 BM25 and, when an embedding server is configured "
                    "and vectors exist, sqlite-vec KNN, fused with reciprocal rank (k=60) and "
                    "weighted by source. Falls back to BM25 alone, within [embedding].timeout_s, "
                    "when the server is down; the reason is printed to stderr.")
    p.add_argument("query", metavar="QUERY", help="what to look for (free text)")
    p.add_argument("--k", type=positive_int, default=10, metavar="N", help="number of results (default: 10)")
    add_json_option(p)
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import json
    import sys

    from memhealth.cliutil import UsageError, open_project
    from memory_core.index.search import search
    from memory_core.outbox.spans import command_trace

    if not args.query.strip():
        raise UsageError("QUERY is empty: say what to look for, e.g. `memhealth search \"wal checkpoint\"`")
    with open_project(args) as ctx:
        with command_trace(ctx.conn, "memhealth search") as trace:
            result = search(ctx.conn, args.query, ctx.cfg, k=args.k, trace=trace)
    if args.json:
        print(json.dumps({"query": args.query, "k": args.k, **result.as_dict()}, ensure_ascii=False))
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
