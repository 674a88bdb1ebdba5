"""Ollama embedding client: /api/embed with a per-process circuit breaker, a dimension
guard, a context-overflow retry and a log-once degradation record.

    client = OllamaClient.from_config(cfg)               # hook path: read timeout = timeout_s
    vectors = client.embed(["why does the WAL stall"])   # list[list[float]], or EmbedError

Transport, one rule: a process that makes one call pays for every import it needs, so a
plain http:// URL goes through memory_core.index.http (stdlib sockets, a whole-call deadline, no
httpx import: ~40-55 ms saved in every hook and gate); bulk embedding (`from_config(...,
bulk=True)`: ingest and embed, many calls over one kept-alive connection) and every https://
URL (TLS, verified against the system store or [embedding].ca_file) go through httpx,
imported on the first request. `_transport_error` maps both transports' failures to REASONS.

Import this module only when an embedding call is about to be made: the non-intent hook
path must not pay for it.

Every failure is an `EmbedError` whose `.reason` is one of REASONS:
    unreachable        nothing answers at the URL (connection refused, connect timeout)
    timeout            connected, but no answer within the read timeout (wedged or loading)
    http_error         any other non-2xx answer (`.status`, `.body_head`)
    model_missing      404 naming the model (both body forms Ollama has used)
    busy               503: Ollama's queue is full
    malformed          a 2xx that is not an Ollama answer (HTML, wrong JSON shape)
    dimension_mismatch a vector of another width than the store's (never returned)
    context_overflow   still too long after truncating to the smallest head
    circuit_open       an earlier call in this process failed; skipped without a request
    not_configured     [embedding].url is empty
"""

from __future__ import annotations

import json
import math
import time
from urllib.parse import urlsplit

from memory_core.errors import MemoryCoreError
from memory_core.text import clean

REASONS = frozenset({"unreachable", "timeout", "http_error", "model_missing", "busy", "malformed",
                     "dimension_mismatch", "context_overflow", "circuit_open", "not_configured"})
# Failures that say "this server cannot help right now": the rest of the process skips it.
# A wrong width or a missing model is a configuration error, reported on every call instead.
BREAKER_REASONS = frozenset({"unreachable", "timeout", "busy"})
# On "exceeds the context length", retry with a head of 24,000 characters,
# halving down to 1,000.
OVERFLOW_HEADS = (24000, 12000, 6000, 3000, 1500, 1000)
_OVERFLOW_TEXT = "exceeds the context length"
HEAD_CHARS = 200

_OPEN: dict[str, EmbedError] = {}          # endpoint -> the failure that opened its circuit
_LEGACY: set[str] = set()                  # endpoints without /api/embed (old Ollama)
_LOGGED: set[tuple[str, str]] = set()      # (component, reason) degradations written


class EmbedError(MemoryCoreError):
    """An embedding call failed; `.reason` (one of REASONS) says how, `.status` and
    `.body_head` carry the HTTP evidence when there was an answer."""

    def __init__(self, reason: str, message: str, *, status: int | None = None,
                 body_head: str = "", endpoint: str = ""):
        super().__init__(message)
        self.reason = reason
        self.status = status
        self.body_head = body_head
        self.endpoint = endpoint


# -- circuit breaker ---------------------------------------------------------------------

def _endpoint(url: str) -> str:
    return url.rstrip("/")


def circuit_open(url: str) -> EmbedError | None:
    """The failure that opened the circuit for `url` in this process, or None."""
    return _OPEN.get(_endpoint(url))


def reset_circuit(url: str | None = None) -> None:
    """Close the circuit for `url` (all endpoints when None); for long-lived processes
    such as `memhealth serve` that want to retry after a while."""
    if url is None:
        _OPEN.clear()
    else:
        _OPEN.pop(_endpoint(url), None)


