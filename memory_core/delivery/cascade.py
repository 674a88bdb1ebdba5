"""The injection cascade after the intent gate, as a sequence of named steps over one
reading of the prompt (memory_core.delivery.prompt.Prompt):

    read the prompt            prompt.read
    measure rarity             relevance.measure (the gates in effect, each word's IDF)
    score the entry leg        every inventory entry and confirmed dead end, scored whole
    meaning rescue             opt-in: a lexical miss rescued by meaning
    code leg                   with nothing named, the code index's components
    lineage leg                BM25 over the curated sources, gated by rare words
    tally                      what passed; silence (below_relevance) when nothing did
    offer                      one DEAD-END, one DO-NOT-REBUILD, the component, lineage
    meaning gate               with embeddings, a block speaks only when meaning agrees
    caps                       per-session caps (caps.apply)
    claims                     what the tree refutes becomes STALE-CLAIM (claims.check)
    threads, render            lineage threads (lineage.threads), the text (blocks.render)

Each step records its arithmetic in the decision's `detail`.
"""

from __future__ import annotations

import os
import time

from memory_core.delivery import caps, entries, exists, relevance
from memory_core.delivery.caps import MAX_ITEMS
from memory_core.delivery.entries import Entry
from memory_core.delivery.prompt import Prompt, read
from memory_core.delivery.relevance import Corpus
from memory_core.index import docfreq
from memory_core.outbox.spans import db_span

DNR_INTENTS = frozenset({"build", "decision"})
MAX_DEAD_END = 1                   # one DEAD-END per prompt: the record it re-proposes best
MAX_DNR = 1                        # one DO-NOT-REBUILD per prompt: the entry it names best


class InjectResult:
    """What the cascade decided: outcome, text to inject (or None), timings, arithmetic."""

    __slots__ = ("outcome", "text", "retrieval_ms", "detail", "problems")

    def __init__(self, outcome, text=None, retrieval_ms=None, detail=None, problems=()):
        self.outcome = outcome
        self.text = text
        self.retrieval_ms = retrieval_ms
        self.detail = detail or {}
        self.problems = list(problems)


class Legs:
    """What the retrieval legs found for one prompt, filled in step by step: the entry leg's
    items (`profiles`) and their arithmetic (`scored`), those that passed as DO-NOT-REBUILD
    (`dnr`) or DEAD-END (`dead_ends`), the entries read as a new member of their category
    (`instances`), the component the code leg found (`code`) and the lineage leg's scored
    candidates (`lineage`)."""

    __slots__ = ("profiles", "scored", "dnr", "dead_ends", "instances", "code", "lineage")

    def __init__(self, profiles: list[Entry]):
        self.profiles = profiles
        self.scored, self.dnr, self.dead_ends, self.instances, self.lineage = [], [], [], [], []
        self.code = None


def decide(conn, prompt: str, intent: str, cfg, session_id: str | None, trace,
           root: str | None = None) -> InjectResult:
    """Run the cascade for one prompt. With `root` (the project root; the prompt hook always
    passes it) each item chosen is checked against the tree (`claims.stale_claim`): one whose
    claim fails is delivered as a STALE-CLAIM block instead of the block it would have been."""
    p = read(prompt, intent)
    icfg = cfg["injection"]
    detail = {"intent": intent, "tokens": len(p.toks), "threshold": icfg["idf_sum_threshold"],
              "distinctive_idf": icfg["distinctive_idf"], "min_matches": icfg["min_matches"]}

    with trace.span("inject.relevance") as span:
        corpus = _measure_rarity(conn, p, icfg, detail, span)
        t0 = time.perf_counter()
        legs = _score_entries(conn, p, corpus, detail)
        query_vector = _meaning_rescue(conn, cfg, p, corpus, legs, detail, trace)
        _record_entries(legs, detail, span)
        _code_leg(conn, p, corpus, legs, detail, trace)
        retrieval_ms = (time.perf_counter() - t0) * 1000
        if not _worth_retrieving(corpus, legs):
            _silent(p, corpus, detail, span)
            return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)
        retrieval_ms += _lineage_leg(conn, p, corpus, legs, detail, trace)
        passing, threads, passed = _tally(p, legs, detail, span)
    if not passed:
        _nothing_passed(legs, passing, detail)
        return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)

    # what delivers is imported once something passed: most intent prompts end above, silent,
    # and the prompt hook does not pay for the modules that check and render blocks
    from memory_core.delivery import claims, lineage

    offered = _offer(conn, corpus, legs, threads)
    offered = _aimed_elsewhere(conn, p, corpus, offered, detail, root)
    if not offered:
        return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)
    offered = _meaning_gate(conn, cfg, p, corpus, offered, detail, trace, query_vector)
    if not offered:
        return InjectResult("below_relevance", retrieval_ms=retrieval_ms, detail=detail)
    with trace.span("inject.session_cap") as span:
        chosen = caps.apply(conn, offered, session_id, corpus.icfg)
        span.update({"memhealth.cap.offered": len(offered), "memhealth.cap.kept": len(chosen)})
    if not chosen:
        detail["reason"] = "per-session cap reached"
        return InjectResult("capped", retrieval_ms=retrieval_ms, detail=detail)

    if root is not None:
        chosen = claims.check(root, chosen, detail, trace, conn)
    chosen = lineage.threads(conn, chosen, detail)
    return _deliver(chosen, p, corpus.icfg, detail, retrieval_ms)


