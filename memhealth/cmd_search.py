"""`memhealth search`: hybrid search over the project's memory from the command line."""

from __future__ import annotations


def register(sub):
    p = sub.add_parser(
        "search", help="search the project's memory (BM25 + vectors, fused)",
        description="Search chunks with FTS5 BM25 and, when an embedding server is configured "
                    "and vectors exist, sqlite-vec KNN, fused with reciprocal rank (k=60) and "
                    "weighted by source. Falls back to BM25 alone, within [embedding].timeout_s, "
                    "when the server is down; the reason is printed to stderr.")
    p.add_argument("query", metavar="QUERY", help="what to look for (free text)")
    p.add_argument("--k", type=int, default=10, metavar="N", help="number of results (default: 10)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--project", default=".", metavar="DIR", help="project root (default: .)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import json
    import sys

    from memhealth.config import load
    from memhealth.errors import MemhealthError
    from memhealth.project import Project
    from memory_core.db import connect
    from memory_core.outbox import command_trace
    from memory_core.search import search

    if args.k < 1:
        raise MemhealthError("--k must be at least 1")
    project = Project.find(args.project)
    cfg = load(project.state_dir)
    conn = connect(project.db_path)
    try:
        with command_trace(conn, "memhealth search") as trace:
            result = search(conn, args.query, cfg, k=args.k, trace=trace)
    finally:
        conn.close()
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
