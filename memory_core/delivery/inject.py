"""The injection cascade after the intent gate: retrieval, rare-word relevance, per-session
caps, rendering. Silence is the default; every step records its arithmetic.

    result = decide(conn, prompt, "build", cfg, session_id, trace)
    result.outcome   # below_relevance | capped | injected | suppressed_ablation
    result.detail    # {"tokens": 7, "matched": 3, "idf_sum": 9.4, "threshold": 7.0, ...}

Retrieval here is the BM25 leg only: the prompt path must not wait on an embedding server
(the reference design's rule: no inline Ollama on the lineage path). Candidates come only
from curated sources (`injection.sources`: memory files, docs, ledgers by default): raw
transcripts would echo the session's own words back at it. Relevance needs rare
words shared on word boundaries: at least `min_matches` prompt tokens found in the item,
their summed IDF at least `idf_sum_threshold`, and one of them at least `distinctive_idf`.
IDF is counted over those curated sources too once they hold 50 chunks: each re-proposal
of a dead end is ingested as a transcript chunk, and counted there it would make the dead
end's words commoner exactly as it recurs (fewer curated chunks: over the whole index).
Below 50 chunks in all IDF says little, so only the overlap count applies (as in the paper's reference harness).

What may be DO-NOT-REBUILD or DEAD-END is decided by the item, not the intent
(`entry_block`): subsystem inventory entries (memory of kind `subsystem`) are
DO-NOT-REBUILD, dead-end records with `status: confirmed` are DEAD-END ("was tried and
ruled out", the statement once, where it was said), on build or decision intent; a
confirmed decision stays lineage. Their leg runs first and scores every entry
directly (an inventory is tens of entries): an entry is relevant when the prompt names it
(`entry_relevance`) or shares rare words with it, and one entry — the best named — is
rendered, with where it lives. A doc or changelog section is never the subsystem: on build
intent it speaks only as evidence, a "mentioned in" line under the entry's block; on decide
or investigate intent it may still be a lineage block. An index file (kind `index`) is
never offered. Thresholds and rules were set on real text (tests/fixtures/realcorpus,
benchmarks/bench_dnr.py), not only on synthetic corpora.

Two readings refine naming: a code identifier the entry lists (`verify=`, `follow_redirects`,
`DigestAuth`), written in the prompt or spelled in words, names it; a prompt asking for a
new member of an entry's category ("a request-id middleware", "a custom middleware") is new
work, and then only a written identifier still names an entry (`new_instance`).

What the tree refutes is never DO-NOT-REBUILD (`stale_claim`): given the project root, each
item kept is checked with one os.stat per path it names — an inventory entry whose `path:`
is gone, a confirmed record whose file changed after its `recorded:` date — and delivered as
a STALE-CLAIM block naming what changed.
"""

from __future__ import annotations

import json
import os
import re
import time

from memory_core.delivery import exists
from memory_core.delivery.intent import BUILD, DECISION, INVESTIGATION
from memory_core.index import docfreq, fts
from memory_core.outbox.spans import db_span
from memory_core.store.db import write
from memory_core.text import clip, git_provenance

MIN_IDF_CORPUS = 50
MIN_QUERY_IDF = 0.5  # a token in more than ~60% of chunks does not help rank candidates
MAX_PROMPT_TOKENS = 32
# Above this many chunks the retrieval query keeps its rarest words within QUERY_POSTINGS
# postings (_bounded_query); at or below it a query costs at most the whole (small) store.
BM25_UNBOUNDED_MAX = 50_000
QUERY_POSTINGS = 32_768
CANDIDATES = 10
MAX_ITEMS = 2
# What the entry leg scores: inventory entries (DO-NOT-REBUILD) and dead-end
# records in a confirmed state (DEAD-END). A confirmed decision stays lineage.
DNR_KINDS = frozenset({"subsystem"})
DEAD_END_KINDS = frozenset({"dead-end", "dead_end"})
CONFIRMED_STATES = frozenset({"confirmed"})
MAX_DEAD_END = 1                   # one DEAD-END per prompt: the record it re-proposes best
DNR_SOURCES = ("memory", "ledger")
# the entry leg's kinds, written as the partial index chunks_entries (schema migration 5)
# says them: SQLite uses that index only for this exact term (tests/test_docfreq.py pins it)
ENTRY_KINDS_SQL = "kind IN ('dead-end', 'dead_end', 'subsystem')"
NEVER_OFFERED = ("index",)         # MEMORY.md and the like: a list of items, not an item
LINEAGE_KINDS = frozenset({"decision", "dead-end", "dead_end", "correction", "record"})
MAX_EVIDENCE = 2
MAX_DNR = 1                        # one DO-NOT-REBUILD per prompt: the entry it names best


# The request's verb is not its topic: "write", "implement", "should" say nothing about which
# subsystem a prompt is about (the paper's reference harness drops such tokens too).
INTENT_WORDS = frozenset(w for v in (BUILD, DECISION, INVESTIGATION)
                         for p in (*v.words, *v.phrases) for w in p.split())
# A qualifier run stops at a stopword, an intent verb or a quantifier ("several tasks" asks
# for no new kind of task).
RUN_STOPS = fts.STOPWORDS | INTENT_WORDS | frozenset({"several", "multiple", "various", "numerous", "two", "three"})
# CamelCase parts, acronyms included: DigestAuth -> Digest Auth, CORSMiddleware -> CORS Middleware
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Code identifiers as a developer types them: dotted (response.json), snake_case and
# ALL_CAPS_NAMES, keyword arguments (verify=), long flags (--verbose), CamelCase
# (HTTPDigestAuth, GZipMiddleware). A plain word (Digest, TLS) is not one. Candidates come
# from one cheap scan; plain strings tests sort them (a regex of alternatives was 2.5x slower).
# The scan is linear in the text: a candidate is a letter or `_`, a run of [a-z0-9], then one
# of [._=A-Z]. A start inside a run an earlier start already read ends where that run ends,
# so it is never tried: a lowercase start only after a non-identifier character or after
# digits that follow one (the lookbehind); uppercase and `_` starts anywhere. Quantifiers are
# possessive (their classes are disjoint from what follows, so nothing is lost). The old
# `[A-Za-z_][a-z0-9]*[._=A-Z][\w.]*=?` backtracked over every start: 25 s on a 100,000-
# character token, past the prompt hook's timeout.
_CANDIDATE = re.compile(r"--[A-Za-z][\w-]*+"
                        r"|(?:(?<![A-Za-z0-9_])[0-9]*+(?=[a-z])|(?=[A-Z_]))"
                        r"(?P<ident>[A-Za-z_][a-z0-9]*+[._=A-Z][\w.]*+=?)")
