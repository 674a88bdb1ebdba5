"""The embedding probe: end to end through the same client, keep_alive and num_ctx as real
requests, telling apart failures that need different fixes.

    result = embedding_path(ev)      # CheckResult with .state in STATES
    result.extra                     # {"probe_s": 0.012, "warmup_s": 0.0}

Sequence (one request when healthy, where the paper's reference harness makes three):
  1. Only when a fallback model is configured: GET /api/tags, then the fallback is checked
     without loading it: installed, and its width from /api/show model_info
     "<arch>.embedding_length" equals [embedding].dim → else fallback_mismatch
     (misconfiguration caught at configuration time, not discovered months later).
  2. POST /api/embed one short text within timeout_s. Refused → unreachable; 404 naming the
     model → model_missing; 503 → busy (a NOTE: transient, not an outage); an answer that is
     not Ollama's (an HTML page) → not_ollama; JSON that breaks off or lacks Ollama's
     fields → malformed_reply; wrong width → dimension_mismatch; 404 on every route →
     not_ollama; any other error status at once → server_error (never wedged: it answered).
  3. No answer within timeout_s → one warm-up retry within warmup_timeout_s. Retry OK →
     GREEN, state cold, "warmed in X.X s". Both time out → wedged. Inside a hook (the
     caller passes a deadline) there is no retry: a NOTE "undecided", and the verdict is
     left to `memhealth gate` and serve (SessionStart's budget is seconds, a warm-up is not).
Worst case: connect + timeout_s + warm-up + connect, whatever the server does.
"""

from __future__ import annotations

import re
import time

from probes.result import CheckResult, duration

STATES = ("ok", "cold", "unreachable", "model_missing", "wedged", "dimension_mismatch",
          "fallback_mismatch", "not_configured", "not_ollama", "malformed_reply", "server_error")
PROBE_TEXT = "memory-health embed probe"
DEADLINE_MARGIN_S = 1.0  # leave the hook this long to print its verdict before its timeout
_WIDTH = re.compile(r"returned (\d+)-dim")

FIX_START = "start Ollama (`ollama serve`) or point [embedding].url at it ({url})"
FIX_WEDGED = "check `ollama ps`, GPU/RAM pressure and the Ollama server log; restart Ollama"
FIX_UNDECIDED = "run `memhealth gate`: it waits the full warm-up ([embedding].warmup_timeout_s) and decides"


def _result(status, detail, fix, state, t0, warmup_s=0.0) -> CheckResult:
    r = CheckResult(status, detail, fix, state=state)
    r.extra = {"probe_s": time.monotonic() - t0, "warmup_s": warmup_s}
    return r


def _failure(exc, e: dict, t0: float, warmup_s: float = 0.0) -> CheckResult:
    """Map a client EmbedError (other than a first-attempt timeout) to a state and fix."""
    url, model, reason = e["url"], e["model"], exc.reason
    if reason == "unreachable":
        # the client's message already reads "Ollama server unreachable at URL (cause)"
        return _result("red", str(exc), FIX_START.format(url=url),
                       "unreachable", t0)
    if reason == "malformed":
        # a server answers, so it is not "down" (the alert that pages on unreachable must not
        # fire): JSON that breaks off or lacks Ollama's fields is a malformed reply (a proxy
        # cutting bodies, a version skew); anything else (an HTML page) is not Ollama at all
        head = (exc.body_head or "").lstrip()
        if head.startswith(("{", "[")):
            return _result("red", f"{url} answered with a malformed reply ({head[:80]})",
                           f"check what sits between memhealth and Ollama at {url} (a proxy cutting "
                           "bodies?) and the Ollama version (`ollama --version`)", "malformed_reply", t0)
        return _result("red", f"{url} does not answer like an Ollama server ({head[:80]})",
                       f"point [embedding].url at Ollama; something else listens at {url}",
                       "not_ollama", t0)
    if reason == "model_missing":
        return _result("red", f"embedding model {model} missing from Ollama at {url}",
                       f"ollama pull {model}", "model_missing", t0)
    if reason == "busy":
        return _result("note", f"Ollama at {url} is busy (503, queue full): hooks fall back to BM25 "
                       "until it drains", "lower concurrent embedding load, or raise OLLAMA_MAX_QUEUE / "
                       "OLLAMA_NUM_PARALLEL", "ok", t0)
    if reason == "dimension_mismatch":
        match = _WIDTH.search(str(exc))
        got = match.group(1) if match else "?"
        return _result("red", f"{model} returns {got}-d vectors but [embedding].dim = {e['dim']}: "
                       "every vector is refused", f"set [embedding].dim = {got} and run `memhealth embed "
                       f"--rebuild`, or choose a {e['dim']}-d model", "dimension_mismatch", t0, warmup_s)
    if reason == "timeout":
        return _result("red", f"embed probe gave no answer ({exc})", FIX_WEDGED, "wedged", t0, warmup_s)
    # an answer is never "wedged": only a probe that waited out the full warm-up may say that
    status = getattr(exc, "status", None)
    if status == 404:  # /api/embed and the legacy /api/embeddings both missing: not Ollama's routes
        return _result("red", f"{url} answers 404 on /api/embed and /api/embeddings: not an Ollama server "
                       f"({exc})", f"point [embedding].url at Ollama; something else listens at {url}",
                       "not_ollama", t0)
    return _result("red", f"Ollama at {url} answered with an error at once: {exc}",
                   "read the Ollama server log (the terminal running `ollama serve`, or `journalctl -u ollama`): "
                   "the reply above names the failure", "server_error", t0, warmup_s)


