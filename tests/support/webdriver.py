"""A real headless Chromium driven over the W3C WebDriver HTTP protocol (chromedriver on
127.0.0.1), with the standard library only: a handful of JSON requests is all the console
tests need, so Selenium is not a dependency.

    with Browser() as b:                     # skips (fails under CI=true) without chromium
        b.open(url + "/triage")
        b.find("#c3 form[action='/triage/confirm'] button").click()
        b.screenshot("docs/console/triage.png")
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C element reference key
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def require_chromium() -> tuple[str, str]:
    """(chromium, chromedriver) paths; in CI a missing one fails, elsewhere the test skips."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    message = ("chromium/chromedriver not installed (Debian: apt-get install chromium chromium-driver; "
               "`make system-deps` does it)")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(AssertionError):
    pass


class Element:
    def __init__(self, browser: Browser, ref: str):
        self.browser = browser
        self.ref = ref

    def _call(self, method: str, suffix: str, body=None):
        return self.browser.call(method, f"/element/{self.ref}{suffix}", body)

    def click(self) -> None:
        self._call("POST", "/click", {})

    def clear(self) -> None:
        self._call("POST", "/clear", {})

    def type(self, text: str) -> None:
        self._call("POST", "/value", {"text": text})

    @property
    def text(self) -> str:
        return self._call("GET", "/text")

    def attribute(self, name: str):
        return self._call("GET", f"/attribute/{name}")

    def property(self, name: str):
        """The live DOM property (an input's typed value; attribute() gives the markup's)."""
        return self._call("GET", f"/property/{name}")


class Browser:
    """One chromedriver process and one Chromium session, both ended on exit."""

    def __init__(self, width: int = 1280, height: int = 1000, timeout_s: float = 60.0):
        self.browser_bin, self.driver_bin = require_chromium()
        self.size = (width, height)
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="memhealth-chromium-")
        self.port = _free_port()
        self.driver = subprocess.Popen([self.driver_bin, f"--port={self.port}", "--allowed-ips=127.0.0.1"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        self.session = None

    def __enter__(self) -> Browser:
        try:
            self._wait_ready()
            caps = {"capabilities": {"alwaysMatch": {
                "browserName": "chrome", "pageLoadStrategy": "normal",
                "goog:chromeOptions": {"binary": self.browser_bin,
                                       "args": [*FLAGS, f"--user-data-dir={self.profile}",
                                                f"--window-size={self.size[0]},{self.size[1]}"]}}}}
            value = self._request("POST", "/session", caps)
            self.session = value["sessionId"]
            self.call("POST", "/timeouts", {"pageLoad": int(self.timeout_s * 1000), "implicit": 0})
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.session is not None:
            try:
                self._request("DELETE", f"/session/{self.session}", None, timeout=20)
            except Exception:  # the driver is stopped below either way
                pass
            self.session = None
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait(5)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.driver.poll() is not None:
                raise WebDriverError(f"chromedriver exited {self.driver.returncode}")
            try:
                if self._request("GET", "/status", None, timeout=2).get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.1)
        raise WebDriverError("chromedriver did not become ready within 20 s")

    def _request(self, method: str, path: str, body, timeout: float | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout_s) as resp:
                payload = json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            payload = json.loads(err.read() or b"{}")
            value = payload.get("value") or {}
            raise WebDriverError(f"{method} {path}: {value.get('error')}: {str(value.get('message'))[:300]}") from None
        return payload.get("value")

    def call(self, method: str, path: str, body=None):
        return self._request(method, f"/session/{self.session}{path}", body)

    # -- what the tests use ------------------------------------------------------------------

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return self.call("GET", "/url")

    @property
    def title(self) -> str:
        return self.call("GET", "/title")

    def find(self, css: str) -> Element:
        return Element(self, self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT])

    def find_all(self, css: str) -> list[Element]:
        return [Element(self, v[ELEMENT]) for v in
                self.call("POST", "/elements", {"using": "css selector", "value": css})]

    def wait_text(self, css: str, expected: str, limit_s: float = 20.0) -> str:
        """The text of `css` once it contains `expected` (a click returns before the POST's
        redirect lands, so the old page may still be there); AssertionError after limit_s."""
        deadline = time.monotonic() + limit_s
        seen = ""
        while time.monotonic() < deadline:
            try:
                seen = self.find(css).text
            except WebDriverError:  # not there yet, or the old page's element went stale
                seen = ""
            if expected in seen:
                return seen
            time.sleep(0.05)
        raise AssertionError(f"{css!r} never contained {expected!r} within {limit_s} s (last: {seen!r})")

    def active(self) -> Element:
        return Element(self, self.call("GET", "/element/active")[ELEMENT])

    def keys(self, text: str) -> None:
        """Type into whatever has focus (the keyboard, not a click)."""
        actions = [{"type": "keyDown", "value": ch} for ch in text]
        actions += [{"type": "keyUp", "value": ch} for ch in reversed(text)]
        self.call("POST", "/actions", {"actions": [{"type": "key", "id": "kbd", "actions": actions}]})
        self.call("DELETE", "/actions")

    def color_scheme(self, scheme: str) -> None:
        """Emulate prefers-color-scheme (chromedriver's CDP passthrough)."""
        self.call("POST", "/goog/cdp/execute", {"cmd": "Emulation.setEmulatedMedia", "params": {
            "features": [{"name": "prefers-color-scheme", "value": scheme}]}})

    def screenshot(self, path: str) -> bytes:
        png = base64.b64decode(self.call("GET", "/screenshot"))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(png)
        return png

    def full_height(self) -> None:
        """Grow the window to the page's height (at most 4000 px) so a screenshot shows it all."""
        height = self.call("POST", "/execute/sync", {
            "script": "return document.documentElement.scrollHeight", "args": []})
        self.call("POST", "/window/rect", {"width": self.size[0], "height": min(int(height) + 140, 4000)})
