"""What exists, said from the code: which indexed component a build prompt re-proposes.

    said = inject.Said(prompt)
    found = exists.match(conn, prompt, said, overall_df)   # None, or a Found
    found.name, found.path, found.line, found.why          # "GZipMiddleware", ..., "name words"

Reads only the code index's rows (`code_defs`, `code_fts`, written at ingest by
memory_core.ingest.code): nothing is parsed on the hook path. A prompt names a component
when it
- writes its identifier (`GZipMiddleware`, `toFormData`): an exported definition of that
  name, a component or not, is what it names;
- says every word of its name that is not one of the project's common name words
  (GZipMiddleware <-> "gzip middleware", "a middleware that gzips"; AxiosHeaders <-> "a
  headers class": "axios" starts a third of axios's names and says nothing), two words at
  least, or one with a rare word of the component's doc beside it;
- or shares rare words of its doc (`DOC_MIN` words each in at most `DOC_MAX_SHARE` of the
  documented components, one of them a word of its name).

A near miss shares a component's words but builds something of another system: "rate
limiting for our nginx ingress", "gzip compression for the nightly backup script". Such a
prompt brings words the project never uses, in its code or its docs (`foreign`); with
`MAX_FOREIGN` of them it is about that other system, and only a written identifier still
names a component. Thresholds were set on the tuning prompts of tests/fixtures/coderepos
and are reported beside the held-out ones in docs/internals/evaluation-code.md.
"""

from __future__ import annotations

import re

from memory_core.index import fts

# a word starting more than this share of the components' names is the project's own
# prefix or a generic head ("axios", "middleware" in a middleware package): optional
COMMON_NAME_SHARE = 0.2
DOC_MIN = 2                 # rare doc words a doc-only match needs
DOC_MAX_SHARE = 0.05        # a rare doc word is in at most this share of documented components
MAX_FOREIGN = 2             # prompt words unknown to the project that make it another system's
CANDIDATES = 40
MIN_WORD = 3
_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_CAMELISH = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]|^[a-z]+[A-Z]")
_COLUMNS = ("id, path, name, qualname, kind, line_start, line_end, signature, doc, exported, "
            "component, rank, words")


class Found:
    """The component a prompt names: its row, how it was named, and the arithmetic."""

    __slots__ = ("id", "path", "name", "qualname", "kind", "line", "signature", "doc", "rank",
                 "words", "why", "matched", "detail")

    def __init__(self, row, why: str, matched: list[str], detail: dict):
        (self.id, self.path, self.name, self.qualname, self.kind, self.line, _end, self.signature,
         self.doc, _exported, _component, self.rank, words) = row
        self.words = (words or "").split()
        self.why, self.matched, self.detail = why, matched, detail

    def summary(self) -> dict:
        return {"name": self.qualname or self.name, "kind": self.kind, "path": self.path,
                "line": self.line, "why": self.why, "matched": self.matched, **self.detail}


def has_index(conn) -> bool:
    """Whether the store holds a code index with at least one component."""
    try:
        return conn.execute("SELECT 1 FROM code_defs WHERE component = 1 LIMIT 1").fetchone() is not None
    except Exception:  # an older store without the code tables
        return False


def commit(conn) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'code.commit'").fetchone()
    return row[0] if row else None


def written_identifiers(prompt: str) -> list[str]:
    """Identifiers as written in the prompt: CamelCase, camelCase, snake_case, and the last
    part of a dotted name (`middleware.Compress` writes `Compress`)."""
    out = []
    for raw in _IDENT.findall(prompt):
        for part in (raw, raw.rsplit(".", 1)[-1]) if "." in raw else (raw,):
            bare = part.strip("_$")
            if len(bare) >= 3 and (_CAMELISH.search(bare) or "_" in bare.strip("_")) and part not in out:
                out.append(part)
    return out


