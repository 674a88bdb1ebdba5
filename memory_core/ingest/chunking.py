"""Cut text into chunks with line ranges: markdown by heading, anything by bounded size.

    pieces = markdown_chunks(text, fallback_title="README.md")
    pieces[0].title       # "Install > From source"  (the heading path)
    pieces[0].line_start  # 1-based, inclusive, as an editor counts lines

Lines are split on "\\n" only (a trailing "\\r" is dropped), so line numbers agree with
editors, grep and git; str.splitlines() would also break on form feeds, U+2028 and the
like and shift every range after them.
"""

from __future__ import annotations

import re

try:  # the builtin module, the same digest: hashlib would load OpenSSL (~11 M instructions)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b as _blake2b

from memory_core.text import split_lines

MAX_CHARS = 2000   # about 500 tokens: inside every embedding model's context, readable in a hit

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_FM_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*)$")


class Piece:
    """One chunk before it is stored. A plain class, not a dataclass: `dataclasses` imports
    `inspect` (~50 M instructions), and the gate reaches this module through its link check."""

    __slots__ = ("line_start", "line_end", "title", "content", "kind", "attrs")
    __hash__ = None  # mutable, compared by value (as the dataclass it replaces)

    def __init__(self, line_start: int | None, line_end: int | None, title: str, content: str,
                 kind: str | None = None, attrs: dict | None = None):
        self.line_start = line_start
        self.line_end = line_end
        self.title = title
        self.content = content
        self.kind = kind
        self.attrs = attrs

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return self._key() == other._key() if type(other) is type(self) else NotImplemented

    def __repr__(self) -> str:
        return "Piece(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


def content_hash(text: str) -> str:
    return _blake2b(text.encode("utf-8", "replace"), digest_size=16).hexdigest()


def frontmatter(lines: list[str], max_lines: int = 200) -> tuple[dict[str, str], int]:
    """Parse a leading `---` block of `key: value` lines; return (fields, index of the body).

    YAML-ish on purpose: memory files only need scalar keys (type, name, description), and
    a YAML dependency would be heavier than the files it reads. Keys are lowercased; one
    level of quotes is removed; lists and nested values are ignored."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    fields: dict[str, str] = {}
    for i in range(1, min(len(lines), max_lines)):
        line = lines[i]
        if line.strip() in ("---", "..."):
            return fields, i + 1
        m = _FM_KEY.match(line)
        if m:
            value = m.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[m.group(1).lower()] = value
    return {}, 0  # no closing fence: not frontmatter, just a document starting with a rule


def split_bounded(lines: list[str], first_line: int, limit: int = MAX_CHARS) -> list[tuple[int, int, str]]:
    """Pack consecutive lines into pieces of at most `limit` characters, preferring to break
    at a blank line; a single longer line is cut into slices that share its line number.
    Returns (line_start, line_end, text) with blank lines trimmed from both ends."""
    out: list[tuple[int, int, str]] = []
    buf: list[tuple[int, str]] = []
    size = 0

    def emit(part: list[tuple[int, str]]) -> None:
        lo, hi = 0, len(part)
        while lo < hi and not part[lo][1].strip():
            lo += 1
        while hi > lo and not part[hi - 1][1].strip():
            hi -= 1
        if lo < hi:
            out.append((part[lo][0], part[hi - 1][0], "\n".join(t for _, t in part[lo:hi])))

    for offset, line in enumerate(lines):
        number = first_line + offset
        if len(line) > limit:
            emit(buf)
            buf, size = [], 0
            for k in range(0, len(line), limit):
                piece = line[k:k + limit]
                if piece.strip():
                    out.append((number, number, piece))
            continue
        if buf and size + len(line) + 1 > limit:
            cut = next((j for j in range(len(buf) - 1, 0, -1) if not buf[j][1].strip()), None)
            if cut is None:
                emit(buf)
                buf = []
            else:
                emit(buf[:cut])
                buf = buf[cut + 1:]
            size = sum(len(t) + 1 for _, t in buf)
        buf.append((number, line))
        size += len(line) + 1
    emit(buf)
    return out


def _heading(line: str) -> tuple[int, str] | None:
    m = _ATX.match(line)
    if not m:
        return None
    text = _CLOSING_HASHES.sub("", m.group(2) or "").strip()
    return len(m.group(1)), text


def sections(lines: list[str], start: int = 0) -> list[tuple[list[str], int, int]]:
    """(heading path, first index, end index exclusive) for each section of `lines[start:]`.

    A section runs from its heading to the next heading of any level; text before the first
    heading is a section with an empty path. Headings inside fenced code are not headings."""
    out: list[tuple[list[str], int, int]] = []
    stack: list[tuple[int, str]] = []
    path: list[str] = []
    begin = start
    fence: tuple[str, int] | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is None and m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
            continue
        h = _heading(line)
        if h is None:
            continue
        if i > begin:
            out.append((path, begin, i))
        level, text = h
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        path = [t for _, t in stack if t]
        begin = i
    if begin < len(lines):
        out.append((path, begin, len(lines)))
    return out


def markdown_chunks(text: str, fallback_title: str, limit: int = MAX_CHARS,
                    skip_frontmatter: bool = True) -> list[Piece]:
    """Chunk a markdown document by heading; title = heading path (or `fallback_title`)."""
    lines = split_lines(text)
    start = frontmatter(lines)[1] if skip_frontmatter else 0
    pieces: list[Piece] = []
    for path, begin, end in sections(lines, start):
        body = lines[begin:end]
        has_heading = bool(path) and _heading(body[0]) is not None
        if not any(line.strip() for line in (body[1:] if has_heading else body)):
            continue  # a heading with nothing under it says nothing on its own
        title = " > ".join(path) if path else fallback_title
        for ls, le, chunk in split_bounded(body, begin + 1, limit):
            pieces.append(Piece(ls, le, title, chunk, "section"))
    return pieces
