"""`memhealth ingest`: bring the store up to date with docs, memory, ledgers, transcripts, git."""

from __future__ import annotations

import sys

from memhealth.cliutil import add_json_option, add_parser, add_project_option, positive_float


def register(sub):
    p = add_parser(
        sub, "ingest", help="ingest docs, memory files, ledgers, transcripts and git history",
        description="Incrementally ingest the project's sources into .memhealth/memory.db. "
                    "Only files that changed since their watermark are read; a run stops at "
                    "its wall-clock budget and the next run resumes. Exit 1 when a file failed "
                    "(it is retried next run), 0 otherwise.")
    p.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="docs, memory, ledger(s), transcript(s), git (default: all enabled)")
    p.add_argument("--budget-s", type=positive_float, default=None, metavar="N",
                   help="wall-clock budget in seconds (default: [ingest].budget_s)")
    add_json_option(p, "the report")
    add_project_option(p)
    p.set_defaults(func=run)
    return p


class _Bar:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, stream):
        self.stream = stream
        self.last = 0.0
        self.drawn = False

    def __call__(self, source: str, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width if not total else int(width * done / total)
        self.stream.write(f"\r  {source:<10} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{total} files ")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * 70 + "\r")
            self.stream.flush()


def summary_line(report, coverage: tuple[int, int] | None = None) -> str:
    """The summary printed when not --json: one line, then one line per note.

    `coverage` is (chunks with a vector, all chunks) after the run: "0 embedded" alone
    reads as healthy while older chunks still have no vector (the gate's vector_coverage)."""
    parts = [f"{report.files_changed} of {report.files_seen} files changed",
             f"+{report.chunks_added} -{report.chunks_removed} chunks"]
    per = [f"{name} +{s.chunks_added}" for name, s in report.sources.items() if s.chunks_added]
    if per:
        parts[-1] += f" ({', '.join(per)})"
    malformed = sum(s.malformed for s in report.sources.values())
    if malformed:
        parts.append(f"{malformed} malformed lines skipped")
    parts.append(f"{report.errors} error{'s' if report.errors != 1 else ''}")
    if report.vectors_state != "not_configured":
        vec = f"vectors {report.vectors_state}: {report.vectors_embedded} embedded"
        if report.vectors_pending:
            vec += f", {report.vectors_pending} pending"
        if coverage is not None:
            with_vector, total = coverage
            vec += f", {with_vector}/{total} chunks have one"
        parts.append(vec)
    line = f"memhealth ingest: {', '.join(parts)} in {report.elapsed_s:.2f} s"
    if report.budget_exhausted:
        line += f"; budget of {report.budget_s:g} s exhausted, run again to continue"
    lines = [line]
    if report.vectors_state == "degraded" and report.vectors_detail:
        lines.append(f"  vectors: {report.vectors_detail}")
    if coverage is not None and coverage[0] < coverage[1]:
        if report.vectors_backfill == "budget":
            lines.append(f"  vectors: text is indexed; {coverage[1] - coverage[0]} chunk(s) still have no "
                         "vector (the budget ran out): the next `memhealth ingest` continues, "
                         "`memhealth embed` finishes them now")
        else:
            lines.append(f"  vectors: {coverage[1] - coverage[0]} chunk(s) have no vector; "
                         "`memhealth embed` backfills them")
    for name, source in report.sources.items():
        lines.extend(f"  note ({name}): {text}" for text in source.notes)
    return "\n".join(lines)


def run(args) -> int:

    from memhealth.cliutil import emit_json, open_project
    from memory_core.ingest import resolve_sources, run_ingest
    from memory_core.outbox.spans import command_trace

    with open_project(args) as ctx:
        sources = resolve_sources(args.sources, ctx.cfg)
        bar = _Bar(sys.stderr) if sys.stderr.isatty() and not args.json else None
        try:
            with command_trace(ctx.conn, "memhealth ingest",
                               **{"memhealth.ingest.sources": ",".join(sources)}) as trace:
                report = run_ingest(ctx.conn, ctx.project.root, ctx.cfg, sources=sources,
                                    budget_s=args.budget_s, progress=bar, trace=trace)
                capture = _capture(ctx.conn, ctx.cfg, args.budget_s, trace, ctx.project.state_dir)
        finally:
            if bar is not None:
                bar.clear()
        coverage = None
        if report.vectors_state != "not_configured":
            from memory_core.index import vectors

            coverage = vectors.coverage(ctx.conn)
    if args.json:
        data = report.to_dict()
        if coverage is not None:
            data["vectors"].update({"with_vector": coverage[0], "chunks": coverage[1]})
        if capture is not None:
            data["capture"] = capture.to_dict()
        emit_json(data)
    else:
        print(summary_line(report, coverage))
        if capture is not None and (capture.items_done or capture.stopped or capture.pending_work
                                    or capture.pending_candidates):
            print(f"memhealth ingest: {capture.line()}")
    return 1 if report.errors else 0


def _capture(conn, cfg, budget_s, trace, state_dir: str):
    """Session boundaries a worker did not finish (killed, machine asleep) are captured
    here, under the same lease: never twice at once. None when capture is off."""
    if not cfg["capture"]["enabled"]:
        return None
    from memory_core.records.queue import absorb_boundaries, run_pending, settings

    absorb_boundaries(conn, state_dir)  # boundaries a locked SessionEnd kept beside the store
    return run_pending(conn, settings(cfg), budget_s=budget_s, trace=trace)
