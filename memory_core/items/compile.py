"""Memory items and their cues: a strict frontmatter reader, trigger validation, glob and
symbol compilation, and the compile step that turns memory files into indexed rows.

    spec = read_spec(text)            # ItemSpec: kind, name, pinned, paths, symbols, on, errors
    compile_glob("src/**/*.py")       # (key, prefix, regex): what the cues table stores
    compile_items(conn, root)         # after the memory source synced: items + cues, upserted

A memory file's frontmatter says what it is and when it fires:

    ---
    name: wal-checkpoint-stall
    kind: gotcha                  # or type:
    paths: [src/storage/**, "docs/wal.md"]
    symbols: checkpoint_wal, WalWriter
    on:
      - compact
    pinned: false
    expires: 2027-06-30           # or ttl_days: 90
    ---
    Checkpoints stall while a reader holds the WAL; ...

A malformed key is an error naming the file and the key (an `ingest_log` row), and only
that key is dropped: the item and every other cue still work. Not on the hook path: the
hook reads the compiled rows (memory_core.delivery.cues).
"""

from __future__ import annotations

import calendar
import json
import os
import re
import time
from dataclasses import dataclass, field

EVENTS = ("session-start", "compact", "prompt", "stop")
TRIGGERS = ("path", "symbol", "event", "semantic")
BODY_CHARS = 700  # what one delivered item may say; the file is the full record
LIST_KEYS = ("paths", "symbols", "on")
KEYS = frozenset({"name", "kind", "type", "description", "scope", "pinned", "expires", "ttl_days", "recorded",
                  "created", "date", "paths", "symbols", "on", "semantic"})

_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_ITEM = re.compile(r"^[ \t]+-(?:[ \t]+(.*)|[ \t]*)$")
_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_IDENT = r"[A-Za-z_$][\w$]*"
_SYMBOL = re.compile(rf"{_IDENT}(?:(?:\.|::|#|->){_IDENT})*")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?Z?)?")
_MAGIC = re.compile(r"[*?\[]")


class FrontmatterError(ValueError):
    """One malformed key: `key` and `line` (1-based) say where."""

    def __init__(self, key: str, line: int, message: str):
        super().__init__(f"line {line}: key {key!r}: {message}")
        self.key, self.line = key, line


# -- the frontmatter reader ----------------------------------------------------------------

def _scalar(raw: str, key: str, line: int) -> str:
    """A plain, single- or double-quoted scalar; a ` #` outside quotes starts a comment."""
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = raw.find(quote, 1)
        if end < 0:
            raise FrontmatterError(key, line, f"unterminated {quote} quote")
        rest = raw[end + 1:].strip()
        if rest and not rest.startswith("#"):
            raise FrontmatterError(key, line, f"text after the closing quote: {rest[:40]!r}")
        return raw[1:end]
    cut = re.search(r"(?:^|[ \t])#", raw)
    return (raw[:cut.start()] if cut else raw).strip()


def _flow_list(raw: str, key: str, line: int) -> list[str]:
    """`[a, "b, c", 'd']`: one level, no nesting."""
    inner = raw.strip()
    close = inner.rfind("]")
    if close < 0:
        raise FrontmatterError(key, line, "a [list] without its closing ]")
    tail = inner[close + 1:].strip()
    if tail and not tail.startswith("#"):
        raise FrontmatterError(key, line, f"text after the closing ]: {tail[:40]!r}")
    inner = inner[1:close]
    items, buf, quote = [], "", None
    for ch in inner:
        if quote:
            buf += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            buf += ch
        elif ch in "[]{}":
            raise FrontmatterError(key, line, "nested lists and mappings are not supported")
        elif ch == ",":
            items.append(buf)
            buf = ""
        else:
            buf += ch
    if quote:
        raise FrontmatterError(key, line, f"unterminated {quote} quote")
    items.append(buf)
    out = [_scalar(item, key, line) for item in items]
    return [item for item in out if item]


