"""Does the prompt name an entry, or ask for a new member of its category?

    name_cover(p.stems, "snapshot compactor")        # share of the name's words said: 1.0
    spelled(p.said, ["digest", "auth"])              # "digest authentication": True
    new_instance(p.said, "built-in middleware", vocab, inventory)  # "request-id" or None

Two readings refine naming: a code identifier the entry lists (`verify=`, `follow_redirects`,
`DigestAuth`), written in the prompt or spelled in words, names it; a prompt asking for a
new member of an entry's category ("a request-id middleware", "a custom middleware") is new
work, and then only a written identifier still names an entry (`new_instance`).
"""

from __future__ import annotations

import re

from memory_core.delivery.prompt import INTENT_WORDS, RUN_STOPS, Said, split, stem
from memory_core.index import fts

# Words that ask for one more member of a category ("a new response class", "another hook",
# "a custom middleware"): new work, not the category entry. "custom" and "own" also describe
# a kind ("custom exception handlers": the feature), so they count only after "a"/"an".
INSTANCE_WORDS = frozenset({"new", "another", "additional", "extra"})
KIND_WORDS = frozenset({"custom", "own"})
INDEFINITE = frozenset({"a", "an"})
# Words ending in -ing that are nouns, never a participle taking an object.
ING_NOUNS = frozenset({"string", "spring", "ring", "king", "wing", "ceiling", "morning", "evening", "during"})


def name_cover(prompt_stems: set[str], name: str) -> float:
    """Share of a name's words the prompt says, a word also said by its start ("auth" for
    authentication, "config" for configuration: how developers abbreviate)."""
    toks = {stem(t) for t in fts.tokens(name, min_len=2)}
    if not toks:
        return 0.0
    said = {t for t in toks if t in prompt_stems
            or any(len(p) >= 4 and t.startswith(p) for p in prompt_stems)}
    return len(said) / len(toks)


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
        parts = split(conjunct)
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
    its whole name ("a new command line client" is that client again). A participle taking the
    head as its object ("a unix socket listing queues") is a verb, not a qualifier
    (`_object_of_participle`). A qualifier this entry lists ("CORS middleware", "signed cookie session
    middleware") is a listed instance, a re-proposal; one another entry lists ("SOCKS proxy
    support" beside "HTTP/2 support") is that entry's business. Returns the qualifying
    words that make it new, or None."""
    name_stems = {stem(p) for p in split(name)}
    for head, (conjunct, plural) in heads(name).items():
        if head not in said.stems:
            continue
        for clause in said.clauses:
            for at, (s, _p, word) in enumerate(clause):
                if s != head:
                    continue
                run, before, verb = _qualifiers(clause, at, word)
                run = _object_of_participle(run, before, clause[at][1], s)
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


def _participle(word: str) -> bool:
    return len(word) >= 5 and word.endswith("ing") and word not in ING_NOUNS


def _object_of_participle(run: list, before: str | None, head_word: str, head: str) -> list:
    """The qualifiers left when a participle takes the head as its object: in "a unix socket
    listing queues" the article cannot open a phrase whose head is plural, so "a unix socket"
    is one noun phrase and "listing queues" a verb with its object; what stands between the
    participle and the head still qualifies it ("listing stuck queues": stuck). A participle
    that agrees ("a rate limiting queue", "rate limiting queues") stays a qualifier: nothing
    says it is a verb."""
    plural = head_word.endswith("s") and head != head_word
    if before not in INDEFINITE or not plural:
        return run
    for k, (_ks, kp) in enumerate(run):
        if k + 1 < len(run) and _participle(kp):  # a noun before it: "socket listing", not "a listing"
            return run[:k]
    return run


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
