"""A failed group's memory of the cluster: which changes are news to it, and that the plugin
hears of each of them."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.events import ActionType, EventResource
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.plugins.coscheduling.failures import FailureMemory
from tests.builders import make_node, make_pod, node_info
from tests.plugins.coscheduling.support import Gang, member, pod_group_obj


def _node(**changes: Any) -> Any:
    builder = make_node("n1").capacity(cpu=changes.get("cpu", "4"), memory="8Gi", pods=10)
    for key, value in (changes.get("labels") or {}).items():
        builder = builder.label(key, value)
    if changes.get("taint"):
        builder = builder.taint("example.com/broken", "", "NoSchedule")
    return builder


def _infos(*pods: Any, **changes: Any) -> list[Any]:
    return [node_info(_node(**changes), *pods)]


GROUP = PodGroup(pod_group_obj("g", 2))
OTHER = make_pod("other").uid("other").req(cpu="1").node("n1").pod()


@pytest.mark.parametrize(
    ("after", "news"),
    [
        pytest.param(_infos(OTHER, taint=True), False, id="nothing-changed"),
        pytest.param(_infos(OTHER), True, id="taint-removed"),
        pytest.param(_infos(OTHER, taint=True, labels={"zone": "b"}), True, id="relabelled"),
        pytest.param(_infos(OTHER, taint=True, cpu="8"), True, id="resized"),
        pytest.param(_infos(taint=True), True, id="pod-there-then-gone"),
        pytest.param(
            _infos(OTHER, make_pod("new").uid("new").node("n1").pod(), taint=True),
            False,
            id="pod-added-since",
        ),
    ],
)
def test_which_changes_are_news_to_a_failed_group(after: list[Any], news: bool) -> None:
    memory = FailureMemory()
    memory.remember(GROUP, 2, _infos(OTHER, taint=True))
    assert memory.waits(GROUP, 2, after) is not news
    # News is news once: the failure is forgotten, the group tries again.
    assert (GROUP.key in memory) is not news


def test_the_plugin_hears_the_node_changes_a_failed_group_waits_for() -> None:
    gang = Gang([node_info(make_node("n1").capacity(cpu="4", memory="8Gi", pods=10))])
    gang.add_group(pod_group_obj("g", 2))
    gang.add_pods(member("p0", "g").pod(), member("p1", "g").pod())
    node_events = [
        registered.event.action
        for registered in gang.plugin.events_to_register()
        if registered.event.resource == EventResource.NODE
    ]
    assert len(node_events) == 1
    for action in (
        ActionType.ADD,
        ActionType.UPDATE_NODE_ALLOCATABLE,
        ActionType.UPDATE_NODE_LABEL,
        ActionType.UPDATE_NODE_TAINT,
    ):
        assert node_events[0] & action, action
