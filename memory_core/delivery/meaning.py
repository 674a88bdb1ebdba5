"""Agreement in meaning before memory speaks: with embeddings configured, a block the rare-word
cascade is about to deliver (DO-NOT-REBUILD, DEAD-END, lineage) is delivered only when the
prompt and the item also agree in meaning — the cosine of their embeddings reaches
`[injection].meaning_threshold`.

    kept, record = agree(conn, cfg, prompt, offered, trace)
    record  # {"status": "checked", "threshold": 0.3, "model": "all-minilm",
            #  "items": [{"chunk_id": 7, "block": "dnr", "cosine": 0.52, "agrees": True}]}

Shared rare words say a prompt and an item are about the same things; they cannot say the
prompt means the item ("add retries to the CI job" shares "retries" with an HTTP adapter's
retry policy). The embedding can. It is asked only here, once a block is about to fire: a
prompt that passes no lexical gate costs no embedding call and no import of this module.

Cost and failure, on the hook path:
- one /api/embed call carrying the prompt and any offered item that has no stored vector
  yet (stored vectors are read from `chunk_vectors` as plain blobs; sqlite-vec is not needed);
- its read timeout is `[injection].meaning_timeout_s`, never more than [embedding].timeout_s
  nor a quarter of [hooks].timeout_s: the hook answers in time however the server behaves;
- it goes through the client's per-process circuit breaker; a failure (server down, slow,
  busy, wrong width) is logged once per process as a degradation (component "meaning") and
  the blocks are delivered as the lexical cascade decided: BM25-only behaviour, never silence
  by accident and never a failed hook.

A high cosine may also *rescue* a lexical miss (`rescue`, `[injection].meaning_rescue`): a
re-proposal said in other words than the entry's ("guess the text encoding of a response"
for "Encoding detection") shares no rare word with it. Measured on the real corpus
(docs/internals/evaluation.md) it recovers re-proposals with no false block on either part,
but it needs the prompt's embedding on every build or decision prompt that no lexical gate
passed, so it is opt-in: off, the silent path asks nothing of the embedding server.
"""

from __future__ import annotations

import math
import struct

MAX_ITEMS = 6          # offered blocks checked per prompt (the cascade offers at most ~6)
COMPONENT = "meaning"  # the degradations row's component


def enabled(cfg) -> bool:
    """The gate runs when an embedding server is configured and [injection].meaning is on."""
    return bool(cfg["embedding"]["url"]) and cfg["injection"].get("meaning", "on") == "on"


def timeout_s(cfg) -> float:
    """The read timeout of the prompt's embedding: the configured one, bounded by the
    embedding client's hook-path timeout and a quarter of the hook's own timeout."""
    return max(0.05, min(float(cfg["injection"]["meaning_timeout_s"]), float(cfg["embedding"]["timeout_s"]),
                         float(cfg["hooks"]["timeout_s"]) / 4))


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine of two vectors (pure Python: 384 products, no numpy on the hook path)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def stored(conn, ids: list[int], dim: int) -> dict[int, list[float]]:
    """The stored float32 vectors of `ids` that have `dim` floats (a plain table read)."""
    from memory_core.index.vectors import EXACT_TABLE

    if not ids:
        return {}
    try:
        rows = conn.execute(f"SELECT chunk_id, embedding FROM {EXACT_TABLE} WHERE chunk_id IN "
                            f"({','.join('?' * len(ids))})", ids).fetchall()
    except Exception:  # noqa: BLE001 - no table yet (never embedded): embed the items instead
        return {}
    out = {}
    for chunk_id, blob in rows:
        if isinstance(blob, bytes) and len(blob) == 4 * dim:
            out[int(chunk_id)] = list(struct.unpack(f"<{dim}f", blob))
    return out


def _key(row, block: str):
    """What an offered item is known by: its chunk id, or ("code", id) for a component read
    from the code (it has no chunk and no stored vector)."""
    return ("code", row.id) if block == "code" else row[0]


def _text(row, block: str) -> str:
    """What an item means, as embedded: a chunk's title and content; a component's name in
    words, its qualified name and its doc."""
    from memory_core.index.vectors import embed_text

    if block == "code":
        return embed_text(" ".join(row.words) or row.name, f"{row.qualname or row.name}\n{row.doc or ''}")
    return embed_text(row[6], row[7])


