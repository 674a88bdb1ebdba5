"""Memory files: markdown with a YAML-ish frontmatter whose `type:` becomes the chunk kind.

    ---
    name: wal-checkpoint-stall
    description: checkpoints stall while a reader holds the WAL
    type: invariant            # invariant | feedback | project | reference | user | ...
    ---
    body, chunked by heading like any document

The name is the title (joined with the heading path when the body has headings); the
description leads the first chunk so both retrieval legs see it. Memory outranks docs
(signal weight 40 vs 10).

The subsystem inventory is memory of kind `subsystem`, in either of two shapes:

    ---                                  ---
    name: SOCKS proxy support            name: subsystems
    type: subsystem                      type: subsystem
    path: httpx/_transports/socks.py     ---
    aliases: socks5, socksio             ## SOCKS proxy support
    ---                                  path: httpx/_transports/socks.py
    what exists, where, how to extend    what exists ...
                                         ## Retries
    (one file per subsystem)             path: ...    (subsystems.md: one section each)

Each entry's name (`name:` of a one-subsystem file, the heading of a section), `path:` and
`aliases:` go into the chunk's attrs: the injection cascade matches prompts against them and
a DO-NOT-REBUILD names the entry and where it lives.

A record confirmed by `memhealth triage` (`type: decision | dead_end | correction`) keeps
its `status:`, `recorded:`, `source:` (transcript:line, session, time) and `path:` (the
project file it is about, when someone adds one) in the attrs too: only `status: confirmed`
makes it eligible for a DEAD-END block, and a `path:` changed after `recorded:` makes it a
STALE-CLAIM (memory_core.delivery.claims.stale_claim). Its `candidate:` id and lineage links
(`supersedes:`, `superseded_by:` — candidate ids) are kept so the decision-lineage block can
show the thread.

An index file (MEMORY.md, or `type: index`) is never an item: it lists memories that are
ingested themselves, and Claude Code already loads it into every session. Only its
resume-anchor section (a heading with LATEST) is kept, as kind `index`, for the
session-start render; the injection cascade never offers kind `index`.
"""

from __future__ import annotations

import os
import re

from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import Piece, frontmatter, markdown_chunks
from memory_core.ingest.filesource import discover, sync_files
from memory_core.text import split_lines

SUFFIXES = (".md", ".markdown")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
INDEX_NAMES = frozenset({"memory.md"})
INDEX_KIND = "index"
SUBSYSTEM_KIND = "subsystem"
# records written by `memhealth triage` (memory_core/records/triage.py render_record)
RECORD_KINDS = frozenset({"decision", "dead_end", "dead-end", "correction"})
RECORD_KEYS = ("status", "recorded", "source", "path", "symbols", "candidate", "supersedes", "superseded_by")
# `symbols:` names the code identifiers an item claims (checked against the code index)
_SECTION_KEY = re.compile(r"^(path|aliases|symbols)[ \t]*:[ \t]*(.+?)[ \t]*$", re.I | re.M)


def is_index(rel: str, kind: str = "") -> bool:
    """MEMORY.md (any directory, any case) or a memory declared `type: index`."""
    return kind == INDEX_KIND or os.path.basename(rel).lower() in INDEX_NAMES


def index_pieces(pieces: list[Piece]) -> list[Piece]:
    """What an index file contributes: its resume-anchor section only, kind `index`."""
    kept = [p for p in pieces if "latest" in p.title.lower()]
    for p in kept:
        p.kind = INDEX_KIND
    return kept


def _subsystem_attrs(piece: Piece, fields: dict, one_file: bool) -> dict:
    """name/path/aliases of one inventory entry: the file's frontmatter when the file is one
    subsystem, the section's heading and its `path:`/`aliases:` lines in a subsystems.md."""
    found = {k.lower(): v.strip().strip("`") for k, v in _SECTION_KEY.findall(piece.content)}
    name = fields.get("name", "").strip() if one_file else piece.title.split(" > ")[-1]
    attrs = {"name": name or piece.title}
    for key in ("path", "aliases", "symbols"):
        value = found.get(key) or (fields.get(key, "").strip() if one_file else "")
        if value:
            attrs[key] = value
    return attrs


