"""Opening a page in real headless chromium over the DevTools protocol (--remote-debugging-pipe).

The pipe, not stderr scraping, reports what went wrong: uncaught exceptions
(Runtime.exceptionThrown), console.error calls, and browser log errors such as a
Content-Security-Policy refusal or a failed fetch (Log.entryAdded).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Without the background-networking flags the closed network makes chromium noisy and slow.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def chromium_path() -> str:
    """COMPARE_CHROMIUM, else chromium on PATH; `make chromium` installs Debian's."""
    explicit = os.environ.get("COMPARE_CHROMIUM")
    found = explicit or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("chromium not found: run `make chromium` or set COMPARE_CHROMIUM")
    return found


@dataclass
class PageRun:
    """What the browser saw while loading the page."""

    errors: list[str] = field(default_factory=list)
    ready: str | None = None  # the page's <html data-ready> after load
    title: str = ""
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, to_browser: int, from_browser: int) -> None:
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str = "",
        *,
        timeout: float,
    ) -> dict[str, Any]:
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self.read(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_event(self, method: str, *, timeout: float) -> None:
        if any(e.get("method") == method for e in self.events):
            return
        deadline = time.monotonic() + timeout
        while True:
            message = self.read(deadline)
            self.events.append(message)
            if message.get("method") == method:
                return


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [a.get("value", a.get("description", "")) for a in params.get("args", [])]
            found.append(f"console.{params['type']}: {' '.join(map(str, args))}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append(f"log: {params['entry'].get('text')}")
    return found


def open_page(
    page: Path, *, width: int = 1200, height: int = 2000, timeout: float = 60.0
) -> PageRun:
    """Load the file in headless chromium and report errors, readiness and a PNG screenshot."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def wire_fds() -> None:
        # chromium reads commands on fd 3 and writes replies on fd 4. Move both ends above 10
        # first: a pipe end may itself be fd 3 or 4, and dup2 onto itself keeps close-on-exec.
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        os.dup2(high_r, 3)
        os.dup2(high_w, 4)

    with tempfile.TemporaryDirectory(prefix="compare-chromium-") as profile:
        proc = subprocess.Popen(
            [
                chromium_path(),
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire_fds,
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        pipe = _Pipe(to_browser_w, from_browser_r)
        run = PageRun()
        try:
            targets = pipe.call("Target.getTargets", timeout=timeout)["targetInfos"]
            page_target = next(t for t in targets if t["type"] == "page")
            session = pipe.call(
                "Target.attachToTarget",
                {"targetId": page_target["targetId"], "flatten": True},
                timeout=timeout,
            )["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                pipe.call(f"{domain}.enable", session=session, timeout=timeout)
            pipe.events.clear()  # only what the report page does counts
            pipe.call("Page.navigate", {"url": page.resolve().as_uri()}, session, timeout=timeout)
            pipe.wait_event("Page.loadEventFired", timeout=timeout)
            evaluated = pipe.call(
                "Runtime.evaluate",
                {
                    "expression": "JSON.stringify([document.documentElement.getAttribute("
                    "'data-ready'), document.title])",
                    "returnByValue": True,
                },
                session,
                timeout=timeout,
            )
            ready, run.title = json.loads(evaluated["result"]["value"])
            run.ready = ready
            shot = pipe.call("Page.captureScreenshot", {"format": "png"}, session, timeout=timeout)
            run.screenshot = base64.b64decode(shot["data"])
            run.errors = _errors(pipe.events)
            with contextlib.suppress(RuntimeError, TimeoutError):
                pipe.call("Browser.close", timeout=10)
        finally:
            os.close(to_browser_w)
            os.close(from_browser_r)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return run
