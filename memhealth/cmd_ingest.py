"""`memhealth ingest`: bring the store up to date with docs, memory, ledgers, transcripts, git."""

from __future__ import annotations

import sys


def register(sub):
    p = sub.add_parser(
        "ingest", help="ingest docs, memory files, ledgers, transcripts and git history",
        description="Incrementally ingest the project's sources into .memhealth/memory.db. "
                    "Only files that changed since their watermark are read; a run stops at "
                    "its wall-clock budget and the next run resumes. Exit 1 when a file failed "
                    "(it is retried next run), 0 otherwise.")
    p.add_argument("sources", nargs="*", metavar="SOURCE",
                   help="docs, memory, ledger(s), transcript(s), git (default: all enabled)")
    p.add_argument("--budget-s", type=float, default=None, metavar="N",
                   help="wall-clock budget in seconds (default: [ingest].budget_s)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="project directory (default: nearest .memhealth/ at or above the cwd)")
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


def summary_line(report) -> str:
    """The one-line summary printed when not --json."""
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
        parts.append(f"vectors {report.vectors_state}: {report.vectors_embedded} embedded"
                     + (f", {report.vectors_pending} pending" if report.vectors_pending else ""))
    notes = sum(len(s.notes) for s in report.sources.values())
    if notes:
        parts.append(f"{notes} note{'s' if notes != 1 else ''} (--json)")
    line = f"memhealth ingest: {', '.join(parts)} in {report.elapsed_s:.2f} s"
    if report.budget_exhausted:
        line += f"; budget of {report.budget_s:g} s exhausted, run again to continue"
    return line


def run(args) -> int:
    import json

    from memhealth.config import load
    from memhealth.project import Project
    from memory_core.db import connect
    from memory_core.ingest import resolve_sources, run_ingest
    from memory_core.outbox import command_trace

    project = Project.find(args.project)
    cfg = load(project.state_dir)
    sources = resolve_sources(args.sources, cfg)
    if args.budget_s is not None and args.budget_s <= 0:
        print("memhealth ingest: --budget-s must be positive", file=sys.stderr)
        return 2
    bar = _Bar(sys.stderr) if sys.stderr.isatty() and not args.json else None
    conn = connect(project.db_path)
    try:
        with command_trace(conn, "memhealth ingest", **{"memhealth.ingest.sources": ",".join(sources)}) as trace:
            report = run_ingest(conn, project.root, cfg, sources=sources, budget_s=args.budget_s,
                                progress=bar, trace=trace)
            capture = _capture(conn, cfg, args.budget_s, trace)
    finally:
        if bar is not None:
            bar.clear()
        conn.close()
    if args.json:
        out = report.to_dict()
        if capture is not None:
            out["capture"] = capture.to_dict()
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(summary_line(report))
        if capture is not None and (capture.items_done or capture.stopped or capture.pending_work
                                    or capture.pending_candidates):
            print(f"memhealth ingest: {capture.line()}")
    return 1 if report.errors else 0


def _capture(conn, cfg, budget_s, trace):
    """Session boundaries a worker did not finish (killed, machine asleep) are captured
    here, under the same lease: never twice at once. None when capture is off."""
    if not cfg["capture"]["enabled"]:
        return None
    from memory_core.capture_store import run_pending, settings

    return run_pending(conn, settings(cfg), budget_s=budget_s, trace=trace)
