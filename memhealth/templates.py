"""Conventions shipped as files (Memory as Infrastructure §3.5): what `memhealth init` installs, never
overwriting what exists; `memhealth init --no-templates` skips them.

    .memhealth/memory/MEMORY.md         the index: one line per memory, a `## LATEST` resume anchor
    .memhealth/memory/resume.md         where to pick up; the anchor links here
    .memhealth/memory/invariants.md     rules that must hold, re-read at every work boundary
    .memhealth/ledgers/decisions.ndjson the append-only decision ledger ([ingest].ledgers)
    .memhealth/CONSTITUTION.md          standing rules and the ground-truth hierarchy

Some continuity only survives compaction as a file the workflow must revisit, not as a habit
and not as context. The memory files are indexed as memory; the ledger is ingested by byte
offset like any ledger; the constitution is for CLAUDE.md to import (it is not memory: a
standing rule is not retrieved by relevance, it is always in force).
"""

from __future__ import annotations

import os

from memory_core.store.layout import LEDGERS_DIR, MEMORY_DIR, STATE_DIR

MEMORY_INDEX = """# Memory index

One line per memory: `- [name](file.md): what it says, in one line`. Keep this file short
(the gate turns RED past 280 lines or 90,000 bytes); detail belongs in the linked files.
Read this file first after every compaction.

## LATEST

Resume here: [resume.md](resume.md)

## Memories

- [invariants](invariants.md): rules that must hold; re-read at every work boundary
- [records/](records/): decisions, dead ends and corrections confirmed by `memhealth triage`
"""

RESUME = """---
name: resume
description: where the current work stands and what comes next
type: resume
---
# Resume

Update this file at the end of a work arc: what was being done, what is finished, what is
next, and which files matter. The `## LATEST` anchor in MEMORY.md links here; the gate
reports it stale when sessions run and this file does not change.

## Current arc

<!-- nothing recorded yet: what is being done, what is finished, what is next -->
"""

INVARIANTS = """---
name: invariants
description: rules that must hold in this project; re-read at every work boundary
type: invariant
---
# Invariants

<!-- One invariant per line, each with why it holds and how to check it. Re-read this file at
every arc boundary: an invariant that is only injected gets skimmed. Nothing here yet: once a
line below holds a rule, this file is pinned and reaches Claude at every session start and
again after every compaction. -->
"""

CONSTITUTION = """# Constitution

Standing rules for every session in this project. Import it from CLAUDE.md
(`@.memhealth/CONSTITUTION.md`) so it is in force after every compaction.

## Ground-truth hierarchy

When sources disagree, the higher tier wins. The tiers carry opposite obligations.

1. Running code and live output: what the program, the tests and the terminal show now.
2. Facts established in this session: read from the tree, measured, or run this session.
   Use them without re-deriving them (anti-rediscovery).
3. Narrative documents and memory: docs, MEMORY.md and its files, confirmed records,
   ledgers. Verify before building on them: grep the named symbol, open the named file,
   run the named command (anti-decay). A record can be stale; `memhealth` says so when it
   can check.
4. The model's training knowledge: lowest. Never let it override the tiers above.

## Standing rules

- Before proposing new infrastructure, search memory (`memhealth search`) and the tree for
  what already exists; a DO-NOT-REBUILD or DEAD-END block means read it before proceeding.
- Append every decision to `.memhealth/ledgers/decisions.ndjson` (one JSON object per line:
  `{"ts": ..., "decision": ..., "why": ...}`); never rewrite it; read its tail when resuming.
- Keep `.memhealth/memory/MEMORY.md` one line per memory and its `## LATEST` link current.
- Re-read `.memhealth/memory/invariants.md` at every arc boundary.
- Triage captured candidates (`memhealth triage`): keep few; a store that accepts everything
  becomes noise.
"""

# (path relative to the project root, content); an empty content creates an empty file
TEMPLATES: tuple[tuple[str, str], ...] = (
    (os.path.join(STATE_DIR, MEMORY_DIR, "MEMORY.md"), MEMORY_INDEX),
    (os.path.join(STATE_DIR, MEMORY_DIR, "resume.md"), RESUME),
    (os.path.join(STATE_DIR, MEMORY_DIR, "invariants.md"), INVARIANTS),
    (os.path.join(STATE_DIR, LEDGERS_DIR, "decisions.ndjson"), ""),
    (os.path.join(STATE_DIR, "CONSTITUTION.md"), CONSTITUTION),
)


def install_templates(root: str, dry_run: bool = False) -> list[str]:
    """Create each convention file that does not exist; the actions taken (or planned).
    An existing file is never touched, whatever it holds."""
    actions = []
    for rel, text in TEMPLATES:
        path = os.path.join(root, rel)
        if os.path.lexists(path):
            continue
        actions.append(f"wrote {path}")
        if dry_run:
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            # O_EXCL: a file created between the check and here is left alone
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            actions.pop()
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    return actions