_CAMELISH = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_PARTS = re.compile(r"[^\W_]+")
# A clause ends at punctuation (a dot only before a space: response.json stays whole); a
# phrase inside it ends at a stopword or an intent verb.
_CLAUSE = re.compile(r"[,;:!?()\[\]{}\"`<>|]|\.(?=\s|$)")
# Words that ask for one more member of a category ("a new response class", "another hook",
# "a custom middleware"): new work, not the category entry. "custom" and "own" also describe
# a kind ("custom exception handlers": the feature), so they count only after "a"/"an".
INSTANCE_WORDS = frozenset({"new", "another", "additional", "extra"})
KIND_WORDS = frozenset({"custom", "own"})
INDEFINITE = frozenset({"a", "an"})


def confirmed(attrs: dict | None) -> bool:
    """A record's frontmatter `status: confirmed` (memhealth triage writes it; the memory
    ingester keeps it in the chunk's attrs)."""
    return str((attrs or {}).get("status", "")).strip().lower() in CONFIRMED_STATES


def entry_block(kind: str | None, attrs: dict | None) -> str | None:
    """Which block an item of the entry leg would be: "dnr" for an inventory entry, "dead_end"
    for a dead-end record once confirmed (a pending or hand-written one without `status:
    confirmed` never claims to have been ruled out), None for everything else (lineage)."""
    kind = (kind or "").lower()
    if kind in DNR_KINDS:
        return "dnr"
    return "dead_end" if kind in DEAD_END_KINDS and confirmed(attrs) else None


def dnr_eligible(kind: str | None, attrs: dict | None) -> bool:
    """May this item be a DO-NOT-REBUILD? Only an inventory entry: a confirmed dead end is a
    DEAD-END, a confirmed decision is lineage."""
    return entry_block(kind, attrs) == "dnr"


def stem(token: str) -> str:
    """A light suffix stemmer so "proxies" meets "proxy" and "hooks" "hook" when matching a
    prompt against an item (the index's porter stemmer already does this for df)."""
    if len(token) > 4 and token.endswith("ies"):
        token = token[:-3] + "y"
    elif len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            token = token[:-len(suffix)]
            break
    return token[:-1] if len(token) > 4 and token.endswith("e") else token


class InjectResult:
    """What the cascade decided: outcome, text to inject (or None), timings, arithmetic."""

    __slots__ = ("outcome", "text", "retrieval_ms", "detail", "problems")

    def __init__(self, outcome, text=None, retrieval_ms=None, detail=None, problems=()):
        self.outcome = outcome
        self.text = text
        self.retrieval_ms = retrieval_ms
        self.detail = detail or {}
        self.problems = list(problems)


_COLUMNS = "id, source, path, line_start, line_end, kind, title, content, signal_weight, created_ns, attrs"


