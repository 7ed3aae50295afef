"""Debian Chromium driven by Playwright for DeerFlow's UI: one browser per session, and a page
that records every failed request and console error, so a test can say none happened."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

CHROMIUM = os.environ.get("DEERFLOW_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass
class PageLog:
    """What went wrong while a page was open: requests that failed or answered >= 400, and
    console errors (with uncaught page errors)."""

    failed: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("requestfailed", self._request_failed)
        page.on("response", self._response)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.console_errors.append(f"pageerror: {error}"))

    def _request_failed(self, request: Any) -> None:
        reason = request.failure or ""
        # A navigation (reload) cancels the previous page's pending fetches: not a failure.
        if "ERR_ABORTED" in reason:
            return
        self.failed.append(f"{request.method} {request.url}: {reason}")

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.request.method} {response.url}: HTTP {response.status}")

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.console_errors.append(message.text)


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()
