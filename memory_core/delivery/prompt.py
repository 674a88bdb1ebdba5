"""One reading of the prompt: the words, stems, identifiers and clauses every step of the
injection cascade reads, computed once per prompt (`read`).

    p = prompt.read("add verify= support to the client", "build")
    p.toks      # retrieval words (four letters or more), at most MAX_PROMPT_TOKENS
    p.topic     # its words minus intent verbs, one per stem (names are short: three letters)
    p.said      # Said: the identifiers it writes, its clauses as (stem, part, word index) runs

The linguistics is plain string work (no tokenizer model, nothing imported beyond the FTS
tokenizer): a light suffix stemmer, CamelCase and snake_case splitting, and one linear scan
for identifier-shaped words.
"""

from __future__ import annotations

import re

from memory_core.delivery.intent import BUILD, DECISION, INVESTIGATION
from memory_core.index import fts

MAX_PROMPT_TOKENS = 32

# The request's verb is not its topic: "write", "implement", "should" say nothing about which
# subsystem a prompt is about (the paper's reference harness drops such tokens too).
INTENT_WORDS = frozenset(w for v in (BUILD, DECISION, INVESTIGATION)
                         for p in (*v.words, *v.phrases) for w in p.split())
# A qualifier run stops at a stopword, an intent verb or a quantifier ("several tasks" asks
# for no new kind of task).
RUN_STOPS = fts.STOPWORDS | INTENT_WORDS | frozenset({"several", "multiple", "various", "numerous", "two", "three"})
# CamelCase parts, acronyms included: DigestAuth -> Digest Auth, CORSMiddleware -> CORS Middleware
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
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


def split(word: str) -> list[str]:
    """Lowercase parts of one written word: hyphens, underscores, dots and CamelCase split
    it; a lone letter joins the next part (GZip -> gzip, not g + zip)."""
    out, carry = [], ""
    for piece in _PARTS.findall(word):
        for part in CAMEL.sub(" ", piece).split():
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
        out[raw.lower().strip("-=")] = split(raw)
        if "." in raw:
            for part in raw.split("."):
                if _identifier(part) is not None and "." not in part:
                    out[part.lower()] = split(part)
    return out


class Said:
    """What a prompt says, read once per prompt for every entry: the identifiers it writes,
    its clauses as (part stem, word index) runs, and its words' stems."""

    __slots__ = ("idents", "clauses", "stems")

    def __init__(self, prompt: str):
        self.idents = identifiers(prompt)
        self.clauses = []
        for clause in _CLAUSE.split(prompt):
            parts = [(stem(p), p, i) for i, word in enumerate(clause.split()) for p in split(word)]
            if parts:
                self.clauses.append(parts)
        self.stems = {s for clause in self.clauses for s, _p, _i in clause}


class Frozen:
    """A record whose fields (its subclass's `__slots__`) are set once, positionally, at
    construction: a frozen dataclass without `dataclasses`, which imports inspect and ast,
    milliseconds the prompt hook would pay on every intent prompt (a named tuple's class
    costs ~0.2 ms to build)."""

    __slots__ = ()

    def __init__(self, *values):
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen: {name} cannot be set")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is frozen: {name} cannot be deleted")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class Prompt(Frozen):
    """The prompt as every step of the cascade reads it, computed once (`read`); frozen.

    `text` and `intent` as given; `toks` the retrieval words (four letters or more, at most
    MAX_PROMPT_TOKENS); `topic` the words an entry's name is matched on (three letters or
    more, CamelCase split, intent verbs dropped, one per stem) and `stems` their stems (a
    frozenset); `said` the identifiers and clauses (`Said`)."""

    __slots__ = ("text", "intent", "toks", "topic", "stems", "said")


def read(text: str, intent: str) -> Prompt:
    """One reading of `text` for the cascade."""
    toks = fts.tokens(text, min_len=4, limit=MAX_PROMPT_TOKENS)
    # the entry leg: names are short ("CLI", "TLS", "max"), so three-letter words count; the
    # intent verb does not; "files" and "file" are one word
    topic, stems = [], set()
    for t in fts.tokens(f"{text} {CAMEL.sub(' ', text)}", min_len=3, limit=MAX_PROMPT_TOKENS):
        if t not in INTENT_WORDS and stem(t) not in stems:
            stems.add(stem(t))
            topic.append(t)
    return Prompt(text, intent, toks, topic, frozenset(stems), Said(text))