def forget_process_state() -> None:
    """Forget open circuits, legacy endpoints and logged degradations, as a new process
    would (tests; a long-lived process starting a fresh cycle)."""
    _OPEN.clear()
    _LEGACY.clear()
    _LOGGED.clear()


def log_degradation_once(conn, reason: str, detail: str = "", component: str = "embedding") -> bool:
    """Write one `degradations` row per process, component and reason; True if written now.

    Never raises: a store that cannot be written must not turn a degraded search into a
    failed one (the next call in this process tries again)."""
    key = (component, reason)
    if key in _LOGGED:
        return False
    from memory_core.errors import StoreError
    from memory_core.outbox.decisions import insert_degradation
    from memory_core.store.db import sqlite3, write

    try:
        if conn.in_transaction:
            insert_degradation(conn, component, reason, detail)
        else:
            with write(conn):
                insert_degradation(conn, component, reason, detail)
    except (StoreError, sqlite3.Error):
        return False
    _LOGGED.add(key)
    return True


def embedding_length(show: dict) -> int | None:
    """The width from an /api/show answer (`model_info["<arch>.embedding_length"]`), or None."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    keys = [f"{arch}.embedding_length"] if arch else []
    keys += [k for k in info if k.endswith(".embedding_length")]
    for key in keys:
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def context_length(show: dict) -> int | None:
    """The context window from an /api/show answer, or None."""
    info = show.get("model_info") if isinstance(show, dict) else None
    if not isinstance(info, dict):
        return None
    for key, value in info.items():
        if key.endswith(".context_length") and isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _tls_hint(exc: BaseException) -> str:
    """A certificate failure, said so (with what to do), or "" for any other failure."""
    import ssl

    cause = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return (f"TLS certificate not trusted: {cause.verify_message or cause}; for a private "
                    "CA set [embedding].ca_file to its PEM bundle")
        cause = cause.__cause__ or cause.__context__
    return ""


# -- the client ----------------------------------------------------------------------------

class OllamaClient:
    """Talks to one Ollama endpoint with the same keep_alive and num_ctx on every request.

        client = OllamaClient("http://127.0.0.1:11434", "nomic-embed-text", 768)
        client.embed(["text"], trace=trace)      # [[0.01, ...]]; EmbedError on failure
        client.tags(); client.show(); client.ps()  # for the probe; never skipped by the breaker
    """

    def __init__(self, url: str = "http://127.0.0.1:11434", model: str = "nomic-embed-text",
                 dim: int = 768, keep_alive: str = "4h", num_ctx: int = 8192,
                 connect_timeout_s: float = 0.5, read_timeout_s: float = 2.0,
                 pooled: bool = False, ca_file: str = ""):
        # IPv4 literal by default: localhost may resolve to ::1 first while Ollama binds
        # 127.0.0.1 (measured: 11.3 s instead of 1.6 s per hook).
        self.url = _endpoint(url)
        self.model = model
        self.dim = dim
        self.keep_alive = keep_alive
        self.num_ctx = num_ctx
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self.refused = 0          # wrong-width vectors this client refused
        self.last_response: dict = {}
        # httpx for bulk work (one kept-alive connection for many calls) and for TLS
        self.pooled = pooled
        self.ca_file = ca_file  # PEM bundle to trust for https:// instead of the system store
        self._http = None

    @property
    def transport(self) -> str:
        """"httpx" or "small" (memory_core.index.http), by the rule in the module docstring."""
        return "httpx" if self.pooled or not self.url.startswith("http://") else "small"

    @classmethod
    def from_config(cls, cfg, bulk: bool = False, pooled: bool | None = None) -> OllamaClient:
        """A client for `cfg["embedding"]`: hook-path read timeout, or bulk_timeout_s.
        `pooled` (default: `bulk`) picks httpx for a plain http:// URL: a hook's short
        ingest is bulk work in a process that must not pay for the import."""
        e = cfg["embedding"]
        if not e["url"]:
            raise EmbedError("not_configured", "embedding is not configured ([embedding].url is empty)")
        return cls(e["url"], e["model"], int(e["dim"]), e["keep_alive"], int(e["num_ctx"]),
                   float(e["connect_timeout_s"]),
                   float(e["bulk_timeout_s"] if bulk else e["timeout_s"]),
                   pooled=bulk if pooled is None else pooled, ca_file=e.get("ca_file") or "")

    @property
    def server_address(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def server_port(self) -> int | None:
        try:
            return urlsplit(self.url).port
        except ValueError:
            return None

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> OllamaClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- public calls ---------------------------------------------------------------

    def embed(self, texts: list[str], *, trace=None, timeout_s: float | None = None,
              respect_circuit: bool = True) -> list[list[float]]:
        """One unit vector per text, each exactly `dim` wide; EmbedError otherwise.

        The whole call, retries included, ends within connect + read timeout
        (`timeout_s` overrides the read timeout, e.g. for a warm-up retry)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = [clean(t) for t in texts]
        if not texts:
            return []
        budget = self._budget(timeout_s)
        span = None
        if trace is not None:
            span = trace.span(f"embeddings {self.model}", kind="client", **{
                "gen_ai.operation.name": "embeddings", "gen_ai.provider.name": "ollama",
                "gen_ai.request.model": self.model, "server.address": self.server_address,
                "server.port": self.server_port, "gen_ai.embeddings.dimension.count": self.dim,
                "memhealth.embed.inputs": len(texts)})
        try:
            if respect_circuit:
                opened = circuit_open(self.url)
                if opened is not None:
                    raise EmbedError("circuit_open",
                                     f"embedding skipped: {self.url} failed earlier in this process "
                                     f"({opened.reason})", endpoint=self.url)
            vectors = self._embed_retrying(texts, budget)
        except EmbedError as exc:
            if exc.reason in BREAKER_REASONS:
                _OPEN[self.url] = exc
            if span is not None:
                span.fail(str(exc), exc.reason)
            raise
        finally:
            if span is not None:
                span.end()
        if span is not None:
            tokens = self.last_response.get("prompt_eval_count")
            if isinstance(tokens, int):
                span.set("gen_ai.usage.input_tokens", tokens)
        return vectors

    def tags(self, timeout_s: float | None = None) -> list[dict]:
        """`GET /api/tags` → the installed models (`[{name, model, details, ...}]`)."""
        data = self._call("GET", "/api/tags", None, self._budget(timeout_s))
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/tags", data)
        return [m for m in models if isinstance(m, dict)]

    def show(self, model: str | None = None, timeout_s: float | None = None) -> dict:
        """`POST /api/show` → details and model_info (see `embedding_length`); a missing
        model raises EmbedError("model_missing")."""
        data = self._call("POST", "/api/show", self._body(model=model or self.model),
                          self._budget(timeout_s))
        if not isinstance(data.get("model_info", {}), dict):
            raise self._malformed("/api/show", data)
        return data

    def ps(self, timeout_s: float | None = None) -> list[dict]:
        """`GET /api/ps` → the models loaded right now (absent = cold)."""
        data = self._call("GET", "/api/ps", None, self._budget(timeout_s))
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/ps", data)
        return [m for m in models if isinstance(m, dict)]

    def has_model(self, models: list[dict], name: str | None = None) -> bool:
        """Whether `name` (default: this client's model) is in a tags list; a bare name
        matches its `:latest` tag."""
        name = name or self.model
        wanted = {name, name if ":" in name else f"{name}:latest"}
        return any(m.get("name") in wanted or m.get("model") in wanted for m in models)

    # -- internals ------------------------------------------------------------------

    def _budget(self, timeout_s: float | None) -> tuple[float, float]:
        """(deadline for the whole call, read timeout of each request)."""
        read_s = self.read_timeout_s if timeout_s is None else timeout_s
        return time.monotonic() + self.connect_timeout_s + read_s, read_s

    def _body(self, **fields) -> dict:
        # The same keep_alive and num_ctx on every request: a different num_ctx makes
        # Ollama reload the model (Ollama's API docs), which turns a warm server cold.
        return {**fields, "keep_alive": self.keep_alive, "options": {"num_ctx": self.num_ctx}}

    def _embed_retrying(self, texts: list[str], budget: tuple[float, float]) -> list[list[float]]:
        heads = iter(OVERFLOW_HEADS)
        current = texts
        while True:
            try:
                return self._embed_once(current, budget)
            except EmbedError as exc:
                if exc.reason != "context_overflow":
                    raise
                longest = max(len(t) for t in current)
                head = next(heads, None)
                while head is not None and head >= longest:
                    head = next(heads, None)
                if head is None or time.monotonic() >= budget[0]:
                    raise
                current = [t[:head] for t in current]

    def _embed_once(self, texts: list[str], budget: tuple[float, float]) -> list[list[float]]:
        if self.url in _LEGACY:
            return self._embed_legacy(texts, budget)
        try:
            data = self._call("POST", "/api/embed", self._body(model=self.model, input=texts), budget)
        except EmbedError as exc:
            if exc.reason == "http_error" and exc.status == 404:
                # a 404 that does not name a model is a missing route: Ollama before /api/embed
                _LEGACY.add(self.url)
                return self._embed_legacy(texts, budget)
            raise
        vectors = data.get("embeddings")
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise self._malformed("/api/embed", data)
        self.last_response = {k: data.get(k) for k in ("total_duration", "load_duration",
                                                         "prompt_eval_count")}
        return self._guard(vectors, "/api/embed")

    def _embed_legacy(self, texts: list[str], budget: tuple[float, float]) -> list[list[float]]:
        vectors = []
        for text in texts:
            data = self._call("POST", "/api/embeddings", self._body(model=self.model, prompt=text),
                              budget)
            vec = data.get("embedding")
            if not isinstance(vec, list):
                raise self._malformed("/api/embeddings", data)
            vectors.append(vec)
        self.last_response = {}
        return self._guard(vectors, "/api/embeddings")

    def _guard(self, vectors: list, path: str) -> list[list[float]]:
        """The dimension guard: every vector is `dim` finite floats, or nothing is returned."""
        out = []
        wrong = [len(v) for v in vectors if not isinstance(v, list) or len(v) != self.dim]
        if wrong:
            self.refused += len(wrong)
            raise EmbedError(
                "dimension_mismatch",
                f"{self.model} returned {wrong[0]}-dim vectors but the store expects {self.dim} "
                f"([embedding].dim); pick the model that matches, or change dim and run "
                f"`memhealth embed --rebuild`", endpoint=self.url)
        for vec in vectors:
            try:
                floats = [float(x) for x in vec]
            except (TypeError, ValueError):
                raise self._malformed(path, {"embeddings": "non-numeric"}) from None
            if not all(math.isfinite(x) for x in floats):
                raise self._malformed(path, {"embeddings": "non-finite"})
            out.append(floats)
        return out

    def _malformed(self, path: str, data) -> EmbedError:
        head = str(data)[:HEAD_CHARS]
        return EmbedError("malformed", f"{path} at {self.url} does not answer like an Ollama server: {head}",
                          body_head=head, endpoint=self.url)

    def _client(self):
        if self._http is None:
            import httpx

            verify = True
            if self.ca_file:
                import ssl

                # trust exactly this bundle (a private CA, a self-signed Ollama proxy);
                # verification is never turned off
                verify = ssl.create_default_context(cafile=self.ca_file)
            # trust_env=False: a developer's HTTP_PROXY must not route this traffic.
            self._http = httpx.Client(trust_env=False, verify=verify)
        return self._http

    def _call(self, method: str, path: str, body: dict | None, budget: tuple[float, float]) -> dict:
        """One request; the parsed JSON object, or EmbedError with the right reason."""
        from memory_core.index import http

        deadline, read_s = budget
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EmbedError("timeout", f"{path} at {self.url}: no time left in this call's budget",
                             endpoint=self.url)
        # A hung server blocks one read: it costs the read timeout, not the whole budget.
        read = min(read_s, remaining)
        try:
            if self.transport == "small":
                status, raw = http.request(method, self.url + path, body, self.connect_timeout_s,
                                           read, deadline)
                text = raw.decode("utf-8", "replace")
            else:
                status, text = self._call_httpx(method, path, body, read, remaining)
        except http.HttpError as exc:
            raise self._transport_error(exc, path, read) from exc
        head = text[:HEAD_CHARS]
        if status >= 400:
            raise self._http_failure(path, status, text, head)
        try:
            data = json.loads(text)
        except ValueError:
            raise self._malformed(path, head) from None
        if not isinstance(data, dict):
            raise self._malformed(path, head)
        return data

    def _call_httpx(self, method, path, body, read, remaining) -> tuple[int, str]:
        """httpx's exceptions become memory_core.index.http.HttpError kinds, so that one function
        (_transport_error) maps both transports to embedding failure reasons."""
        import httpx

        from memory_core.index.http import HttpError

        timeout = httpx.Timeout(read, connect=min(self.connect_timeout_s, remaining))
        try:
            resp = self._client().request(method, self.url + path, json=body, timeout=timeout)
        except httpx.ConnectTimeout as exc:
            raise HttpError("connect_timeout", str(exc)) from exc
        except httpx.TimeoutException as exc:
            raise HttpError("timeout", str(exc)) from exc
        except (httpx.ConnectError, httpx.NetworkError) as exc:  # refused, reset, TLS refused
            raise HttpError("unreachable", _tls_hint(exc) or str(exc) or type(exc).__name__) from exc
        except httpx.HTTPError as exc:  # RemoteProtocolError, DecodingError, ...
            raise HttpError("protocol", f"{type(exc).__name__}: {exc}") from exc
        return resp.status_code, resp.text

    def _transport_error(self, exc, path: str, read: float) -> EmbedError:
        """The one mapping from a transport failure (memory_core.index.http.HttpError.kind) to an
        embedding failure reason, whichever transport carried the call."""
        if exc.kind == "connect_timeout":
            return EmbedError("unreachable", f"Ollama server unreachable at {self.url} (connect "
                              f"timeout after {self.connect_timeout_s:g}s)", endpoint=self.url)
        if exc.kind == "timeout":
            return EmbedError("timeout", f"{path} at {self.url}: no answer within {read:.1f}s",
                              endpoint=self.url)
        # unreachable (refused, reset, TLS) and protocol (what answered is not HTTP): nothing
        # usable answers at this URL
        return EmbedError("unreachable", f"Ollama server unreachable at {self.url} ({exc})",
                          endpoint=self.url)

    def _http_failure(self, path: str, status: int, text: str, head: str) -> EmbedError:
        lowered = text.lower()
        if _OVERFLOW_TEXT in lowered:
            return EmbedError("context_overflow", f"{path}: the input exceeds {self.model}'s context "
                              f"length (retried with heads down to {OVERFLOW_HEADS[-1]} characters)",
                              status=status, body_head=head, endpoint=self.url)
        if status == 404 and "model" in lowered and "not found" in lowered:
            return EmbedError("model_missing", f"embedding model {self.model} missing from Ollama at "
                              f"{self.url}; run `ollama pull {self.model}`",
                              status=status, body_head=head, endpoint=self.url)
        if status == 503:
            return EmbedError("busy", f"Ollama at {self.url} is busy (503): {head}",
                              status=status, body_head=head, endpoint=self.url)
        return EmbedError("http_error", f"{path} returned {status}: {head}",
                          status=status, body_head=head, endpoint=self.url)
