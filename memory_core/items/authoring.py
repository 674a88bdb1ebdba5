"""What `memhealth remember` writes: a memory file's text, checked to read back exactly.

    text = memory_file_text("Checkpoints stall ...", kind="gotcha", name="wal-stall", paths=["src/**"])
    slug("WAL checkpoint stall")      # the file name's stem: "wal-checkpoint-stall"
"""

from __future__ import annotations

import re
import time

from memory_core.items.spec import read_spec


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