def _candidates(conn, toks, sources, skip=frozenset()):
    """Lineage candidates: BM25 over the curated sources, minus index files, inventory
    entries and the items the entry leg already scored (`skip`: those have their own leg)."""
    hits = fts.bm25(conn, toks, limit=CANDIDATES * 2, sources=sources)
    if not hits:
        return []
    ids = [h[0] for h in hits]
    rows = conn.execute(f"SELECT {_COLUMNS} FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
    by_id = {r[0]: r for r in rows}
    out = [(by_id[i], score) for i, score in hits
           if i in by_id and i not in skip and (by_id[i][5] or "") not in NEVER_OFFERED
           and (by_id[i][5] or "") not in DNR_KINDS]
    return out[:CANDIDATES]


def _entries(conn) -> list[tuple]:
    """Every item of the entry leg (`entry_block`): the inventory and the confirmed dead ends
    are tens of items, read through the (source, path) index, so they are scored whole
    instead of ranked."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM chunks WHERE source IN ({','.join('?' * len(DNR_SOURCES))}) "
        f"AND {ENTRY_KINDS_SQL} ORDER BY id", DNR_SOURCES).fetchall()
    return [r for r in rows if entry_block(r[5], _attrs(r))]


def _attrs(row) -> dict:
    try:
        value = json.loads(row[10]) if row[10] else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _words(text: str) -> set[str]:
    """Stemmed words of an item; CamelCase names also give their parts (DigestAuth: digest, auth)."""
    return {stem(t) for t in fts.tokens(f"{text} {_CAMEL.sub(' ', text)}", min_len=2, limit=100_000)}


def item_text(row) -> str:
    """What an item says: title, content, path and attributes (an entry's description,
    aliases and `path:` among them)."""
    _id, source, path, _ls, _le, kind, title, content, _w, _c, attrs = row
    return f"{title or ''} {content} {path} {attrs or ''}"


def record_text(row) -> str:
    """What a record says: its title and its statement. Not its file path, its `source:`
    (a transcript path, a session id) or its `Source:` line: words of where it was said are
    not words of what was tried."""
    attrs = _attrs(row)
    if not attrs.get("description"):
        return item_text(row)
    return f"{attrs.get('name') or row[6] or ''} {attrs['description']}"


class Entry:
    """An inventory entry read once per prompt: its row and stemmed words; its listed
    identifiers are read only for an entry sharing enough words to pass (the hook's budget)."""

    __slots__ = ("row", "block", "text", "words", "_idents")

    def __init__(self, row):
        self.row, self.block = row, entry_block(row[5], _attrs(row))
        self.text = record_text(row) if self.block == "dead_end" else item_text(row)
        self.words, self._idents = _words(self.text), None

    @property
    def idents(self) -> dict[str, list[str]]:
        if self._idents is None:
            self._idents = identifiers(self.text)
        return self._idents


def relevance(prompt_toks, chunk_row, idf, words: set[str] | None = None) -> dict:
    """The gate arithmetic for one candidate: prompt tokens found in the item (stemmed on
    both sides), their summed IDF and the largest."""
    _id = chunk_row[0]
    words = _words(item_text(chunk_row)) if words is None else words
    matched = [t for t in prompt_toks if stem(t) in words]
    return {"chunk_id": _id, "matched": len(matched), "matched_tokens": matched,
            "idf_sum": round(sum(idf.get(t, 0.0) for t in matched), 3),
            "max_idf": round(max((idf.get(t, 0.0) for t in matched), default=0.0), 3)}


def entry_name(row) -> str:
    attrs = _attrs(row)
    return str(attrs.get("name") or row[6] or row[2])


def _names(prompt_stems: set[str], name: str) -> float:
    """Share of a name's words the prompt says, a word also said by its start ("auth" for
    authentication, "config" for configuration: how developers abbreviate)."""
    toks = {stem(t) for t in fts.tokens(name, min_len=2)}
    if not toks:
        return 0.0
    said = {t for t in toks if t in prompt_stems
            or any(len(p) >= 4 and t.startswith(p) for p in prompt_stems)}
    return len(said) / len(toks)


def _split(word: str) -> list[str]:
    """Lowercase parts of one written word: hyphens, underscores, dots and CamelCase split
    it; a lone letter joins the next part (GZip -> gzip, not g + zip)."""
    out, carry = [], ""
    for piece in _PARTS.findall(word):
        for part in _CAMEL.sub(" ", piece).split():
            if len(part) == 1 and part.isalpha():
                carry += part
                continue
            out.append((carry + part).lower())
            carry = ""
    if carry:
        out.append(carry.lower())
    return out


def _identifier(raw: str) -> str | None:
    """`raw` as an identifier (trailing sentence dot dropped), or None for a plain word."""
    if raw.startswith("-"):
        return raw if raw.startswith("--") and len(raw) > 2 and raw[2].isalpha() else None
    if raw.endswith("="):
        return raw if "." not in raw else None
    raw = raw.rstrip(".")
    if "." in raw:  # a dotted name needs two-letter components: e.g is not one
        return raw if min(len(c) for c in raw.split(".")) >= 2 else None
    if "_" in raw:
        return raw if "_" in raw.strip("_") and not raw.endswith("_") else None
    return raw if _CAMELISH.search(raw) else None


def candidates(text: str) -> list[str]:
    """Identifier-shaped words of `text` in order, before `_identifier` sorts them; one
    linear scan."""
    return [m.group("ident") or m.group(0) for m in _CANDIDATE.finditer(text)]


def identifiers(text: str) -> dict[str, list[str]]:
    """Code identifiers in `text`: {normalised form: parts}. The form is lowercase without a
    keyword `=` or a flag's `--`, so `verify=` in a prompt meets `verify=` in an entry. A
    dotted name's compound components count on their own too (Jinja2Templates.TemplateResponse
    lists TemplateResponse)."""
    out = {}
    for candidate in candidates(text):
        raw = _identifier(candidate)
        if raw is None:
            continue
        out[raw.lower().strip("-=")] = _split(raw)
        if "." in raw:
            for part in raw.split("."):
                if _identifier(part) is not None and "." not in part:
                    out[part.lower()] = _split(part)
    return out


class Said:
    """What a prompt says, read once per prompt for every entry: the identifiers it writes,
    its clauses as (part stem, word index) runs, and its words' stems."""

    __slots__ = ("idents", "clauses", "stems")

    def __init__(self, prompt: str):
        self.idents = identifiers(prompt)
        self.clauses = []
        for clause in _CLAUSE.split(prompt):
            parts = [(stem(p), p, i) for i, word in enumerate(clause.split()) for p in _split(word)]
            if parts:
                self.clauses.append(parts)
        self.stems = {s for clause in self.clauses for s, _p, _i in clause}


def _known(part: str, vocab: set[str]) -> bool:
    """Is this word the entry's? Stemmed equality, or one a 4+ letter start of the other
    ("auth" and "authentication", "config" and "configuration")."""
    if part in vocab or part.isdigit():
        return True
    return len(part) >= 4 and any(len(v) >= 4 and (v.startswith(part) or part.startswith(v)) for v in vocab)


def _same(word: str, part: str) -> bool:
    """A written word says an identifier's part: the same stem, or one a 4+ letter start of
    the other (DigestAuth's "auth" in "digest authentication")."""
    return word == part or (len(word) >= 4 and len(part) >= 4 and (word.startswith(part) or part.startswith(word)))


def spelled(said: Said, parts: list[str]) -> bool:
    """Does the prompt spell a multi-part identifier in words, in order ("digest
    authentication" for DigestAuth, "follow redirects" for follow_redirects)?"""
    if len(parts) < 2:
        return False
    want = [stem(p) for p in parts]
    if not any(_same(s, want[0]) for s in said.stems):  # most identifiers: not even begun
        return False
    for clause in said.clauses:
        stems = [s for s, _p, _i in clause]
        for at in range(len(stems) - len(want) + 1):
            if all(_same(stems[at + k], w) for k, w in enumerate(want)):
                return True
    return False


def heads(name: str) -> dict[str, tuple[set[str], bool]]:
    """The head noun of an entry's name, one per conjunct, with the conjunct's words and
    whether the head is plural: "built-in middleware" -> middleware ({built, middleware},
    singular); "TLS verification and CA bundle" -> verification, bundle; "response classes"
    -> class (plural: a category of many)."""
    out = {}
    for conjunct in re.split(r"\band\b|,|&", name):
        parts = _split(conjunct)
        if parts:
            last = parts[-1]
            out[stem(last)] = ({stem(p) for p in parts if p not in fts.STOPWORDS},
                               last.endswith("s") and stem(last) != last)
    return out


def new_instance(said: Said, name: str, vocab: set[str], inventory: set[str]) -> str | None:
    """Does the prompt ask for a new member of the category the entry names? Where the
    prompt says the entry's head noun, read the words qualifying it (back to a stopword or an
    intent verb). A qualifier no inventory entry mentions ("rate limiting middleware",
    "MessagePack response class") names an instance the inventory does not list; "a new",
    "another", or "a custom" right after the intent verb ("write a custom middleware") ask
    for one more — unless the entry is one thing, named in the singular, and the prompt says
    its whole name ("a new command line client" is that client again). A qualifier this entry lists ("CORS middleware", "signed cookie session
    middleware") is a listed instance, a re-proposal; one another entry lists ("SOCKS proxy
    support" beside "HTTP/2 support") is that entry's business. Returns the qualifying
    words that make it new, or None."""
    name_stems = {stem(p) for p in _split(name)}
    for head, (conjunct, plural) in heads(name).items():
        if head not in said.stems:
            continue
        for clause in said.clauses:
            for at, (s, _p, word) in enumerate(clause):
                if s != head:
                    continue
                run, before, verb = _qualifiers(clause, at, word)
                unknown = [p for ks, p in run if p not in INSTANCE_WORDS | KIND_WORDS and not _known(ks, inventory)]
                # "custom" in an entry's text ("custom SSL contexts") names no listed instance
                specific = [p for ks, p in run if ks not in name_stems and p not in INSTANCE_WORDS | KIND_WORDS
                            and _known(ks, vocab)]
                elsewhere = [p for ks, p in run if p not in INSTANCE_WORDS | KIND_WORDS
                             and ks not in name_stems and not _known(ks, vocab) and _known(ks, inventory)]
                asks = [p for _ks, p in run if p in INSTANCE_WORDS
                        or (p in KIND_WORDS and before in INDEFINITE and verb)]
                # an entry named in the singular is one thing: "a new command line client",
                # its whole name said, is that thing again, a re-proposal; "a new response
                # class" is one more of a category named in the plural
                again = not plural and conjunct <= {ks for ks, _p in run} | {head}
                if unknown or (asks and not specific and not elsewhere and not again):
                    return " ".join(p for _s, p in reversed(run))
    return None


def _qualifiers(clause, at: int, word: int) -> tuple[list, str | None, bool]:
    """The words before clause[at] that qualify it, nearest first, as (stem, word); the word
    that ended the run; whether an intent verb stands right before that ("write a ...")."""
    run, before, k = [], None, at - 1
    compound = {i for _s, _p, i in clause if sum(1 for _x, _y, j in clause if j == i) > 1}
    while k >= 0 and len(run) < 4:
        ks, kp, kw = clause[k]
        if kw != word and kw not in compound and kp in RUN_STOPS and kp not in KIND_WORDS:
            before = kp
            break
        if not (kw in compound and kp in fts.STOPWORDS):  # "built-in": the "in" is no qualifier
            run.append((ks, kp))
        k -= 1
    verb = before is not None and k >= 1 and (clause[k - 1][1] in INTENT_WORDS)
    return run, before, verb


def entry_relevance(prompt_stems: set[str], topic_toks, row, idf, icfg, small: bool,
                    said: Said | None = None, inventory: set[str] | None = None,
                    entry: Entry | None = None) -> dict:
    """Is this inventory entry what the prompt proposes to build? The prompt must name it
    (every word of its name or of one alias, and one more shared word; or half its name and
    two more), or share `min_matches` distinctive words with it whose IDF sum reaches
    `idf_sum_threshold`; under MIN_IDF_CORPUS chunks, `min_matches` words. `topic_toks` are the
    prompt's words minus its intent verbs, one per stem.

    The code identifiers an entry lists (`verify=`, `follow_redirects`, `DigestAuth`) are
    names of it too: a prompt that writes one, or spells a compound one in words ("digest
    authentication"), names the entry. A prompt asking for a new member of the entry's
    category (`new_instance`) does not, whatever else it shares."""
    said = said or Said(" ".join(topic_toks))
    entry = entry or Entry(row)
    attrs = _attrs(row)
    arith = relevance(topic_toks, row, idf, entry.words)
    names = [entry_name(row)] + [a.strip() for a in str(attrs.get("aliases", "")).split(",") if a.strip()]
    cover = max(_names(prompt_stems, n) for n in names)
    need = icfg["min_matches"]
    written, spelt = [], []
    if arith["matched"] >= need:  # fewer shared words cannot pass however it is named
        listed = entry.idents
        written = sorted(set(said.idents) & set(listed))
        spelt = sorted(k for k, parts in listed.items() if k not in written and spelled(said, parts))
    if written or spelt:
        cover = max(cover, 1.0)
    named = (cover >= 1.0 and arith["matched"] >= need) or (cover >= 0.5 and arith["matched"] >= need + 1)
    # unnamed, both reference gates at once: `min_matches` distinctive words (the DNR gate)
    # whose IDF sum reaches the lineage threshold
    distinctive = sum(1 for t in arith["matched_tokens"] if idf.get(t, 0.0) >= icfg["distinctive_idf"])
    rare = arith["matched"] >= need if small else (
        distinctive >= need and arith["idf_sum"] >= icfg["idf_sum_threshold"])
    # a dead end is one thing that was tried, not a category with members
    instance = None if entry.block == "dead_end" else new_instance(
        said, entry_name(row), entry.words, entry.words if inventory is None else inventory)
    arith["distinctive"] = distinctive
    arith.update({"name": entry_name(row), "name_cover": round(cover, 3), "named": named,
                  "identifiers": written + spelt, "written": bool(written), "new_instance": instance,
                  "passed": (named or rare) and instance is None})
    return arith


def decide(conn, prompt: str, intent: str, cfg, session_id: str | None, trace,
           root: str | None = None) -> InjectResult:
    """Run the cascade for one prompt. With `root` (the project root; the prompt hook always
    passes it) each item chosen is checked against the tree (`stale_claim`): one whose claim
    fails is delivered as a STALE-CLAIM block instead of the block it would have been."""
    icfg = cfg["injection"]
    toks = fts.tokens(prompt, min_len=4, limit=MAX_PROMPT_TOKENS)
    # the entry leg: names are short ("CLI", "TLS", "max"), so three-letter words count; the
    # intent verb does not; "files" and "file" are one word
    topic, stems = [], set()
    for t in fts.tokens(f"{prompt} {_CAMEL.sub(' ', prompt)}", min_len=3, limit=MAX_PROMPT_TOKENS):
        if t not in INTENT_WORDS and stem(t) not in stems:
            stems.add(stem(t))
            topic.append(t)
    prompt_stems = stems
    said = Said(prompt)
    detail = {"intent": intent, "tokens": len(toks), "threshold": icfg["idf_sum_threshold"],
              "distinctive_idf": icfg["distinctive_idf"], "min_matches": icfg["min_matches"]}

    with trace.span("inject.relevance") as span:
        # Rarity is measured over the curated sources, the candidates' own corpus, once they
        # are a corpus (MIN_IDF_CORPUS chunks): a transcript echoes the session, and each
        # re-proposal of a dead end ingested as a transcript chunk would make the dead end's
        # words commoner exactly as it recurs. Fewer curated chunks say too little about
        # rarity: then the whole index does, as before (and a dead end can still be named).
        # Counts are kept on write and common words' frequencies kept between prompts
        # (memory_core.index.docfreq): nothing here grows with the store.
        curated = tuple(icfg["sources"])
        n_all, n_docs = docfreq.chunk_count(conn), docfreq.chunk_count(conn, curated)
        over = "curated" if n_docs >= MIN_IDF_CORPUS else "all"
        if over == "all":
            n_docs, by_source = n_all, None
        else:
            by_source = curated if n_docs < n_all else None  # all curated: the cheap count
        small = n_docs < MIN_IDF_CORPUS
        icfg = rarity_floor(icfg, n_docs, detail)
        overall: dict[str, int] = {}
        df = docfreq.doc_freqs(conn, list(dict.fromkeys(toks + topic)), by_source, overall)
        idf = {t: fts.idf(n_docs, n) for t, n in df.items()}
        present = [t for t in toks if df[t]]
        top_idf = round(max((idf[t] for t in present), default=0.0), 3)
        detail.update({"corpus": n_docs, "idf_over": over,
                       "small_corpus": small, "max_prompt_idf": top_idf})
        span.update({"memhealth.relevance.threshold": icfg["idf_sum_threshold"],
                     "memhealth.relevance.small_corpus": small,
                     "memhealth.relevance.max_prompt_idf": top_idf})

        # Leg 1, what may be DO-NOT-REBUILD: the inventory, scored whole (no ranking needed).
        t0 = time.perf_counter()
        entries = _entries(conn) if toks and intent in DNR_INTENTS else []
        dnr, dead_ends, entry_scored = [], [], []
        seen_names = set()
        # every word the inventory knows: a qualifier none of it mentions names something new
        profiles = [Entry(r) for r in entries]
        inventory = set().union(*(e.words for e in profiles if e.block == "dnr"))
        for entry in profiles:
            row = entry.row
            arith = entry_relevance(prompt_stems, topic, row, idf, icfg, small, said, inventory, entry)
            entry_scored.append(arith)
            if arith["passed"] and entry.block == "dead_end":
                dead_ends.append((arith, row))
            elif arith["passed"] and arith["name"].lower() not in seen_names:
                seen_names.add(arith["name"].lower())
                dnr.append((arith, row))
        dead_ends.sort(key=lambda s: (not s[0]["named"], -s[0]["idf_sum"]))
        # A prompt asking for a new member of a category the inventory has ("a request-id
        # middleware") is about that new thing; another entry sharing its incidental words
        # ("sets a header on every response") is not what it builds. Only an identifier the
        # entry lists, written out, still names one.
        instances = [a for a in entry_scored if a["new_instance"]]
        if instances:
            detail["new_instance"] = [{"name": a["name"], "words": a["new_instance"]} for a in instances[:MAX_ITEMS]]
            dnr = [(a, r) for a, r in dnr if a["written"]]
        dnr.sort(key=lambda s: (not s[0]["written"], not s[0]["named"], -s[0]["name_cover"], -s[0]["idf_sum"]))
        # A lexical miss rescued by meaning (opt-in, measured: memory_core.delivery.meaning):
        # no entry passed the rare-word gate, none is read as a new member of a category
        query_vector = None
        if (not dnr and not dead_ends and not instances and entry_scored and icfg["meaning_rescue"] == "on"
                and cfg["embedding"]["url"] and icfg["meaning"] == "on"):
            from memory_core.delivery import meaning

            pairs = [(a, e.row) for a, e in zip(entry_scored, profiles, strict=True) if e.block == "dnr"]
            found, query_vector, detail["meaning"] = meaning.rescue(conn, cfg, prompt, pairs, trace)
            if found is not None:
                dnr = [found]
        detail.update({"inventory": len(entries), "dnr_passed": len(dnr)})
        if dead_ends:
            detail["dead_end"] = [{"name": a["name"], "matched": a["matched"], "idf_sum": a["idf_sum"],
                                   "named": a["named"]} for a, _r in dead_ends[:MAX_ITEMS]]
        span.update({"memhealth.relevance.inventory": len(entries), "memhealth.relevance.dnr_passed": len(dnr)})
        if dnr:
            detail["dnr"] = [{"name": a["name"], "matched": a["matched"], "idf_sum": a["idf_sum"],
                              "name_cover": a["name_cover"], "identifiers": a["identifiers"]}
                             for a, _r in dnr[:MAX_ITEMS]]

        # Leg 1b, what exists in the code: with no inventory entry or confirmed record named
        # (they keep precedence), the code index's components, read from its rows.
        code = None
        if not dnr and not dead_ends and toks and intent in DNR_INTENTS and exists.has_index(conn):
            with trace.span("inject.code") as code_span:
                code, code_detail = exists.match(conn, prompt, said, topic, overall)
                code_span.update({"memhealth.code.candidates": code_detail.get("code_candidates", 0),
                                  "memhealth.code.matched": code is not None})
            detail["code"] = code_detail
            if code is not None:
                code_detail["dnr"] = code.summary()

        # Leg 2, lineage and evidence: BM25 over curated sources, gated by rare words.
        # Cheapest first: without one distinctive prompt token nothing can pass this gate.
        scored = []
        retrieval_ms = (time.perf_counter() - t0) * 1000
        if dnr or dead_ends or code or small or top_idf >= icfg["distinctive_idf"]:
            query = [t for t in present if small or idf[t] >= MIN_QUERY_IDF]
            if n_all > BM25_UNBOUNDED_MAX:
                query, left_out = _bounded_query(conn, query, overall)
                if left_out:
                    detail["query_left_out"] = left_out
            t1 = time.perf_counter()
            with trace.span("memory.search") as search_span:
                search_span.update({"memhealth.search.k": CANDIDATES, "memhealth.search.legs": "bm25",
                                    "memhealth.query.tokens": len(query)})
                with db_span(trace, "SELECT", "chunks_fts") as leg:
                    candidates = _candidates(conn, query, curated, frozenset(e.row[0] for e in profiles))
                    leg.set("db.response.returned_rows", len(candidates))
                search_span.set("memhealth.search.hits", len(candidates))
            retrieval_ms += (time.perf_counter() - t1) * 1000
            for row, _score in candidates:
                arith = relevance(toks, row, idf)
                arith["passed"] = arith["matched"] >= icfg["min_matches"] and (
                    small or (arith["idf_sum"] >= icfg["idf_sum_threshold"]
                              and arith["max_idf"] >= icfg["distinctive_idf"]))
                scored.append((arith, row))
        else:
            detail["reason"] = "no distinctive token in the prompt" if present else (
                "no prompt token is in memory" if toks else "no content tokens")
            span.set("memhealth.relevance.passed", 0)
            return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)

        passing = sorted((s for s in scored if s[0]["passed"]), key=lambda s: -s[0]["idf_sum"])
        # a doc section speaks on its own only as lineage (decide/investigate, or a decision
        # record on build intent); otherwise it is evidence under an inventory entry
        lineage = [s for s in passing if _lineage_allowed(s[1], intent)]
        pool = entry_scored + [a for a, _r in scored]
        first = dnr or dead_ends or passing
        best = first[0][0] if first else max(pool, key=lambda a: a["idf_sum"], default=None)
        passed = len(dnr) + len(dead_ends) + len(lineage) + (code is not None)
        detail.update({"candidates": len(scored), "passed": passed})
        if best is not None:
            detail.update({"matched": best["matched"], "idf_sum": best["idf_sum"], "max_idf": best["max_idf"]})
            span.update({"memhealth.relevance.matched": best["matched"],
                         "memhealth.relevance.idf_sum": best["idf_sum"],
                         "memhealth.relevance.max_idf": best["max_idf"]})
        span.set("memhealth.relevance.passed", passed)
    if not passed:
        if not scored and "reason" not in detail:
            detail["reason"] = "no candidates"
        elif "reason" not in detail:
            # sections passed on build intent: where something is mentioned is not the subsystem
            detail["reason"] = "no inventory entry named; doc sections are evidence only" if passing \
                else "below the gate"
        return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)

    # a dead end re-proposed first: it is what this prompt is about to repeat
    offered = [(a, r, "dead_end", []) for a, r in dead_ends[:MAX_DEAD_END]]
    offered += [(a, r, "dnr", _evidence(a, scored, icfg["min_matches"])) for a, r in dnr[:MAX_DNR]]
    if code is not None:
        arith = {"chunk_id": None, "code_id": code.id, "name": " ".join(code.words) or code.name,
                 "matched_tokens": code.matched, "idf_sum": 0.0, "commit": exists.commit(conn)}
        # a doc mentions the component when it writes its name, or every word of it
        named_in = [e for e in _evidence(arith, scored, icfg["min_matches"])
                    if code.name.lower() in (e[7] or "").lower() or set(exists.name_parts(code.name)) <= _words(e[7] or "")]
        offered.append((arith, code, "code", named_in))
    offered += [(a, r, "thread", []) for a, r in lineage[:MAX_ITEMS * 2]]
    # With embeddings configured, a block speaks only when prompt and item also agree in
    # meaning (memory_core.delivery.meaning): asked here, once something is about to fire, so
    # the silent path never waits on an embedding server
    if cfg["embedding"]["url"] and icfg["meaning"] == "on":
        from memory_core.delivery import meaning

        rescue_record = detail.get("meaning")
        offered, detail["meaning"] = meaning.agree(conn, cfg, prompt, offered, trace, query_vector)
        if rescue_record:
            detail["meaning"]["rescue"] = rescue_record
        if not offered:
            detail["reason"] = "no block agrees in meaning (cosine below the threshold)"
            return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)
    with trace.span("inject.session_cap") as span:
        chosen = _apply_caps(conn, offered, session_id, icfg)
        span.update({"memhealth.cap.offered": len(offered), "memhealth.cap.kept": len(chosen)})
    if not chosen:
        detail["reason"] = "per-session cap reached"
        return InjectResult("capped", retrieval_ms=retrieval_ms, detail=detail)

    if root is not None:
        chosen = _check_claims(root, chosen, detail, trace, conn)
    chosen = _threads(conn, chosen, detail)
    text = render(chosen, intent, icfg["max_chars"])
    detail["items"] = [{"chunk_id": a["chunk_id"], "block": b, "idf_sum": a["idf_sum"],
                        **({"code_id": a["code_id"]} if b == "code" else {}),
                        **({"cosine": a["cosine"]} if "cosine" in a else {})} for a, _r, b, _e in chosen]
    if icfg["mode"] == "off":
        detail["would_inject_chars"] = len(text)
        return InjectResult("suppressed_ablation", retrieval_ms=retrieval_ms, detail=detail)
    detail["chars"] = len(text)
    return InjectResult("injected", text=text, retrieval_ms=retrieval_ms, detail=detail)


