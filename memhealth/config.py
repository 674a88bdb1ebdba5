"""Load `.memhealth/config.toml` with `MEMHEALTH_<SECTION>_<KEY>` overrides, strictly.

    cfg = load(project_dir)          # raises ConfigError naming the key on a bad value
    cfg["embedding"]["url"]

Every key, its type, default and help live in SCHEMA, which also renders the commented
default file that `memhealth init` writes. The hook path avoids importing tomllib (it pulls
in typing, ~10 ms): the parsed file is cached as JSON beside it, keyed by a hash of its bytes.
"""

from __future__ import annotations

import json
import os
import re

from memhealth.errors import ConfigError
from memory_core.store.layout import CONFIG_NAME

# (type, default, allowed-or-None, help). Types: str, int, float, bool, list (of str), dur.
SCHEMA: dict[str, dict[str, tuple]] = {
    "embedding": {
        "url": ("url", "", None,
                'Ollama base URL, e.g. "http://127.0.0.1:11434"; "" = BM25-only (the gate says NOTE, not RED). '
                "IPv4 literal on purpose: localhost may resolve to ::1 first while Ollama binds IPv4."),
        "model": ("str", "nomic-embed-text", None, "embedding model name as Ollama lists it"),
        "dim": ("int", 768, (1, 16384), "vector width; must match the model (/api/show *.embedding_length)"),
        "fallback_model": ("str", "", None, "validated against dim from /api/show at gate time"),
        "keep_alive": ("str", "4h", None, "sent on every request, probe included"),
        "num_ctx": ("int", 8192, (128, 1048576), "same options on probe and real requests (a change forces a reload)"),
        "timeout_s": ("float", 2.0, (0.05, 600.0), "read timeout on the hook path"),
        "connect_timeout_s": ("float", 0.5, (0.01, 60.0), "connect timeout, every path"),
        "warmup_timeout_s": ("float", 30.0, (0.1, 3600.0), "one warm-up retry for a cold model"),
        "bulk_timeout_s": ("float", 60.0, (0.1, 3600.0), "read timeout for ingest and backfill"),
        "batch_size": ("int", 64, (1, 4096), "texts per /api/embed request during ingest"),
        "ca_file": ("str", "", None, "https:// only: PEM bundle of the CA to trust instead of the "
                    "system store (a private CA or a self-signed proxy); verification is never off"),
    },
    "hooks": {
        "busy_timeout_s": ("float", 1.0, (0.01, 60.0),
                           "how long a hook waits for the database lock before spilling its row to a file"),
        "timeout_s": ("int", 10, (1, 600), "Claude Code timeout written by `memhealth init` (seconds)"),
        "session_end_timeout_s": ("int", 5, (1, 60), "SessionEnd gets 1.5 s unless a timeout raises it (max 60)"),
        "killed_after_s": ("float", 900.0, (1.0, 86400.0),
                           "a started heartbeat with no completion after this long is counted as killed"),
    },
    "injection": {
        "mode": ("str", "on", ("on", "off"), 'ablation: "off" records would-have-fired rows and emits nothing'),
        "max_chars": ("int", 6000, (200, 10000), "characters of memory injected into one prompt"),
        "distinctive_idf": ("float", 3.0, (0.0, 50.0), "a token this rare counts as distinctive"),
        "idf_sum_threshold": ("float", 7.0, (0.0, 500.0), "summed idf of matched tokens needed to inject"),
        "min_matches": ("int", 2, (1, 32), "word-boundary token matches needed to inject"),
        "thread_cap": ("int", 2, (0, 1000), "injections of one decision thread per session"),
        "dnr_cap": ("int", 3, (0, 1000), "DO-NOT-REBUILD blocks per session"),
        "dead_end_cap": ("int", 3, (0, 1000), "DEAD-END blocks (confirmed dead ends re-proposed) per session"),
        "stale_cap": ("int", 3, (0, 1000), "stale-claim reminders per session"),
        "capture_content": ("bool", False, None, "record prompt text in decision rows and spans (opt-in)"),
        "sources": ("list", ["memory", "docs", "ledger"], None,
                    "sources whose chunks may be injected (transcripts and git stay searchable, not injected)"),
        "foreign_target": ("str", "on", ("on", "off"),
                           "hold a DO-NOT-REBUILD when the prompt's target is another system: a phrase like "
                           "'to the S3 backup script' whose head is a kind of system and whose words this "
                           "project's text never uses"),
        # -- agreement in meaning (memory_core/delivery/meaning.py) ---------------------------
        "meaning": ("str", "on", ("on", "off"),
                    "with [embedding].url set: a DO-NOT-REBUILD, DEAD-END or lineage block is delivered only "
                    "when the prompt's and the item's embeddings also agree (cosine >= meaning_threshold)"),
        "meaning_threshold": ("float", 0.355, (-1.0, 1.0),
                              "cosine a block needs with the prompt; chosen for all-minilm on the tuned part of "
                              "the real corpus (docs/internals/evaluation.md): another model needs its own"),
        "meaning_timeout_s": ("float", 1.0, (0.05, 10.0),
                              "read timeout of the prompt's embedding, bounded by [embedding].timeout_s and a "
                              "quarter of [hooks].timeout_s; a failure delivers the lexical decision"),
        "meaning_rescue": ("str", "off", ("on", "off"),
                           "on: an inventory entry no rare word names is still a DO-NOT-REBUILD when its cosine "
                           "with the prompt reaches meaning_rescue_threshold (costs one embedding call per build "
                           "or decision prompt that nothing else matched)"),
        "meaning_rescue_threshold": ("float", 0.503, (-1.0, 1.0),
                                     "cosine a lexical miss needs to be rescued; chosen for all-minilm on the tuned "
                                     "part of the real corpus"),
        # -- end agreement in meaning ------------------------------------------------------------
        # -- semantic cues (memory_core/delivery/cues.py) -------------------------------------------
        "semantic_cue_min_cosine": ("float", 0.0, (0.0, 1.0),
                                    "cosine a prompt needs to a semantic: cue's query; 0 = the threshold measured "
                                    "for [embedding].model (all-minilm 0.448, docs/internals/evaluation.md), 0.75 "
                                    "for a model not measured"),
        # -- end semantic cues ---------------------------------------------------------------------
    },
    "gate": {
        "mode": ("str", "on", ("on", "off"), 'ablation: "off" skips the gate; heartbeats still record'),
        "ingest_max_age_days": ("float", 3.0, (0.01, 3650.0), "ingest freshness budget"),
        "vector_coverage_min": ("float", 0.99, (0.0, 1.0), "share of chunks that must have a vector"),
        "heartbeat_max_age_days": ("float", 2.0, (0.01, 3650.0), "per-turn hooks must succeed this often while sessions run"),
        "capture_queue_max": ("int", 40, (0, 1000000), "pending capture items before the gate turns RED"),
        "hook_budget_s": ("float", 10.0, (1.0, 600.0),
                          "the gate inside SessionStart finishes within this (a model still loading after it "
                          "is reported undecided; `memhealth gate` waits the full warm-up)"),
    },
    "ingest": {
        "budget_s": ("float", 55.0, (0.1, 86400.0), "wall-clock budget of one ingest run"),
        "docs": ("list", ["README.md", "docs", "*.md"], None, "markdown files or directories"),
        "memory": ("list", [".memhealth/memory", ".claude/memory"], None, "memory files (frontmatter type:)"),
        "ledgers": ("list", [".memhealth/ledgers/*.ndjson"], None,
                    "append-only ledgers (ingested by byte offset); `memhealth init` creates "
                    ".memhealth/ledgers/decisions.ndjson"),
        "transcripts": ("list", ["auto"], None, '"auto" = the directory of the hook\'s transcript_path'),
        "git": ("bool", True, None, "ingest commit messages and touched paths"),
        "git_max_commits": ("int", 500, (0, 1000000), "commits read per run"),
        # ---- the code index (memory_core.ingest.code) ----
        "code": ("list", ["**"], None,
                 "source files indexed with tree-sitter, as path globs (** = every tracked file in a "
                 "language with a query file; [] = off); read from git's tree at HEAD"),
        "code_exclude": ("list", [], None, "path globs left out of the code index"),
        "code_max_bytes": ("int", 1048576, (1024, 268435456),
                           "a source file larger than this is recorded as skipped, not parsed"),
        # ---- end code index ----
    },
    "capture": {
        "enabled": ("bool", True, None,
                    "at SessionEnd, extract decisions, dead ends and corrections for `memhealth triage`"),
        "budget_s": ("float", 300.0, (1.0, 86400.0), "wall-clock budget of one detached capture worker run"),
        "batch_bytes": ("int", 1048576, (4096, 67108864),
                        "transcript bytes per capture transaction (the unit a killed worker loses)"),
        "lease_s": ("float", 60.0, (1.0, 3600.0),
                    "a capture worker's lease; renewed every batch, free once it lapses or its pid is gone"),
        "llm_model": ("str", "", None,
                      'optional synthesis: an Ollama generate model that proposes records the patterns '
                      'missed ("" = off; the worker only, never a hook)'),
        "llm_url": ("url", "", None, 'Ollama base URL for llm_model ("" = [embedding].url)'),
        "llm_timeout_s": ("float", 60.0, (1.0, 3600.0),
                          "one generate call; a failure falls back to the patterns and is recorded"),
    },
    "telemetry": {
        "capture_content": ("bool", False, None, "export prompt text on spans (opt-in)"),
        "retention_days": ("float", 14.0, (0.1, 3650.0),
                           "outbox spans older than this are dropped and counted, exporter or not "
                           "(pruned by the gate: each session start and `memhealth gate`)"),
        "outbox_max_rows": ("int", 20000, (100, 10000000),
                            "at most this many spans wait in the outbox; the oldest beyond it are dropped "
                            "and counted (bounds the store when no exporter runs)"),
        "export_timeout_s": ("float", 2.0, (0.05, 120.0), "OTLP export timeout; a dead collector never stalls longer"),
        "otlp_endpoint": ("str", "", None, '"" = OTEL_EXPORTER_OTLP_ENDPOINT or http://127.0.0.1:4318'),
        "otlp_protocol": ("str", "http/protobuf", ("http/protobuf", "grpc"), "OTLP transport"),
        "otlp_metrics": ("bool", True, None,
                         "also export the catalog metrics over OTLP (off where Prometheus scrapes "
                         "this store, as in compose: one store, one metrics path, no double count)"),
    },
    "serve": {
        "listen": ("str", "127.0.0.1:9464", None, "host:port; loopback unless told otherwise"),
        "probe_interval_s": ("float", 60.0, (1.0, 86400.0), "background gate schedule"),
        "export_interval_s": ("float", 15.0, (1.0, 86400.0), "OTLP export schedule"),
        # -- TLS and the bearer token (a non-loopback listen address needs all three) --
        "tls_cert": ("str", "", None, "PEM certificate (chain) to serve HTTPS with; \"\" = plain HTTP"),
        "tls_key": ("str", "", None, "the certificate's PEM private key"),
        "token_file": ("str", "", None, "file holding the bearer token every request must send "
                       "(mode 0600); \"\" = no token (loopback only)"),
        # -- the HTTP hook transport (`memhealth init --transport http`)
        "hook_autostart": ("bool", False, None,
                           "with the HTTP hook transport: SessionStart starts `memhealth serve` "
                           "(detached) when nothing answers where the settings point"),
        # -- vector backfill on serve's schedule (text first, vectors after) --
        "backfill_interval_s": ("float", 300.0, (0.0, 86400.0),
                                "with [embedding].url set, embed chunks that have no vector every this "
                                "many seconds, within [ingest].budget_s; 0 turns it off"),
    },
    "alerts": {
        "pages_per_window": ("int", 2, (0, 1000), "pages per route per window (SRE book: 2 per 12 h shift)"),
        "window_h": ("float", 12.0, (0.1, 720.0), "alert budget window"),
        "repeat_s": ("float", 3600.0, (0.0, 604800.0), "a repeat of the same alert within this is deduped"),
        "sink_file": ("str", ".memhealth/alerts.ndjson", None,
                      "NDJSON file every decision is appended to; must lie inside .memhealth/ (a committed "
                      "config.toml is untrusted for paths and URLs: anything else is refused)"),
        "routes": ("list", ["page", "ticket", "watchdog", "null", "default"], None,
                   "the closed set of alert routes (Alertmanager receivers); any other receiver is "
                   "counted as route \"unknown\", which shares one budget"),
        "webhook_url": ("str", "", None, "optional generic webhook for pages and digests"),
        # -- per-route pagers (the team topology's budget: each team's pages to its own pager) --
        "route_webhooks": ("list", [], None,
                           'ROUTE=URL entries, e.g. "team-a-page=https://pager.example/a": pages and '
                           "digests of that route go to its URL instead of webhook_url"),
    },
}

