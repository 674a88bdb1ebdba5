"""What exists, said from the code: which indexed definition a build prompt re-proposes,
and what the code index refutes in a memory's claims.

    found, detail = exists.match(conn, p.text, p.said, p.topic, overall_df)   # p = prompt.read(...)
    found.name, found.path, found.line, found.why     # "GZipMiddleware", ..., "name words"
    exists.code_claim(conn, attrs, paths, gone=False)  # "`GZipper` is now defined at ..."

Reads only the code index's rows (`code_defs`, and the FTS tables `code_fts` over the
components and `code_api_fts` over the documented public functions, written at ingest by
memory_core.ingest.code): nothing is parsed on the hook path. A prompt names a definition
when it
- writes its identifier (`GZipMiddleware`, `toFormData`): an exported definition of that
  name, a component or not;
- says every word of its name but the project's common name words (GZipMiddleware <->
  "gzip middleware", "a middleware that gzips"; AxiosHeaders <-> "a headers class": "axios"
  is in a fifth of axios's names and says nothing), two words at least, or one beside a
  rare word of its doc or beside the project's prefix;
- or shares `DOC_MIN` rare words of its doc (each in at most `DOC_MAX_SHARE` of the
  searchable definitions).

A near miss shares a definition's words but builds something of another system: "rate
limiting for our nginx ingress". Such a prompt brings words the project never uses, in its
code or its docs (`foreign`): `MAX_FOREIGN` of them, and no fewer than the words it shares,
make it that other system's. A name that qualifies another noun ("request id fields"), a
written model ("URLSearchParams-style"), a question, and a tie between two files are silent
too. Thresholds were set on the tuning prompts of tests/fixtures/coderepos and are reported
beside the held-out ones in docs/internals/evaluation-code.md.
"""

from __future__ import annotations

import functools
import json
import re

from memory_core.delivery.prompt import INTENT_WORDS, stem
from memory_core.index import fts
from memory_core.store.db import sqlite3

# a word starting more than this share of the components' names is the project's own
# prefix or a generic head ("axios", "middleware" in a middleware package): optional
COMMON_NAME_SHARE = 0.2
COMMON_NAME_MIN = 3         # in a handful of names nothing is common yet
DOC_MIN = 3                 # rare doc words a match by its doc needs
DOC_MAX_SHARE = 0.05        # a rare doc word is in at most this share of documented components
MAX_FOREIGN = 2             # prompt words unknown to the project that make it another system's
CANDIDATES = 40
# What a developer calls a unit of code: "a gzip middleware", "a CancelToken class", "Jinja2
# templates support". Any other noun right after a component's name makes the name its
# qualifier: "request id fields" on a form, "a WebSocket client" for a trading bot.
KIND_WORDS = frozenset("""
middleware middlewares class classes function functions helper helpers handler handlers type types
component components module modules adapter adapters support api endpoint endpoints layer wrapper
object objects struct interface service feature system subsystem library package utility util method
implementation plugin hook hooks decorator app application instance mechanism abstraction primitive
version variant equivalent clone copy thing code logic
""".split())
MIN_WORD = 3
_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_CAMELISH = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]|^[a-z]+[A-Z]")
_QUESTION = re.compile(r"\s*(?:where|what|how|why|when|which|who|whose|does|do|did|is|are|was|were|can|could)\b",
                       re.I)
_MODEL = re.compile(r"[-\s]?(?:style|like|alike|inspired|esque)\b", re.I)
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


META_COMMON = "code.common_name_words"  # {"commit": ..., "n": ..., "words": [...]}