def parse_frontmatter(lines: list[str], max_lines: int = 200
                      ) -> tuple[dict[str, str | list[str]], list[FrontmatterError], int]:
    """Parse a leading `---` block; return (fields, errors, index of the body's first line).

    Scalars, `[flow, lists]` and block lists (`- item` lines under `key:`). Anything else —
    nested mappings, an unterminated quote, a duplicate key — is an error for that key only.
    No closing fence: not frontmatter (a document that starts with a rule)."""
    if not lines or lines[0].strip() != "---":
        return {}, [], 0
    end = next((i for i in range(1, min(len(lines), max_lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, [], 0
    fields: dict[str, str | list[str]] = {}
    errors: list[FrontmatterError] = []
    bad: set[str] = set()
    current: str | None = None  # the key a block list belongs to
    for i in range(1, end):
        line, number = lines[i], i + 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.match(line)
        if item is not None:
            if current is None:
                errors.append(FrontmatterError("?", number, "a list item with no key above it"))
                continue
            if current in bad:
                continue
            value = fields.get(current)
            if isinstance(value, str) and value:
                errors.append(FrontmatterError(current, number, "a list item under a key that has a value"))
                bad.add(current)
                fields.pop(current, None)
                continue
            try:
                text = _scalar(item.group(1) or "", current, number)
            except FrontmatterError as exc:
                errors.append(exc)
                bad.add(current)
                fields.pop(current, None)
                continue
            if text:
                fields[current] = [*(value if isinstance(value, list) else []), text]
            continue
        if line[:1] in (" ", "\t"):
            key = current or "?"
            errors.append(FrontmatterError(key, number, "an indented line that is not a `- item` "
                                                        "(nested mappings are not supported)"))
            if current is not None:
                bad.add(current)
                fields.pop(current, None)
            continue
        m = _KEY.match(line)
        if m is None:
            errors.append(FrontmatterError(line.split(":", 1)[0].strip()[:40] or "?", number,
                                           "not a `key: value` line"))
            current = None
            continue
        key, raw = m.group(1).lower(), (m.group(2) or "")
        current = key
        if key in fields or key in bad:
            errors.append(FrontmatterError(key, number, "duplicate key"))
            bad.add(key)
            fields.pop(key, None)
            continue
        try:
            fields[key] = _flow_list(raw, key, number) if raw.lstrip().startswith("[") else _scalar(raw, key, number)
        except FrontmatterError as exc:
            errors.append(exc)
            bad.add(key)
    return fields, errors, end + 1


# -- triggers ------------------------------------------------------------------------------

def as_list(value: str | list[str]) -> list[str]:
    """A YAML list as is; a scalar split on commas (`paths: a/**, b.md`)."""
    if isinstance(value, list):
        return [v.strip() for v in value if v.strip()]
    return [v.strip() for v in value.split(",") if v.strip()]


def compile_glob(glob: str) -> tuple[str, str, str]:
    """(index key, literal leading directory, anchored regex) for a project-relative glob.

    `**` spans directories (`**/` also matches none); `*` and `?` stay inside one segment;
    `[...]` is a class. A pattern with no magic names a file, or — without an extension in
    its last segment — a directory and everything under it. The key is the most selective
    literal: the basename (b:), else the extension (e:), else the leading directory (p:),
    else `*` (checked on every lookup)."""
    pattern = glob.strip().replace("\\", "/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern += "**"
    segments = pattern.split("/")
    literal_dirs: list[str] = []
    for seg in segments[:-1]:
        if _MAGIC.search(seg):
            break
        literal_dirs.append(seg)
    prefix = "/".join(literal_dirs)
    last = segments[-1]
    if not _MAGIC.search(pattern):
        if "." in last.strip("."):  # a file: exact
            return f"b:{last}", prefix, re.escape(pattern) + r"\Z"
        return f"p:{pattern}/", pattern, re.escape(pattern) + r"(?:/.*)?\Z"
    regex = _glob_regex(segments)
    if not _MAGIC.search(last):
        key = f"b:{last}"
    elif re.fullmatch(r"\*(\.[^*?\[/]+)+", last):
        key = "e:" + last[last.rfind("."):]
    elif prefix:
        key = f"p:{prefix}/"
    else:
        key = "*"
    return key, prefix, regex


def _glob_regex(segments: list[str]) -> str:
    out = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        j, part = 0, ""
        while j < len(seg):
            ch = seg[j]
            if ch == "*":
                part += "[^/]*"
            elif ch == "?":
                part += "[^/]"
            elif ch == "[":
                close = seg.find("]", j + 2 if seg[j + 1:j + 2] in ("!", "^") else j + 1)
                if close < 0:
                    part += re.escape(ch)
                else:
                    body = seg[j + 1:close]
                    if body[:1] in ("!", "^"):
                        body = "^" + body[1:]
                    part += "[" + body.replace("\\", "\\\\") + "]"
                    j = close
            else:
                part += re.escape(ch)
            j += 1
        out.append(part if last else part + "/")
    return "".join(out) + r"\Z"


def compile_symbol(symbol: str) -> tuple[str, str | None]:
    """(index token, verifying regex or None). A bare identifier is its own key; a dotted or
    qualified one (`Store.flush`, `pkg::Type`) is keyed by its longest identifier and checked
    on word boundaries in the text that named it."""
    parts = re.findall(_IDENT, symbol)
    if len(parts) == 1 and parts[0] == symbol:
        return symbol, None
    key = max(parts, key=len)
    return key, r"(?<![\w$])" + re.escape(symbol) + r"(?![\w$])"


def _valid_glob(glob: str) -> str | None:
    """Why a paths entry cannot be a project-relative glob, or None."""
    g = glob.replace("\\", "/")
    if g.startswith("/") or re.match(r"[A-Za-z]:/", g) or g.startswith("~"):
        return "an absolute path (paths are relative to the project root)"
    if ".." in g.split("/"):
        return "'..' leaves the project (paths are relative to the project root)"
    if g.count("[") != g.count("]"):
        return "an unbalanced [class]"
    return None


def _date_ns(text: str) -> int | None:
    m = _DATE.fullmatch(text.strip())
    if not m:
        return None
    y, mo, d, hh, mm, ss = (int(g) if g else 0 for g in m.groups())
    try:
        tm = time.struct_time((y, mo, d, hh, mm, ss, 0, 1, 0))
        if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and hh < 24 and mm < 60 and ss < 61):
            return None
        return calendar.timegm(tm) * 10 ** 9
    except (ValueError, OverflowError):
        return None


_TRUE = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


@dataclass
class ItemSpec:
    """What a memory file's frontmatter says about the item (after validation)."""

    kind: str = "memory"
    name: str = ""
    description: str = ""
    scope: str | None = None
    pinned: bool | None = None      # None: not said (invariants are pinned by default)
    expires_ns: int | None = None
    ttl_days: float | None = None
    recorded_ns: int | None = None
    paths: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    on: list[str] = field(default_factory=list)
    semantic: str | None = None
    body_line: int = 1
    body: str = ""
    errors: list[tuple[str, str]] = field(default_factory=list)  # (key, message)


def _known(key: str) -> bool:
    """Whether an error's key (or the first word of a line that was not `key: value`) is one
    memhealth reads."""
    word = re.match(r"[A-Za-z_]+", key)
    return word is not None and word.group(0).lower() in KEYS


def read_spec(text: str) -> ItemSpec:
    """Parse and validate a memory file; malformed keys land in `errors` and are dropped."""
    from memory_core.text import split_lines

    lines = split_lines(text)
    fields, errors, body_start = parse_frontmatter(lines)
    # strict about the keys memhealth reads; other tools' keys (Claude Code's own memory
    # frontmatter, nested metadata) are theirs to judge, and are not errors here
    spec = ItemSpec(errors=[(e.key, str(e)) for e in errors if _known(e.key)])

    def scalar(key: str) -> str | None:
        value = fields.get(key)
        if value is None:
            return None
        if isinstance(value, list):
            spec.errors.append((key, f"key {key!r}: a list where one value is expected"))
            return None
        return value.strip()

    kind = (scalar("kind") or scalar("type") or "memory").lower()
    if not _KIND.fullmatch(kind):
        spec.errors.append(("kind", f"key 'kind': {kind!r} is not a kind name (a-z, 0-9, _ or -)"))
        kind = "memory"
    spec.kind = kind
    spec.name = scalar("name") or ""
    spec.description = scalar("description") or ""
    spec.scope = scalar("scope") or None
    for key in ("pinned",):
        raw = scalar(key)
        if raw is not None:
            if raw.lower() not in _TRUE:
                spec.errors.append((key, f"key {key!r}: {raw!r} is not true or false"))
            else:
                spec.pinned = _TRUE[raw.lower()]
    for key in ("recorded", "created", "date"):
        raw = scalar(key)
        if raw is not None:
            ns = _date_ns(raw)
            if ns is None:
                spec.errors.append((key, f"key {key!r}: {raw!r} is not a date (YYYY-MM-DD)"))
            elif spec.recorded_ns is None:
                spec.recorded_ns = ns
    raw = scalar("expires")
    if raw is not None:
        ns = _date_ns(raw)
        if ns is None:
            spec.errors.append(("expires", f"key 'expires': {raw!r} is not a date (YYYY-MM-DD)"))
        else:
            spec.expires_ns = ns + (86400 * 10 ** 9 if len(raw.strip()) == 10 else 0)  # the whole day
    raw = scalar("ttl_days")
    if raw is not None:
        try:
            ttl = float(raw)
            if not 0 < ttl < 100_000:
                raise ValueError
            spec.ttl_days = ttl
        except ValueError:
            spec.errors.append(("ttl_days", f"key 'ttl_days': {raw!r} is not a positive number of days"))
    if "paths" in fields:
        for glob in as_list(fields["paths"]):
            why = _valid_glob(glob)
            if why:
                spec.errors.append(("paths", f"key 'paths': {glob!r} is {why}"))
            else:
                spec.paths.append(glob)
    if "symbols" in fields:
        for symbol in as_list(fields["symbols"]):
            if _SYMBOL.fullmatch(symbol):
                spec.symbols.append(symbol)
            else:
                spec.errors.append(("symbols", f"key 'symbols': {symbol!r} is not an identifier"))
    if "on" in fields:
        for event in as_list(fields["on"]):
            name = event.lower().replace("_", "-")
            if name in EVENTS:
                spec.on.append(name)
            else:
                spec.errors.append(("on", f"key 'on': {event!r} is not one of {', '.join(EVENTS)}"))
    raw = scalar("semantic")
    if raw:
        spec.semantic = raw
    body = lines[body_start:]
    while body and not body[0].strip():
        body = body[1:]
        body_start += 1
    spec.body_line = body_start + 1
    spec.body = "\n".join(body).strip()
    return spec


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


# -- what `remember`, `cues` and `forget` read and write -----------------------------------

class SpecError(ValueError):
    """A `remember` argument that would make a malformed memory file (a usage error)."""


def memory_file_text(text: str, *, kind: str, name: str, paths=(), symbols=(), on=(),
                     pinned: bool = False, expires: str | None = None, recorded_ns: int | None = None) -> str:
    """The memory file `memhealth remember` writes: frontmatter, then the text. Raises
    SpecError when a value would not read back exactly as given."""
    def quoted(value: str, what: str) -> str:
        if '"' in value or "\n" in value or not value.strip():
            raise SpecError(f"{what} {value!r}: empty, or contains a double quote or a newline")
        return f'"{value}"'

    day = time.strftime("%Y-%m-%d", time.gmtime((recorded_ns or time.time_ns()) / 1e9))
    lines = ["---", f"name: {quoted(name, 'name')}", f"kind: {kind}", f"recorded: {day}"]
    for key, values in (("paths", paths), ("symbols", symbols), ("on", on)):
        if values:
            lines.append(f"{key}:")
            lines.extend(f"  - {quoted(v, key)}" for v in values)
    if pinned:
        lines.append("pinned: true")
    if expires:
        lines.append(f"expires: {expires}")
    lines += ["---", "", text.strip(), ""]
    out = "\n".join(lines)
    spec = read_spec(out)
    if spec.errors:
        raise SpecError("; ".join(message for _key, message in spec.errors))
    if not spec.body:
        raise SpecError("the memory text is empty")
    return out


def slug(text: str, limit: int = 48) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = ""
    for word in words:
        if len(out) + len(word) + 1 > limit:
            break
        out = f"{out}-{word}" if out else word
    return out or "memory"


def project_files(root: str, limit: int = 200_000) -> list[str]:
    """Project-relative files, skipping hidden and dependency directories (for staleness)."""
    from memory_core.store.layout import SKIP_DIRS

    out: list[str] = []
    stack = [root]
    while stack and len(out) < limit:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in SKIP_DIRS:
                        stack.append(entry.path)
                elif entry.is_file():
                    out.append(os.path.relpath(entry.path, root).replace(os.sep, "/"))
            except OSError:
                continue
    return out


def list_cues(conn, root: str, cfg: dict, now_ns: int | None = None) -> list[dict]:
    """Every item that can fire (pinned, or with a trigger), with its cues and their state:
    active | expired | inactive: why | stale: no file matches its paths any more."""
    from memory_core.delivery.cues import STOP_INACTIVE, semantic_inactive_reason

    now_ns = now_ns or time.time_ns()
    cues_of: dict[int, list[tuple]] = {}
    for item_id, trigger, pattern, compiled in conn.execute(
            "SELECT item_id, trigger, pattern, compiled FROM cues ORDER BY id"):
        cues_of.setdefault(item_id, []).append((trigger, pattern, compiled))
    files = None
    last = {item_id: (ts, n) for item_id, ts, n in conn.execute(
        "SELECT item_id, max(ts_ns), count(*) FROM cue_audit WHERE outcome = 'fired' AND item_id IS NOT NULL "
        "GROUP BY item_id")}
    out = []
    for (item_id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns, errors) in conn.execute(
            "SELECT id, path, line, name, kind, scope, pinned, expires_ns, recorded_ns, errors "
            "FROM memory_items ORDER BY id"):
        triggers = cues_of.get(item_id, [])
        if not pinned and not triggers and not errors:
            continue  # a plain memory file: nothing can fire, nothing is wrong
        expired = expires_ns is not None and expires_ns <= now_ns
        rows = []
        if pinned:
            rows.append({"trigger": "pinned", "pattern": "session start", "state": "expired" if expired else "active"})
        for trigger, pattern, compiled in triggers:
            state = "expired" if expired else "active"
            if not expired and trigger == "semantic":
                why = semantic_inactive_reason(cfg, compiled)
                state = f"inactive: {why}" if why else "active"
            elif not expired and trigger == "event" and pattern == "stop":
                state = f"inactive: {STOP_INACTIVE}"
            elif not expired and trigger == "path":
                if files is None:
                    files = project_files(root)
                rx = re.compile(compiled)
                if not any(rx.match(f) for f in files):
                    state = "stale: no file matches its paths any more"
            rows.append({"trigger": "event" if trigger == "event" else trigger, "pattern": pattern, "state": state})
        fired = last.get(item_id)
        out.append({"id": item_id, "name": name, "kind": kind, "scope": scope, "path": path, "line": line,
                    "pinned": bool(pinned), "expires_ns": expires_ns, "recorded_ns": recorded_ns,
                    "errors": json.loads(errors) if errors else [], "cues": rows,
                    "fired": fired[1] if fired else 0, "last_fired_ns": fired[0] if fired else None})
    return out


def audit_rows(conn, session_id: str | None = None, limit: int = 100) -> list[dict]:
    """The newest audit rows (newest last), optionally for one session."""
    sql = ("SELECT a.ts_ns, a.session_id, a.event, a.trigger, a.item_id, m.name, a.outcome, a.reason, a.epoch, "
           "a.detail FROM cue_audit a LEFT JOIN memory_items m ON m.id = a.item_id")
    params: list = []
    if session_id:
        sql += " WHERE a.session_id = ?"
        params.append(session_id)
    sql += " ORDER BY a.id DESC LIMIT ?"
    params.append(limit)
    keys = ("ts_ns", "session_id", "event", "trigger", "item_id", "item", "outcome", "reason", "epoch", "detail")
    return [dict(zip(keys, row, strict=True)) for row in reversed(conn.execute(sql, params).fetchall())]


def find_item(conn, ident: str) -> tuple[int, str, str] | None:
    """(id, name, path) of the item named by an id, a name or a memory file path."""
    row = None
    if ident.isdigit():
        row = conn.execute("SELECT id, name, path FROM memory_items WHERE id = ?", (int(ident),)).fetchone()
    if row is None:
        row = conn.execute("SELECT id, name, path FROM memory_items WHERE name = ? OR path = ? ORDER BY id LIMIT 1",
                           (ident, ident.replace(os.sep, "/"))).fetchone()
    return tuple(row) if row else None