_BOOL = {"true": True, "1": True, "yes": True, "on": True,
         "false": False, "0": False, "no": False, "off": False}


def _check_url(value: str) -> None:
    """A URL the HTTP client can use as it stands: no space or control character (a CRLF
    would split the request line), a host, a numeric port; ValueError says which."""
    from urllib.parse import urlsplit

    bad = next((c for c in value if ord(c) <= 32 or ord(c) == 127), None)
    if bad is not None:
        raise ValueError(f"a URL without spaces or control characters (found {bad!r})")
    parts = urlsplit(value)
    if not parts.hostname:
        raise ValueError("a URL with a host")
    try:
        _ = parts.port  # raises for a port that is not a number
    except ValueError:
        raise ValueError("a URL whose port is a number") from None


def _coerce(section: str, key: str, value, from_env: bool):
    kind, _default, allowed, _help = SCHEMA[section][key]
    name = f"[{section}].{key}" if not from_env else f"MEMHEALTH_{section.upper()}_{key.upper()}"
    try:
        if kind in ("str", "url"):
            if not isinstance(value, str):
                raise TypeError("a string")
            if kind == "url" and value and not value.startswith(("http://", "https://")):
                raise ValueError("an http:// or https:// URL, or \"\"")
            if kind == "url" and value:
                _check_url(value)
        elif kind == "int":
            if from_env:
                try:
                    value = int(value.strip())
                except ValueError:
                    raise TypeError("an integer") from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError("an integer")
        elif kind == "float":
            if from_env:
                try:
                    value = float(value.strip())
                except ValueError:
                    raise TypeError("a number") from None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError("a number")
            value = float(value)
            if value != value:
                raise ValueError("a number, not NaN")
        elif kind == "bool":
            if from_env:
                lowered = value.strip().lower()
                if lowered not in _BOOL:
                    raise ValueError("true or false")
                value = _BOOL[lowered]
            if not isinstance(value, bool):
                raise TypeError("true or false")
        elif kind == "list":
            if from_env:
                value = [part.strip() for part in value.split(",") if part.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TypeError("a list of strings")
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"config {name}: expected {exc}, got {value!r}") from None
    if isinstance(allowed, tuple) and allowed:
        if kind in ("int", "float"):
            low, high = allowed
            if not (low <= value <= high):
                raise ConfigError(f"config {name}: {value!r} is outside {low}..{high}")
        elif value not in allowed:
            raise ConfigError(f"config {name}: {value!r} is not one of {', '.join(allowed)}")
    return value