def _measure_rarity(conn, p: Prompt, icfg: dict, detail: dict, span) -> Corpus:
    """How rare the prompt's words are, and the gates in effect (relevance.measure)."""
    corpus = relevance.measure(conn, p, icfg, detail)
    span.update({"memhealth.relevance.threshold": corpus.icfg["idf_sum_threshold"],
                 "memhealth.relevance.small_corpus": corpus.small,
                 "memhealth.relevance.max_prompt_idf": corpus.top_idf})
    return corpus


def _score_entries(conn, p: Prompt, corpus: Corpus, detail: dict) -> Legs:
    """Leg 1, what may be DO-NOT-REBUILD or DEAD-END: the inventory and the confirmed dead
    ends, scored whole (no ranking needed), on build or decision intent."""
    rows = entries.load(conn) if p.toks and p.intent in DNR_INTENTS else []
    legs = Legs(profiles=[Entry(r) for r in rows])
    seen_names = set()
    # every word the inventory knows: a qualifier none of it mentions names something new
    inventory = set().union(*(e.words for e in legs.profiles if e.block == "dnr"))
    for entry in legs.profiles:
        arith = relevance.entry_relevance(p, entry, corpus, inventory)
        legs.scored.append(arith)
        if arith["passed"] and entry.block == "dead_end":
            legs.dead_ends.append((arith, entry.row))
        elif arith["passed"] and arith["name"].lower() not in seen_names:
            seen_names.add(arith["name"].lower())
            legs.dnr.append((arith, entry.row))
    legs.dead_ends.sort(key=lambda s: (not s[0]["named"], -s[0]["idf_sum"]))
    # A prompt asking for a new member of a category the inventory has ("a request-id
    # middleware") is about that new thing; another entry sharing its incidental words
    # ("sets a header on every response") is not what it builds. Only an identifier the
    # entry lists, written out, still names one.
    legs.instances = [a for a in legs.scored if a["new_instance"]]
    if legs.instances:
        detail["new_instance"] = [{"name": a["name"], "words": a["new_instance"]}
                                  for a in legs.instances[:MAX_ITEMS]]
        legs.dnr = [(a, r) for a, r in legs.dnr if a["written"]]
    # Where joint rarity acts, a name said in words the store says together in more than
    # RARE_DF places ("queues and dead letters": six chunks) singles the entry out less than
    # words found together only in another entry: that one ranks first.
    for a, _r in legs.dnr:
        if a["named"] and not a["written"]:
            relevance.joint_of(a, corpus, p.topic)
    legs.dnr.sort(key=lambda s: (not s[0]["written"], s[0].get("joint", {}).get("rare") is False,
                                 not s[0]["named"], -s[0]["name_cover"], -s[0]["idf_sum"]))
    return legs


def _meaning_rescue(conn, cfg, p: Prompt, corpus: Corpus, legs: Legs, detail: dict, trace):
    """A lexical miss rescued by meaning (opt-in, measured: memory_core.delivery.meaning): no
    entry passed the rare-word gate, none is read as a new member of a category. Returns the
    prompt's vector when one was computed (the meaning gate reuses it), else None."""
    icfg = corpus.icfg
    if not (not legs.dnr and not legs.dead_ends and not legs.instances and legs.scored
            and icfg["meaning_rescue"] == "on" and cfg["embedding"]["url"] and icfg["meaning"] == "on"):
        return None
    from memory_core.delivery import meaning

    pairs = [(a, e.row) for a, e in zip(legs.scored, legs.profiles, strict=True) if e.block == "dnr"]
    found, query_vector, detail["meaning"] = meaning.rescue(conn, cfg, p.text, pairs, trace)
    if found is not None:
        legs.dnr = [found]
    return query_vector


