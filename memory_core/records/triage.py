"""Triage: the step that keeps few candidates (the paper kept 59 of 154 decisions and 47 of
186 dead ends; a store that accepts everything becomes noise).

    pending(conn)                                  # [dict, ...] oldest first
    confirm(conn, root, cfg, 17)                   # -> .memhealth/memory/records/decision-17-....md
    reject(conn, root, cfg, 18); retitle(conn, root, cfg, 17, "WAL, not rollback journals")
    merge(conn, root, cfg, 19, 17)                 # 19 is the same thing as 17
    confirm(conn, root, cfg, 21, supersedes=17)    # 21 replaces decision 17 (a lineage thread)

A confirmed candidate becomes a memory file under `.memhealth/memory/records/`, with
frontmatter the rest of the system reads (`type: decision|dead_end|correction`, `name:`,
`recorded:`, `source:` provenance, `status: confirmed`), and is indexed at once as memory
(the memory source's weight), so cues and injection see it like any memory item. Rejected
and merged candidates stay in the store only: their normalized statement is never proposed
again (memory_core.records.queue) and, having no file, they are never indexed or injected.
Every decision bumps memhealth_triage_decisions_total{kind, decision} and refreshes meta
`capture.pending` for the gate. A decision confirmed with `supersedes=` links to the one it
replaces: `supersedes:` in its file, `superseded_by:` in the other's (kept across rewrites);
the injection cascade shows the thread newest first.
"""

from __future__ import annotations

import os
import re
import time

from memory_core.errors import MemoryCoreError
from memory_core.outbox.rollups import bump
from memory_core.records.queue import refresh_depth
from memory_core.store.layout import MEMORY_DIR, RECORDS_DIR, STATE_DIR
from memory_core.store.tx import write