def agree(conn, cfg, prompt: str, offered: list, trace, query: list[float] | None = None) -> tuple[list, dict]:
    """Keep the offered blocks whose item agrees with the prompt in meaning; the record of
    every cosine, the threshold and the status goes into the decision row. `offered` is the
    cascade's list of (arith, row, block, evidence): chunks (entries, dead ends, lineage) and
    components read from the code alike; `query` is the prompt's vector when the rescue
    already has it. On any embedding failure every block is kept (the lexical decision
    stands) and the record says why."""
    from memory_core.index.embed import EmbedError

    icfg = cfg["injection"]
    threshold = float(icfg["meaning_threshold"])
    dim = int(cfg["embedding"]["dim"])
    record: dict = {"threshold": threshold, "model": cfg["embedding"]["model"]}
    checked = offered[:MAX_ITEMS]
    with trace.span("inject.meaning") as span:
        have = stored(conn, [row[0] for _a, row, block, _e in checked if block != "code"], dim)
        missing = [(row, block) for _a, row, block, _e in checked if _key(row, block) not in have]
        fresh = {_key(row, block) for row, block in missing}
        budget = timeout_s(cfg)
        span.update({"memhealth.meaning.items": len(checked), "memhealth.meaning.embedded_items": len(missing),
                     "memhealth.meaning.threshold": threshold})
        texts = ([] if query is not None else [prompt]) + [_text(row, block) for row, block in missing]
        try:
            vectors = _embed(cfg, texts, trace, budget) if texts else []
        except EmbedError as exc:
            _log(conn, exc)
            record.update({"status": "degraded", "reason": exc.reason})
            span.update({"memhealth.meaning.status": "degraded", "memhealth.meaning.reason": exc.reason})
            return offered, record
        if query is None:
            query, vectors = vectors[0], vectors[1:]
        have.update({_key(row, block): vec for (row, block), vec in zip(missing, vectors, strict=True)})
        kept, items = [], []
        for n, (arith, row, block, evidence) in enumerate(offered):
            if n >= MAX_ITEMS:
                break  # never reached in practice; an unchecked block is not delivered
            key = _key(row, block)
            cos = round(cosine(query, have[key]), 4)
            # an identifier the entry lists, written in the prompt (GZipMiddleware), is a name:
            # it cannot mean another thing, however far the prompt's prose is from the entry's
            by_name = bool(arith.get("written"))
            agrees = cos >= threshold or by_name
            items.append({("code_id" if block == "code" else "chunk_id"): row.id if block == "code" else row[0],
                          "block": block, "cosine": cos, "agrees": agrees,
                          **({"by": "identifier"} if by_name and cos < threshold else {}),
                          "vector": "embedded now" if key in fresh else "stored"})
            if agrees:
                kept.append(({**arith, "cosine": cos}, row, block, evidence))
        record.update({"status": "checked", "items": items})
        span.update({"memhealth.meaning.status": "checked", "memhealth.meaning.kept": len(kept)})
    return kept, record


def _log(conn, exc) -> None:
    """One degradations row per process and reason; a skip by the open circuit is the failure
    already logged, not a new one."""
    from memory_core.index.embed import log_degradation_once

    if exc.reason != "circuit_open":
        log_degradation_once(conn, exc.reason, str(exc)[:300], component=COMPONENT)


def _embed(cfg, texts: list[str], trace, budget: float) -> list[list[float]]:
    from memory_core.index.embed import OllamaClient

    with OllamaClient.from_config(cfg) as client:
        return client.embed(texts, trace=trace, timeout_s=budget)


MAX_RESCUE_EMBED = 32  # inventory entries without a stored vector embedded in one rescue call


def rescue(conn, cfg, prompt: str, entries: list, trace) -> tuple[tuple | None, list[float] | None, dict]:
    """The inventory entry the prompt means, by meaning alone, when no entry passed the rare-
    word gate: the one with the highest cosine, if it reaches
    `[injection].meaning_rescue_threshold`. `entries` are (arith, row) of DO-NOT-REBUILD
    entries. Returns ((arith, row) or None, the prompt's vector or None, the record)."""
    from memory_core.index.embed import EmbedError
    from memory_core.index.vectors import embed_text

    icfg = cfg["injection"]
    threshold = float(icfg["meaning_rescue_threshold"])
    record: dict = {"rescue_threshold": threshold, "model": cfg["embedding"]["model"]}
    dim = int(cfg["embedding"]["dim"])
    with trace.span("inject.meaning_rescue") as span:
        have = stored(conn, [row[0] for _a, row in entries], dim)
        missing = [row for _a, row in entries if row[0] not in have][:MAX_RESCUE_EMBED]
        try:
            vectors = _embed(cfg, [prompt] + [embed_text(r[6], r[7]) for r in missing], trace, timeout_s(cfg))
        except EmbedError as exc:
            _log(conn, exc)
            record.update({"status": "degraded", "reason": exc.reason})
            span.update({"memhealth.meaning.status": "degraded", "memhealth.meaning.reason": exc.reason})
            return None, None, record
        query = vectors[0]
        have.update({row[0]: vec for row, vec in zip(missing, vectors[1:], strict=True)})
        scored = sorted(((round(cosine(query, have[row[0]]), 4), arith, row) for arith, row in entries
                         if row[0] in have), key=lambda s: -s[0])
        record["status"] = "checked"
        record["best"] = [{"chunk_id": row[0], "name": arith["name"], "cosine": cos}
                          for cos, arith, row in scored[:3]]
        if scored and scored[0][0] >= threshold:
            cos, arith, row = scored[0]
            record["rescued"] = row[0]
            span.update({"memhealth.meaning.status": "rescued"})
            return ({**arith, "cosine": cos, "rescued": True}, row), query, record
        span.update({"memhealth.meaning.status": "checked"})
    return None, query, record
