"""The pod reflector against kmock: list, watch, resume, relist after 410, failures."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.k8s.reflector import INITIAL_BACKOFF, Reflector
from tests.clock import FakeClock
from tests.k8s.cutting_server import CuttingServer, serving
from tests.k8s.support import START, reply

PODS = "/api/v1/pods"


def pod(name: str, rv: str, node: str = "") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": f"u-{name}"},
        "spec": {"nodeName": node} if node else {},
    }


def pod_list(rv: str, *pods: dict[str, Any]) -> dict[str, Any]:
    items = [{k: v for k, v in p.items() if k not in ("apiVersion", "kind")} for p in pods]
    return {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": rv},
        "items": items,
    }


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return event(
        "BOOKMARK", {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}
    )


async def blocked() -> AsyncIterator[dict[str, Any]]:
    """A watch stream that stays open and silent until the test ends."""
    await asyncio.Event().wait()
    yield {}


class Server:
    """Answers LISTs with ``lists`` in turn and WATCHes with ``watches`` in turn (then silence)."""

    def __init__(self, lists: list[Any], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.list_params: list[dict[str, str]] = []
        self.watch_params: list[dict[str, str]] = []
        self.watched = asyncio.Event()

    def __call__(self, request: kmock.Request) -> Any:
        params = dict(request.params)
        if params.get("watch") == "true":
            self.watch_params.append(params)
            if not self.watches:
                self.watched.set()
                return blocked()
            return self.watches.pop(0)
        self.list_params.append(params)
        return self.lists.pop(0)


@pytest.fixture
def delivered() -> list[tuple[str, str, str]]:
    return []


@pytest.fixture
def reflector(api: Api, delivered: list[tuple[str, str, str]]) -> Reflector:
    def deliver(event_type: str, raw: dict[str, Any]) -> None:
        delivered.append((event_type, raw["metadata"]["name"], raw["metadata"]["resourceVersion"]))

    return Reflector(api, PODS, deliver)


async def run_until_silent(reflector: Reflector, server: Server) -> None:
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(server.watched.wait(), 10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_list_delivers_every_object_and_keeps_the_version(
    kmock: kmock.RawHandler, reflector: Reflector, delivered: list[tuple[str, str, str]]
) -> None:
    kmock[f"get {PODS}"] << pod_list("10", pod("a", "7"), pod("b", "9"))

    await reflector.list()

    assert delivered == [("ADDED", "a", "7"), ("ADDED", "b", "9")]
    assert reflector.resource_version == "10"
    assert reflector.synced
    assert len(reflector) == 2


async def test_watch_delivers_events_in_order_and_bookmarks_move_the_version(
    kmock: kmock.RawHandler, reflector: Reflector, delivered: list[tuple[str, str, str]]
) -> None:
    server = Server(
        lists=[pod_list("10", pod("a", "7"))],
        watches=[
            (
                event("ADDED", pod("b", "11")),
                event("MODIFIED", pod("a", "12", node="n1")),
                bookmark("15"),
                event("DELETED", pod("b", "16")),
                bookmark("20"),
            )
        ],
    )
    kmock[f"get {PODS}"] << server

    await reflector.list()
    await reflector.watch_once()

    assert delivered == [
        ("ADDED", "a", "7"),
        ("ADDED", "b", "11"),
        ("MODIFIED", "a", "12"),
        ("DELETED", "b", "16"),
    ]
    assert reflector.resource_version == "20"
    assert len(reflector) == 1
    [params] = server.watch_params
    assert params["resourceVersion"] == "10"
    assert params["allowWatchBookmarks"] == "true"
    assert 300 <= int(params["timeoutSeconds"]) < 600


async def test_the_next_watch_resumes_where_the_previous_ended(
    kmock: kmock.RawHandler, reflector: Reflector, delivered: list[tuple[str, str, str]]
) -> None:
    server = Server(
        lists=[pod_list("10")],
        watches=[(event("ADDED", pod("a", "11")),), (bookmark("30"),)],
    )
    kmock[f"get {PODS}"] << server

    await run_until_silent(reflector, server)

    assert len(server.list_params) == 1
    assert [p["resourceVersion"] for p in server.watch_params] == ["10", "11", "30"]
    assert delivered == [("ADDED", "a", "11")]


async def test_an_expired_version_lists_again_and_delivers_what_was_deleted_meanwhile(
    kmock: kmock.RawHandler, reflector: Reflector, delivered: list[tuple[str, str, str]]
) -> None:
    gone = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}
    server = Server(
        lists=[pod_list("10", pod("a", "7"), pod("b", "8")), pod_list("50", pod("b", "40"))],
        watches=[(event("ERROR", gone),)],
    )
    kmock[f"get {PODS}"] << server

    await run_until_silent(reflector, server)

    assert delivered == [
        ("ADDED", "a", "7"),
        ("ADDED", "b", "8"),
        ("ADDED", "b", "40"),
        ("DELETED", "a", "7"),
    ]
    assert [p["resourceVersion"] for p in server.watch_params] == ["10", "50"]
    assert len(reflector) == 1


async def test_the_first_list_comes_from_the_watch_cache_and_a_relist_is_consistent(
    kmock: kmock.RawHandler, reflector: Reflector
) -> None:
    gone = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}
    server = Server(
        lists=[pod_list("10", pod("a", "7")), pod_list("50", pod("a", "7"))],
        watches=[(event("ERROR", gone),)],
    )
    kmock[f"get {PODS}"] << server

    await run_until_silent(reflector, server)

    first, relist = server.list_params
    # resourceVersion=0: any version the server has, answered whole from its watch cache.
    assert first == {"resourceVersion": "0"}
    # After 410 Gone, a version as recent as etcd's, in pages.
    assert relist == {"limit": "500"}


async def test_a_failed_watch_is_retried_from_the_same_version_after_a_backoff(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock, reflector: Reflector
) -> None:
    server = Server(
        lists=[pod_list("10")],
        watches=[
            reply(500, "InternalError", "etcd is sad"),
            reply(500, "InternalError", "etcd is still sad"),
        ],
    )
    kmock[f"get {PODS}"] << server

    await run_until_silent(reflector, server)

    assert [p["resourceVersion"] for p in server.watch_params] == ["10", "10", "10"]
    assert clock.sleeps == [INITIAL_BACKOFF, INITIAL_BACKOFF * 2]
    assert len(server.list_params) == 1


async def test_a_failing_handler_does_not_stop_the_watch(kmock: kmock.RawHandler, api: Api) -> None:
    seen: list[str] = []

    def deliver(event_type: str, raw: dict[str, Any]) -> None:
        seen.append(raw["metadata"]["name"])
        if raw["metadata"]["name"] == "bad":
            raise RuntimeError("a bug in one event")

    server = Server(
        lists=[pod_list("10")],
        watches=[(event("ADDED", pod("bad", "11")), event("ADDED", pod("good", "12")))],
    )
    kmock[f"get {PODS}"] << server
    reflector = Reflector(api, PODS, deliver)

    await reflector.list()
    await reflector.watch_once()

    assert seen == ["bad", "good"]
    assert reflector.resource_version == "12"


def created_at(obj: dict[str, Any], timestamp: str) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = timestamp
    return obj


async def test_objects_a_watch_adds_report_their_delivery_lag(
    kmock: kmock.RawHandler, api: Api
) -> None:
    metrics = PrometheusMetrics()
    api.metrics = metrics
    server = Server(
        lists=[pod_list("10", created_at(pod("listed", "7"), "2026-01-01T00:00:00Z"))],
        watches=[
            (
                event("ADDED", created_at(pod("new", "11"), "2026-01-01T00:01:38Z")),
                event("MODIFIED", created_at(pod("new", "12", node="n1"), "2026-01-01T00:01:38Z")),
                event("ADDED", pod("no-timestamp", "13")),
            )
        ],
    )
    kmock[f"get {PODS}"] << server
    reflector = Reflector(api, PODS, lambda event_type, raw: None, wall_clock=lambda: START + 100)

    await reflector.list()
    await reflector.watch_once()

    labels = {"resource": "pods"}
    registry = metrics.registry
    assert registry.get_sample_value(f"{m.WATCH_DELIVERY_LAG}_count", labels) == 1
    assert registry.get_sample_value(f"{m.WATCH_DELIVERY_LAG}_sum", labels) == 2.0


async def test_objects_are_kept_and_delivered_without_managed_fields(
    kmock: kmock.RawHandler, api: Api
) -> None:
    """As kube-scheduler's pod informer: the writers' field bookkeeping is dropped on arrival,
    from listed and from watched objects alike."""
    entries = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]
    listed, watched = pod("a", "7"), pod("b", "11")
    listed["metadata"]["managedFields"] = entries
    watched["metadata"]["managedFields"] = entries
    server = Server(lists=[pod_list("10", listed)], watches=[(event("ADDED", watched),)])
    kmock[f"get {PODS}"] << server
    seen: list[dict[str, Any]] = []
    reflector = Reflector(api, PODS, lambda _, raw: seen.append(raw))

    await reflector.list()
    await reflector.watch_once()

    assert [raw["metadata"]["name"] for raw in seen] == ["a", "b"]
    assert all("managedFields" not in raw["metadata"] for raw in seen)
    assert all(raw["metadata"]["uid"] for raw in seen)


async def test_a_cycle_woken_by_one_event_runs_before_the_next_event_of_the_same_read() -> None:
    """kube-scheduler's informers and its scheduling loop run side by side: the preemptor that
    one victim's deletion requeues is tried while the other victim, removed a moment later, is
    still there. Both deletions come here in one write of the stream, so one read has both."""
    server = CuttingServer(
        answers={("GET", PODS): pod_list("10", pod("first", "7", "n"), pod("second", "8", "n"))},
        watch_events=[
            event("DELETED", pod("first", "11", "n")),
            event("DELETED", pod("second", "12", "n")),
        ],
    )
    applied: list[str] = []
    woken = asyncio.Event()
    seen_by_cycle: list[list[str]] = []

    def deliver(event_type: str, raw: dict[str, Any]) -> None:
        if event_type == "DELETED":
            applied.append(raw["metadata"]["name"])
            woken.set()

    async def scheduling_loop() -> None:
        await woken.wait()
        seen_by_cycle.append(list(applied))

    async with serving(server):
        client = ApiClient(Configuration(host=server.url))
        api = Api(client, limiter=Unlimited(), clock=FakeClock(START), timeout=10.0)
        reflector = Reflector(api, PODS, deliver)
        cycle = asyncio.create_task(scheduling_loop())
        await reflector.list()
        watching = asyncio.create_task(reflector.watch_once())
        try:
            for _ in range(500):
                if len(applied) == 2:
                    break
                await asyncio.sleep(0.01)
        finally:
            watching.cancel()
            await asyncio.gather(watching, cycle, return_exceptions=True)
            await api.close()

    assert applied == ["first", "second"]
    assert seen_by_cycle == [["first"]]