ACTIONS = ("confirm", "reject", "retitle", "merge")
# lineage: a confirmed decision may replace an earlier one on the same subject;
# both files carry the link, by candidate id, and the injection cascade shows the thread
LINK_KEYS = ("supersedes", "superseded_by")
LINEAGE_KIND = "decision"
_FRONT_KEY = re.compile(r"^([a-z_]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
_COLUMNS = ("id", "kind", "statement", "title", "transcript", "line", "session_id", "ts", "role",
            "state", "merged_into", "record_path", "created_ns", "decided_ns")


class TriageError(MemoryCoreError):
    """A triage request that cannot apply (unknown id, wrong state); nothing was changed."""

    reason = "triage"


def _row(conn, cid: int) -> dict:
    row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM capture_candidates WHERE id = ?", (cid,)).fetchone()
    if row is None:
        raise TriageError(f"no candidate #{cid}")
    return dict(zip(_COLUMNS, row, strict=True))


def get(conn, cid: int) -> dict:
    item = _row(conn, cid)
    item["also"] = [dict(zip(_COLUMNS, r, strict=True)) for r in conn.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM capture_candidates WHERE merged_into = ? ORDER BY id", (cid,))]
    return item


def pending(conn, states: tuple[str, ...] = ("pending",)) -> list[dict]:
    marks = ",".join("?" * len(states))
    rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM capture_candidates WHERE state IN ({marks}) "
                        "ORDER BY id", states).fetchall()
    items = [dict(zip(_COLUMNS, r, strict=True)) for r in rows]
    merged: dict[int, list] = {}
    for r in conn.execute("SELECT merged_into, id, statement FROM capture_candidates WHERE merged_into IS NOT NULL"):
        merged.setdefault(r[0], []).append({"id": r[1], "statement": r[2]})
    for item in items:
        item["also"] = merged.get(item["id"], [])
    return items


def provenance(item: dict) -> str:
    """Where a statement was said: transcript:line (session, time, speaker)."""
    extra = ", ".join(x for x in (f"session {item['session_id']}" if item.get("session_id") else "",
                                  item.get("ts") or "", item.get("role") or "") if x)
    return f"{item['transcript']}:{item['line']}" + (f" ({extra})" if extra else "")


def records_dir(root: str) -> str:
    return os.path.join(root, STATE_DIR, MEMORY_DIR, RECORDS_DIR)


def _slug(title: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", " ", title.lower()).split()[:8])[:60] or "record"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_record(item: dict, recorded: str, links: dict | None = None) -> str:
    """The memory file of a confirmed record; `links` are its lineage keys (`supersedes`,
    `superseded_by`: candidate ids of the decisions it replaces / that replace it)."""
    if item["kind"] == "subsystem":
        return render_subsystem(item, recorded)
    label = {"decision": "Decision", "dead_end": "Dead end", "correction": "Correction"}[item["kind"]]
    lines = ["---",
             f"name: {_one_line(item['title'])}",
             f"description: {_one_line(item['statement'])}",
             f"type: {item['kind']}",
             "status: confirmed",
             f"recorded: {recorded}",
             f"source: {provenance(item)}",
             f"candidate: {item['id']}"]
    lines += [f"{k}: {_one_line(str(v))}" for k, v in (links or {}).items() if k in LINK_KEYS and v]
    lines += ["---",
             f"# {_one_line(item['title'])}",
             "",
             f"{label}: {item['statement'].strip()}",
             "",
             f"Source: {provenance(item)}."]
    also = item.get("also") or []
    if also:
        lines += ["", "Also said:"]
        lines += [f"- {_one_line(a['statement'])} ({provenance(a)})" for a in also]
    return "\n".join(lines) + "\n"


def render_subsystem(item: dict, recorded: str) -> str:
    """The inventory entry of a confirmed component read from the code (memory_core.records.
    inventory): one subsystem per file, `path:` where it lives (a package's folder)."""
    where = item["transcript"]
    if item["statement"].startswith("package ") and "/" in where:
        where = where.rsplit("/", 1)[0]
    lines = ["---",
             f"name: {_one_line(item['title'])}",
             f"description: {_one_line(item['statement'])}",
             "type: subsystem",
             "status: confirmed",
             f"recorded: {recorded}",
             f"source: {provenance(item)}",
             f"candidate: {item['id']}",
             f"path: {where}",
             "---",
             f"# {_one_line(item['title'])}",
             "",
             f"Exists: {item['statement'].strip()}",
             "",
             f"Source: {provenance(item)}."]
    return "\n".join(lines) + "\n"


def _write_file(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _reindex(conn, root: str, cfg) -> None:
    """Index the records at once, as memory (the memory source's weight and ingester)."""
    from memory_core.ingest import run_ingest

    run_ingest(conn, root, cfg, sources=["memory"], budget_s=max(float(cfg["ingest"]["budget_s"]), 5.0))


def _decided(conn, item: dict, decision: str, state: str | None = None, **columns) -> None:
    """Record a decision (inside a write transaction) only if the candidate is still in the
    state it was read in: `triage confirm N & triage reject N` both read "pending", and the
    second to commit must fail, not overwrite the first (a rejected candidate with a
    confirmed record file is memory nobody chose)."""
    sets = {"decided_ns": time.time_ns(), **({"state": state} if state else {}), **columns}
    cur = conn.execute(f"UPDATE capture_candidates SET {', '.join(f'{k} = ?' for k in sets)} "
                       "WHERE id = ? AND state = ?", (*sets.values(), item["id"], item["state"]))
    if cur.rowcount != 1:
        row = conn.execute("SELECT state FROM capture_candidates WHERE id = ?", (item["id"],)).fetchone()
        raise TriageError(f"candidate #{item['id']} was {item['state']} and is now {row[0] if row else 'gone'}: "
                          "another triage decided it meanwhile; nothing changed (see `memhealth triage`)")
    bump(conn, "memhealth_triage_decisions_total", {"kind": item["kind"], "decision": decision})
    refresh_depth(conn)


def links(path: str) -> dict:
    """The lineage keys in a record file's frontmatter ({} for a file without, or none)."""
    out: dict = {}
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    if not lines or lines[0].strip() != "---":
        return out
    for line in lines[1:]:
        if line.strip() == "---":
            break
        match = _FRONT_KEY.match(line)
        if match and match.group(1) in LINK_KEYS and match.group(2):
            out[match.group(1)] = match.group(2)
    return out


def _rewrite(conn, root: str, cid: int, **link) -> None:
    """Render a confirmed record's file again from the store, keeping its lineage keys (and
    setting `link`'s)."""
    item = get(conn, cid)
    if item["state"] == "confirmed" and item["record_path"]:
        path = os.path.join(root, item["record_path"])
        recorded = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime((item["decided_ns"] or time.time_ns()) / 1e9))
        _write_file(path, render_record(item, recorded, {**links(path), **link}))


def _lineage_target(conn, root: str, item: dict, other: int) -> dict:
    """The decision `item` supersedes: another confirmed decision, with its file, not already
    superseded (a thread is a line, newest first, not a tree)."""
    if other == item["id"]:
        raise TriageError("a decision cannot supersede itself")
    target = get(conn, other)
    if item["kind"] != LINEAGE_KIND or target["kind"] != LINEAGE_KIND:
        raise TriageError(f"only a decision supersedes a decision (#{item['id']} is {item['kind']}, "
                          f"#{other} is {target['kind']})")
    if target["state"] != "confirmed" or not target["record_path"]:
        raise TriageError(f"candidate #{other} is {target['state']}; only a confirmed decision can be superseded")
    earlier = links(os.path.join(root, target["record_path"])).get("superseded_by")
    if earlier:
        raise TriageError(f"decision #{other} is already superseded by #{earlier}; supersede #{earlier} instead")
    return target


def confirm(conn, root: str, cfg, cid: int, supersedes: int | None = None) -> str:
    """Make candidate `cid` a memory record; returns the file's project-relative path. With
    `supersedes`, the confirmed decision it replaces: both files carry the link."""
    item = get(conn, cid)
    if item["state"] != "pending":
        raise TriageError(f"candidate #{cid} is {item['state']}, not pending")
    if supersedes is not None:
        _lineage_target(conn, root, item, supersedes)
    now_ns = time.time_ns()
    recorded = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ns / 1e9))
    rel = os.path.relpath(os.path.join(records_dir(root), f"{item['kind']}-{cid}-{_slug(item['title'])}.md"), root)
    path = os.path.join(root, rel)
    _write_file(path, render_record(item, recorded, {"supersedes": supersedes}))
    try:
        with write(conn):
            _decided(conn, item, "confirmed", "confirmed", record_path=rel)
    except BaseException:  # re-raised: a store that did not record it (locked) leaves no file the next ingest would index
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        raise
    if supersedes is not None:
        _rewrite(conn, root, supersedes, superseded_by=str(cid))
    _reindex(conn, root, cfg)
    return rel


