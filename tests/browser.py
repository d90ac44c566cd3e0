"""A headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol, for the
page tests (tests/api/test_pages_in_browser.py): load a page at a given width, read the main
response's HTTP status, evaluate JavaScript, take a screenshot.

Only the handful of protocol commands those tests need, over ``websocket-client``; no browser
download (Playwright's ``install`` is not available here).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    explicit = os.environ.get("HERALD_TEST_CHROMIUM")
    if explicit:
        return explicit
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


# What a page reports about itself once loaded: widths, and every style sheet with its rule count
# (-1: the sheet did not load, or its rules cannot be read). The layout viewport's width is
# ``clientWidth``: a phone-sized ``innerWidth`` grows when the browser zooms out to fit a page
# too wide for it.
PAGE_FACTS_JS = """JSON.stringify({
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
  clientWidth: document.documentElement.clientWidth,
  title: document.title,
  sheets: Array.from(document.styleSheets).map(s => {
    let rules = -1; try { rules = s.cssRules.length; } catch (e) {}
    return {href: s.href, rules: rules};
  }),
  links: Array.from(document.querySelectorAll('link[rel~="stylesheet"]')).map(l => {
    let rules = -1; try { rules = l.sheet ? l.sheet.cssRules.length : -1; } catch (e) {}
    return {href: l.href, rules: rules};
  }),
  wide: Array.from(document.body ? document.body.querySelectorAll('*') : [])
    .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
    .slice(0, 5).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className),
})"""


# Installed before any script of each page runs: records every Content-Security-Policy violation
# the page raises (a blocked inline script or style, a blocked source), for PageFacts.
CSP_LISTENER_JS = """window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e => window.__cspViolations.push(
  e.effectiveDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' +
  (e.sourceFile || document.location.href) + ':' + e.lineNumber));"""


@dataclass
class PageFacts:
    url: str
    status: int | None
    scroll_width: int
    client_width: int
    title: str
    sheets: list[dict[str, Any]]
    links: list[dict[str, Any]]
    wide: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    # Content-Security-Policy violations: the page's own reports and the console's messages.
    csp_violations: list[str] = field(default_factory=list)


class Chromium:
    """One headless browser with one tab. Use as a context manager."""

    def __init__(self, executable: str, profile_dir: Path, timeout: float = 30.0) -> None:
        self.executable = executable
        self.profile_dir = profile_dir
        self.timeout = timeout
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: websocket.WebSocket | None = None

    def __enter__(self) -> Chromium:
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                self.executable,
                "--headless",
                "--no-sandbox",  # root in CI containers
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile_dir}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            port = self._wait_for_port()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
                targets = json.loads(answer.read())
            page = next(t for t in targets if t.get("type") == "page")
            self._ws = websocket.create_connection(
                page["webSocketDebuggerUrl"], timeout=self.timeout, suppress_origin=True
            )
            self.send("Page.enable")
            self.send("Network.enable")
            self.send("Runtime.enable")
            self.send("Log.enable")
            self.send("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_LISTENER_JS})
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            self._process = None

    def _wait_for_port(self) -> int:
        marker = self.profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self._process.returncode}")
            if marker.exists():
                first_line = marker.read_text().split("\n", 1)[0].strip()
                if first_line.isdigit():
                    return int(first_line)
            time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    # --- protocol ---------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self._ws is not None
        self._next_id += 1
        message_id = self._next_id
        self._ws.send(json.dumps({"id": message_id, "method": method, "params": params or {}}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self._events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The first event ``method`` received since the buffer was last cleared; the other
        events stay buffered."""
        assert self._ws is not None
        deadline = time.monotonic() + self.timeout
        while True:
            for index, event in enumerate(self._events):
                if event["method"] == method:
                    del self._events[index]
                    return dict(event.get("params", {}))
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} event")
            message = json.loads(self._ws.recv())
            if "method" in message:
                self._events.append(message)

    # --- pages ------------------------------------------------------------------------------

    def set_width(self, width: int, height: int = 900) -> None:
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )

    def set_cookie(self, url: str, name: str, value: str) -> None:
        self.send("Network.setCookie", {"url": url, "name": name, "value": value})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_until(self, expression: str) -> None:
        """Poll until the JavaScript ``expression`` is true (a page that renders after load)."""
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(f"Boolean({expression})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true: {expression}")
            time.sleep(0.1)

    def navigate(self, url: str) -> int | None:
        """Load ``url``; returns the HTTP status of the main document (after redirects)."""
        self._events.clear()
        frame = self.send("Page.navigate", {"url": url})
        if frame.get("errorText"):
            raise RuntimeError(f"{url}: {frame['errorText']}")
        return self._status_after_load(frame.get("frameId"))

    def submit(self, expression: str) -> int | None:
        """Run ``expression`` (which submits a form) and wait for the page it leads to."""
        self._events.clear()
        self.evaluate(expression)
        return self._status_after_load(None)

    def _status_after_load(self, frame_id: str | None) -> int | None:
        self.wait_for("Page.loadEventFired")
        status = None
        for event in self._events:
            params = event.get("params", {})
            if (
                event["method"] == "Network.responseReceived"
                and params.get("type") == "Document"
                and (frame_id is None or params.get("frameId") == frame_id)
            ):
                status = int(params["response"]["status"])
        return status

    def csp_violations(self) -> list[str]:
        """The current page's Content-Security-Policy violations: those its listener recorded,
        and the console messages about the policy received since the last navigation."""
        recorded = self.evaluate("JSON.stringify(window.__cspViolations || [])")
        found = [str(item) for item in json.loads(recorded or "[]")]
        for event in self._events:
            if event["method"] == "Log.entryAdded":
                text = str(event.get("params", {}).get("entry", {}).get("text", ""))
                if "Content Security Policy" in text:
                    found.append(text)
        return found

    def facts(self, url: str, status: int | None, screenshot: Path | None = None) -> PageFacts:
        data = json.loads(self.evaluate(PAGE_FACTS_JS))
        if screenshot is not None:
            shot = self.send("Page.captureScreenshot", {"format": "png"})
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        return PageFacts(
            url=url,
            status=status,
            scroll_width=int(data["scrollWidth"]),
            client_width=int(data["clientWidth"]),
            title=str(data["title"]),
            sheets=list(data["sheets"]),
            links=list(data["links"]),
            wide=list(data["wide"]),
            screenshot=screenshot,
            csp_violations=self.csp_violations(),
        )
