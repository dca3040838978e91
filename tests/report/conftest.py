"""Headless chromium for the HTML reports' tests: Debian's, driven by Playwright.

Playwright's own browser download is never used: the tests launch the chromium on PATH (or the
one ``$CHROMIUM`` names). Without it, or without Playwright, they are skipped with the reason;
``make report-test`` installs chromium first and sets ``REPORT_TEST_NEEDS_BROWSER``, which turns
that skip into a failure, so CI cannot pass without having run them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def _missing(reason: str) -> None:
    if os.environ.get("REPORT_TEST_NEEDS_BROWSER"):
        pytest.fail(f"{reason} (REPORT_TEST_NEEDS_BROWSER is set)")
    pytest.skip(f"{reason}: `make report-test` installs Debian's chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
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
