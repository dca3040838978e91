"""Waiting for the cluster to reach a state: poll a probe until it holds or a deadline passes.

A timeout is a test failure whose message carries the last value the probe saw, so a failing
run says what the cluster looked like instead of only "timed out".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """The awaited state was not reached in time."""


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.25,
    describe: Callable[[], object] | None = None,
) -> T:
    """Call ``probe`` until it returns something truthy and return that value.

    On timeout raise :class:`WaitTimeoutError` naming ``what`` and showing the last value (or what
    ``describe()`` returns, when given).
    """
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            shown = describe() if describe is not None else last
            raise WaitTimeoutError(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: {shown!r}"
            )
        time.sleep(interval)


def holds_for(probe: Callable[[], bool], *, seconds: float, interval: float = 0.25) -> bool:
    """True when ``probe`` stays true for ``seconds`` (used for "nothing happens" checks that
    follow a positive signal, never as the only evidence)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not probe():
            return False
        time.sleep(interval)
    return probe()