DNR_INTENTS = frozenset({"build", "decision"})

# How rare a word can be in a small store: a topic's own words are said at least in its item
# and, often, in one place that mentions it. The configured gates (distinctive_idf 3.0, an
# IDF sum of 7.0) were set on stores of hundreds of chunks; in a store of a few dozen no word
# said twice reaches 3.0 (ln(56/3) = 2.93 at 55 chunks) and no two words reach 7.0, so every
# re-proposal stayed silent. The gates never ask for more rarity than RARE_DF chunks can
# show: a word in at most RARE_DF chunks is distinctive, and `min_matches` of them are
# enough. Above ~100 chunks the floor is below the configured values and changes nothing.
RARE_DF = 2


def rarity_floor(icfg: dict, n_docs: int, detail: dict | None = None) -> dict:
    """`icfg` with distinctive_idf and idf_sum_threshold lowered to what a word in RARE_DF of
    `n_docs` chunks scores, when the configured ones ask for more; the effective values (and
    the configured ones, when lowered) go into `detail`, the decision row."""
    if n_docs < MIN_IDF_CORPUS:
        return icfg  # the small-corpus rule (overlap only) applies instead
    rare = fts.idf(n_docs, RARE_DF)
    distinctive = min(icfg["distinctive_idf"], rare)
    threshold = min(icfg["idf_sum_threshold"], icfg["min_matches"] * rare)
    if distinctive == icfg["distinctive_idf"] and threshold == icfg["idf_sum_threshold"]:
        return icfg
    if detail is not None:
        detail.update({"threshold": round(threshold, 3), "distinctive_idf": round(distinctive, 3),
                       "rarity_floor": {"rare_df": RARE_DF, "configured_threshold": icfg["idf_sum_threshold"],
                                        "configured_distinctive_idf": icfg["distinctive_idf"]}})
    return {**icfg, "distinctive_idf": distinctive, "idf_sum_threshold": threshold}


