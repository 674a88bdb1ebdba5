"""Append-only ledgers (decision logs, incident logs, JSONL journals), read by byte offset.

    [ingest]
    ledgers = ["docs/decisions.jsonl", "ops/incidents.log"]

One chunk per complete non-blank line (a long line is split, each piece keeping its line
number). A JSON-object line is rendered as `key: value` lines so its words are searchable;
its `title`/`summary`/`decision`/`name` field, if any, becomes the title and its
`kind`/`type` field the kind. A line that is not UTF-8 is skipped and counted as malformed.
Config entries name files (or globs); a directory where a file is expected is a failure,
logged and retried each run, because a ledger that silently reads nothing is worse.
"""

from __future__ import annotations

import glob
import json
import os

from memory_core.ingest.appendfile import sync_appends
from memory_core.ingest.base import SIGNAL_WEIGHTS, Run, SourceReport
from memory_core.ingest.chunking import MAX_CHARS, Piece, split_bounded
from memory_core.ingest.filesource import relpath

_TITLE_KEYS = ("title", "summary", "decision", "name", "subject")
_KIND_KEYS = ("kind", "type", "category")


def _render(obj: dict) -> tuple[str, str | None, str | None]:
    lines, title, kind = [], None, None
    for key, value in obj.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        elif value is None:
            continue
        value = str(value)
        lines.append(f"{key}: {value}")
        if title is None and key.lower() in _TITLE_KEYS and value.strip():
            title = value.strip().split("\n", 1)[0][:120]
        if kind is None and key.lower() in _KIND_KEYS and value.strip():
            kind = value.strip()[:32].lower()
    return "\n".join(lines), title, kind


def parse_ledger_lines(lines: list[bytes], first: int, rel: str, state: dict) -> tuple[list[Piece], int, int]:
    """Pieces for complete ledger lines; (pieces, malformed, filtered)."""
    pieces: list[Piece] = []
    malformed = 0
    base = os.path.basename(rel)
    for i, raw in enumerate(lines):
        number = first + i
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            malformed += 1
            continue
        if not text.strip():
            continue
        title, kind = None, "entry"
        if text.lstrip().startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                text, title, found = _render(obj)
                kind = found or kind
        for _ls, _le, chunk in split_bounded(text.split("\n"), number, MAX_CHARS):
            # a rendered JSON line spans several text lines but one file line
            pieces.append(Piece(number, number, title or base, chunk, kind))
    return pieces, malformed, 0


def discover_ledgers(root: str, entries: list[str]) -> dict[str, tuple[str, os.stat_result]]:
    found: dict[str, tuple[str, os.stat_result]] = {}
    for entry in entries:
        if not entry:
            continue
        pattern = os.path.join(root, os.path.expanduser(entry))
        for path in (sorted(glob.glob(pattern)) if glob.has_magic(entry) else [pattern]):
            try:
                st = os.stat(path)
            except OSError:
                continue  # not created yet
            found.setdefault(relpath(root, path), (path, st))
    return found


def ingest_ledgers(run: Run, report: SourceReport) -> None:
    files = discover_ledgers(run.root, list(run.cfg["ingest"]["ledgers"]))
    sync_appends(run, "ledger", files, parse_ledger_lines, SIGNAL_WEIGHTS["ledger"], report)
