"""Per-test cleanup for the preemption tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.preemption.support import close_envs


@pytest.fixture(autouse=True)
def _close_background_coroutines() -> Iterator[None]:
    yield
    close_envs()
