"""`memhealth embed`: backfill missing vectors through the configured embedding server."""

from __future__ import annotations

from memhealth.cliutil import add_json_option, add_parser, add_project_option, positive_int


def register(sub):
    p = add_parser(
        sub, "embed", help="embed chunks that have no vector yet; print vector coverage",
        description="Send every chunk without a vector to the configured Ollama server "
                    "([embedding] url/model/dim, bulk_timeout_s) in batches and store the vectors. "
                    "A vector of the wrong width is refused, never stored. --rebuild drops every "
                    "vector and re-embeds at the configured width (after changing model or dim).")
    p.add_argument("--rebuild", action="store_true",
                   help="drop the vector table and re-embed everything at [embedding].dim")
    p.add_argument("--batch", type=positive_int, default=None, metavar="N",
                   help="texts per request (default: [embedding].batch_size)")
    add_json_option(p, "the result and coverage")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    import sys

    from memhealth.cliutil import emit_json, open_project
    from memory_core.errors import VectorUnavailable
    from memory_core.index import vectors
    from memory_core.index.embed import EmbedError, OllamaClient, log_degradation_once
    from memory_core.outbox.spans import command_trace
    from memory_core.store.db import vec_unavailable_reason

    with open_project(args) as ctx:
        cfg, conn = ctx.cfg, ctx.conn
        batch = args.batch or cfg["embedding"]["batch_size"]
        client = OllamaClient.from_config(cfg, bulk=True)  # EmbedError(not_configured) when url = ""
        dim = int(cfg["embedding"]["dim"])
        ready = vectors.rebuild(conn, dim) if args.rebuild else vectors.ensure_vec_table(conn, dim)
        if not ready:
            raise VectorUnavailable(f"vectors unavailable: {vec_unavailable_reason() or 'sqlite-vec failed to load'}; "
                                    "install memhealth with pysqlite3-binary (see docs/internals/why-pysqlite3.md)")
        pruned = vectors.prune_orphans(conn)
        tty = sys.stderr.isatty() and not args.json

        def progress(done: int, total: int) -> None:
            if tty:
                pct = 100.0 * done / total if total else 100.0
                print(f"\rembedding {done}/{total} ({pct:.0f}%)", end="", file=sys.stderr, flush=True)

        with client, command_trace(conn, "memhealth embed", **{"gen_ai.request.model": client.model}) as trace:
            result = vectors.backfill(conn, client, batch_size=batch, on_progress=progress)
            trace.spans[0].update({"memhealth.embed.stored": result.stored,
                                   "memhealth.embed.refused": result.refused})
        if tty and (result.stored or result.refused):
            print(file=sys.stderr)
        with_vector, total = vectors.coverage(conn)
        ratio = with_vector / total if total else 1.0
        err = result.error
        if args.json:
            emit_json({
                "stored": result.stored, "refused": result.refused, "pruned": pruned,
                "seconds": round(result.seconds, 3), "with_vector": with_vector, "chunks": total,
                "coverage": round(ratio, 4), "dim": dim, "model": client.model,
                "error": None if err is None else {"reason": getattr(err, "reason", "error"),
                                                   "message": str(err)}})
        else:
            extra = f", {pruned} orphan vector(s) removed" if pruned else ""
            print(f"embedded {result.stored} chunk(s) in {result.seconds:.1f}s{extra}")
            print(f"vectors: {with_vector}/{total} chunks ({ratio:.1%}) at {dim} dims via {client.model}")
        if err is not None:
            if isinstance(err, EmbedError):
                log_degradation_once(conn, err.reason, str(err))
            raise err
        return 0
