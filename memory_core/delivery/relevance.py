"""Rare-word relevance: how rare the prompt's words are in the store (`measure`), whether
an entry of the inventory is what the prompt proposes (`entry_relevance`), and the BM25
retrieval of lineage candidates with its gate arithmetic (`retrieve`, `relevance`).

    corpus = relevance.measure(conn, p, cfg["injection"], detail)
    arith = relevance.entry_relevance(p, entry, corpus, inventory)
    arith["passed"], arith["named"], arith["idf_sum"]

Relevance needs rare words shared on word boundaries: at least `min_matches` prompt tokens
found in the item, their summed IDF at least `idf_sum_threshold`, and one of them at least
`distinctive_idf`. IDF is counted over the curated sources once they hold MIN_IDF_CORPUS
chunks, else over the whole index; below MIN_IDF_CORPUS chunks in all only the overlap count
applies (as in the paper's reference harness). On a store where the rarity floor acts,
`min_matches` + 1 matched words found together in at most RARE_DF chunks count as
distinctive too (`Joint`).
"""

from __future__ import annotations

import math

from memory_core.delivery.entries import (
    COLUMNS,
    DNR_KINDS,
    LINEAGE_KINDS,
    NEVER_OFFERED,
    Entry,
    attrs_of,
    entry_name,
    item_text,
    words,
)
from memory_core.delivery.naming import name_cover, new_instance, spelled
from memory_core.delivery.prompt import Frozen, Prompt, stem
from memory_core.index import docfreq, fts

MIN_IDF_CORPUS = 50
MIN_QUERY_IDF = 0.5  # a token in more than ~60% of chunks does not help rank candidates
# Above this many chunks the retrieval query keeps its rarest words within QUERY_POSTINGS
# postings (bounded_query); at or below it a query costs at most the whole (small) store.
BM25_UNBOUNDED_MAX = 50_000
QUERY_POSTINGS = 32_768
CANDIDATES = 10
MAX_EVIDENCE = 2

# How rare a word can be in a small store: a topic's own words are said at least in its item
# and, often, in one place that mentions it. The configured gates (distinctive_idf 3.0, an
# IDF sum of 7.0) were set on stores of hundreds of chunks; in a store of a few dozen no word
# said twice reaches 3.0 (ln(56/3) = 2.93 at 55 chunks) and no two words reach 7.0, so every
# re-proposal stayed silent. The gates never ask for more rarity than RARE_DF chunks can
# show: a word in at most RARE_DF chunks is distinctive, and `min_matches` of them are
# enough. Above ~100 chunks the floor is below the configured values and changes nothing.
RARE_DF = 2

# Joint rarity. A topic is often said in three places (its inventory entry, the confirmed
# record about it, the doc section on it), so none of its words is as rare as RARE_DF asks,
# while its words said together are: what the floor asks of one word is asked of
# `min_matches` + 1 words at once (all of them in at most RARE_DF chunks). It acts where the
# floor does (`joint_in_effect`), costs one MATCH per candidate asked, and at most
# MAX_JOINT_ASKS per prompt (the store is then a few dozen chunks: each MATCH reads little).
MAX_JOINT_ASKS = 24


class Corpus(Frozen):
    """How rare the prompt's words are, measured once per prompt (`measure`); frozen. The
    curated sources; the chunks in the
    store (`n_all`) and those IDF is counted over (`n_docs`, `over`: "curated" or "all");
    whether that is a small corpus (overlap only); the gates in effect (`icfg`, after
    `rarity_floor`); every word's frequency over all chunks (`overall`); each word's IDF; the
    retrieval words the store holds (`present`) and the rarest one's IDF (`top_idf`); the
    sources document frequency is asked over (`by_source`, None for every chunk); how many
    chunks hold a candidate's words together (`joint`, a `Joint`; None where the rarity
    floor does not act)."""

    __slots__ = ("curated", "n_all", "n_docs", "over", "small", "icfg", "overall", "idf", "present", "top_idf",
                 "by_source", "joint")


class Joint:
    """How many chunks hold a candidate's matched words all together, asked of the store
    once per set of words (one FTS5 MATCH of the words joined by AND) and at most
    MAX_JOINT_ASKS times per prompt:

        joint = Joint(conn, ("memory", "docs", "ledger"), min_matches=2)
        joint.ask(["payloads", "msgpack", "json"])
        # {"words": [...], "chunks": 1, "rare_df": 2, "rare": True}

    Fewer than `min_matches` + 1 words are not asked (None): two words together in two
    chunks say no more than the floor already reads from each."""

    __slots__ = ("conn", "sources", "need", "seen")

    def __init__(self, conn, sources, min_matches: int):
        self.conn, self.sources, self.need, self.seen = conn, sources, min_matches + 1, {}

    def ask(self, toks) -> dict | None:
        toks = list(dict.fromkeys(toks))
        if len(toks) < self.need:
            return None
        key = frozenset(toks)
        if key not in self.seen:
            if len(self.seen) >= MAX_JOINT_ASKS:
                return None
            n = docfreq.joint_freq(self.conn, toks, self.sources)
            self.seen[key] = {"words": toks, "chunks": n, "rare_df": RARE_DF,
                              "rare": n is not None and n <= RARE_DF}
        return self.seen[key]


