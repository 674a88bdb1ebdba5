"""The inventory read from the code, and proposing it for the curated inventory.

    listing(conn, limit=20)        # components, ranked, each marked if the curated inventory has it
    propose(conn, limit=10)        # -> ProposeReport: the top ones not yet proposed, queued for triage

A component the code index found (memory_core.index.code) becomes a triage candidate of
kind `subsystem`: `memhealth triage confirm ID` writes it as a one-subsystem memory file
(`type: subsystem`, `path:`) under .memhealth/memory/records/, `retitle` names it the way
people say it, `reject` keeps it from being proposed again. Its provenance is the code:
the candidate's `transcript` is the file and `line` the definition's first line.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from memory_core.index import code as code_index
from memory_core.records.queue import refresh_depth
from memory_core.store.tx import write

KIND = "subsystem"
ORIGIN = "code"


def _norm(d: dict) -> str:
    """The never-again key: the definition's place by name, not by line (lines move)."""
    return f"code:{d['path']}:{d['qualname']}".lower()


def curated(conn) -> tuple[set[str], set[str]]:
    """(names, paths) of the curated inventory: memory chunks of kind `subsystem`."""
    names: set[str] = set()
    paths: set[str] = set()
    for (attrs,) in conn.execute(
            "SELECT attrs FROM chunks WHERE source = 'memory' AND kind IN ('dead-end', 'dead_end', "
            "'subsystem') AND kind = 'subsystem'"):
        try:
            a = json.loads(attrs) if attrs else {}
        except ValueError:
            continue
        if isinstance(a, dict):
            if a.get("name"):
                names.add(str(a["name"]).strip().lower())
            if a.get("path"):
                paths.add(str(a["path"]).strip().strip("/"))
    return names, paths


def _in_curated(d: dict, names: set[str], paths: set[str]) -> bool:
    folder = d["path"].rsplit("/", 1)[0] if "/" in d["path"] else ""
    return (d["name"].lower() in names or d["qualname"].lower() in names or d["path"] in paths
            or (d["kind"] == "package" and folder in paths))


def listing(conn, limit: int | None = None) -> list[dict]:
    """Components, most mentioned first, with `curated` (the inventory has it) and
    `candidate` (its triage candidate id and state, when proposed)."""
    names, paths = curated(conn)
    proposed = {norm: (cid, state) for cid, norm, state in conn.execute(
        "SELECT id, norm, state FROM capture_candidates WHERE origin = ?", (ORIGIN,))}
    out = []
    for d in code_index.components(conn, limit):
        d["curated"] = _in_curated(d, names, paths)
        cand = proposed.get(_norm(d))
        d["candidate"] = {"id": cand[0], "state": cand[1]} if cand else None
        out.append(d)
    return out


@dataclass
class ProposeReport:
    """What `propose` queued and what it passed over."""

    added: list[dict] = field(default_factory=list)     # {"id", "name", "path", "line"}
    known: int = 0        # proposed before (any state: pending, confirmed, rejected, merged)
    curated: int = 0      # already in the curated inventory
    commit: str | None = None

    def to_dict(self) -> dict:
        return {"added": self.added, "known": self.known, "curated": self.curated,
                "commit": self.commit}


def statement(d: dict, commit: str | None) -> str:
    where = f"{d['path']}:{d['line_start']}"
    what = f"{d['kind']} {d['qualname']} ({d['signature']})" if d.get("signature") else \
        f"{d['kind']} {d['qualname']}"
    at = f" (read from the code at {commit[:12]})" if commit else ""
    doc = f": {d['summary']}" if d.get("summary") else ""
    return f"{what} at {where}{doc}{at}"


def propose(conn, limit: int = 10, now_ns: int | None = None) -> ProposeReport:
    """Queue the `limit` most mentioned components that are neither in the curated inventory
    nor proposed before, as triage candidates of kind `subsystem`."""
    now_ns = now_ns or time.time_ns()
    report = ProposeReport(commit=code_index.indexed_commit(conn))
    names, paths = curated(conn)
    with write(conn):
        for d in code_index.components(conn):
            if len(report.added) >= limit:
                break
            if _in_curated(d, names, paths):
                report.curated += 1
                continue
            norm = _norm(d)
            if conn.execute("SELECT 1 FROM capture_candidates WHERE norm = ? LIMIT 1", (norm,)).fetchone():
                report.known += 1
                continue
            cur = conn.execute(
                "INSERT INTO capture_candidates(kind, statement, title, norm, transcript, line, "
                "session_id, ts, role, origin, created_ns) VALUES (?,?,?,?,?,?,NULL,NULL,?,?,?)",
                (KIND, statement(d, report.commit), d["name"], norm, d["path"], d["line_start"],
                 "code", ORIGIN, now_ns))
            report.added.append({"id": cur.lastrowid, "name": d["name"], "kind": d["kind"],
                                 "path": d["path"], "line": d["line_start"]})
        refresh_depth(conn)
    return report


__all__ = ["KIND", "ORIGIN", "ProposeReport", "curated", "listing", "propose", "statement"]
