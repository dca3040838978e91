"""The end-to-end benchmark's cleanup survives an API server that gives up on a long pods DELETE."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, cast

import aiohttp
import pytest
from bench.kube import ApiError, Client

from bench import e2e

PODS = "/api/v1/namespaces/bench-x/pods"


class GivingUpServer:
    """Ends the first pods DELETE midway (half the pods gone) as ``how`` says, answers the rest."""

    def __init__(self, pods: int, how: str) -> None:
        self.pods = pods
        self.how = how
        self.calls: list[tuple[str, str]] = []

    async def request(
        self, method: str, path: str, ok_statuses: Iterable[int] = (), **_: Any
    ) -> Any:
        self.calls.append((method, path))
        if method == "GET":
            return {"items": [{}] if self.pods else []}
        if path == PODS and len(self.calls) == 1:
            self.pods //= 2
            if self.how == "dropped":
                raise aiohttp.ServerDisconnectedError()
            if 504 not in ok_statuses:
                raise ApiError(504, "Timeout: request did not complete within the allotted timeout")
            return None
        if path == PODS:
            self.pods = 0
        return None


@pytest.mark.parametrize("how", ["dropped", "timed out"])
def test_a_pods_delete_given_up_is_asked_again_until_none_is_left(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = GivingUpServer(pods=10_000, how=how)
    real_sleep = asyncio.sleep
    monkeypatch.setattr(asyncio, "sleep", lambda _: real_sleep(0))

    asyncio.run(e2e.delete_namespace(cast(Client, server), "bench-x"))

    assert server.pods == 0
    assert server.calls == [
        ("DELETE", PODS),
        ("GET", PODS),
        ("DELETE", PODS),
        ("GET", PODS),
        ("DELETE", "/api/v1/namespaces/bench-x"),
    ]