def first_line(doc: str | None) -> str:
    """A doc's first sentence or line, comment markers gone."""
    text = " ".join(ln.strip().lstrip("/*#!-").strip() for ln in str(doc or "").strip().splitlines()[:3])
    text = " ".join(text.split())
    at = text.find(". ")
    return text[:at + 1] if 0 < at < 240 else text[:240]


def _stem(word: str) -> str:
    from memory_core.delivery.inject import stem  # inject imports this module lazily too
    return stem(word)


def _said(word: str, stems: set[str]) -> bool:
    """A name word the prompt says: the same stem, or one a 4+ letter start of the other."""
    w = _stem(word)
    if w in stems:
        return True
    return len(w) >= 4 and any(len(s) >= 4 and (s.startswith(w) or w.startswith(s)) for s in stems)


def _count(conn, query: str) -> int:
    return conn.execute("SELECT count(*) FROM code_fts WHERE code_fts MATCH ?", (query,)).fetchone()[0]


def _rows(conn, where: str, args) -> list[tuple]:
    return conn.execute(f"SELECT {_COLUMNS} FROM code_defs WHERE {where}", args).fetchall()


def foreign(conn, toks: list[str], overall_df: dict[str, int]) -> list[str]:
    """Prompt words the project never uses: in no chunk (its docs, memory, history) and in no
    component's name or doc."""
    out = []
    for t in toks:
        if len(t) < 4 or t.isdigit() or overall_df.get(t, 0):
            continue
        if not _count(conn, f'"{t}"'):
            out.append(t)
    return out


def match(conn, prompt: str, said, topic: list[str], overall_df: dict[str, int]
          ) -> tuple[Found | None, dict]:
    """The component this build prompt re-proposes, or None; and the decision's arithmetic
    (what was looked up, what matched and why, what made it another system's). `said` is the
    prompt read by inject.Said, `topic` its words without intent verbs (one per stem), and
    `overall_df` their frequencies over every chunk."""
    detail: dict = {}
    idents = written_identifiers(prompt)
    toks = list(topic)
    stems = set(said.stems)
    # 1. a written identifier: the definition of that name (a component first, then by rank)
    if idents:
        rows = _rows(conn, f"name IN ({','.join('?' * len(idents))}) AND (component = 1 OR exported = 1)",
                     idents)
        if rows:
            rows.sort(key=lambda r: (-r[10], -(r[11] or 0), r[1]))
            detail["identifiers"] = idents
            return Found(rows[0], "identifier", [rows[0][2]], {}), detail
        detail["identifiers_unknown"] = idents
    if not toks:
        return None, detail
    # 2. name words and doc words: candidates from the components' FTS table
    query = fts.match_query(toks)
    if not query:
        return None, detail
    hits = conn.execute("SELECT rowid FROM code_fts WHERE code_fts MATCH ? ORDER BY rank LIMIT ?",
                        (query, CANDIDATES)).fetchall()
    if not hits:
        detail["code_candidates"] = 0
        return None, detail
    ids = [h[0] for h in hits]
    rows = _rows(conn, f"id IN ({','.join('?' * len(ids))})", ids)
    n = conn.execute("SELECT count(*) FROM code_fts").fetchone()[0] or 1
    n_doc = conn.execute("SELECT count(*) FROM code_defs WHERE component = 1 AND doc IS NOT NULL "
                         "AND doc != ''").fetchone()[0] or 1
    common: dict[str, bool] = {}
    doc_df: dict[str, int] = {}

    def is_common(word: str) -> bool:
        if word not in common:
            common[word] = _count(conn, f'words : "{word}"') > COMMON_NAME_SHARE * n
        return common[word]

    def rare_in_doc(tok: str) -> bool:
        if tok not in doc_df:
            doc_df[tok] = _count(conn, f'doc : "{tok}"')
        return doc_df[tok] <= max(1, DOC_MAX_SHARE * n_doc)

    best = None
    scored = []
    for row in rows:
        words = [w for w in (row[12] or "").split() if w]
        if not words:
            continue
        required = [w for w in words if not is_common(w)]
        said_words = [w for w in words if _said(w, stems)]
        doc_words = set()
        if row[8]:
            doc_words = {_stem(t) for t in fts.tokens(row[8], min_len=MIN_WORD, limit=200)}
        doc_hits = [t for t in toks if _stem(t) in doc_words and not any(_same_word(t, w) for w in words)]
        rare_doc = [t for t in doc_hits if rare_in_doc(t)]
        named = bool(required) and all(w in said_words for w in required)
        why = None
        if named and (len(said_words) >= 2 or rare_doc):
            why = "name words"
        elif len(rare_doc) >= DOC_MIN and said_words:
            why = "doc words"
        arith = {"name": row[2], "said": said_words, "required": required, "rare_doc": rare_doc}
        scored.append(arith)
        if why is None:
            continue
        key = (why == "name words", len(said_words) + len(rare_doc), row[10], row[11] or 0)
        if best is None or key > best[0]:
            best = (key, row, why, said_words + rare_doc)
    detail["code_candidates"] = len(rows)
    detail["code_scored"] = scored[:5]
    if best is None:
        return None, detail
    away = foreign(conn, toks, overall_df)
    if len(away) >= MAX_FOREIGN:
        detail["code_foreign"] = away
        detail["code_rejected"] = best[1][2]
        return None, detail
    return Found(best[1], best[2], best[3], {}), detail