def refresh_common(conn) -> list[str]:
    """Count, once per ingest, the name words more than COMMON_NAME_SHARE of the searchable
    definitions (components and documented public functions) share — the project's own
    prefixes ("axios") — and keep them in meta for the prompt hook (call outside a write
    transaction). Counting them per prompt took one full-text lookup per candidate word."""
    from memory_core.store.meta import set_meta
    from memory_core.store.tx import write

    counts: dict[str, int] = {}
    n = 0
    for (name,) in conn.execute("SELECT name FROM code_defs WHERE component = 1 "
                                "OR id IN (SELECT rowid FROM code_api_fts)"):
        n += 1
        for part in set(name_parts(name)):
            counts[part] = counts.get(part, 0) + 1
    limit = max(COMMON_NAME_MIN, COMMON_NAME_SHARE * n)
    words = sorted(p for p, c in counts.items() if c > limit)
    with write(conn):
        set_meta(conn, META_COMMON, json.dumps({"commit": commit(conn), "n": n, "words": words}))
    return words


def common_words(conn) -> set[str] | None:
    """The common name words kept by the last ingest for the indexed commit, or None."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_COMMON,)).fetchone()
    try:
        kept = json.loads(row[0]) if row else None
    except ValueError:
        return None
    if not isinstance(kept, dict) or kept.get("commit") != commit(conn):
        return None
    return set(kept.get("words") or ())


def has_index(conn) -> bool:
    """Whether the store holds a code index with at least one component."""
    try:
        return conn.execute("SELECT 1 FROM code_defs WHERE component = 1 LIMIT 1").fetchone() is not None
    except sqlite3.OperationalError:  # a store opened without the migrations (no code tables)
        return False


def commit(conn) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'code.commit'").fetchone()
    return row[0] if row else None


def written_identifiers(prompt: str) -> list[str]:
    """Identifiers as written in the prompt: CamelCase, camelCase, snake_case, and the last
    part of a dotted name (`middleware.Compress` writes `Compress`). One written as a model
    ("a URLSearchParams-style serializer", "MockTransport-like") names what is to be built
    after it, not itself."""
    out = []
    for found in _IDENT.finditer(prompt):
        raw = found.group(0)
        if _MODEL.match(prompt, found.end()):
            continue
        for part in (raw, raw.rsplit(".", 1)[-1]) if "." in raw else (raw,):
            bare = part.strip("_$")
            if len(bare) >= 3 and (_CAMELISH.search(bare) or "_" in bare.strip("_")) and part not in out:
                out.append(part)
    return out


def first_line(doc: str | None) -> str:
    """A doc's first sentence, comment markers and JSDoc tags gone."""
    text = " ".join(ln.strip().lstrip("/*#!-").strip() for ln in str(doc or "").strip().splitlines()[:3])
    text = " ".join(text.split(" @", 1)[0].split())
    at = text.find(". ")
    return text[:at + 1] if 0 < at < 240 else text[:240]


@functools.lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    """prompt.stem, remembered: the same doc words recur across the candidates of a prompt."""
    return stem(word)


def _said(word: str, stems: set[str]) -> bool:
    """A name word the prompt says: the same stem, or one a 4+ letter start of the other."""
    w = _stem(word)
    if w in stems:
        return True
    return len(w) >= 4 and any(len(s) >= 4 and (s.startswith(w) or w.startswith(s)) for s in stems)


TABLES = ("code_fts", "code_api_fts")  # components; documented public functions (migration 10)


def _count(conn, query: str, table: str = "code_fts", upto: int | None = None) -> int:
    """Rows matching `query`, counted up to `upto` when given: a common word's postings at
    100k definitions cost a millisecond to count in full, and only "more than upto" matters."""
    if upto is None:
        return conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (query,)).fetchone()[0]
    return conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
                        (query, upto)).fetchone()[0]


def _count_all(conn, query: str, upto: int | None = None) -> int:
    total = 0
    for t in TABLES:
        total += _count(conn, query, t, None if upto is None else upto - total)
        if upto is not None and total >= upto:
            break
    return total


def _rows(conn, where: str, args) -> list[tuple]:
    return conn.execute(f"SELECT {_COLUMNS} FROM code_defs WHERE {where}", args).fetchall()


