"""Memory files: markdown with a YAML-ish frontmatter whose `type:` becomes the chunk kind.

    ---
    name: wal-checkpoint-stall
    description: checkpoints stall while a reader holds the WAL
    type: invariant            # invariant | feedback | project | reference | user | ...
    ---
    body, chunked by heading like any document

The name is the title (joined with the heading path when the body has headings); the
description leads the first chunk so both retrieval legs see it. Memory outranks docs
(signal weight 40 vs 10, REFERENCE §4.6).
"""

from __future__ import annotations

import os
import re

from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import Piece, frontmatter, markdown_chunks, split_lines
from memory_core.ingest.filesource import discover, sync_files

SUFFIXES = (".md", ".markdown")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def parse_memory(text: str, rel: str) -> list[Piece]:
    fields, body_start = frontmatter(split_lines(text))
    kind = fields.get("type", "").strip().lower()
    kind = kind if _KIND.fullmatch(kind) else "memory"
    name = fields.get("name", "").strip()
    description = fields.get("description", "").strip()
    base = name or os.path.splitext(os.path.basename(rel))[0] or rel
    pieces = markdown_chunks(text, fallback_title=base)
    attrs = {k: v for k, v in (("type", fields.get("type")), ("name", name or None),
                               ("description", description or None)) if v}
    if not pieces and description:
        # a memory can be all frontmatter: the description is then the memory
        pieces = [Piece(1, max(body_start, 1), base, description)]
    elif pieces and description:
        first = pieces[0]
        first.content = f"{description}\n\n{first.content}"
        first.line_start = 1
    for p in pieces:
        p.kind = kind
        if name and p.title != base:
            p.title = f"{name} > {p.title}"
        p.attrs = attrs or None
    return pieces


def ingest_memory(run: Run, report: SourceReport) -> None:
    """Sync the memory source; raises BudgetExhausted when the run's deadline passes."""
    files, complete = discover(run, run.root, list(run.cfg["ingest"]["memory"]), SUFFIXES)
    try:
        sync_files(run, "memory", files, complete, parse_memory, SIGNAL_WEIGHTS["memory"], report)
    finally:  # what synced before a budget stop still gets its cues
        compile_cues(run, report)


def compile_cues(run: Run, report: SourceReport) -> None:
    """Compile changed memory files into items and indexed cues (memory_core.cuespec); a
    malformed frontmatter key is an ingest_log error naming the file and the key."""
    from memory_core.cuespec import compile_items, embed_semantic
    from memory_core.ingest.filesource import record_failure

    def log(rel: str, key: str, message: str) -> None:
        record_failure(run, "memory", rel, "frontmatter", f"{rel}: {message}", report)

    counts = compile_items(run.conn, run.root, run.now_ns, log=log)
    if counts["compiled"] or counts["removed"]:
        report.notes.append(f"cues: {counts['compiled']} item(s) compiled, {counts['removed']} removed")
    embedded, why_not = embed_semantic(run.conn, run.cfg)
    if embedded or why_not:
        report.notes.append(f"semantic cues: {embedded} embedded" + (f"; not embedded: {why_not}" if why_not else ""))
