"""Keep the CLI's logging set-up from leaking out of the simulator tests.

``kopf-scheduler simulate`` configures structlog and the root logger for the whole process (a
stderr handler bound to the stream of the moment); under pytest that stream is the per-test
capture, so both are put back after every test here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    structlog_config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**structlog_config)
    root.handlers[:] = handlers
    root.setLevel(level)
