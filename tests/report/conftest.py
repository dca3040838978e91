"""Headless chromium for the HTML reports' tests: Debian's, driven by Playwright.

Playwright's own browser download is never used: the tests launch the chromium on PATH (or the
one ``$CHROMIUM`` names). Without it, or without Playwright, they are skipped with the reason;
``make report-test`` installs chromium first and sets ``REPORT_TEST_NEEDS_BROWSER``, which turns
that skip into a failure, so CI cannot pass without having run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.report.support import Opened


def _missing(reason: str) -> None:
    if os.environ.get("REPORT_TEST_NEEDS_BROWSER"):
        pytest.fail(f"{reason} (REPORT_TEST_NEEDS_BROWSER is set)")
    pytest.skip(f"{reason}: `make report-test` installs Debian's chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Playwright's sync API keeps an event loop running while it is open, which would stop
    every later test that runs a loop of its own: one browser per module, closed after it."""
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not executable:
        _missing("no chromium on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright is not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def open_report(browser: Any, tmp_path: Path) -> Iterator[Callable[[str, str], Opened]]:
    """Writes a report to ``tmp_path`` and opens it in a new page, recording console errors,
    uncaught exceptions, dialogs and every request other than the file itself."""
    pages: list[Any] = []

    def opening(report: str, name: str) -> Opened:
        path = tmp_path / name
        path.write_text(report, encoding="utf-8")
        page = browser.new_page()
        pages.append(page)
        opened = Opened(page)
        page.on(
            "console",
            lambda message: (
                opened.problems.append(f"console: {message.text}")
                if message.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda error: opened.problems.append(f"exception: {error}"))
        # A dialog left open would block the page: record it, then close it.
        page.on(
            "dialog",
            lambda dialog: (
                opened.problems.append(f"dialog: {dialog.message}"),
                dialog.dismiss(),
            ),
        )
        page.on(
            "request",
            lambda request: (
                opened.problems.append(f"request: {request.url}")
                if request.url != path.as_uri()
                else None
            ),
        )
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        return opened

    yield opening
    for page in pages:
        page.close()