def source_of(conn, row):
    """The definition to cite for `row`: itself, unless it is a module's file row or a type
    declaration (`.d.ts`) and the same name is defined in source: then that definition (a
    class or function over its file's module row)."""
    if row[4] != "module" and not row[1].endswith(".d.ts"):
        return row
    alts = [r for r in _rows(conn, "name = ?", (row[2],)) if not r[1].endswith(".d.ts")]
    if row[4] == "module":
        alts = [r for r in alts if r[1] == row[1]]
    alts.sort(key=lambda r: (r[4] == "module", -r[10], -(r[11] or 0), r[1], r[5]))
    return alts[0] if alts else row


def _order(row) -> tuple:
    """Best first: a source file over a type declaration file (a `.d.ts` declares code that
    lives elsewhere), a component, the most mentioned."""
    return (row[1].endswith(".d.ts"), -row[10], -(row[11] or 0), row[1], row[5])


def foreign(conn, toks: list[str], overall_df: dict[str, int]) -> list[str]:
    """Prompt words the project never uses: in no chunk (its docs, memory, history) and in no
    component's or documented function's name or doc."""
    out = []
    for t in toks:
        if len(t) < 4 or t.isdigit() or overall_df.get(t, 0):
            continue
        if not _count_all(conn, f'"{t}"', upto=1):
            out.append(t)
    return out


_NAME_PART = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?![a-z])|[A-Z]?[a-z]+\d*|\d+")


@functools.lru_cache(maxsize=8192)
def _parts(name: str) -> tuple[str, ...]:
    return tuple(_name_parts(name))


def name_parts(name: str) -> list[str]:
    """A definition's name as lower-case words (`_name_parts`), remembered per process."""
    return list(_parts(name))


def _name_parts(name: str) -> list[str]:
    """A definition's name as lower-case words: CamelCase, acronyms and their plurals,
    snake_case; a lone letter joins the next part (GZipMiddleware -> gzip, middleware;
    combineURLs -> combine, urls; HTTPSRedirectMiddleware -> https, redirect, middleware)."""
    out, carry = [], ""
    for piece in re.split(r"[_\W]+", name):
        for part in _NAME_PART.findall(piece):
            if len(part) == 1 and part.isalpha():
                carry += part
                continue
            out.append((carry + part).lower())
            carry = ""
    if carry:
        out.append(carry.lower())
    return out


def said_parts(parts: list[str], said) -> list[str]:
    """The parts of a name the prompt says: a word with the same stem (or one a 4+ letter
    start of the other), or one written word that joins two neighbouring parts ("multipart"
    for Multi Part, "websocket" for Web Socket)."""
    stems = said.stems
    words = {p for clause in said.clauses for _s, p, _i in clause}
    out = [p for p in parts if _said(p, stems)]
    for a, b in zip(parts, parts[1:], strict=False):
        if a + b in words or _stem(a + b) in stems:
            out += [x for x in (a, b) if x not in out]
    return [p for p in parts if p in out]


def _phrase(said, parts: list[str]) -> tuple[list, int] | None:
    """Where the prompt says `parts` one after the other (a clause and the index of the last
    part), or None when it says them apart ("a middleware that gzips")."""
    if not parts:
        return None
    want = [_stem(p) for p in parts]
    for clause in said.clauses:
        stems = [s for s, _p, _i in clause]
        for at in range(len(stems) - len(want) + 1):
            if all(_same_word(stems[at + k], w) for k, w in enumerate(want)):
                return clause, at + len(want) - 1
    return None


def modifier(conn, said, name: str, parts: list[str], doc: str | None = None) -> str | None:
    """The noun a component's name qualifies in the prompt, or None: the word right after
    the name said as a phrase, unless it is a kind of code unit (KIND_WORDS), a stopword, a
    word of the component's own doc ("a CanceledError thrown when": its doc says thrown;
    "the profiler routes"), or makes with the name another defined name (CancelToken
    source -> CancelTokenSource)."""
    found = _phrase(said, parts)
    if found is None:
        return None
    clause, end = found
    last = clause[end][2]
    nxt = next((c for c in clause[end + 1:] if c[2] != last), None)
    if nxt is None:
        return None
    stem_, word, _i = nxt
    if (word in fts.STOPWORDS or word in INTENT_WORDS or word in KIND_WORDS or stem_ in KIND_WORDS
            or word.isdigit() or not word.isalpha()):
        return None
    if doc and stem_ in {_stem(t) for t in fts.tokens(doc, min_len=MIN_WORD, limit=400)}:
        return None
    joined = name + word[:1].upper() + word[1:]
    if conn.execute("SELECT 1 FROM code_defs WHERE name = ? LIMIT 1", (joined,)).fetchone():
        return None
    return f"{' '.join(parts)} {word}"