def joint_in_effect(icfg: dict, n_docs: int) -> bool:
    """Joint rarity acts on the stores the rarity floor lowers the gates for: from
    MIN_IDF_CORPUS chunks to where a word in RARE_DF chunks reaches the configured gates
    (about 100 chunks with the defaults)."""
    return rarity_floor(icfg, n_docs) is not icfg


def jointly_rare(arith: dict, corpus: Corpus, topic) -> bool:
    """Do the candidate's matched words (the prompt's topic words only, none in more than
    ~60% of chunks) pass as distinctive together? Asked only of a candidate the gates
    refused whose IDF sum reaches the threshold; the answer, with its arithmetic, goes into
    `arith["joint"]`."""
    if corpus.joint is None or corpus.small or arith["idf_sum"] < corpus.icfg["idf_sum_threshold"]:
        return False
    got = joint_of(arith, corpus, topic)
    return got is not None and got["rare"]


def joint_of(arith: dict, corpus: Corpus, topic) -> dict | None:
    """In how many chunks the candidate's matched topic words (none in more than ~60% of
    chunks) are together (`Joint.ask`), kept in `arith["joint"]`; None where joint rarity
    does not act or too few words matched."""
    if corpus.joint is None or corpus.small:
        return None
    if "joint" in arith:
        return arith["joint"]
    topic = set(topic)
    toks = [t for t in arith["matched_tokens"] if t in topic and corpus.idf.get(t, 0.0) >= MIN_QUERY_IDF]
    got = corpus.joint.ask(toks)
    if got is not None:
        arith["joint"] = got
    return got


def lineage_passes(arith: dict, row, corpus: Corpus, topic) -> bool:
    """The lineage gate for one retrieved candidate: `min_matches` prompt words, their IDF
    sum at the threshold and one of them distinctive; or, for a decision record, those words
    distinctive together (`jointly_rare`); under MIN_IDF_CORPUS chunks the overlap count
    alone. A doc section is not asked: a long section (a changelog's) holds many words
    together, so their joint rarity says little of what it is about (measured on the real
    requests store: release-notes sections spoke on near misses)."""
    icfg = corpus.icfg
    if arith["matched"] < icfg["min_matches"]:
        return False
    if corpus.small or (arith["idf_sum"] >= icfg["idf_sum_threshold"] and arith["max_idf"] >= icfg["distinctive_idf"]):
        return True
    return lineage_allowed(row, "build") and jointly_rare(arith, corpus, topic)


def measure(conn, p: Prompt, icfg: dict, detail: dict) -> Corpus:
    """Rarity is measured over the curated sources, the candidates' own corpus, once they
    are a corpus (MIN_IDF_CORPUS chunks): a transcript echoes the session, and each
    re-proposal of a dead end ingested as a transcript chunk would make the dead end's
    words commoner exactly as it recurs. Fewer curated chunks say too little about
    rarity: then the whole index does (and a dead end can still be named). Counts are kept
    on write and common words' frequencies kept between prompts (memory_core.index.docfreq):
    nothing here grows with the store. Records the corpus in `detail`."""
    curated = tuple(icfg["sources"])
    n_all, n_docs = docfreq.chunk_count(conn), docfreq.chunk_count(conn, curated)
    over = "curated" if n_docs >= MIN_IDF_CORPUS else "all"
    if over == "all":
        n_docs, by_source = n_all, None
    else:
        by_source = curated if n_docs < n_all else None  # all curated: the cheap count
    small = n_docs < MIN_IDF_CORPUS
    joint = Joint(conn, by_source, icfg["min_matches"]) if joint_in_effect(icfg, n_docs) else None
    icfg = rarity_floor(icfg, n_docs, detail)
    overall: dict[str, int] = {}
    df = docfreq.doc_freqs(conn, list(dict.fromkeys(p.toks + p.topic)), by_source, overall)
    idf = {t: fts.idf(n_docs, n) for t, n in df.items()}
    present = [t for t in p.toks if df[t]]
    top_idf = round(max((idf[t] for t in present), default=0.0), 3)
    detail.update({"corpus": n_docs, "idf_over": over,
                   "small_corpus": small, "max_prompt_idf": top_idf})
    return Corpus(curated, n_all, n_docs, over, small, icfg, overall, idf, present, top_idf, by_source, joint)