def _record_entries(legs: Legs, detail: dict, span) -> None:
    """The entry leg's outcome in the decision: how many items, what passed."""
    detail.update({"inventory": len(legs.profiles), "dnr_passed": len(legs.dnr)})
    if legs.dead_ends:
        detail["dead_end"] = [{"name": a["name"], "matched": a["matched"], "idf_sum": a["idf_sum"],
                               "named": a["named"], **_joint(a)} for a, _r in legs.dead_ends[:MAX_ITEMS]]
    span.update({"memhealth.relevance.inventory": len(legs.profiles),
                 "memhealth.relevance.dnr_passed": len(legs.dnr)})
    if legs.dnr:
        detail["dnr"] = [{"name": a["name"], "matched": a["matched"], "idf_sum": a["idf_sum"],
                          "name_cover": a["name_cover"], "identifiers": a["identifiers"], **_joint(a)}
                         for a, _r in legs.dnr[:MAX_ITEMS]]


def _joint(arith: dict) -> dict:
    """The joint-rarity arithmetic of a candidate that was asked it (relevance.Joint)."""
    return {"joint": arith["joint"]} if "joint" in arith else {}


def _code_leg(conn, p: Prompt, corpus: Corpus, legs: Legs, detail: dict, trace) -> None:
    """Leg 1b, what exists in the code: with no inventory entry or confirmed record named
    (they keep precedence), the code index's components, read from its rows."""
    if legs.dnr or legs.dead_ends or not p.toks or p.intent not in DNR_INTENTS or not exists.has_index(conn):
        return
    with trace.span("inject.code") as code_span:
        legs.code, code_detail = exists.match(conn, p.text, p.said, p.topic, corpus.overall)
        code_span.update({"memhealth.code.candidates": code_detail.get("code_candidates", 0),
                          "memhealth.code.matched": legs.code is not None})
    detail["code"] = code_detail
    if legs.code is not None:
        code_detail["dnr"] = legs.code.summary()


def _worth_retrieving(corpus: Corpus, legs: Legs) -> bool:
    """Cheapest first: without one distinctive prompt token the lineage gate cannot pass, and
    with nothing from the entry or code leg there is nothing to find evidence for. Where
    joint rarity acts (a store of a few dozen chunks), `min_matches` + 1 words in the store
    may be distinctive together."""
    return bool(legs.dnr or legs.dead_ends or legs.code or corpus.small
                or corpus.top_idf >= corpus.icfg["distinctive_idf"]
                or (corpus.joint is not None and len(corpus.present) > corpus.icfg["min_matches"]))


def _silent(p: Prompt, corpus: Corpus, detail: dict, span) -> None:
    """Why a prompt not worth retrieving for stays silent."""
    detail["reason"] = "no distinctive token in the prompt" if corpus.present else (
        "no prompt token is in memory" if p.toks else "no content tokens")
    span.set("memhealth.relevance.passed", 0)


def _lineage_leg(conn, p: Prompt, corpus: Corpus, legs: Legs, detail: dict, trace) -> float:
    """Leg 2, lineage and evidence: BM25 over the curated sources, each candidate gated by
    rare words. Returns the milliseconds retrieval took."""
    query = [t for t in corpus.present if corpus.small or corpus.idf[t] >= relevance.MIN_QUERY_IDF]
    if corpus.n_all > relevance.BM25_UNBOUNDED_MAX:
        query, left_out = relevance.bounded_query(conn, query, corpus.overall)
        if left_out:
            detail["query_left_out"] = left_out
    t1 = time.perf_counter()
    with trace.span("memory.search") as search_span:
        search_span.update({"memhealth.search.k": relevance.CANDIDATES, "memhealth.search.legs": "bm25",
                            "memhealth.query.tokens": len(query)})
        with db_span(trace, "SELECT", "chunks_fts") as leg:
            found = relevance.retrieve(conn, query, corpus.curated, frozenset(e.row[0] for e in legs.profiles))
            leg.set("db.response.returned_rows", len(found))
        search_span.set("memhealth.search.hits", len(found))
    ms = (time.perf_counter() - t1) * 1000
    for row, _score in found:
        arith = relevance.relevance(p.toks, row, corpus.idf)
        arith["passed"] = relevance.lineage_passes(arith, row, corpus, p.topic)
        legs.lineage.append((arith, row))
    return ms