def _qualified(said, part: str) -> bool:
    """Is this one word said only right after another content word ("an xhr adapter")?
    Then it names a kind of thing, not the project's one thing of that name; said once on
    its own ("a headers class that normalizes header names") it is that thing."""
    want, seen = _stem(part), False
    for clause in said.clauses:
        for k, (s, _p, i) in enumerate(clause):
            if _same_word(s, want):
                seen = True
                before = next((c for c in reversed(clause[:k]) if c[2] != i), None)
                if before is None or before[1] in fts.STOPWORDS or before[1] in INTENT_WORDS:
                    return False
    return seen


def match(conn, prompt: str, said, topic: list[str], overall_df: dict[str, int]
          ) -> tuple[Found | None, dict]:
    """The component this build prompt re-proposes, or None; and the decision's arithmetic
    (what was looked up, what matched and why, what made it another system's). `said` is the
    prompt read by prompt.Said, `topic` its words without intent verbs (one per stem), and
    `overall_df` their frequencies over every chunk."""
    detail: dict = {}
    if _QUESTION.match(prompt) and prompt.rstrip().endswith("?"):
        # "where does axios decide which adapter to use?" asks about what exists
        detail["code_skipped"] = "a question, not a proposal"
        return None, detail
    toks = list(topic)
    idents = written_identifiers(prompt)
    found = _by_identifier(conn, idents, said, detail)
    worded = _by_words(conn, toks, said, detail)
    # a name said in full that contains the written identifier is the more specific one
    # ("a helper that converts a FormData object into JSON": formDataToJSON, not FormData)
    if found is None or (worded is not None and worded.why == "name words"
                         and set(name_parts(found.name)) < set(worded.matched)):
        found = worded
    if found is None:
        return None, detail
    # the words of an identifier the prompt writes are code, not another system's words
    written = {p for i in idents for p in name_parts(i)}
    away = foreign(conn, [t for t in toks if t not in written], overall_df)
    evidence = len(name_parts(found.name)) if found.why == "identifier" else len(found.matched)
    if len(away) >= MAX_FOREIGN and len(away) >= evidence:
        detail.update({"code_foreign": away, "code_rejected": found.name})
        return None, detail
    return found, detail


def _by_identifier(conn, idents: list[str], said, detail: dict) -> Found | None:
    """A written identifier: the definition of that name; of several written, the most
    specific (toFormData over FormData); of several definitions, `_order`'s first."""
    if not idents:
        return None
    rows = _rows(conn, f"name IN ({','.join('?' * len(idents))}) AND (component = 1 OR exported = 1)", idents)
    if not rows:
        detail["identifiers_unknown"] = idents
        return None
    rows.sort(key=lambda r: (-len(name_parts(r[2])), *_order(r)))
    detail["identifiers"] = idents
    name = rows[0][2]
    docs = " ".join(d for (d,) in conn.execute("SELECT doc FROM code_defs WHERE name = ? AND doc IS NOT NULL "
                                               "LIMIT 8", (name,)))
    qualifies = modifier(conn, said, name, name_parts(name), docs)
    if qualifies:
        detail["code_modifier"] = qualifies
        return None
    return Found(source_of(conn, rows[0]), "identifier", [name], {})