def rarity_floor(icfg: dict, n_docs: int, detail: dict | None = None) -> dict:
    """`icfg` with distinctive_idf and idf_sum_threshold lowered to what a word in RARE_DF of
    `n_docs` chunks scores, when the configured ones ask for more; the effective values (and
    the configured ones, when lowered) go into `detail`, the decision row."""
    if n_docs < MIN_IDF_CORPUS:
        return icfg  # the small-corpus rule (overlap only) applies instead
    # the gates compare sums rounded to three places (as the decision row shows them): the
    # floor is taken down to three places too, or two words at exactly the floor's rarity
    # fall short of it by the rounding
    rare = fts.idf(n_docs, RARE_DF)
    distinctive = min(icfg["distinctive_idf"], math.floor(rare * 1000) / 1000)
    threshold = min(icfg["idf_sum_threshold"], math.floor(icfg["min_matches"] * rare * 1000) / 1000)
    if distinctive == icfg["distinctive_idf"] and threshold == icfg["idf_sum_threshold"]:
        return icfg
    if detail is not None:
        detail.update({"threshold": round(threshold, 3), "distinctive_idf": round(distinctive, 3),
                       "rarity_floor": {"rare_df": RARE_DF, "configured_threshold": icfg["idf_sum_threshold"],
                                        "configured_distinctive_idf": icfg["distinctive_idf"]}})
    return {**icfg, "distinctive_idf": distinctive, "idf_sum_threshold": threshold}


def relevance(prompt_toks, chunk_row, idf, item_words: set[str] | None = None) -> dict:
    """The gate arithmetic for one candidate: prompt tokens found in the item (stemmed on
    both sides), their summed IDF and the largest."""
    _id = chunk_row[0]
    item_words = words(item_text(chunk_row)) if item_words is None else item_words
    matched = [t for t in prompt_toks if stem(t) in item_words]
    return {"chunk_id": _id, "matched": len(matched), "matched_tokens": matched,
            "idf_sum": round(sum(idf.get(t, 0.0) for t in matched), 3),
            "max_idf": round(max((idf.get(t, 0.0) for t in matched), default=0.0), 3)}


def entry_relevance(p: Prompt, entry: Entry, corpus: Corpus, inventory: set[str]) -> dict:
    """Is this inventory entry what the prompt proposes to build? The prompt must name it
    (every word of its name or of one alias, and one more shared word; or half its name and
    two more), or share `min_matches` distinctive words with it whose IDF sum reaches
    `idf_sum_threshold`; under MIN_IDF_CORPUS chunks, `min_matches` words. The prompt's
    `topic` words are matched (its words minus its intent verbs, one per stem).

    The code identifiers an entry lists (`verify=`, `follow_redirects`, `DigestAuth`) are
    names of it too: a prompt that writes one, or spells a compound one in words ("digest
    authentication"), names the entry. A prompt asking for a new member of the entry's
    category (`new_instance`) does not, whatever else it shares; `inventory` is every word
    the inventory knows."""
    row, said, icfg, idf = entry.row, p.said, corpus.icfg, corpus.idf
    attrs = attrs_of(row)
    arith = relevance(p.topic, row, idf, entry.words)
    names = [entry_name(row)] + [a.strip() for a in str(attrs.get("aliases", "")).split(",") if a.strip()]
    cover = max(name_cover(p.stems, n) for n in names)
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
    rare = arith["matched"] >= need if corpus.small else (
        distinctive >= need and arith["idf_sum"] >= icfg["idf_sum_threshold"])
    if not rare and not named:  # or words rare only together (a topic said in three places)
        rare = jointly_rare(arith, corpus, p.topic)
    # a dead end is one thing that was tried, not a category with members
    instance = None if entry.block == "dead_end" else new_instance(
        said, entry_name(row), entry.words, inventory)
    arith["distinctive"] = distinctive
    arith.update({"name": entry_name(row), "name_cover": round(cover, 3), "named": named,
                  "identifiers": written + spelt, "written": bool(written), "new_instance": instance,
                  "passed": (named or rare) and instance is None})
    return arith


def retrieve(conn, toks, sources, skip=frozenset()):
    """Lineage candidates: BM25 over the curated sources, minus index files, inventory
    entries and the items the entry leg already scored (`skip`: those have their own leg)."""
    hits = fts.bm25(conn, toks, limit=CANDIDATES * 2, sources=sources)
    if not hits:
        return []
    ids = [h[0] for h in hits]
    rows = conn.execute(f"SELECT {COLUMNS} FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()
    by_id = {r[0]: r for r in rows}
    out = [(by_id[i], score) for i, score in hits
           if i in by_id and i not in skip and (by_id[i][5] or "") not in NEVER_OFFERED
           and (by_id[i][5] or "") not in DNR_KINDS]
    return out[:CANDIDATES]


def bounded_query(conn, query: list[str], overall: dict[str, int]) -> tuple[list[str], list[str]]:
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


def lineage_allowed(row, intent: str) -> bool:
    """Lineage speaks on decide/investigate intent; on build intent only a decision record
    does (a doc section proposing nothing is evidence, never a block of its own)."""
    if intent != "build":
        return True
    return row[1] == "ledger" or (row[5] or "").lower() in LINEAGE_KINDS


def evidence(entry, scored, min_matches: int) -> list:
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
