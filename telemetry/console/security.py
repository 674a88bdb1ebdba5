"""The console's request checks: the Host must be the listen address (DNS rebinding gets
421), a state-changing POST carries an HMAC form token bound to its prefix (12 h) and no
cross-site Origin, and every page carries a strict Content-Security-Policy."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

from telemetry.console.style import STYLE

TOKEN_TTL_S = 12 * 3600


def style_hash(style: str) -> str:
    return base64.b64encode(hashlib.sha256(style.encode("utf-8")).digest()).decode("ascii")


def _security_headers(style: str) -> dict[str, str]:
    csp = (f"default-src 'none'; style-src 'sha256-{style_hash(style)}'; img-src 'self'; "
           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "same-origin",  # no-referrer would make a form POST send Origin: null
        "Cache-Control": "no-store",
    }


SECURITY_HEADERS = _security_headers(STYLE)
STYLE_HASH = style_hash(STYLE)


class RequestGuard:
    """Host, Origin and form-token checks of one console (`self.app`: host and port;
    `self.secret`: per process; `self.prefix`: where its pages live)."""


    def allowed_hosts(self) -> set[str]:
        port = self.app.port
        hosts = {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
        host = self.app.host
        hosts.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        return hosts

    def host_ok(self, headers) -> bool:
        """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends Host: evil.example."""
        host = (headers.get("Host") or "").strip().lower()
        return host in self.allowed_hosts()

    def token(self, now: float | None = None) -> str:
        issued = str(int(time.time() if now is None else now))
        return f"{issued}.{self._mac(issued)}"

    def _mac(self, issued: str) -> str:
        scope = f"console-post|{self.prefix}|{issued}" if self.prefix else f"console-post|{issued}"
        return hmac.new(self.secret, scope.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, token: str | None, now: float | None = None) -> bool:
        if not token or "." not in token:
            return False
        issued, _, mac = token.partition(".")
        if not issued.isdigit():
            return False
        expected = self._mac(issued)
        age = (time.time() if now is None else now) - int(issued)
        return hmac.compare_digest(mac, expected) and -60 <= age <= TOKEN_TTL_S

    def origin_ok(self, headers) -> bool:
        """A browser names the page a POST came from; when it does, it must be this console."""
        if (headers.get("Sec-Fetch-Site") or "").lower() == "cross-site":
            return False
        origin = headers.get("Origin")
        if origin is None:
            return True  # non-browser clients; the token still has to be right
        return origin.lower() in {f"http://{h}" for h in self.allowed_hosts()}