def embedding_path(ev) -> CheckResult:
    """Probe the embedding path end to end and name its state (see STATES and the module
    docstring); NOTE when embeddings are not configured, never RED for a cold model."""
    e = ev.cfg["embedding"]
    t0 = time.monotonic()
    if not e["url"]:
        r = _result("note", "embeddings not configured: BM25-only",
                    'set [embedding].url = "http://127.0.0.1:11434" to enable vectors',
                    "not_configured", t0)
        r.audience = "operator"  # a choice the person made, nothing Claude can act on
        return r
    from memory_core.index.embed import EmbedError, OllamaClient

    timeout_s = float(e["timeout_s"])
    hook_left = ev.remaining_s() if hasattr(ev, "remaining_s") else None
    if hook_left is not None:  # one attempt, inside what the hook has left
        timeout_s = max(0.05, min(timeout_s, hook_left - DEADLINE_MARGIN_S))
    client = OllamaClient.from_config(ev.cfg)
    trace = getattr(ev, "trace", None)
    try:
        fallback = e.get("fallback_model") or ""
        if fallback:  # configuration-time validation: only when a fallback is configured
            try:
                models = client.tags(timeout_s=timeout_s)
            except EmbedError as exc:
                models = None
                if exc.reason != "timeout":
                    return _failure(exc, e, t0)
            if models is not None:
                bad = _check_fallback(client, models, fallback, int(e["dim"]), timeout_s)
                if bad is not None:
                    return _result("red", bad[0], bad[1], "fallback_mismatch", t0)
        try:
            start = time.monotonic()
            vectors = client.embed([PROBE_TEXT], trace=trace, timeout_s=timeout_s, respect_circuit=False)
            load_s = (client.last_response.get("load_duration") or 0) / 1e9
            ms = (time.monotonic() - start) * 1000
            extra = f" (model loaded in {duration(load_s)})" if load_s >= 0.1 else ""
            return _result("green", f"end-to-end embed OK: {len(vectors[0])}-dim in {ms:.0f} ms "
                           f"via {e['model']}{extra}", "", "ok", t0)
        except EmbedError as exc:
            if exc.reason == "model_missing":
                return _result("red", f"embedding model {e['model']} missing from Ollama at {e['url']}"
                               + _installed(client, timeout_s), f"ollama pull {e['model']}",
                               "model_missing", t0)
            if exc.reason != "timeout":
                return _failure(exc, e, t0)
        # one warm-up retry: a cold model is loading, not dead (Memory as Infrastructure §3.4). Inside a hook
        # (a deadline is set) there is none: the hook spends one bounded attempt and leaves
        # the verdict to `memhealth gate` and serve's probe, which can wait the warm-up out
        full_s = warm_s = float(e["warmup_timeout_s"])
        remaining = ev.remaining_s() if hasattr(ev, "remaining_s") else None
        if remaining is not None:
            warm_s = 0.0
        if warm_s <= 0:
            return _result("note", f"no answer within {duration(timeout_s)} and no time left in this hook "
                           "for a warm-up retry: cold or wedged, undecided", FIX_UNDECIDED, "cold", t0)
        retry_t0 = time.monotonic()
        try:
            vectors = client.embed([PROBE_TEXT], trace=trace, timeout_s=warm_s, respect_circuit=False)
        except EmbedError as exc:
            waited_s = time.monotonic() - retry_t0
            if exc.reason == "timeout" and warm_s < full_s:
                # cut short by the caller's budget: only a full warm-up may call it wedged
                return _result("note", f"no answer within {duration(timeout_s)}, nor in the "
                               f"{duration(waited_s)} of warm-up this hook's budget allowed (of "
                               f"{duration(full_s)}): cold or wedged, undecided; hooks use BM25 until it answers",
                               FIX_UNDECIDED, "cold", t0, waited_s)
            if exc.reason == "timeout":
                return _result("red", f"embed probe timed out after {duration(timeout_s)} AND the full "
                               f"{duration(full_s)} warm-up retry (server wedged, or the model cannot load)",
                               FIX_WEDGED, "wedged", t0, waited_s)
            return _failure(exc, e, t0, waited_s)
        warmed = time.monotonic() - t0
        return _result("green", f"end-to-end embed OK: {len(vectors[0])}-dim via {e['model']} "
                       f"(cold start: warmed in {duration(warmed)})", "", "cold", t0, warmed)
    finally:
        client.close()


def _installed(client, timeout_s: float) -> str:
    """" (N model(s) installed)" from /api/tags, best effort (the failure path only)."""
    from memory_core.index.embed import EmbedError

    try:
        return f" ({len(client.tags(timeout_s=timeout_s))} model(s) installed)"
    except EmbedError:
        return ""


def _check_fallback(client, models, fallback: str, dim: int, timeout_s: float):
    """(detail, fix) when the fallback model can never serve this index, else None. Reads
    /api/show metadata only: the model is not loaded. A show failure is not RED."""
    from memory_core.index.embed import EmbedError, embedding_length

    if not client.has_model(models, fallback):
        return (f"fallback model {fallback} is not installed: a fallback would fail every time",
                f"ollama pull {fallback}, or clear [embedding].fallback_model")
    try:
        width = embedding_length(client.show(fallback, timeout_s=timeout_s))
    except EmbedError:
        return None
    if width is not None and width != dim:
        return (f"fallback model {fallback} produces {width}-d vectors but [embedding].dim = {dim}: "
                "every fallback vector would be refused",
                f"choose a {dim}-d fallback model, or clear [embedding].fallback_model")
    return None