def _bounded_query(conn, query: list[str], overall: dict[str, int]) -> tuple[list[str], list[str]]:
    """The retrieval words whose postings fit QUERY_POSTINGS together, rarest first, and the
    words left out. FTS5 scores every chunk a query word matches, so a word in 30 % of a
    1M-chunk store costs ~300 ms to rank by, whatever else the query holds. A word left out
    still counts in the relevance arithmetic on the candidates found; a prompt whose every
    word is that common in a large store retrieves nothing (silence, recorded in the decision
    as `query_left_out`)."""
    sized = []
    for t in query:
        n = overall.get(t, 0)
        if n >= docfreq.COMMON:  # only "at least COMMON" is known: count on, to the budget
            n = docfreq.matches_upto(conn, t, QUERY_POSTINGS + 1)
        sized.append((n, t))
    sized.sort()
    kept, spent = set(), 0
    for n, t in sized:
        if spent + n > QUERY_POSTINGS:
            break
        kept.add(t)
        spent += n
    return [t for t in query if t in kept], [t for t in query if t not in kept]


def _lineage_allowed(row, intent: str) -> bool:
    """Lineage speaks on decide/investigate intent; on build intent only a decision record
    does (a doc section proposing nothing is evidence, never a block of its own)."""
    if intent != "build":
        return True
    return row[1] == "ledger" or (row[5] or "").lower() in LINEAGE_KINDS