def _by_words(conn, toks: list[str], said, detail: dict) -> Found | None:
    """The words of a name, or rare words of a doc: candidates from the FTS tables."""
    query = fts.match_query(toks)
    if not query:
        return None
    ids = []
    for table in TABLES:
        ids += [r[0] for r in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?", (query, CANDIDATES))]
    detail["code_candidates"] = len(ids)
    if not ids:
        return None
    rows = _rows(conn, f"id IN ({','.join('?' * len(ids))})", ids)
    # rows of the FTS tables, from their %_docsize shadow tables: count(*) on an FTS5 table
    # reads every row (7 ms at 10k definitions), its docsize b-tree count does not
    n = sum(conn.execute(f"SELECT count(*) FROM {t}_docsize").fetchone()[0] for t in TABLES) or 1
    kept = common_words(conn)
    common: dict[str, bool] = {}
    doc_df: dict[str, int] = {}

    def is_common(part: str) -> bool:
        if kept is not None:
            return part in kept
        if part not in common:  # no list kept for this commit: count (slower, same rule)
            names = conn.execute(
                "SELECT name FROM code_defs WHERE id IN (SELECT rowid FROM code_fts WHERE code_fts MATCH ? "
                "UNION SELECT rowid FROM code_api_fts WHERE code_api_fts MATCH ?)", (f'words : "{part}"',) * 2)
            shared = sum(1 for (name,) in names if part in name_parts(name))
            common[part] = shared > max(COMMON_NAME_MIN, COMMON_NAME_SHARE * n)
        return common[part]

    rare_max = int(max(1, DOC_MAX_SHARE * n))

    def rare_in_doc(tok: str) -> bool:
        if tok not in doc_df:
            doc_df[tok] = _count_all(conn, f'doc : "{tok}"', upto=rare_max + 1)
        return doc_df[tok] <= rare_max

    # a prompt word's stem less its last letter is in any doc holding a word of that stem
    # ("proxies" for proxy): a cheap test of which docs can share words at all
    probes = [(s[:-1] if len(s) >= 4 else s) for s in (_stem(t) for t in toks)]
    passed, scored = [], []
    for row in rows:
        parts = name_parts(row[2])
        if not parts:
            continue
        said_words = said_parts(parts, said)
        doc = (row[8] or "").lower()
        maybe = sum(1 for p in probes if p in doc)
        if not said_words and maybe < DOC_MIN:
            continue  # neither named nor able to share DOC_MIN doc words
        # named: every word of the name said but the project's common name words and little
        # words (isAxiosError, formDataToJSON), and one said word not common; `all` stops at
        # the first unsaid word that is not common (most candidates), sparing the counts
        unsaid = [p for p in parts if p not in said_words and p not in fts.STOPWORDS]
        named = all(is_common(p) for p in unsaid) and any(
            not is_common(p) for p in said_words if p not in fts.STOPWORDS)
        if not named and maybe < DOC_MIN:
            continue
        rare_doc = []
        if maybe:
            rare_doc = [t for t, p in zip(toks, probes, strict=True) if p in doc and _doc_says(doc, t, p)
                        and not any(_same_word(t, q) for q in parts) and rare_in_doc(t)]
        required = [p for p in parts if p not in fts.STOPWORDS and (p in said_words or not is_common(p))]
        why = None
        # two words said, or one beside a rare doc word, or one beside the project's own
        # prefix (AxiosHeaders: "a headers class", not "an xhr adapter"); a one-word name
        # alone names nothing
        prefixed = (len(said_words) == 1 and bool(unsaid) and len(unsaid) + 1 == len(parts)
                    and not _qualified(said, said_words[0]))
        if named and (len(said_words) >= 2 or rare_doc or prefixed):
            why = "name words"
        elif len(rare_doc) >= DOC_MIN:
            why = "doc words"
        scored.append({"name": row[2], "said": said_words, "required": required, "rare_doc": rare_doc,
                       "why": why})
        if why is not None and why == "name words":
            qualifies = modifier(conn, said, row[2], said_words, row[8])
            if qualifies:
                scored[-1]["modifier"] = qualifies
                why = None
        if why is not None:
            # said as a phrase ("an authentication middleware") beats said apart
            phrase = len(said_words) >= 2 and _phrase(said, said_words) is not None
            # a word of the name weighs twice a word of the doc ("a multipart form parser
            # for file uploads" is MultiPartParser, not FormData "containing file uploads")
            passed.append(((not row[1].endswith(".d.ts"), 2 * len(said_words) + len(rare_doc), why == "name words",
                            phrase), row, why, said_words + rare_doc))
    detail["code_scored"] = sorted(scored, key=lambda s: (s["why"] is None, -len(s["said"]) - len(s["rare_doc"])))[:4]
    if not passed:
        return None
    passed.sort(key=lambda p: (p[0], p[1][10], p[1][11] or 0), reverse=True)
    best = passed[0]
    # two definitions in different files named as well as each other: the prompt does not
    # say which, and a wrong DO-NOT-REBUILD costs more than a missing one
    rival = next((p for p in passed[1:] if p[1][1] != best[1][1]), None)
    if rival is not None and rival[0] == best[0]:
        detail["code_ambiguous"] = [best[1][2], rival[1][2]]
        return None
    said_words = [w for w in best[3] if w in name_parts(best[1][2])]
    return Found(source_of(conn, best[1]), best[2], best[3],
                 {"name_words": said_words, "doc_words": [w for w in best[3] if w not in said_words]})


def _doc_says(doc: str, tok: str, probe: str) -> bool:
    """Does the (lower-cased) doc hold a word with `tok`'s stem? Only the words starting with
    the probe are stemmed, not the whole doc."""
    want = _stem(tok)
    for m in re.finditer(r"(?<![a-z0-9])" + re.escape(probe) + r"[a-z0-9]*", doc):
        word = m.group(0)
        if len(word) >= MIN_WORD and word not in fts.STOPWORDS and _stem(word) == want:
            return True
    return False


def _same_word(tok: str, word: str) -> bool:
    a, b = _stem(tok), _stem(word)
    return a == b or (len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a)))


