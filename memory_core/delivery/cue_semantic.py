"""Semantic cues: a `semantic:` cue fires on a prompt whose embedding is close to the cue's
query. The threshold belongs to the model, measured on labeled pairs
(benchmarks/bench_cue_threshold.py, docs/internals/evaluation.md). Imported only when the
store holds a semantic cue: the other hooks never pay for it.

    fired = match(rows, prompt, cfg, trace, skip)   # [(item_id, "ask about X ~ cos 0.52")]
"""

from __future__ import annotations

import json

SEMANTIC_MIN_COSINE = 0.75  # unit vectors, a model not measured here: a paraphrase, not a shared topic
# -- the semantic cue threshold per model ----------------------------------------------------
# A model's cosines are its own, so a threshold is measured per model on labeled pairs
# (benchmarks/bench_cue_threshold.py, docs/internals/evaluation.md): all-minilm puts
# paraphrases at 0.31-0.87 and same-topic prompts at -0.07-0.58, where 0.75 fired on a fifth
# of the paraphrases. The names are Ollama's for all-MiniLM-L6-v2 (all-minilm:33m is L12).
SEMANTIC_MIN_COSINE_BY_MODEL = {"all-minilm": 0.448, "all-minilm:latest": 0.448,
                                "all-minilm:22m": 0.448, "all-minilm:l6-v2": 0.448}
# -- end semantic cue threshold per model ----------------------------------------------------


def match(rows, text: str, cfg, trace, skip) -> list[tuple[int, str]]:
    """The semantic cues of `rows` ((item_id, pattern, compiled)) whose query reaches
    `semantic_min_cosine(cfg)` against `text`, as (item_id, why). One embedding call; a cue
    that cannot be judged is passed to `skip(trigger, reason, detail, item_id)` as
    `inactive`, one below the threshold as `no_match` with its cosine."""
    ready = []
    for item_id, pattern, compiled in rows:
        why = semantic_inactive_reason(cfg, compiled)
        if why:
            skip("semantic", "inactive", why, item_id)
        else:
            ready.append((item_id, pattern, json.loads(compiled)["v"]))
    if not ready or not text.strip():
        return []
    from memory_core.index.embed import EmbedError, OllamaClient

    try:
        with OllamaClient.from_config(cfg) as client:
            [query] = client.embed([text[:16384]], trace=trace)
    except EmbedError as exc:
        for item_id, _pattern, _v in ready:
            skip("semantic", "inactive", f"embedding failed: {exc.reason}", item_id)
        return []
    out = []
    threshold = semantic_min_cosine(cfg)
    for item_id, pattern, vector in ready:
        cosine = sum(a * b for a, b in zip(query, vector, strict=False))
        if cosine >= threshold:
            out.append((item_id, f"{pattern[:60]} ~ cos {cosine:.2f}"))
        else:
            skip("semantic", "no_match", f"cos {cosine:.2f} < {threshold:g}", item_id)
    return out


def semantic_min_cosine(cfg) -> float:
    """The cosine a prompt needs to a `semantic:` cue's query: `[injection].semantic_cue_min_cosine`
    when set (not 0), else the one measured for `[embedding].model`, else SEMANTIC_MIN_COSINE."""
    chosen = float(cfg.get("injection", {}).get("semantic_cue_min_cosine", 0.0) or 0.0)
    if chosen:
        return chosen
    model = str(cfg.get("embedding", {}).get("model", "")).strip().lower()
    return SEMANTIC_MIN_COSINE_BY_MODEL.get(model, SEMANTIC_MIN_COSINE)


def semantic_inactive_reason(cfg, compiled: str | None = None) -> str | None:
    """Why a `semantic:` cue cannot fire with this config and compiled vector, or None."""
    e = cfg.get("embedding", {})
    if not e.get("url"):
        return "no embedding server configured ([embedding].url is empty)"
    if not compiled:
        return "not embedded yet: run `memhealth ingest memory` with the embedding server up"
    try:
        have = json.loads(compiled)
    except ValueError:
        have = {}
    if have.get("model") != e.get("model") or have.get("dim") != int(e.get("dim", 0)):
        return (f"embedded with {have.get('model')} ({have.get('dim')}-d), configured {e.get('model')} "
                f"({e.get('dim')}-d): run `memhealth ingest memory`")
    return None