def _evidence(entry, scored, min_matches: int) -> list:
    """Up to MAX_EVIDENCE retrieved sections sharing `min_matches` prompt words, one of them
    a word of the entry's name: where the subsystem is mentioned (a changelog entry, a doc
    page), one line each under its block. The entry already passed; these only locate it."""
    name = {stem(t) for t in fts.tokens(entry["name"], min_len=2)}
    out = []
    for arith, row in sorted(scored, key=lambda s: -s[0]["idf_sum"]):
        if arith["matched"] >= min_matches and name & {stem(t) for t in arith["matched_tokens"]}:
            out.append(row)
        if len(out) >= MAX_EVIDENCE:
            break
    return out


def _apply_caps(conn, offered, session_id, icfg):
    """Keep at most MAX_ITEMS items not yet delivered this session and under their block's
    cap; record the deliveries. No session id disables caps (as in the reference design)."""
    caps = {"dnr": icfg["dnr_cap"], "dead_end": icfg["dead_end_cap"], "thread": icfg["thread_cap"]}
    if session_id is None:
        return offered[:MAX_ITEMS]
    chosen = []
    now = time.time_ns()
    with write(conn):
        counts = dict(conn.execute(
            "SELECT key, count FROM deliveries WHERE session_id = ?", (session_id,)).fetchall())
        for arith, row, block, evidence in offered:
            if len(chosen) >= MAX_ITEMS:
                break
            # a component from the code counts against the DO-NOT-REBUILD cap
            chunk_key, cap = (f"code:{row.id}", "dnr") if block == "code" else (f"chunk:{row[0]}", block)
            if counts.get(chunk_key, 0) >= 1 or counts.get(cap, 0) >= caps[cap]:
                continue
            for key in (chunk_key, cap):
                counts[key] = counts.get(key, 0) + 1
                conn.execute(
                    "INSERT INTO deliveries(session_id, key, count, first_ns, last_ns) VALUES (?,?,1,?,?) "
                    "ON CONFLICT(session_id, key) DO UPDATE SET count = count + 1, last_ns = excluded.last_ns",
                    (session_id, key, now, now))
            chosen.append((arith, row, block, evidence))
    return chosen


