"""The operator keeps PodGroup status when a profile schedules gangs: the keeper exists, the one
route of PodGroups (kopf's handler, the listing) hands them to it beside the store, the pod
watch feeds its census, and it runs beside the loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.framework.handle import Handle, PodGroupLister
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.process import Operator
from kopf_scheduler.service.run_options import RunOptions
from tests.builders import make_pod
from tests.plugins.coscheduling.support import coscheduling_config
from tests.pod_group_controller.support import raw_pod_group

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def _member(name: str, node: str = "") -> dict[str, Any]:
    pod = make_pod(name).labels(**{GROUP_LABEL: "trainer"})
    if node:
        pod = pod.node(node)
    raw: dict[str, Any] = pod.obj()
    return raw


@pytest.fixture
async def gang_operator() -> AsyncIterator[Operator]:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        yield build_operator(coscheduling_config(), RunOptions(), api)
    finally:
        await api.close()


def _handle(operator: Operator) -> Handle:
    """What the scheduler's plugins read: the store the watches fill."""
    (framework,) = operator.scheduler.profiles.values()
    return framework.handle


def _pod_groups(operator: Operator) -> PodGroupLister:
    lister = _handle(operator).pod_groups
    assert lister is not None
    return lister


def _kept_pod_groups(operator: Operator, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """What the operator's status keeper is handed: ``(event type, PodGroup name)``."""
    keeper = operator.pod_groups
    assert keeper is not None
    kept: list[tuple[str, str]] = []
    monkeypatch.setattr(
        keeper, "observe_group", lambda kind, raw: kept.append((kind, raw["metadata"]["name"]))
    )
    return kept


async def test_a_gang_profile_keeps_pod_group_status_and_counts_members_from_the_pod_watch(
    gang_operator: Operator,
) -> None:
    keeper = gang_operator.pod_groups
    assert keeper is not None
    deliver = gang_operator.reflectors["Pod"]._deliver
    deliver("ADDED", _member("w0", node="n1"))
    deliver("ADDED", _member("w1"))
    counts = keeper.census.counts("default/trainer")
    assert counts.pods == 2
    assert counts.scheduled == 1
    # The scheduler's own handler still gets the pods.
    assert _handle(gang_operator).get_pod("default/w1") is not None


async def test_one_kopf_handler_per_pod_group_event_feeds_the_store_and_the_keeper(
    gang_operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _kept_pod_groups(gang_operator, monkeypatch)
    registry = gang_operator._kopf_registry()
    pod_group_handlers = [
        handler
        for handler in registry._watching.get_all_handlers()
        if handler.selector is not None and handler.selector.group == "scheduling.x-k8s.io"
    ]
    assert [handler.id for handler in pod_group_handlers] == ["forward-podgroups"]
    assert registry._spawning.get_all_handlers() == []  # no timers: no finalizers
    assert registry._changing.get_all_handlers() == []

    (handler,) = pod_group_handlers
    await handler.fn(event={"type": None, "object": raw_pod_group("listed")})
    await handler.fn(event={"type": "DELETED", "object": raw_pod_group("gone")})

    assert kept == [("ADDED", "listed"), ("DELETED", "gone")]
    assert _pod_groups(gang_operator).get("team/listed") is not None


async def test_the_listing_hands_pod_groups_to_the_keeper_too(
    gang_operator: Operator, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _kept_pod_groups(gang_operator, monkeypatch)

    async def list_items(path: str) -> list[dict[str, Any]]:
        return [raw_pod_group("listed")] if path.endswith("/podgroups") else []

    monkeypatch.setattr(gang_operator.sync._lister, "list_items", list_items)
    await gang_operator.sync.list_all()

    assert kept == [("ADDED", "listed")]
    assert _pod_groups(gang_operator).get("team/listed") is not None


async def test_without_gangs_there_is_no_keeper_and_pods_go_to_the_handler_alone() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        assert operator.pod_groups is None
        registry: kopf.OperatorRegistry = operator._kopf_registry()
        groups = {
            handler.selector.group
            for handler in registry._watching.get_all_handlers()
            if handler.selector is not None
        }
        assert "scheduling.x-k8s.io" not in groups
    finally:
        await api.close()