# -- claims about the code -----------------------------------------------------------------

MAX_CLAIMED_SYMBOLS = 4
CODE_SUFFIXES = (".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs")
_WORDISH = re.compile(r"[A-Za-z_$][\w$]*")
_PATH_LINE = re.compile(r"([\w./-]+\.\w+):(\d+)")


def claimed_symbols(attrs: dict, code_paths: list[str]) -> list[str]:
    """The identifiers an item claims the code has: its `symbols:` list, and, when it names a
    code file (`path:`), an identifier that is its name (`GZipMiddleware`, as `memhealth
    inventory propose` writes them). Prose is not judged: a description writing
    `lru_cache` or `asyncio.Queue` names a library's code, not a claim about this project's."""
    out = [s for s in _WORDISH.findall(str(attrs.get("symbols") or "")) if len(s) >= 2]
    if code_paths:
        name = str(attrs.get("name") or "").strip().strip("`")
        if _WORDISH.fullmatch(name) and name in written_identifiers(name):
            out.append(name)
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
    # a `path:line` the item names: the line a symbol of it was defined at
    lines = {p: int(n) for p, n in _PATH_LINE.findall(str(attrs.get("path") or "")) if p in code_paths}
    found = []
    for sym in symbols:
        rows = conn.execute("SELECT path, line_start, line_end FROM code_defs WHERE name = ? "
                            "ORDER BY component DESC, rank DESC, path LIMIT 3", (sym,)).fetchall()
        if not rows:
            found.append(f"`{sym}` is no longer defined anywhere in the code{read}")
            continue
        if code_paths and not any(r[0] in code_paths for r in rows):
            where = ", ".join(f"{r[0]}:{r[1]}" for r in rows)
            lead = "" if gone else f"`{sym}` is no longer in {', '.join(code_paths)}; "
            found.append(f"{lead}`{sym}` is now defined at {where}{read}")
            continue
        here = [r for r in rows if r[0] in lines]
        if here and not any(r[1] <= lines[r[0]] <= r[2] for r in here):
            r = here[0]
            found.append(f"`{sym}` is no longer at {r[0]}:{lines[r[0]]}; it is defined at {r[0]}:{r[1]}{read}")
    return "; ".join(found) or None