def _tally(p: Prompt, legs: Legs, detail: dict, span) -> tuple[list, list, int]:
    """What passed: the lineage candidates that passed (`passing`), those that may speak as
    lineage blocks (`threads`), and how many items passed in all; the best item's arithmetic
    goes into the decision."""
    passing = sorted((s for s in legs.lineage if s[0]["passed"]), key=lambda s: -s[0]["idf_sum"])
    # a doc section speaks on its own only as lineage (decide/investigate, or a decision
    # record on build intent); otherwise it is evidence under an inventory entry
    threads = [s for s in passing if relevance.lineage_allowed(s[1], p.intent)]
    pool = legs.scored + [a for a, _r in legs.lineage]
    first = legs.dnr or legs.dead_ends or passing
    best = first[0][0] if first else max(pool, key=lambda a: a["idf_sum"], default=None)
    passed = len(legs.dnr) + len(legs.dead_ends) + len(threads) + (legs.code is not None)
    detail.update({"candidates": len(legs.lineage), "passed": passed})
    # which words were distinctive together, in how many chunks: the first item that passed
    # by them, else the best candidate's refusal
    by_joint = [a for a, _r in legs.dead_ends + legs.dnr + threads if a.get("joint", {}).get("rare")]
    joint = by_joint[0]["joint"] if by_joint else (best or {}).get("joint")
    if joint is not None:
        detail["joint"] = joint
    if best is not None:
        detail.update({"matched": best["matched"], "idf_sum": best["idf_sum"], "max_idf": best["max_idf"]})
        span.update({"memhealth.relevance.matched": best["matched"],
                     "memhealth.relevance.idf_sum": best["idf_sum"],
                     "memhealth.relevance.max_idf": best["max_idf"]})
    span.set("memhealth.relevance.passed", passed)
    return passing, threads, passed


def _nothing_passed(legs: Legs, passing: list, detail: dict) -> None:
    """Why nothing passed."""
    if not legs.lineage and "reason" not in detail:
        detail["reason"] = "no candidates"
    elif "reason" not in detail:
        # sections passed on build intent: where something is mentioned is not the subsystem
        detail["reason"] = "no inventory entry named; doc sections are evidence only" if passing \
            else "below the gate"


def _offer(conn, corpus: Corpus, legs: Legs, threads: list) -> list:
    """The blocks offered, in order: a dead end re-proposed first (it is what this prompt is
    about to repeat), then the DO-NOT-REBUILD with its evidence, the component read from the
    code, and lineage."""
    need = corpus.icfg["min_matches"]
    offered = [(a, r, "dead_end", []) for a, r in legs.dead_ends[:MAX_DEAD_END]]
    offered += [(a, r, "dnr", relevance.evidence(a, legs.lineage, need)) for a, r in legs.dnr[:MAX_DNR]]
    code = legs.code
    if code is not None:
        arith = {"chunk_id": None, "code_id": code.id, "name": " ".join(code.words) or code.name,
                 "matched_tokens": code.matched, "idf_sum": 0.0, "commit": exists.commit(conn)}
        # a doc mentions the component when it writes its name, or every word of it
        named_in = [e for e in relevance.evidence(arith, legs.lineage, need)
                    if code.name.lower() in (e[7] or "").lower()
                    or set(exists.name_parts(code.name)) <= entries.words(e[7] or "")]
        offered.append((arith, code, "code", named_in))
    offered += [(a, r, "thread", []) for a, r in threads[:MAX_ITEMS * 2]]
    return offered


TARGET_BLOCKS = frozenset({"dnr", "code"})


