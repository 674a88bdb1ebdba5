"""Compile memory files into the store: memory_items rows and their indexed cues.

    compile_items(conn, root)         # after the memory source synced: items + cues, upserted
    embed_semantic(conn, cfg)         # semantic cues' query text, embedded once per model

What a file says is read by memory_core.items.spec. A malformed key is an error naming the
file and the key (an `ingest_log` row), and only that key is dropped. Not on the hook path:
the hook reads the compiled rows (memory_core.delivery.cues).
"""

from __future__ import annotations

import json
import os
import re
import time

from memory_core.items.spec import ItemSpec, compile_glob, compile_symbol, read_spec

BODY_CHARS = 700  # what one delivered item may say; the file is the full record

# -- compile into the store -----------------------------------------------------------------

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)  # not content: templates' placeholders, notes


def _body_lines(spec: ItemSpec) -> list[str]:
    """The body's content lines: no headings, no HTML comments."""
    return [line.strip() for line in _COMMENT.sub("", spec.body).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _item_text(spec: ItemSpec) -> str:
    from memory_core.text import clip

    text = " ".join(_body_lines(spec))
    if spec.description and spec.description not in text:
        text = f"{spec.description}. {text}" if text else spec.description
    return clip(text, BODY_CHARS)


def is_pinned(spec: ItemSpec) -> bool:
    """Pinned when the file says so; invariants are pinned unless they say `pinned: false`,
    or hold nothing yet (headings and comments only: init's template pins nothing)."""
    if spec.pinned is not None:
        return spec.pinned
    return spec.kind == "invariant" and bool(_body_lines(spec))


def compile_items(conn, root: str, now_ns: int | None = None, log=None) -> dict:
    """Bring memory_items and cues in line with the memory source's watermarks.

    A file is recompiled when its ingest hash changed; a file that left the memory source
    loses its item and cues. Malformed keys go to `log(path, key_message)` (an ingest_log
    error in ingest) once per change of the file. Returns counts."""
    from memory_core.store.tx import write

    now_ns = now_ns or time.time_ns()
    marks = {}
    for path, state in conn.execute(
            "SELECT path, state FROM watermarks WHERE source = 'memory' AND path != '*'"):
        try:
            marks[path] = (json.loads(state) if state else {}).get("hash") or ""
        except ValueError:
            marks[path] = ""
    have = {path: (item_id, source_hash) for item_id, path, source_hash in
            conn.execute("SELECT id, path, source_hash FROM memory_items")}
    counts = {"compiled": 0, "removed": 0, "errors": 0}
    gone = [path for path in have if path not in marks]
    changed = [path for path, digest in marks.items() if have.get(path, (None, None))[1] != digest]
    compiled = []
    for rel in changed:
        full = rel if os.path.isabs(rel) else os.path.join(root, rel)
        try:
            with open(full, encoding="utf-8-sig") as fh:
                text = fh.read(1 << 20)
            st = os.stat(full)
        except (OSError, UnicodeDecodeError):
            continue  # the ingester logged why; the old item stays until the file is readable
        spec = read_spec(text)
        compiled.append((rel, spec, st.st_mtime_ns))
    with write(conn):
        for path in gone:
            item_id = have[path][0]
            conn.execute("DELETE FROM cues WHERE item_id = ?", (item_id,))
            conn.execute("DELETE FROM memory_items WHERE id = ?", (item_id,))
            counts["removed"] += 1
        for rel, spec, mtime_ns in compiled:
            _store_item(conn, rel, spec, marks[rel], mtime_ns, now_ns)
            counts["compiled"] += 1
            counts["errors"] += len(spec.errors)
    if log is not None:
        for rel, spec, _ in compiled:
            for key, message in spec.errors:
                log(rel, key, message)
    return counts


def embed_semantic(conn, cfg) -> tuple[int, str | None]:
    """Embed the query text of semantic cues not embedded yet (or embedded with another
    model or width) with the configured server; return (embedded, why not or None). Without
    a server this does nothing: the cues stay listed as inactive, with the reason."""
    e = cfg.get("embedding", {})
    if not e.get("url"):
        return 0, None
    want = {"model": e["model"], "dim": int(e["dim"])}
    todo = []
    for cue_id, pattern, compiled in conn.execute(
            "SELECT id, pattern, compiled FROM cues WHERE trigger = 'semantic'"):
        try:
            have = json.loads(compiled) if compiled else {}
        except ValueError:
            have = {}
        if {k: have.get(k) for k in want} != want:
            todo.append((cue_id, pattern))
    if not todo:
        return 0, None
    from memory_core.index.embed import EmbedError, OllamaClient
    from memory_core.store.tx import write

    try:
        with OllamaClient.from_config(cfg, bulk=True) as client:
            vectors = client.embed([pattern for _, pattern in todo])
    except EmbedError as exc:
        return 0, f"{exc.reason}: {exc}"
    with write(conn):
        conn.executemany("UPDATE cues SET compiled = ? WHERE id = ?", [
            (json.dumps({**want, "v": [round(x, 6) for x in vector]}, separators=(",", ":")), cue_id)
            for (cue_id, _), vector in zip(todo, vectors, strict=True)])
    return len(todo), None


def _store_item(conn, rel: str, spec: ItemSpec, digest: str, mtime_ns: int, now_ns: int) -> int:
    name = spec.name or os.path.splitext(os.path.basename(rel))[0] or rel
    recorded = spec.recorded_ns or mtime_ns
    expires = spec.expires_ns
    if spec.ttl_days is not None:
        ttl_end = recorded + int(spec.ttl_days * 86400 * 10 ** 9)
        expires = min(expires, ttl_end) if expires is not None else ttl_end
    errors = json.dumps(spec.errors, ensure_ascii=False) if spec.errors else None
    row = conn.execute(
        "INSERT INTO memory_items(path, line, name, kind, scope, pinned, expires_ns, recorded_ns, body, "
        "errors, source_hash, updated_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(path) DO UPDATE SET line = excluded.line, name = excluded.name, kind = excluded.kind, "
        "scope = excluded.scope, pinned = excluded.pinned, expires_ns = excluded.expires_ns, "
        "recorded_ns = excluded.recorded_ns, body = excluded.body, errors = excluded.errors, "
        "source_hash = excluded.source_hash, updated_ns = excluded.updated_ns RETURNING id",
        (rel, spec.body_line, name, spec.kind, spec.scope, int(is_pinned(spec)), expires, recorded,
         _item_text(spec), errors, digest, now_ns)).fetchone()
    item_id = row[0]
    conn.execute("DELETE FROM cues WHERE item_id = ?", (item_id,))
    rows = []
    for glob in dict.fromkeys(spec.paths):
        key, prefix, regex = compile_glob(glob)
        rows.append((item_id, "path", key, prefix, glob, regex))
    for symbol in dict.fromkeys(spec.symbols):
        key, regex = compile_symbol(symbol)
        rows.append((item_id, "symbol", key, None, symbol, regex))
    for event in dict.fromkeys(spec.on):
        rows.append((item_id, "event", event, None, event, None))
    if spec.semantic:
        rows.append((item_id, "semantic", "semantic", None, spec.semantic, None))
    conn.executemany("INSERT INTO cues(item_id, trigger, key, prefix, pattern, compiled) VALUES (?,?,?,?,?,?)",
                     rows)
    return item_id

