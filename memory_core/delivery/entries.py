"""What an item of the store is to the injection cascade: which block its kind makes it
(`entry_block`), its attributes, name and words, and the entry leg's items read whole
(`load`).

    entry_block("subsystem", {})                     # "dnr": an inventory entry
    entry_block("dead_end", {"status": "confirmed"}) # "dead_end"; unconfirmed: None (lineage)
    Entry(row).words                                 # stemmed words, CamelCase parts included

A row is a `chunks` row read as COLUMNS: (id, source, path, line_start, line_end, kind,
title, content, signal_weight, created_ns, attrs).
"""

from __future__ import annotations

import json

from memory_core.delivery.prompt import CAMEL, identifiers, stem
from memory_core.index import fts

# What the entry leg scores: inventory entries (DO-NOT-REBUILD) and dead-end
# records in a confirmed state (DEAD-END). A confirmed decision stays lineage.
DNR_KINDS = frozenset({"subsystem"})
DEAD_END_KINDS = frozenset({"dead-end", "dead_end"})
CONFIRMED_STATES = frozenset({"confirmed"})
DNR_SOURCES = ("memory", "ledger")
# the entry leg's kinds, written as the partial index chunks_entries (schema migration 5)
# says them: SQLite uses that index only for this exact term (tests/test_docfreq.py pins it)
ENTRY_KINDS_SQL = "kind IN ('dead-end', 'dead_end', 'subsystem')"
NEVER_OFFERED = ("index",)         # MEMORY.md and the like: a list of items, not an item
LINEAGE_KINDS = frozenset({"decision", "dead-end", "dead_end", "correction", "record"})
# the kinds whose `recorded:` claim about a file the tree can refute (memory_core.delivery.claims)
RECORD_KINDS = frozenset({"decision", "dead_end", "dead-end", "correction"})

COLUMNS = "id, source, path, line_start, line_end, kind, title, content, signal_weight, created_ns, attrs"


def confirmed(attrs: dict | None) -> bool:
    """A record's frontmatter `status: confirmed` (memhealth triage writes it; the memory
    ingester keeps it in the chunk's attrs)."""
    return str((attrs or {}).get("status", "")).strip().lower() in CONFIRMED_STATES


def entry_block(kind: str | None, attrs: dict | None) -> str | None:
    """Which block an item of the entry leg would be: "dnr" for an inventory entry, "dead_end"
    for a dead-end record once confirmed (a pending or hand-written one without `status:
    confirmed` never claims to have been ruled out), None for everything else (lineage)."""
    kind = (kind or "").lower()
    if kind in DNR_KINDS:
        return "dnr"
    return "dead_end" if kind in DEAD_END_KINDS and confirmed(attrs) else None


def dnr_eligible(kind: str | None, attrs: dict | None) -> bool:
    """May this item be a DO-NOT-REBUILD? Only an inventory entry: a confirmed dead end is a
    DEAD-END, a confirmed decision is lineage."""
    return entry_block(kind, attrs) == "dnr"


def attrs_of(row) -> dict:
    """A row's attributes (its frontmatter, as the ingester kept it); {} when unreadable."""
    try:
        value = json.loads(row[10]) if row[10] else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def load(conn) -> list[tuple]:
    """Every item of the entry leg (`entry_block`): the inventory and the confirmed dead ends
    are tens of items, read through the (source, path) index, so they are scored whole
    instead of ranked."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM chunks WHERE source IN ({','.join('?' * len(DNR_SOURCES))}) "
        f"AND {ENTRY_KINDS_SQL} ORDER BY id", DNR_SOURCES).fetchall()
    return [r for r in rows if entry_block(r[5], attrs_of(r))]


def words(text: str) -> set[str]:
    """Stemmed words of an item; CamelCase names also give their parts (DigestAuth: digest, auth)."""
    return {stem(t) for t in fts.tokens(f"{text} {CAMEL.sub(' ', text)}", min_len=2, limit=100_000)}


def item_text(row) -> str:
    """What an item says: title, content, path and attributes (an entry's description,
    aliases and `path:` among them)."""
    _id, source, path, _ls, _le, kind, title, content, _w, _c, attrs = row
    return f"{title or ''} {content} {path} {attrs or ''}"


def record_text(row) -> str:
    """What a record says: its title and its statement. Not its file path, its `source:`
    (a transcript path, a session id) or its `Source:` line: words of where it was said are
    not words of what was tried."""
    attrs = attrs_of(row)
    if not attrs.get("description"):
        return item_text(row)
    return f"{attrs.get('name') or row[6] or ''} {attrs['description']}"


def entry_name(row) -> str:
    attrs = attrs_of(row)
    return str(attrs.get("name") or row[6] or row[2])


class Entry:
    """An inventory entry read once per prompt: its row and stemmed words; its listed
    identifiers are read only for an entry sharing enough words to pass (the hook's budget)."""

    __slots__ = ("row", "block", "text", "words", "_idents")

    def __init__(self, row):
        self.row, self.block = row, entry_block(row[5], attrs_of(row))
        self.text = record_text(row) if self.block == "dead_end" else item_text(row)
        self.words, self._idents = words(self.text), None

    @property
    def idents(self) -> dict[str, list[str]]:
        if self._idents is None:
            self._idents = identifiers(self.text)
        return self._idents
