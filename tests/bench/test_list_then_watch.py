"""The runner's pod state resumes a watch the server ends and lists again only on 410."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from bench.kube import GONE, ApiError
from bench.upstream.podstate import PodState, follow

Raw = dict[str, Any]


def pod(name: str, version: int, node: str = "") -> Raw:
    return {
        "metadata": {"namespace": "ns", "name": name, "resourceVersion": str(version)},
        "spec": {"nodeName": node} if node else {},
    }


def bookmark(version: int) -> Raw:
    return {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(version)}}}


class ScriptedServer:
    """Answers lists from ``listings`` in turn and watches from ``watches`` in turn; a watch
    script ends normally, or with an ApiError where the script holds one; past the last
    script, a watch stays open until cancelled."""

    def __init__(self, listings: list[tuple[list[Raw], str]], watches: list[list[Any]]) -> None:
        self.listings = listings
        self.watches = watches
        self.watched_from: list[str] = []
        self.listed = 0
        self.idle = asyncio.Event()

    async def list_all(self, path: str, **_: Any) -> tuple[list[Raw], str]:
        self.listed += 1
        assert self.listed <= len(self.listings), f"listed {self.listed} times"
        return self.listings[self.listed - 1]

    async def watch(
        self, path: str, resource_version: str, on_open: Callable[[], None] | None = None
    ) -> AsyncIterator[Raw]:
        self.watched_from.append(resource_version)
        if on_open is not None:
            on_open()
        if len(self.watched_from) > len(self.watches):
            self.idle.set()
            await asyncio.Event().wait()
        for step in self.watches[len(self.watched_from) - 1]:
            if isinstance(step, ApiError):
                raise step
            yield step


def a_server() -> ScriptedServer:
    """a listed; b added, a bookmark, the watch ends; a watch resumed at the bookmark sees b
    scheduled, then the server says that version is gone; the list after it has a and b, and
    the next watch starts from that list's version."""
    return ScriptedServer(
        listings=[([pod("a", 5)], "5"), ([pod("a", 5), pod("b", 20, "n1")], "20")],
        watches=[
            [{"type": "ADDED", "object": pod("b", 6)}, bookmark(9)],
            [
                {"type": "MODIFIED", "object": pod("b", 10, "n1")},
                {"type": "ERROR", "object": {"code": GONE, "message": "too old"}},
            ],
        ],
    )


async def run_until_idle(server: ScriptedServer, follower: Any) -> None:
    task = asyncio.ensure_future(follower)
    idle = asyncio.ensure_future(server.idle.wait())
    await asyncio.wait({task, idle}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # the follower's own failure, if it stopped
    assert idle.done(), "the follower never reached the last watch"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_runners_pod_state_resumes_an_ended_watch_and_lists_again_only_when_gone() -> (
    None
):
    server = a_server()
    state = PodState()
    await run_until_idle(server, follow(server, state, asyncio.Event()))  # type: ignore[arg-type]
    assert server.watched_from == ["5", "9", "20"]
    assert (state.lists, server.listed) == (2, 2)
    assert state.scheduled() == 1
    assert sorted(state.pods) == [("ns", "a"), ("ns", "b")]