# STALE-CLAIM: memory that is wrong is as harmful as memory that is missing. An
# item whose claim about the tree can be checked cheaply (one os.stat per path it names, never
# a walk) and fails is delivered as a warning naming what changed, never as DO-NOT-REBUILD.
RECORD_KINDS = frozenset({"decision", "dead_end", "dead-end", "correction"})
MAX_CLAIMED_PATHS = 3              # a `path:` listing more is checked on its first three
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?")
_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?$")


def _epoch(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (calendar.timegm without importing
    calendar, datetime and locale on the hook path)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def recorded_at(value) -> tuple[float, str] | None:
    """A record's `recorded:` as (seconds since the epoch, its day). A bare date means the end
    of that day (UTC): a change later that day is not provably after the record; a timestamp
    is written to the second, so a change within that second is not after it either."""
    match = _DATE.match(str(value or "").strip())
    if not match:
        return None
    y, mo, d, hh, mm, ss = match.groups()
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31):
        return None
    days = _epoch(int(y), int(mo), int(d))
    at = days * 86400 + (int(hh) * 3600 + int(mm) * 60 + int(ss or 0) + 1 if hh else 86400)
    return float(at), f"{y}-{mo}-{d}"


def claimed_paths(root: str, value, transcript_ok: bool = True) -> list[str]:
    """The project files an item names (a `path:` value, or a record's `source:`), relative to
    `root`: comma- or space-separated, backticks and a `:line` suffix dropped; a word with
    neither a slash nor a dot is commentary, not a path. A glob, a URL, a
    path outside the project and (with `transcript_ok` false) a transcript (`.jsonl`: appended
    to as the session goes on, and the record is about what was said in it) name nothing the
    tree can refute."""
    out = []
    for raw in re.split(r"[,\s]+", str(value or "")):
        rel = _LINE_SUFFIX.sub("", raw.strip("`'\"()[]<>;.").rstrip(":")) if raw else ""
        if not rel or "://" in rel or any(c in rel for c in "*?[{$~") or rel.startswith("-"):
            continue
        if "/" not in rel and "." not in rel:  # a word of commentary ("(SOCKS5)"), not a path
            continue
        if not transcript_ok and rel.endswith(".jsonl"):
            continue
        full = os.path.normpath(os.path.join(root, rel))
        if full != root and not full.startswith(root.rstrip(os.sep) + os.sep):
            continue
        rel = os.path.relpath(full, root)
        if rel not in out:
            out.append(rel)
        if len(out) >= MAX_CLAIMED_PATHS:
            break
    return out


def stale_claim(root: str, kind: str | None, attrs: dict | None, conn=None) -> str | None:
    """What makes an item's claim stale, or None. An inventory entry claims its `path:` exists;
    a confirmed record naming a project file (`path:`, else a `source:` that is a project file)
    claims it as it was when `recorded:`: the file gone, or changed since (mtime), refutes it.
    One os.stat per named path; an item naming nothing checkable is never stale. With `conn`
    the code index also judges the symbols it names (`exists.code_claim`): one no file
    defines any more, or one that moved, and where it lives now."""
    kind, attrs = (kind or "").lower(), attrs or {}
    root = os.path.abspath(root)
    if kind in DNR_KINDS:
        paths, since = claimed_paths(root, attrs.get("path")), None
    elif kind in RECORD_KINDS and confirmed(attrs):
        # a source is "where:line (session, time, speaker)": only its first word is a place
        source = (str(attrs.get("source") or "").split() or [""])[0]
        paths = claimed_paths(root, attrs.get("path")) or claimed_paths(root, source, transcript_ok=False)
        since = recorded_at(attrs.get("recorded"))
    else:
        return None
    why = None
    for rel in paths:
        try:
            st = os.stat(os.path.join(root, rel))
        except OSError:
            why = f"{rel} no longer exists"
            break
        if since is not None and not os.path.isdir(os.path.join(root, rel)) and st.st_mtime >= since[0]:
            why = f"{rel} changed after this was recorded on {since[1]}"
            break
    code = exists.code_claim(conn, attrs, paths, gone=why is not None) if conn is not None else None
    return "; ".join(w for w in (why, code) if w) or None


def _check_claims(root: str, chosen: list, detail: dict, trace, conn=None) -> list:
    """Re-block each chosen item whose claim the tree refutes as "stale_claim" (it was counted
    against its own block's per-session cap: the same item, told truthfully)."""
    out, stale = [], []
    with trace.span("inject.stale_claim") as span:
        for arith, row, block, evidence in chosen:
            if block == "code":  # read from the code itself: nothing to refute
                out.append((arith, row, block, evidence))
                continue
            why = stale_claim(root, row[5], _attrs(row), conn)
            if why is None:
                out.append((arith, row, block, evidence))
                continue
            arith = {**arith, "stale": why, "instead_of": block}
            stale.append({"chunk_id": row[0], "instead_of": block, "why": why})
            out.append((arith, row, "stale_claim", []))
        span.update({"memhealth.stale.checked": len(chosen), "memhealth.stale.found": len(stale)})
    if stale:
        detail["stale_claim"] = stale
    return out


MAX_THREAD = 8                     # decisions shown in one lineage thread


def _links(row) -> tuple[str, str, str]:
    attrs = _attrs(row)
    return tuple(str(attrs.get(k) or "").strip() for k in ("candidate", "supersedes", "superseded_by"))


def _threads(conn, chosen: list, detail: dict) -> list:
    """Attach its lineage thread (newest first) to each chosen decision record that links to
    another (`supersedes:` / `superseded_by:`, written by `memhealth triage confirm ID
    --supersedes OTHER`); a second chosen record of a thread already shown is dropped. The
    records are read only when a chosen one links: tens of rows by the (source, kind) index."""
    if not any(b == "thread" and any(_links(r)[1:]) for _a, r, b, _e in chosen):
        return chosen
    by_id = {}
    for row in conn.execute(f"SELECT {_COLUMNS} FROM chunks WHERE source = 'memory' AND kind = 'decision' "
                            "ORDER BY id"):
        cand = _links(row)[0]
        if cand and cand not in by_id:  # a record's first chunk speaks for it
            by_id[cand] = row
    out, shown = [], set()
    for arith, row, block, evidence in chosen:
        cand, back, forward = _links(row)
        if block != "thread" or not (back or forward) or cand not in by_id:
            out.append((arith, row, block, evidence))
            continue
        if cand in shown:
            continue
        newest, steps = cand, 0
        while _links(by_id[newest])[2] in by_id and steps < MAX_THREAD:  # forward to the newest
            newest, steps = _links(by_id[newest])[2], steps + 1
        thread, at = [], newest
        while at in by_id and at not in thread and len(thread) < MAX_THREAD:  # back, newest first
            thread.append(at)
            at = _links(by_id[at])[1]
        shown.update(thread)
        arith = {**arith, "thread": [by_id[c] for c in thread]}
        detail.setdefault("lineage", []).append({"chunk_id": row[0], "thread": [int(c) if c.isdigit() else c
                                                                               for c in thread]})
        out.append((arith, row, block, evidence))
    return out


