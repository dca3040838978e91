"""kmock as a stateless Kubernetes-shaped server: only the reactions a test declares answer.

Unexpected requests get kmock's 404 and, with ``strict``, fail the test at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.ratelimit import Unlimited
from tests.clock import FakeClock
from tests.k8s.support import START


@pytest.fixture
def kmock_options(kmock_options: dict[str, Any]) -> dict[str, Any]:
    return {**kmock_options, "cls": kmock.KubernetesScaffold, "strict": True}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def api(kmock: kmock.RawHandler, clock: FakeClock) -> AsyncIterator[Api]:
    client = ApiClient(Configuration(host=str(kmock.url).rstrip("/")))
    api = Api(client, limiter=Unlimited(), clock=clock, timeout=10.0)
    yield api
    await api.close()