class Config(dict):
    """Validated config: `cfg["section"]["key"]`; `cfg.path` is the file it came from."""

    path: str | None = None

    @property
    def embedding_enabled(self) -> bool:
        return bool(self["embedding"]["url"])


def defaults() -> Config:
    cfg = Config({s: {k: (list(v[1]) if isinstance(v[1], list) else v[1]) for k, v in keys.items()}
                  for s, keys in SCHEMA.items()})
    return cfg


def _read_file(path: str) -> dict:
    """Parse config.toml, through a JSON cache keyed by a hash of its bytes: a file restored
    with `cp -p` keeps its mtime and size, and must still be re-validated."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(1 << 20)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read ({exc.strerror})") from None
    try:  # the builtin module: hashlib would load OpenSSL on the hook path
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover
        from hashlib import blake2b
    stamp = blake2b(raw, digest_size=16).hexdigest()
    cache = os.path.join(os.path.dirname(path), ".config-cache.json")
    try:
        fd = os.open(cache, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as fh:
            cached = json.load(fh)
        if cached.get("stamp") == stamp:
            return cached["data"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config {path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path}: cannot read ({exc})") from None
    try:
        tmp = f"{cache}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"stamp": stamp, "data": data}, fh)
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only project still works; it just parses TOML each time
    return data


def load(state_dir: str | None, environ=None) -> Config:
    """Defaults, then `<state_dir>/config.toml`, then MEMHEALTH_<SECTION>_<KEY> variables."""
    environ = os.environ if environ is None else environ
    cfg = defaults()
    path = os.path.join(state_dir, CONFIG_NAME) if state_dir else None
    try:
        data = _read_file(path) if path else {}
    except ConfigError as exc:
        raise located(exc, path) from None
    for section, values in data.items():
        try:
            if section not in SCHEMA:
                raise ConfigError(f"config: unknown section [{section}]; known: {', '.join(SCHEMA)}")
            if not isinstance(values, dict):
                raise ConfigError(f"config: [{section}] must be a table")
            for key, value in values.items():
                try:
                    if key not in SCHEMA[section]:
                        raise ConfigError(
                            f"config: unknown key [{section}].{key}; known: {', '.join(SCHEMA[section])}")
                    cfg[section][key] = _coerce(section, key, value, from_env=False)
                except ConfigError as exc:
                    raise located(exc, path, section, key) from None
        except ConfigError as exc:
            raise (exc if getattr(exc, "command", "") else located(exc, path, section)) from None
    for name, raw in environ.items():
        if not name.startswith("MEMHEALTH_") or name.count("_") < 2:
            continue
        rest = name[len("MEMHEALTH_"):].lower()
        section, _, key = rest.partition("_")
        if section not in SCHEMA:
            continue  # MEMHEALTH_HOME and friends are not config
        if key not in SCHEMA[section]:
            raise ConfigError(f"{name}: unknown key [{section}].{key}; known: {', '.join(SCHEMA[section])}")
        cfg[section][key] = _coerce(section, key, raw, from_env=True)
    cfg.path = path
    return cfg


# -- where a config error is, and the command that clears it (serve --all prints it as the FIX) --
_TOML_LINE = re.compile(r"at line (\d+)")


def located(exc: ConfigError, path: str, section: str | None = None, key: str | None = None) -> ConfigError:
    """`exc` with where it is (`.path`, `.key`, `.line`) and `.command`: the shell line that
    clears it (the offending line commented out, so the default applies; the file made readable),
    and `.fix`, the same command in a sentence. `.command` is "" when the line is not found."""
    import shlex

    exc.path, exc.key, exc.line, exc.command, exc.fix = path, None, None, "", ""
    if section is not None:
        exc.key = f"[{section}].{key}" if key is not None else f"[{section}]"
    message = str(exc)
    if "cannot read" in message:
        exc.command = f"chmod u+r {shlex.quote(path)}"
        exc.fix = f"make the file readable by its owner: `{exc.command}`"
        return exc
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return exc
    found = _TOML_LINE.search(message)
    if found:
        exc.line = int(found.group(1))
    elif section is not None:
        exc.line = _line_of(lines, section, key)
    if exc.line is not None and 1 <= exc.line <= len(lines):
        span = str(exc.line)
        if section is not None and key is None:  # a whole table: its header and its keys
            end = next((n for n in range(exc.line + 1, len(lines) + 1)
                        if lines[n - 1].lstrip().startswith("[")), len(lines) + 1) - 1
            span = f"{exc.line},{end}" if end > exc.line else span
        exc.command = f"sed -i '{span}s/^/# /' {shlex.quote(path)}"
        exc.fix = (f"comment out line {span.replace(',', '-')} of {path}"
                   + (f" ({exc.key})" if exc.key else "") + f" so the default applies: `{exc.command}`")
    return exc


def _line_of(lines: list[str], section: str, key: str | None) -> int | None:
    """The 1-based line of `key` in `[section]` (of the `[section]` header when key is None)."""
    current = None
    for number, line in enumerate(lines, 1):
        text = line.strip()
        header = re.fullmatch(r"\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?", text)
        if header:
            current = header.group(1)
            if key is None and current == section:
                return number
            continue
        if key is not None and current == section and re.match(rf"[\"']?{re.escape(key)}[\"']?\s*=", text):
            return number
    return None
# -- end config error location


def render_default() -> str:
    """The commented default config.toml that `memhealth init` writes."""
    lines = ["# memhealth configuration. Every key can be overridden by MEMHEALTH_<SECTION>_<KEY>.",
             "# Values shown are the defaults; uncomment to change one.", ""]
    for section, keys in SCHEMA.items():
        lines.append(f"[{section}]")
        for key, (kind, default, allowed, text) in keys.items():
            lines.append(f"# {text}" + (f" ({' | '.join(allowed)})" if allowed and kind == "str" else ""))
            lines.append(f"# {key} = {_toml_value(default)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return repr(value)