def parse_memory(text: str, rel: str) -> list[Piece]:
    fields, body_start = frontmatter(split_lines(text))
    kind = fields.get("type", "").strip().lower()
    kind = kind if _KIND.fullmatch(kind) else "memory"
    if is_index(rel, kind):
        return index_pieces(markdown_chunks(text, fallback_title=os.path.basename(rel)))
    name = fields.get("name", "").strip()
    description = fields.get("description", "").strip()
    base = name or os.path.splitext(os.path.basename(rel))[0] or rel
    pieces = markdown_chunks(text, fallback_title=base)
    attrs = {k: v for k, v in (("type", fields.get("type")), ("name", name or None),
                               ("description", description or None)) if v}
    if kind in RECORD_KINDS:
        # a record's state and provenance: the cascade offers only confirmed records, and a
        # DEAD-END block names where it was said (transcript:line, session, time)
        attrs.update({k: fields[k].strip() for k in RECORD_KEYS if fields.get(k, "").strip()})
    # a subsystem file with `path:` in its frontmatter is one entry; without, a body with
    # headings is a subsystems.md: one entry per section
    one_file = kind != SUBSYSTEM_KIND or bool(fields.get("path")) or not any(p.title != base for p in pieces)
    if not pieces and description:
        # a memory can be all frontmatter: the description is then the memory
        pieces = [Piece(1, max(body_start, 1), base, description)]
    elif pieces and description and one_file:
        first = pieces[0]
        first.content = f"{description}\n\n{first.content}"
        first.line_start = 1
    for p in pieces:
        p.kind = kind
        if kind == SUBSYSTEM_KIND and one_file:
            p.attrs = {**attrs, **_subsystem_attrs(p, fields, True)}
        elif kind == SUBSYSTEM_KIND and p.title != base:
            p.attrs = {**attrs, **_subsystem_attrs(p, fields, False)}
        else:
            p.kind = kind if one_file else "memory"  # a subsystems.md preamble is not an entry
            p.attrs = attrs or None
        if name and p.title != base:
            p.title = f"{name} > {p.title}"
    return pieces


def ingest_memory(run: Run, report: SourceReport) -> None:
    """Sync the memory source; raises BudgetExhausted when the run's deadline passes."""
    files, complete = discover(run, run.root, list(run.cfg["ingest"]["memory"]), SUFFIXES)
    try:
        sync_files(run, "memory", files, complete, parse_memory, SIGNAL_WEIGHTS["memory"], report)
    finally:  # what synced before a budget stop still gets its cues and its authors
        from memory_core.ingest.provenance import attach_git_provenance

        attach_git_provenance(run, report)
        compile_cues(run, report)


def compile_cues(run: Run, report: SourceReport) -> None:
    """Compile changed memory files into items and indexed cues (memory_core.items.compile); a
    malformed frontmatter key is an ingest_log error naming the file and the key."""
    from memory_core.ingest.filesource import record_failure
    from memory_core.items.compile import compile_items, embed_semantic

    def log(rel: str, key: str, message: str) -> None:
        record_failure(run, "memory", rel, "frontmatter", f"{rel}: {message}", report)

    counts = compile_items(run.conn, run.root, run.now_ns, log=log)
    if counts["compiled"] or counts["removed"]:
        report.notes.append(f"cues: {counts['compiled']} item(s) compiled, {counts['removed']} removed")
    embedded, why_not = embed_semantic(run.conn, run.cfg)
    if embedded or why_not:
        report.notes.append(f"semantic cues: {embedded} embedded" + (f"; not embedded: {why_not}" if why_not else ""))