def reject(conn, root: str, cfg, cid: int) -> None:
    """Keep the candidate as rejected: never proposed again, never indexed. A confirmed
    record that is rejected later loses its memory file (and its chunks)."""
    item = get(conn, cid)
    if item["state"] not in ("pending", "confirmed"):
        raise TriageError(f"candidate #{cid} is {item['state']}; only pending or confirmed can be rejected")
    with write(conn):
        _decided(conn, item, "rejected", "rejected", record_path=None)
    if item["record_path"]:
        try:
            os.unlink(os.path.join(root, item["record_path"]))
        except FileNotFoundError:
            pass
        _reindex(conn, root, cfg)


def retitle(conn, root: str, cfg, cid: int, title: str) -> None:
    title = _one_line(title)
    if not title:
        raise TriageError("a title cannot be empty")
    item = get(conn, cid)
    if item["state"] not in ("pending", "confirmed"):
        raise TriageError(f"candidate #{cid} is {item['state']}; only pending or confirmed can be retitled")
    with write(conn):
        _decided(conn, item, "retitled", title=title)
    if item["state"] == "confirmed":
        _rewrite(conn, root, cid)
        _reindex(conn, root, cfg)


def merge(conn, root: str, cfg, cid: int, into: int) -> None:
    """`cid` says the same thing as `into`: it is kept as merged (never proposed again) and
    listed under `into` (in its record file when `into` is confirmed)."""
    if cid == into:
        raise TriageError("a candidate cannot be merged into itself")
    item, target = get(conn, cid), get(conn, into)
    if item["state"] != "pending":
        raise TriageError(f"candidate #{cid} is {item['state']}, not pending")
    if target["state"] not in ("pending", "confirmed"):
        raise TriageError(f"candidate #{into} is {target['state']}; merge into a pending or confirmed one")
    with write(conn):
        _decided(conn, item, "merged", "merged", merged_into=into)
    if target["state"] == "confirmed":
        _rewrite(conn, root, into)
        _reindex(conn, root, cfg)


def parse_decision(entry) -> tuple[str, int, dict]:
    """One entry of a batch file: {"id": 3, "action": "confirm"|"reject"|"retitle"|"merge",
    "title": ... (retitle), "into": ... (merge), "supersedes": ... (confirm, optional)}. Raises ValueError naming what is wrong."""
    if not isinstance(entry, dict):
        raise ValueError(f"expected an object, got {type(entry).__name__}")
    action, cid = entry.get("action"), entry.get("id")
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if isinstance(cid, bool) or not isinstance(cid, int):
        raise ValueError(f"id must be an integer, got {cid!r}")
    extra: dict = {}
    if action == "retitle":
        if not isinstance(entry.get("title"), str) or not entry["title"].strip():
            raise ValueError("retitle needs a non-empty string 'title'")
        extra["title"] = entry["title"]
    if action == "confirm" and entry.get("supersedes") is not None:
        other = entry["supersedes"]
        if isinstance(other, bool) or not isinstance(other, int):
            raise ValueError(f"supersedes must be an integer id, got {other!r}")
        extra["supersedes"] = other
    if action == "merge":
        into = entry.get("into")
        if isinstance(into, bool) or not isinstance(into, int):
            raise ValueError(f"merge needs an integer 'into', got {into!r}")
        extra["into"] = into
    return action, cid, extra


def apply_one(conn, root: str, cfg, action: str, cid: int, extra: dict) -> str:
    """Apply one decision; a line saying what happened. Raises TriageError."""
    if action == "confirm":
        other = extra.get("supersedes")
        rel = confirm(conn, root, cfg, cid, supersedes=other)
        return f"#{cid} confirmed → {rel}" + (f" (supersedes #{other})" if other is not None else "")
    if action == "reject":
        reject(conn, root, cfg, cid)
        return f"#{cid} rejected"
    if action == "retitle":
        retitle(conn, root, cfg, cid, extra["title"])
        return f"#{cid} retitled: {extra['title']}"
    merge(conn, root, cfg, cid, extra["into"])
    return f"#{cid} merged into #{extra['into']}"
