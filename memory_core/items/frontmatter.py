"""The memory file's frontmatter, read strictly: scalars, `[flow, lists]` and block lists.

    fields, errors, body_start = parse_frontmatter(lines)

Not YAML: one level, no nesting. A malformed key is a FrontmatterError naming the key and
its line, and only that key is dropped (memory_core.items.spec validates what is left).
"""

from __future__ import annotations

import re

_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")
_ITEM = re.compile(r"^[ \t]+-(?:[ \t]+(.*)|[ \t]*)$")


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

