"""A memory item's spec: the frontmatter validated into what the item is and when it fires.

    spec = read_spec(text)            # ItemSpec: kind, name, pinned, paths, symbols, on, errors
    compile_glob("src/**/*.py")       # (key, prefix, regex): what the cues table stores
    compile_symbol("Store.flush")     # (index token, verifying regex or None)

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

A malformed key lands in `errors` (the file and the key named) and only that key is
dropped: the item and every other cue still work.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field

from memory_core.items.frontmatter import parse_frontmatter

EVENTS = ("session-start", "compact", "prompt", "stop")
TRIGGERS = ("path", "symbol", "event", "semantic")
LIST_KEYS = ("paths", "symbols", "on")
KEYS = frozenset({"name", "kind", "type", "description", "scope", "pinned", "expires", "ttl_days", "recorded",
                  "created", "date", "paths", "symbols", "on", "semantic"})

_KIND = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_IDENT = r"[A-Za-z_$][\w$]*"
_SYMBOL = re.compile(rf"{_IDENT}(?:(?:\.|::|#|->){_IDENT})*")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?Z?)?")
_MAGIC = re.compile(r"[*?\[]")


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

