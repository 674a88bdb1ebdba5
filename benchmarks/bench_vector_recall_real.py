"""Vector recall with real vectors: the quantized KNN (memory_core/index/vectors.py: a sign-bit
Hamming scan over 64 partitions, candidates growing with the store, exact cosine rescoring)
against the exact scan, at 10k and 100k chunks embedded by the real model (all-MiniLM-L6-v2,
tests/support/minilm.py), over real queries. scale_vectors.py measures the same path with
synthetic clustered vectors; sentence-model vectors share a large mean direction, which a
sign bit per dimension around zero handles less well, so the two need not agree.

    python benchmarks/run.py vector_recall_real
    python benchmarks/bench_vector_recall_real.py [--sizes 10000,100000] [--tokens 256]
    python benchmarks/bench_vector_recall_real.py --embed-only --worker 0/2 &   # fill the
    python benchmarks/bench_vector_recall_real.py --embed-only --worker 1/2     # cache on 2 cores

The corpus: real documentation text from this machine, in a fixed order --
tests/fixtures/realcorpus (the docs and changelogs of httpx, requests and starlette), the
docstrings of the Python standard library the benchmark runs on (modules, classes and
functions, read with `ast`), and /usr/share/doc (release notes, READMEs, changelogs; license
files skipped) -- cut by memhealth's own markdown chunker (memory_core/ingest/chunking.py)
at CHUNK_CHARS, deduplicated, shuffled with a fixed seed; the first N are the N-chunk store
(so 10k is a sample of the same text as 100k). Every chunk is embedded from
`vectors.embed_text(title, content)`, what ingest embeds, cut at its first EMBED_TOKENS (16)
tokens: at the model's full 256 tokens the numpy model embeds 5-13 chunks/s on a shared 2-core
box (100k chunks: 2-6 hours), at 16 tokens 45-72/s per process. The first PROXY_SAMPLE chunks
are also embedded at full length, and the figures say how far the short vectors are from
them (the sign statistics the bit index depends on). The corpus depends on the machine's
stdlib and packages; its sha256 is printed with the figures and keys the cache.

Queries: every prompt of tests/fixtures/realcorpus (prompts.jsonl and prompts-meaning.jsonl)
and of tests/fixtures/semantic-cues/pairs.jsonl -- text written as a user writes to Claude,
not drawn from the corpus -- split as those fixtures are (`query_part`): httpx's prompts and
the tuned cues are the tuned queries, requests', starlette's and the held-out cues' the
held-out ones.

The candidate floor (vectors.MIN_CANDIDATES) is swept on the shipped path (`sweep_shipped`,
FLOORS), each part scored apart, and `choose_floor` applies the rule written before the
sweep first ran to the tuned part alone; the held-out part is only scored. The numpy replay
rows are a diagnostic beside it.

Embedding 100k chunks took ~13 minutes with two worker processes on a loaded 2-core box (one
BLAS thread each); the vectors are cached under ${MEMHEALTH_E2E_CACHE:-~/.cache/memhealth-e2e}/vector-recall/<sha>/
in parts, so an interrupted run resumes and a rerun only builds the stores.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see docs/internals/real-model.md

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
for _p in (HERE, REPO):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import memhealth_cmd, pct, row  # noqa: E402

DIM = 384
SIZES = (10_000, 100_000)
CHUNK_CHARS = 800     # ~200 tokens: inside the model's 256-token context
EMBED_TOKENS = 16     # each chunk is embedded from its first 16 tokens ([CLS] and [SEP] included)
MIN_CHARS = 80        # shorter pieces (a bare signature, "Return self.") are not documentation
SEED = 20
PART = 4096           # chunks per cached part
K_LEG = 30            # search(k=10) asks the vector leg for k*3
CORPUS_VERSION = 1    # bump when the corpus recipe changes (the sha changes anyway)
QUERY_FILES = ("tests/fixtures/realcorpus/prompts.jsonl",
               "tests/fixtures/realcorpus/prompts-meaning.jsonl",
               "tests/fixtures/semantic-cues/pairs.jsonl")


def cache_root() -> str:
    base = os.environ.get("MEMHEALTH_E2E_CACHE") or os.path.expanduser("~/.cache/memhealth-e2e")
    return os.path.join(base, "vector-recall")


# -- the corpus ---------------------------------------------------------------------------

def _fixture_docs():
    root = os.path.join(REPO, "tests", "fixtures", "realcorpus")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".md"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as fh:
                    yield os.path.relpath(path, REPO), fh.read()


def _stdlib_docstrings():
    stdlib = sysconfig.get_paths()["stdlib"]
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "dist-packages", "__pycache__"))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            try:
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                continue
            module = os.path.relpath(path, stdlib)[:-3].replace(os.sep, ".")
            nodes = [(module, tree)]
            nodes += [(f"{module}.{n.name}", n) for n in ast.walk(tree)
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            for title, node in nodes:
                doc = ast.get_docstring(node)
                if doc:
                    yield title, doc


def _usr_share_doc():
    root = "/usr/share/doc"
    if not os.path.isdir(root):
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            low = name.lower()
            if low.startswith(("copyright", "license", "copying")):
                continue
            plain = low.endswith((".txt", ".md", ".rst")) or low in ("readme", "news", "changes")
            packed = low.endswith(".gz") and low.startswith(("changelog", "news", "readme", "changes"))
            if not (plain or packed):
                continue
            path = os.path.join(dirpath, name)
            try:
                if packed:
                    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                        text = fh.read()
                else:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        text = fh.read()
            except (OSError, EOFError, gzip.BadGzipFile):
                continue
            yield os.path.relpath(path, root), text


def corpus(limit: int) -> list[tuple[str, str]]:
    """[(title, content)], deduplicated, shuffled with SEED, at most `limit`."""
    from memory_core.ingest.chunking import markdown_chunks

    seen: set[str] = set()
    pieces: list[tuple[str, str]] = []
    for gen in (_fixture_docs, _stdlib_docstrings, _usr_share_doc):
        for title, text in gen():
            for piece in markdown_chunks(text, fallback_title=title, limit=CHUNK_CHARS):
                content = piece.content.strip()
                if len(content) < MIN_CHARS:
                    continue
                key = hashlib.sha256(content.encode()).hexdigest()
                if key in seen:
                    continue
                seen.add(key)
                pieces.append((piece.title, content))
    random.Random(SEED).shuffle(pieces)
    return pieces[:limit]


def corpus_sha(chunks: list[tuple[str, str]]) -> str:
    h = hashlib.sha256(f"v{CORPUS_VERSION}".encode())
    for title, content in chunks:
        h.update(title.encode() + b"\0" + content.encode() + b"\0")
    return h.hexdigest()


def query_part(row: dict) -> str:
    """"tuned" or "held-out": the split every other measurement of these fixtures uses (the
    real-corpus prompts of httpx and the first six semantic cues are the tuned part), so a
    candidate count is chosen on the tuned queries and only scored on the held-out ones."""
    if "split" in row:  # tests/fixtures/semantic-cues/pairs.jsonl
        return row["split"]
    return "tuned" if row["project"] == "httpx" else "held-out"


def queries() -> list[tuple[str, str]]:
    """[(prompt, part)] over QUERY_FILES, each distinct prompt once; a prompt in both parts
    (a system turn written for two projects) stays in the first it appears in (tuned)."""
    out: dict[str, str] = {}
    for rel in QUERY_FILES:
        with open(os.path.join(REPO, rel), encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    out.setdefault(row["prompt"], query_part(row))
    return list(out.items())


def _model(tokens: int):
    from tests.support.minilm import MiniLM

    model = MiniLM.load()
    model.tokenizer.enable_truncation(tokens)
    return model


def embedded(chunks: list[tuple[str, str]], log=print, worker: tuple[int, int] | None = None,
             needed: int | None = None):
    """The vectors of the first `needed` chunks (all by default; n x 384 float32), from the
    cache or embedded now, part by part. `worker` (i, n): embed only the missing parts whose
    index is i modulo n (several processes share the work), return None."""
    import numpy as np

    from memory_core.index.vectors import embed_text

    folder = os.path.join(cache_root(), f"{corpus_sha(chunks)[:16]}-t{EMBED_TOKENS}")
    os.makedirs(folder, exist_ok=True)
    model = None
    parts = []
    t_embed, n_embed = 0.0, 0
    for start in range(0, min(len(chunks), needed or len(chunks)), PART):
        path = os.path.join(folder, f"part-{start // PART:04d}.npy")
        if worker and (start // PART) % worker[1] != worker[0]:
            continue
        if not os.path.exists(path):
            model = model or _model(EMBED_TOKENS)
            texts = [embed_text(t, c) for t, c in chunks[start:start + PART]]
            t0 = time.perf_counter()
            vecs = model.embed(texts, batch=32)
            t_embed += time.perf_counter() - t0
            n_embed += len(texts)
            tmp = path + ".tmp.npy"
            np.save(tmp, vecs)
            os.replace(tmp, path)
            log(f"embedded chunks {start}-{start + len(texts)} ({n_embed / t_embed:.1f}/s)")
        if not worker:
            parts.append(np.load(path))
    if worker:
        return None, (n_embed, t_embed)
    return np.concatenate(parts) if parts else np.zeros((0, DIM), np.float32), (n_embed, t_embed)


# -- the stores ---------------------------------------------------------------------------

def _label(n: int) -> str:
    return f"{n // 1000}k"


def _build(tmp: str, chunks, vecs, n: int) -> tuple[str, float]:
    """A project made by `memhealth init`, its chunks inserted with their real text, their
    vectors through the real write path (`vectors.store`, one transaction)."""
    from memory_core.index import vectors
    from memory_core.store.db import connect, write

    root = os.path.join(tmp, f"r{_label(n)}")
    os.makedirs(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHEALTH_", "OTEL_", "CLAUDE_"))}
    subprocess.run(memhealth_cmd() + ["init", "--project", root], check=True, capture_output=True, env=env)
    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        rows = ((f"docs/d{i // 10}.md", title, content, hashlib.sha256(content.encode()).hexdigest())
                for i, (title, content) in enumerate(chunks[:n]))
        with write(conn):
            conn.executemany("INSERT INTO chunks(source, path, line_start, line_end, kind, title, content, "
                             "content_hash, created_ns) VALUES ('docs', ?, 1, 20, 'section', ?, ?, ?, 0)", rows)
        assert vectors.ensure_vec_table(conn, DIM), "sqlite-vec must load for this benchmark"
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
        t0 = time.perf_counter()
        with write(conn):
            stored, refused = vectors.store(conn, ((cid, vecs[i].tolist()) for i, cid in enumerate(ids)))
        seconds = time.perf_counter() - t0
        assert (stored, refused) == (n, 0), (stored, refused)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return root, seconds


def measure(root: str, qvecs: list[list[float]], n: int) -> dict:
    from memory_core.index import vectors
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    try:
        for q in qvecs[:3]:
            vectors.knn(conn, q, K_LEG, exact=False)
        fast10, fast30, exact_ms = [], [], []
        hit10 = hit10in30 = hit30 = 0
        worst = 1.0
        per_query = []
        for q in qvecs:
            t0 = time.perf_counter()
            truth = vectors.knn(conn, q, K_LEG, exact=True)
            exact_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            got10 = vectors.knn(conn, q, 10, exact=False)
            fast10.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            got30 = vectors.knn(conn, q, K_LEG, exact=False)
            fast30.append((time.perf_counter() - t0) * 1000)
            true10 = {c for c, _ in truth[:10]}
            h = len(true10 & {c for c, _ in got10})
            hit10 += h
            hit10in30 += len(true10 & {c for c, _ in got30[:10]})
            hit30 += len({c for c, _ in truth} & {c for c, _ in got30})
            per_query.append(h / 10)
            worst = min(worst, h / 10)
        shards = vectors.shard_count(conn)
        q = len(qvecs)
        return {"n": n, "queries": q,
                "recall10": hit10 / (10 * q), "recall10_k30": hit10in30 / (10 * q),
                "recall30": hit30 / (K_LEG * q), "worst10": worst,
                "perfect10": sum(1 for r in per_query if r == 1.0) / q,
                "knn10_p50": pct(fast10, 50), "knn10_p99": pct(fast10, 99),
                "knn30_p50": pct(fast30, 50), "knn30_p99": pct(fast30, 99),
                "exact_p50": pct(exact_ms, 50), "exact_p99": pct(exact_ms, 99),
                "cand10": vectors.candidates_per_shard(10, n, shards) * shards,
                "cand30": vectors.candidates_per_shard(K_LEG, n, shards) * shards}
    finally:
        conn.close()


FLOORS = (256, 512, 1024, 2048, 4096)  # vectors.MIN_CANDIDATES tried on the shipped path


def sweep_shipped(root: str, qvecs: list[list[float]], parts: list[str], floors=FLOORS) -> dict:
    """recall@10 of the shipped quantized path (vectors.knn, k=10) with vectors.MIN_CANDIDATES
    at each of `floors`, per query part, against the exact scan; with its p50/p99 and the
    exact scan's, timed query by query with the floors interleaved (a load spike on a shared
    box then lands on every floor alike). {floor: {"tuned": recall, "held-out": recall,
    "p50": ms, "p99": ms, "cand": candidates in all}, "exact_p50": ms, "exact_p99": ms}."""
    from memory_core.index import vectors
    from memory_core.store.db import connect

    conn = connect(os.path.join(root, ".memhealth", "memory.db"))
    shipped = vectors.MIN_CANDIDATES
    try:
        n, shards = vectors.vector_count(conn) or 0, vectors.shard_count(conn)
        for q in qvecs[:3]:
            vectors.knn(conn, q, 10, exact=False)
        hits = {f: {} for f in floors}
        times = {f: [] for f in floors}
        exact_ms = []
        for q, part in zip(qvecs, parts, strict=True):
            t0 = time.perf_counter()
            truth = {c for c, _ in vectors.knn(conn, q, 10, exact=True)}
            exact_ms.append((time.perf_counter() - t0) * 1000)
            for f in floors:
                vectors.MIN_CANDIDATES = f
                t0 = time.perf_counter()
                got = vectors.knn(conn, q, 10, exact=False)
                times[f].append((time.perf_counter() - t0) * 1000)
                hits[f].setdefault(part, []).append(len(truth & {c for c, _ in got}))
        out: dict = {"exact_p50": pct(exact_ms, 50), "exact_p99": pct(exact_ms, 99)}
        for f in floors:
            vectors.MIN_CANDIDATES = f
            out[f] = {part: sum(h) / (10 * len(h)) for part, h in hits[f].items()}
            out[f].update(p50=pct(times[f], 50), p99=pct(times[f], 99),
                          cand=vectors.candidates_per_shard(10, n, shards) * shards)
        return out
    finally:
        vectors.MIN_CANDIDATES = shipped
        conn.close()


RECALL_TARGET = 0.95  # recall@10 the floor must reach on the tuned queries at every size measured
COST_CAP = 0.25       # its KNN p50 at most this share of the exact scan's, at the largest size


def choose_floor(swept: dict[int, dict]) -> tuple[int, str]:
    """The candidate floor chosen on the tuned queries alone ({size: sweep_shipped(...)}):
    the smallest of FLOORS whose tuned recall@10 reaches RECALL_TARGET at every size and
    whose p50 stays within COST_CAP of the exact scan's at the largest size; if none reaches
    the target within the cap, the floor with the best tuned recall at the largest size
    within it. Written before the sweep first ran; the held-out queries are only scored."""
    largest = max(swept)
    within = [f for f in FLOORS if swept[largest][f]["p50"] <= COST_CAP * swept[largest]["exact_p50"]]
    for f in within:
        if all(swept[n][f]["tuned"] >= RECALL_TARGET for n in swept):
            return f, f"smallest floor with tuned recall@10 >= {RECALL_TARGET} at every size"
    if not within:
        return FLOORS[0], f"no floor within {COST_CAP} of the exact scan's p50"
    best = max(within, key=lambda f: (swept[largest][f]["tuned"], -f))
    return best, f"no floor reaches {RECALL_TARGET} within the cost cap: the best tuned recall within it"


def _sign_stats(vecs) -> dict:
    """How far real vectors are from the zero-centred sign bits the index keeps: the share of
    dimensions whose sign is the same in 90 % or more of the chunks."""
    import numpy as np

    positive = (vecs > 0).mean(axis=0)
    skewed = float(np.mean((positive >= 0.9) | (positive <= 0.1)))
    mean_norm = float(np.linalg.norm(vecs.mean(axis=0)))
    return {"skewed_dims": skewed, "mean_norm": mean_norm}


PROXY_SAMPLE = 512  # chunks embedded at full length too: how far the 16-token vectors are from them


def proxy_check(chunks, vecs, log=print) -> dict:
    """The first PROXY_SAMPLE chunks embedded at the model's full 256 tokens (cached), against
    their EMBED_TOKENS vectors: the sign statistics the bit index depends on, for both, and
    the cosine between a chunk's short and full vector."""
    import numpy as np

    from memory_core.index.vectors import embed_text

    path = os.path.join(cache_root(), f"{corpus_sha(chunks)[:16]}-full-{PROXY_SAMPLE}.npy")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        full = _model(256).embed([embed_text(t, c) for t, c in chunks[:PROXY_SAMPLE]], batch=16)
        log(f"embedded {PROXY_SAMPLE} chunks at full length in {time.perf_counter() - t0:.0f}s")
        np.save(path + ".tmp.npy", full)
        os.replace(path + ".tmp.npy", path)
    full = np.load(path)
    short = vecs[:PROXY_SAMPLE]
    return {"full": _sign_stats(full), "short": _sign_stats(short),
            "cos_median": float(np.median((full * short).sum(axis=1))),
            "bits_agree": float(((full > 0) == (short > 0)).mean())}