def _aimed_elsewhere(conn, p: Prompt, corpus: Corpus, offered: list, detail: dict,
                     root: str | None = None) -> list:
    """A DO-NOT-REBUILD (an entry's or a component's from the code) is held when the prompt is
    work about what exists (a test, a docs page, a benchmark of it; a question about why it
    was built), and every block when its target is another system ("... to the S3 backup
    script"): read by memory_core.delivery.target, in both modes, before any embedding is
    asked. What was read (the phrase, its head, the words the project has never written)
    goes into the decision row; none left is recorded as the reason."""
    if corpus.icfg.get("foreign_target", "on") != "on" or not offered:
        return offered
    from memory_core.delivery.about import about_work
    from memory_core.delivery.target import foreign_target

    about = about_work(p.text)
    if about and not any(b in TARGET_BLOCKS for _a, _r, b, _e in offered):
        return offered  # a test or a docs page of what exists wants its decisions and dead ends
    # "never written" is asked of the same sources rarity is measured over; the names of what
    # is offered are the project's own, wherever they are written (a component read from the
    # code is in no chunk: "a NoCache middleware" names chi's NoCache, not another system)
    own = _offered_words(offered)

    def seen(words):
        df = docfreq.doc_freqs(conn, [w for w in words if w not in own], corpus.by_source)
        return {**df, **{w: 1 for w in words if w in own}}

    found = None if about else foreign_target(p.text, seen, _own_tree(root))
    if found is None and about is None:
        return offered
    # another system's work: none of this project's memory is about it, a dead end or a
    # decision no more than a component; work about what exists still wants its records
    kept = [o for o in offered if o[2] not in TARGET_BLOCKS] if about else []
    detail["about" if about else "target"] = {**(about or found), "held": len(offered) - len(kept)}
    if not kept:
        detail["reason"] = ("the prompt is work about what exists, not building it" if about
                            else "the prompt's target is another system")
    return kept


def _own_tree(root: str | None) -> frozenset:
    """The project's own top folders, lowercased, its root's name among them: a path that
    starts in one ("httpx/_commandline/") is the project's, however new the rest."""
    if not root:
        return frozenset()
    names = {os.path.basename(os.path.abspath(root)).lower()}
    try:
        with os.scandir(root) as entries:
            names |= {e.name.lower() for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)}
    except OSError:
        pass
    return frozenset(names)


def _offered_words(offered: list) -> frozenset:
    """The lowercased word parts of the offered items' names and listed identifiers."""
    from memory_core.delivery.target import name_parts

    names = []
    for arith, row, block, _e in offered:
        if block == "code":
            names += [row.name, *(row.words or ())]
        elif block in TARGET_BLOCKS:
            names += [arith.get("name") or "", *(arith.get("identifiers") or ())]
    return frozenset(name_parts(names))


def _meaning_gate(conn, cfg, p: Prompt, corpus: Corpus, offered: list, detail: dict, trace,
                  query_vector) -> list:
    """With embeddings configured, a block speaks only when prompt and item also agree in
    meaning (memory_core.delivery.meaning): asked here, once something is about to fire, so
    the silent path never waits on an embedding server. Returns the blocks that agree (all
    of them when the gate is off); none agreeing is recorded as the reason."""
    if not (cfg["embedding"]["url"] and corpus.icfg["meaning"] == "on"):
        return offered
    from memory_core.delivery import meaning

    rescue_record = detail.get("meaning")
    offered, detail["meaning"] = meaning.agree(conn, cfg, p.text, offered, trace, query_vector)
    if rescue_record:
        detail["meaning"]["rescue"] = rescue_record
    if not offered:
        detail["reason"] = "no block agrees in meaning (cosine below the threshold)"
    return offered


def _deliver(chosen: list, p: Prompt, icfg: dict, detail: dict, retrieval_ms: float) -> InjectResult:
    """Render the chosen blocks; under ablation (`mode = "off"`) record what would have been
    injected instead."""
    from memory_core.delivery import blocks

    text = blocks.render(chosen, p.intent, icfg["max_chars"])
    detail["items"] = [{"chunk_id": a["chunk_id"], "block": b, "idf_sum": a["idf_sum"], **_joint(a),
                        **({"code_id": a["code_id"]} if b == "code" else {}),
                        **({"cosine": a["cosine"]} if "cosine" in a else {})} for a, _r, b, _e in chosen]
    if icfg["mode"] == "off":
        detail["would_inject_chars"] = len(text)
        return InjectResult("suppressed_ablation", retrieval_ms=retrieval_ms, detail=detail)
    detail["chars"] = len(text)
    return InjectResult("injected", text=text, retrieval_ms=retrieval_ms, detail=detail)
