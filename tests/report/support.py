"""What the report tests share: names that would be markup if a page did not escape them, and
a page opened in the browser with everything it should never do recorded, and its screenshot
(copied into ``$REPORT_SCREENSHOTS`` when set: ``REPORT_SCREENSHOTS=docs/images make report-test``
renews the pictures of the docs)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOSTILE_NODE = "small<img src=x onerror=alert(1)>"
"""A node name that would load an image and open a dialog if taken for markup."""
HOSTILE_NAME = "web<script>window.injected = 1</script>"
"""A pod name that would set ``window.injected`` if taken for markup."""


@dataclass
class Opened:
    page: Any
    problems: list[str] = field(default_factory=list)
    """Console errors, uncaught exceptions, dialogs and requests that left the page."""


def save_screenshot(page: Any, path: Path) -> None:
    """The whole page as a PNG at ``path``, and a copy in ``$REPORT_SCREENSHOTS`` when set."""
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    if os.environ.get("REPORT_SCREENSHOTS"):
        shutil.copy(path, Path(os.environ["REPORT_SCREENSHOTS"]) / path.name)