SWEEP = (256, 512, 1024, 2048)  # candidates in all, for the numpy replay below


def replay(vecs, qvecs, candidates: int, center: bool, k: int = 10, first_id: int = 1) -> float:
    """recall@k of vectors.py's algorithm replayed in numpy: sign bits (of the vectors, or of
    the vectors minus their mean when `center`), each of the 64 partitions' (chunk id % 64;
    row i is chunk `first_id + i`) Hamming-nearest `candidates / 64`, exact cosine over those.
    A diagnostic, not the shipped path: the measured rows are the shipped path; this asks what
    would change recall. Ties in Hamming distance are broken by row here, by vec0's order
    there (tests/memory_core/index/test_vector_recall_replay.py holds the two together)."""
    import numpy as np

    from memory_core.index.vectors import SHARDS

    mean = vecs.mean(axis=0) if center else np.zeros(vecs.shape[1], np.float32)
    bits = np.where(vecs - mean > 0, 1.0, -1.0).astype(np.float32)
    shards = [np.arange((p - first_id) % SHARDS, len(vecs), SHARDS) for p in range(SHARDS)]
    per = max(-(-candidates // SHARDS), 1)
    q = np.asarray(qvecs, dtype=np.float32)
    qbits = np.where(q - mean > 0, 1.0, -1.0).astype(np.float32)
    agree = qbits @ bits.T  # higher = nearer in Hamming distance
    exact = q @ vecs.T
    hits = 0
    for i in range(len(q)):
        truth = set(np.argsort(-exact[i], kind="stable")[:k].tolist())
        picked = []
        for rows in shards:
            order = np.argsort(-agree[i, rows], kind="stable")[:per]
            picked.append(rows[order])
        cand = np.concatenate(picked)
        got = cand[np.argsort(-exact[i, cand], kind="stable")[:k]]
        hits += len(truth & set(got.tolist()))
    return hits / (k * len(q))


def bench(quick: bool = False, sizes=None, log=None) -> list[dict]:
    from memory_core.store.db import vec_unavailable_reason
    from tests.support.minilm import MiniLM, Unavailable

    log = log or (lambda msg: print(f"# vector_recall_real: {msg}", file=sys.stderr, flush=True))
    reason = vec_unavailable_reason()
    if reason:
        return [row("vector recall, real vectors", float("nan"), "", note=f"skipped: {reason}")]
    try:
        model = MiniLM.load()
    except Unavailable as exc:
        return [row("vector recall, real vectors: real model unavailable", 0, "", note=str(exc))]
    sizes = tuple(sorted(sizes or SIZES))
    t0 = time.perf_counter()
    # one corpus (and cache) for every size: a smaller run embeds only the parts it needs
    chunks = corpus(max(sizes + SIZES))
    sha = corpus_sha(chunks)
    log(f"corpus: {len(chunks)} chunks ({time.perf_counter() - t0:.1f}s), sha256 {sha[:16]}")
    vecs, (n_embed, t_embed) = embedded(chunks, log=log, needed=max(sizes))
    qparts = queries()
    qtexts = [text for text, _part in qparts]
    parts = [part for _text, part in qparts]
    qvecs = [v.tolist() for v in model.embed(qtexts)]
    signs = _sign_stats(vecs)
    out = [row("vector recall corpus", len(chunks), "chunks",
               note=f"sha256 {sha[:16]}; {len(qtexts)} queries; {signs['skewed_dims']:.1%} of dims keep one "
                    f"sign in >=90% of chunks; |mean vector| {signs['mean_norm']:.3f}")]
    proxy = proxy_check(chunks, vecs, log=log)
    out.append(row(f"{EMBED_TOKENS}-token vs full-length vectors, {PROXY_SAMPLE} chunks", proxy["cos_median"],
                   "cosine", note=f"median cosine; sign bits agree {proxy['bits_agree']:.1%}; skewed dims "
                                  f"{proxy['short']['skewed_dims']:.1%} vs {proxy['full']['skewed_dims']:.1%}, "
                                  f"|mean| {proxy['short']['mean_norm']:.3f} vs {proxy['full']['mean_norm']:.3f}"))
    if n_embed:
        out.append(row("real-model embedding rate (this run, batches of 32, one BLAS thread)",
                       n_embed / t_embed, "chunks/s", note=f"{n_embed} chunks in {t_embed:.0f}s"))
    tmp = tempfile.mkdtemp(prefix="memhealth-bench-vrecall-", dir="/tmp")
    by_size: dict[int, dict] = {}
    try:
        for n in sizes:
            if n > len(vecs):
                out.append(row(f"vector recall, {_label(n)} real chunks", float("nan"), "",
                               note=f"skipped: the corpus has {len(chunks)} chunks"))
                continue
            root, store_s = _build(tmp, chunks, vecs, n)
            fig = measure(root, qvecs, n)
            swept = by_size[n] = sweep_shipped(root, qvecs, parts)
            shutil.rmtree(root, ignore_errors=True)
            label = _label(n)
            import numpy as np

            for floor in FLOORS:
                got = swept[floor]
                for part in ("tuned", "held-out"):
                    out.append(row(f"shipped path: recall@10, {part} queries, floor {floor}, {label} real chunks",
                                   got[part], "ratio", scale=n,
                                   note=f"{got['cand']} candidates for k=10 (MIN_CANDIDATES {floor})"))
                out.append(row(f"shipped path: KNN p50 / exact scan p50, floor {floor}, {label} real chunks",
                               got["p50"] / swept["exact_p50"], "ratio", scale=n,
                               note=f"p50 {got['p50']:.1f} ms, p99 {got['p99']:.1f} ms; exact p50 "
                                    f"{swept['exact_p50']:.1f} ms, p99 {swept['exact_p99']:.1f} ms"))
            sub = np.ascontiguousarray(vecs[:n])
            for center in (False, True):
                for cands in SWEEP:
                    what = "centred sign bits" if center else "sign bits as shipped"
                    for part in ("tuned", "held-out"):
                        mine = [q for q, p in zip(qvecs, parts, strict=True) if p == part]
                        out.append(row(f"replay: recall@10, {what}, {cands} candidates, {part} queries, "
                                       f"{label} real chunks", replay(sub, mine, cands, center), "ratio", scale=n,
                                       note="numpy replay of the quantized path (diagnostic)"))
            note10 = f"{fig['queries']} queries, {fig['cand10']} candidates"
            out += [
                row(f"vector recall@10, quantized vs exact, k=10, {label} real chunks", fig["recall10"], "ratio",
                    scale=n, note=f"{note10}; worst query {fig['worst10']:.1f}, "
                                  f"{fig['perfect10']:.0%} of queries 10/10"),
                row(f"vector recall@10 (top 10 of k={K_LEG}), {label} real chunks", fig["recall10_k30"], "ratio",
                    scale=n, note=f"{fig['cand30']} candidates"),
                row(f"vector recall@{K_LEG}, quantized vs exact, {label} real chunks", fig["recall30"], "ratio",
                    scale=n),
                row(f"vector KNN p50, quantized + rescored, k=10, {label} real chunks", fig["knn10_p50"], "ms",
                    scale=n, note=f"p99 {fig['knn10_p99']:.1f} ms"),
                row(f"vector KNN p50, quantized + rescored, k={K_LEG}, {label} real chunks", fig["knn30_p50"],
                    "ms", scale=n, note=f"p99 {fig['knn30_p99']:.1f} ms"),
                row(f"vector KNN p50, exact scan, k={K_LEG}, {label} real chunks", fig["exact_p50"], "ms",
                    scale=n, note=f"p99 {fig['exact_p99']:.1f} ms"),
                row(f"vector store rate (vectors.store), {label} real chunks", n / store_s, "vectors/s", scale=n),
            ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if by_size:
        floor, why = choose_floor(by_size)
        largest = max(by_size)
        out.append(row("candidate floor chosen on the tuned queries", floor, "candidates",
                       note=f"{why}; at {_label(largest)}: tuned {by_size[largest][floor]['tuned']:.3f}, "
                            f"held-out {by_size[largest][floor]['held-out']:.3f}"))
    return out


def main(argv: list[str]) -> int:
    global EMBED_TOKENS
    if "--tokens" in argv:  # e.g. 256: full-length vectors (hours at 100k; minutes at 10k)
        EMBED_TOKENS = int(argv[argv.index("--tokens") + 1])
    sizes = None
    if "--sizes" in argv:
        sizes = tuple(int(s) for s in argv[argv.index("--sizes") + 1].split(","))
    if "--embed-only" in argv:
        chunks = corpus(max((sizes or ()) + SIZES))
        print(f"corpus {len(chunks)} chunks, sha256 {corpus_sha(chunks)}", flush=True)
        worker = None
        if "--worker" in argv:
            i, n = argv[argv.index("--worker") + 1].split("/")
            worker = (int(i), int(n))
        embedded(chunks, log=lambda m: print(m, flush=True), worker=worker,
                 needed=max(sizes) if sizes else None)
        return 0
    for r in bench(sizes=sizes):
        shown = f"{r['value']:.3f}" if isinstance(r["value"], float) else r["value"]
        print(f"{r['name']:<72} {shown:>12} {r['unit']:<9} {r['note']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
