"""The code index, read side: what the code defines, where, and what counts as a component.

    components(conn, limit=20)        # [{name, qualname, kind, path, line_start, ..., rank}]
    definitions(conn, "GZipMiddleware")   # every definition of that name, best first
    definition_at(conn, "pkg/gzip.py", 42)  # the innermost definition spanning that line
    indexed_commit(conn)              # the commit the index was read at, or None

Stdlib and SQLite only, so delivery can call it on the hook path: nothing here parses. The
rows are written by memory_core.ingest.code (migration 9); what a component is, is written
down in docs/concepts/code-index.md.
"""

from __future__ import annotations

from memory_core.store.meta import get_meta

META_COMMIT = "code.commit"
META_INDEXED_NS = "code.indexed_ns"

COLUMNS = ("id", "path", "name", "qualname", "kind", "line_start", "line_end", "signature",
           "doc", "exported", "component", "rank")
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM code_defs"


def _row(values) -> dict:
    d = dict(zip(COLUMNS, values, strict=True))
    d["exported"] = bool(d["exported"])
    d["component"] = bool(d["component"])
    d["summary"] = summary(d["doc"])
    return d


def summary(doc: str | None) -> str:
    """A doc's first sentence (or first line), for a one-line citation."""
    if not doc:
        return ""
    para = doc.strip().split("\n\n", 1)[0]
    line = " ".join(part.strip() for part in para.splitlines())
    for end in (". ", "! ", "? "):
        cut = line.find(end)
        if 0 < cut < 200:
            return line[: cut + 1]
    return line[:200]


def has_index(conn) -> bool:
    """True when the store has the code index tables (migration 9 or later)."""
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'code_defs'").fetchone() is not None


def components(conn, limit: int | None = None) -> list[dict]:
    """What the index counts as components, most mentioned first.

    A folder that is both a package with a doc and a folder with a README is listed once,
    as the package read from its code."""
    # ties: a type before the module holding it (a module's name is also its import path's
    # word), a package read from code before its folder's README
    sql = (_SELECT + " WHERE component = 1 ORDER BY rank DESC, kind IN ('module', 'package') ASC, "
           "(kind = 'package' AND path LIKE '%README%') ASC, path, line_start")
    out: list[dict] = []
    seen_packages: set[tuple[str, str]] = set()
    for values in conn.execute(sql):
        d = _row(values)
        if d["kind"] == "package":
            folder = d["path"].rsplit("/", 1)[0] if "/" in d["path"] else ""
            if (folder, d["name"]) in seen_packages:
                continue
            seen_packages.add((folder, d["name"]))
        out.append(d)
        if limit is not None and len(out) >= limit:
            break
    return out


def definitions(conn, name: str) -> list[dict]:
    """Every definition named `name` (exact, case-sensitive): components first, then the
    most mentioned."""
    return [_row(v) for v in conn.execute(
        _SELECT + " WHERE name = ? ORDER BY component DESC, rank DESC, path, line_start", (name,))]


def definition_at(conn, path: str, line: int) -> dict | None:
    """The innermost definition in `path` whose span holds `line` (a module spans its file)."""
    row = conn.execute(
        _SELECT + " WHERE path = ? AND line_start <= ? AND line_end >= ? "
        "ORDER BY (line_end - line_start) ASC, line_start DESC LIMIT 1", (path, line, line)).fetchone()
    return _row(row) if row else None


def indexed_commit(conn) -> str | None:
    """The commit the whole index was last read at (None before a complete run)."""
    return get_meta(conn, META_COMMIT)


def file_status(conn, path: str) -> dict | None:
    """The index's row for one file: blob, lang, status (ok | failed | skipped), error."""
    row = conn.execute("SELECT path, blob, lang, status, error, n_defs, indexed_ns FROM code_files "
                       "WHERE path = ?", (path,)).fetchone()
    if row is None:
        return None
    return dict(zip(("path", "blob", "lang", "status", "error", "n_defs", "indexed_ns"), row, strict=True))


def stats(conn) -> dict:
    """Counts for the gate and the metrics: files by status, definitions, components."""
    by_status = dict(conn.execute("SELECT status, count(*) FROM code_files GROUP BY status"))
    (defs,) = conn.execute("SELECT count(*) FROM code_defs").fetchone()
    (comps,) = conn.execute("SELECT count(*) FROM code_defs WHERE component = 1").fetchone()
    indexed_ns = get_meta(conn, META_INDEXED_NS)
    return {"files": sum(by_status.values()), "ok": by_status.get("ok", 0),
            "failed": by_status.get("failed", 0), "skipped": by_status.get("skipped", 0),
            "defs": defs, "components": comps, "commit": indexed_commit(conn),
            "indexed_ns": int(indexed_ns) if indexed_ns else None}


def failed_files(conn, limit: int = 20) -> list[tuple[str, str]]:
    """(path, error) of files that failed to parse, by path."""
    return [tuple(r) for r in conn.execute(
        "SELECT path, coalesce(error, '') FROM code_files WHERE status = 'failed' ORDER BY path LIMIT ?",
        (limit,))]


__all__ = ["components", "definition_at", "definitions", "failed_files", "file_status", "has_index",
           "indexed_commit", "stats", "summary"]
