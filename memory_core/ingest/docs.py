"""Markdown documents: chunked by heading, each chunk titled with its heading path.

    ingest_docs(run, report)   # config [ingest].docs: files, directories, globs

Memory-file locations are excluded here even when a docs entry covers them, so a memory
file is stored once, with its memory weight and kind. A MEMORY.md met as a doc is an index
all the same: only its resume anchor is kept (kind `index`, see memory.py).
"""

from __future__ import annotations

import os

from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import Piece, markdown_chunks
from memory_core.ingest.filesource import discover, sync_files
from memory_core.ingest.memory import index_pieces, is_index

SUFFIXES = (".md", ".markdown")


def parse_doc(text: str, rel: str) -> list[Piece]:
    pieces = markdown_chunks(text, fallback_title=os.path.basename(rel) or rel)
    return index_pieces(pieces) if is_index(rel) else pieces


def ingest_docs(run: Run, report: SourceReport) -> None:
    """Sync the docs source; raises BudgetExhausted when the run's deadline passes."""
    files, complete = discover(run, run.root, list(run.cfg["ingest"]["docs"]), SUFFIXES)
    memory, _ = discover(run, run.root, list(run.cfg["ingest"]["memory"]), SUFFIXES)
    for rel in memory:
        files.pop(rel, None)
    sync_files(run, "docs", files, complete, parse_doc, SIGNAL_WEIGHTS["docs"], report)
