"""Text hygiene applied at every boundary (hook input, ingest, queries, rendered output).

C0 control characters other than tab, newline and carriage return, DEL, and NUL become a
space: NUL breaks FTS5 and terminals, and the reference design lost rows to control bytes.
"""

from __future__ import annotations

_CONTROL = {c: " " for c in range(32) if c not in (9, 10, 13)}
_CONTROL[127] = " "
# Lone surrogates (from surrogateescape or bad JSON escapes) cannot be encoded to UTF-8.
_TABLE = str.maketrans(_CONTROL)


def clean(text: str) -> str:
    """Replace control characters with spaces and drop unencodable surrogates."""
    text = text.translate(_TABLE)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def split_lines(text: str) -> list[str]:
    """Lines without their terminators (LF or CRLF); a lone CR stays in the line."""
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]