def _same_word(tok: str, word: str) -> bool:
    a, b = _stem(tok), _stem(word)
    return a == b or (len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a)))


# -- claims about the code -----------------------------------------------------------------

MAX_CLAIMED_SYMBOLS = 4
CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs")
_WORDISH = re.compile(r"[A-Za-z_$][\w$]*")


def claimed_symbols(attrs: dict, code_paths: list[str]) -> list[str]:
    """The identifiers an item claims the code has: its `symbols:` list, and, when it names a
    code file (`path:`), the identifiers its name and description write (CamelCase,
    snake_case): what it says lives in that file. An item naming no code file claims only
    its `symbols:`, so a library name it mentions in passing is never judged."""
    out = [s for s in _WORDISH.findall(str(attrs.get("symbols") or "")) if len(s) >= 2]
    if code_paths:
        out += written_identifiers(f"{attrs.get('name') or ''} {attrs.get('description') or ''}")
    return list(dict.fromkeys(out))[:MAX_CLAIMED_SYMBOLS]


def code_claim(conn, attrs: dict, paths: list[str], gone: bool) -> str | None:
    """What the code index refutes in an item's claim, or None: a symbol it names that no file
    defines any more, or one now defined somewhere other than the code file it names (`gone`:
    that file no longer exists; the rename's new place is then the news). Reads `code_defs`
    by name; an item naming nothing the index can judge, or a store without an index, is
    never refuted here."""
    if not has_index(conn):
        return None
    code_paths = [p for p in paths if p.endswith(CODE_SUFFIXES)]
    symbols = claimed_symbols(attrs, code_paths)
    if not symbols:
        return None
    at = commit(conn)
    read = f" (read from the code at {at[:12]})" if at else ""
    found = []
    for sym in symbols:
        rows = conn.execute("SELECT path, line_start, kind FROM code_defs WHERE name = ? "
                            "ORDER BY component DESC, rank DESC, path LIMIT 3", (sym,)).fetchall()
        if not rows:
            found.append(f"`{sym}` is no longer defined anywhere in the code{read}")
            continue
        if code_paths and not any(r[0] in code_paths for r in rows):
            where = ", ".join(f"{r[0]}:{r[1]}" for r in rows)
            lead = "" if gone else f"`{sym}` is no longer in {', '.join(code_paths)}; "
            found.append(f"{lead}`{sym}` is now defined at {where}{read}")
    return "; ".join(found) or None
