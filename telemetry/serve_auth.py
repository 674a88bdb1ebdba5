"""TLS and a bearer token in front of `memhealth serve` (and `serve --all`).

    guard = Guard.load(tls_cert="central.pem", tls_key="central.key", token_file="budget.token")
    guard.ssl_context            # server-side TLS 1.2+ context, or None
    guard.admit(headers.get("Authorization"))   # None, or the refusal reason (counted)

On loopback nothing is required: the endpoints answer this machine's users, as they always
did. On any other address serve runs only with all three (TLS, so the token never crosses in
clear; the token, so not everyone who can reach the port can post alerts or read the store's
series). The token is compared with `hmac.compare_digest`, so the time a refusal takes does
not tell how many leading bytes were right. The token file must be readable by its owner only
(the same rule ssh applies to a private key): a token the whole machine can read is no secret.
"""

from __future__ import annotations

import hmac
import os
import stat
import threading

from telemetry.catalog import SERVE_REFUSAL_REASONS
from telemetry.errors import ServeAuthError

# why a request or connection was refused: the closed `reason` vocabulary of
# memhealth_serve_refused_total
REFUSAL_REASONS = SERVE_REFUSAL_REASONS
MIN_TOKEN_CHARS = 16  # `memhealth generate --team` writes 43 (32 random bytes, URL-safe base64)
MAX_TOKEN_BYTES = 4096


def read_token(path: str) -> str:
    """The token in `path` (one line, surrounding whitespace dropped); ServeAuthError when the
    file is missing, readable by group or others, empty, or too short to be a secret."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ServeAuthError(f"token file {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ServeAuthError(f"token file {path}: not a regular file")
        if st.st_mode & 0o077:
            raise ServeAuthError(f"token file {path} is readable by others (mode "
                                 f"{stat.S_IMODE(st.st_mode):04o}): run `chmod 600 {path}`")
        raw = fh.read(MAX_TOKEN_BYTES + 1)
    if len(raw) > MAX_TOKEN_BYTES:
        raise ServeAuthError(f"token file {path}: longer than {MAX_TOKEN_BYTES} bytes")
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ServeAuthError(f"token file {path}: not ASCII") from None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ServeAuthError(f"token file {path}: the token must be one word of at least "
                             f"{MIN_TOKEN_CHARS} characters (`memhealth generate --team` writes one)")
    return token


def server_context(cert: str, key: str):
    """A server-side TLS context (TLS 1.2 or newer) with this certificate chain and key."""
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except FileNotFoundError as exc:
        raise ServeAuthError(f"TLS: {exc.filename or cert}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise ServeAuthError(f"TLS: cannot load certificate {cert} with key {key}: {exc}") from None
    return ctx


class Guard:
    """What serve requires of a connection (TLS) and of a request (the bearer token), and the
    count of what it refused, by reason. An open Guard (no TLS, no token) admits everything."""

    def __init__(self, ssl_context=None, token: str | None = None):
        self.ssl_context = ssl_context
        self._token = token.encode("ascii") if token else None
        self._lock = threading.Lock()
        self.refused = dict.fromkeys(REFUSAL_REASONS, 0)

    @classmethod
    def load(cls, tls_cert: str = "", tls_key: str = "", token_file: str = "") -> Guard:
        if bool(tls_cert) != bool(tls_key):
            raise ServeAuthError("TLS needs both a certificate and its key (--tls-cert and --tls-key)")
        ctx = server_context(tls_cert, tls_key) if tls_cert else None
        return cls(ctx, read_token(token_file) if token_file else None)

    @property
    def tls(self) -> bool:
        return self.ssl_context is not None

    @property
    def token_required(self) -> bool:
        return self._token is not None

    @property
    def secured(self) -> bool:
        """Both TLS and a token: what a non-loopback address needs."""
        return self.tls and self.token_required

    def count(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1

    def admit(self, authorization: str | None) -> str | None:
        """None when the request may go on; else the refusal reason, counted."""
        if self._token is None:
            return None
        scheme, _, given = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            self.count("no_credentials")
            return "no_credentials"
        try:
            candidate = given.strip().encode("ascii")
        except UnicodeEncodeError:
            candidate = b""
        if not hmac.compare_digest(candidate, self._token):
            self.count("bad_credentials")
            return "bad_credentials"
        return None

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.refused)


OPEN = Guard()  # loopback without TLS or a token: what serve always was


def refusals_family(guard: Guard, extra_labels: tuple[str, ...] = (), extra_values: tuple = ()):
    """memhealth_serve_refused_total for a prometheus_client registry (the catalog's entry)."""
    from prometheus_client.core import CounterMetricFamily

    from telemetry.catalog import CATALOG

    metric = CATALOG["memhealth_serve_refused_total"]
    fam = CounterMetricFamily(metric.name[:-len("_total")], metric.help,
                              labels=(*extra_labels, *metric.labels))
    for reason, n in guard.snapshot().items():
        fam.add_metric((*extra_values, reason), float(n))
    return fam


class GuardCollector:
    """The serve process's own refusals on its /metrics (no store is read)."""

    def __init__(self, guard: Guard):
        self.guard = guard

    def describe(self):
        yield refusals_family(OPEN)

    def collect(self):
        yield refusals_family(self.guard)