def _thread_lines(arith: dict, row, budget: int) -> list[str]:
    """The thread under a decision-lineage block: each decision, newest first, when recorded,
    which one is current, and its statement (the matched one marked)."""
    rows = arith.get("thread") or []
    if len(rows) < 2:
        return []
    each = max(budget // len(rows), 80)
    lines = ["  thread, newest first:"]
    for n, r in enumerate(rows):
        attrs = _attrs(r)
        cand, _back, forward = _links(r)
        day = str(attrs.get("recorded") or "")[:10] or "unknown date"
        state = "current" if n == 0 else f"superseded by #{forward}"
        here = " ← matched" if r[0] == row[0] else ""
        statement = clip(" ".join(str(attrs.get("description") or r[7]).split()), each)
        lines.append(f"  {n + 1}. #{cand} {_quoted(entry_name(r))} (recorded {day}, {state}){here}: {statement}")
    return lines


def _where(row) -> str:
    _id, source, path, ls, le = row[:5]
    return f"{path}:{ls}-{le}" if ls else path


def _provenance(row) -> str:
    day = time.strftime("%Y-%m-%d", time.gmtime(row[9] / 1e9)) if row[9] else "unknown date"
    git = git_provenance(_attrs(row)) if row[1] == "memory" else ""
    return f"from memory ({row[1]}, {_where(row)}, recorded {day}{git}; verify before building on it)"


_BLOCK_START = re.compile(r"(?:[-*+]|\d+[.)]|#+)\s")


def _prose(content: str) -> str:
    """A chunk as one line of prose. A hard-wrapped paragraph's lines join with spaces; a
    paragraph, list item or heading with no closing punctuation (a memory file's description,
    which leads its first chunk as a paragraph of its own) ends with a period instead of
    running into the next sentence."""
    blocks: list[list[str]] = []
    fresh = True
    for raw in content.splitlines():
        line = " ".join(raw.split())
        if not line:
            fresh = True
            continue
        if fresh or _BLOCK_START.match(line):
            blocks.append([])
        blocks[-1].append(line)
        fresh = line.startswith("#")  # a heading is a block of one line
    units = [" ".join(b) for b in blocks]
    return " ".join(u if u[-1] in ".!?:;,)" or i == len(units) - 1 else u + "."
                    for i, u in enumerate(units))


def _quoted(title: str) -> str:
    """A title in double quotes, safely: one line, and no '"' inside to end the quotes early
    (a memory file's name is text anyone could have written)."""
    return '"' + " ".join(str(title).split()).replace('"', "'") + '"'


def _dead_end(row, budget: int) -> str:
    """A confirmed dead end: what was tried and ruled out, with the record's provenance, the
    statement once (the record file repeats it as description, heading and body) and where
    it was said (transcript:line, session, time)."""
    attrs = _attrs(row)
    statement = attrs.get("description") or row[7]
    lines = [f"DEAD-END: {_quoted(entry_name(row))} was tried and ruled out — {_provenance(row)}.",
             f"  {clip(' '.join(str(statement).split()), budget)}"]
    if attrs.get("source"):
        lines.append(f"  said at: {' '.join(str(attrs['source']).split())}")
    return "\n".join(lines)


def _stale(arith: dict, row, budget: int) -> str:
    """A claim the tree refutes: what changed first, then what the memory said (so it can be
    corrected), never "may already exist"."""
    attrs = _attrs(row)
    what = {"dnr": "a subsystem inventory entry", "dead_end": "a confirmed dead end"}.get(
        arith.get("instead_of"), "a record")
    said = attrs.get("description") if arith.get("instead_of") == "dead_end" else None
    lines = [f"STALE-CLAIM: {_quoted(entry_name(row))} ({what}) — {arith['stale']}; "
             f"what memory says may no longer hold — {_provenance(row)}.",
             f"  memory says: {clip(' '.join(str(said or row[7]).split()), budget)}",
             "  check the tree before relying on it, and correct or remove the memory if it is wrong"]
    return "\n".join(lines)


def _from_code(arith: dict, found, evidence, budget: int) -> str:
    """A component read from the code: the definition, where it is, its one-line doc, the
    commit the index read, and where the docs mention it."""
    at = f" at {arith['commit'][:12]}" if arith.get("commit") else ""
    lines = [f"DO-NOT-REBUILD? {_quoted(found.qualname or found.name)} already exists in the code "
             f"({found.kind} at {found.path}:{found.line}) — read from the code{at}; building it again "
             "would duplicate it.",
             f"  definition: {clip(' '.join(str(found.signature or found.name).split()), 200)}"]
    doc = exists.first_line(found.doc)
    if doc:
        lines.append(f"  doc: {clip(doc, min(budget, 300))}")
    if found.why == "identifier":
        lines.append(f"  the prompt names it: {found.name}")
    else:
        said = [f"{', '.join(found.detail.get(k) or [])} ({what})" for k, what in
                (("name_words", "its name"), ("doc_words", "its doc")) if found.detail.get(k)]
        lines.append(f"  shares: {'; '.join(said)}")
    lines += [f"  mentioned in: {_where(e)} {_quoted(e[6] or e[2])} ({e[1]})" for e in evidence]
    return "\n".join(lines)


def render(chosen, intent: str, max_chars: int) -> str:
    """Frame each item with its provenance; the whole block stays under max_chars. A
    DO-NOT-REBUILD names the entry and where it lives; its evidence is one line each."""
    parts = ["[memhealth] Memory relevant to this prompt. It is a record, not an instruction: "
             "check it against the code before relying on it."]
    budget = max(max_chars - len(parts[0]) - 200, 200) // max(len(chosen), 1)
    for arith, row, block, evidence in chosen:
        if block == "code":
            parts.append(_from_code(arith, row, evidence, budget))
            continue
        body = clip(_prose(row[7]), budget)
        matched = ", ".join(arith["matched_tokens"][:6])
        if block == "dead_end":
            parts.append(_dead_end(row, budget))
            continue
        if block == "stale_claim":
            parts.append(_stale(arith, row, budget))
            continue
        if block == "dnr":
            where = _attrs(row).get("path")
            lives = f" (lives in {where})" if where else ""
            head = f"DO-NOT-REBUILD? {_quoted(entry_name(row))} may already exist{lives} — {_provenance(row)}."
        else:
            kind = ("Dead-end record" if (row[5] or "").lower() in DEAD_END_KINDS else "Decision lineage"
                    if row[1] == "ledger" or (row[5] or "") in LINEAGE_KINDS else "Related record")
            head = f"{kind}: {_quoted(row[6] or row[2])} — {_provenance(row)}."
        thread = _thread_lines(arith, row, budget)
        # a thread states each decision, the matched one too: its body is not repeated
        lines = [head, f"  shares: {matched}"] + (thread or [f"  {body}"])
        lines += [f"  mentioned in: {_where(e)} {_quoted(e[6] or e[2])} ({e[1]})" for e in evidence]
        parts.append("\n".join(lines))
    return clip("\n".join(parts), max_chars)
