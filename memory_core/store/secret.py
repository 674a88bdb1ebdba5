"""The project's hook secret: what an HTTP hook request carries so `memhealth serve` knows
it comes from this project's Claude Code settings (any local process can reach loopback).

    secret = ensure(state_dir)          # created once, 0600, 32 random bytes as hex
    secret = read(state_dir)            # None when there is none (or it is unreadable)

The file is the source of truth: `memhealth init --transport http` copies it into the
per-machine settings file's `Authorization` header; serve reads it per request, so a new
secret needs no restart.
"""

from __future__ import annotations

import os

from memory_core.store.layout import HOOK_SECRET_NAME

SECRET_BYTES = 32
SCHEME = "Bearer"


def path(state_dir: str) -> str:
    return os.path.join(state_dir, HOOK_SECRET_NAME)


def read(state_dir: str) -> str | None:
    """The secret, or None when the file is missing, empty or unreadable."""
    try:
        with open(path(state_dir), encoding="ascii") as fh:
            value = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value or None


def ensure(state_dir: str) -> tuple[str, bool]:
    """(secret, created): read the existing one, or write a new one with mode 0600 (created
    with O_EXCL, so two inits racing cannot leave two secrets)."""
    existing = read(state_dir)
    if existing:
        return existing, False
    value = os.urandom(SECRET_BYTES).hex()
    target = path(state_dir)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # an empty or racing file: the winner's value, else replace
        raced = read(state_dir)
        if raced:
            return raced, False
        os.unlink(target)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(value + "\n")
    return value, True


def header(value: str) -> str:
    """The Authorization header value a request carries."""
    return f"{SCHEME} {value}"


def presented(authorization: str | None) -> str | None:
    """The secret an Authorization header presents, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != SCHEME.lower() or not token.strip():
        return None
    return token.strip()


def matches(state_dir: str, authorization: str | None) -> bool:
    """Whether the header presents this project's secret, compared in constant time."""
    import hmac

    expected = read(state_dir)
    given = presented(authorization)
    if expected is None or given is None:
        return False
    return hmac.compare_digest(expected.encode("ascii", "replace"), given.encode("ascii", "replace"))
