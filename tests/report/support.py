"""What the report tests share: names that would be markup if a page did not escape them, and
a page opened in the browser with everything it should never do recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
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
