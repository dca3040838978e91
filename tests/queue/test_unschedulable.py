"""unschedulablePods: which stored pods an event is offered to, and the counts it keeps."""

from __future__ import annotations

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.queue.unschedulable import UnschedulablePods
from tests.builders import make_pod


def _info(name: str, gating_plugin: str = "") -> QueuedPodInfo:
    info = QueuedPodInfo(make_pod(name).pod(), 0.0)
    info.gated = bool(gating_plugin)
    info.gating_plugin = gating_plugin
    return info


def _names(infos: list[QueuedPodInfo]) -> list[str]:
    return [info.pod.name for info in infos]


def test_an_event_is_offered_to_gated_pods_only_through_their_gating_plugin() -> None:
    pods = UnschedulablePods()
    for info in (
        _info("rejected-1"),
        _info("gates-1", "SchedulingGates"),
        _info("preempting-1", "DefaultPreemption"),
        _info("rejected-2"),
        _info("gates-2", "SchedulingGates"),
    ):
        pods.add_or_update(info)
    asked: list[str] = []

    def releases(*accepted: str) -> list[str]:
        asked.clear()

        def accepts(plugin: str) -> bool:
            asked.append(plugin)
            return plugin in accepted

        return _names(pods.offered(accepts, lambda group: True))

    assert releases() == ["rejected-1", "rejected-2"]
    assert sorted(asked) == ["DefaultPreemption", "SchedulingGates"]
    assert releases("SchedulingGates") == ["rejected-1", "gates-1", "rejected-2", "gates-2"]
    assert sorted(asked) == ["DefaultPreemption", "SchedulingGates"]
    assert releases("SchedulingGates", "DefaultPreemption") == [
        "rejected-1",
        "gates-1",
        "preempting-1",
        "rejected-2",
        "gates-2",
    ]
    assert (pods.unschedulable_count, pods.gated_count) == (2, 3)


def test_a_pod_stored_again_moves_to_its_new_group_and_to_the_end() -> None:
    pods = UnschedulablePods()
    gated = _info("p", "SchedulingGates")
    pods.add_or_update(gated)
    pods.add_or_update(_info("q"))
    assert _names(pods.offered(lambda plugin: False, lambda group: True)) == ["q"]
    gated.gated, gated.gating_plugin = False, ""
    assert pods.add_or_update(gated) is False
    assert _names(pods.offered(lambda plugin: False, lambda group: True)) == ["q", "p"]
    assert _names(pods.values()) == ["q", "p"]
    assert (pods.unschedulable_count, pods.gated_count) == (2, 0)
    gated.gated, gated.gating_plugin = True, "DefaultPreemption"
    pods.add_or_update(gated)
    assert _names(pods.offered(lambda plugin: plugin == "SchedulingGates", lambda group: True)) == [
        "q"
    ]
    assert _names(
        pods.offered(lambda plugin: plugin == "DefaultPreemption", lambda group: True)
    ) == ["q", "p"]
    assert pods.delete("default/p") is gated
    assert pods.delete("default/p") is None
    assert _names(pods.offered(lambda plugin: True, lambda group: True)) == ["q"]
    assert (len(pods), pods.unschedulable_count, pods.gated_count) == (1, 1, 0)


def test_an_event_is_offered_to_rejected_pods_only_through_their_group() -> None:
    """Pods rejected alike (profile and plugins) are asked about once, as a group, and keep the
    order they were stored in across groups."""
    pods = UnschedulablePods()
    stored = [
        ("large-1", {"NodeResourcesFit"}),
        ("spread-1", {"PodTopologySpread"}),
        ("large-2", {"NodeResourcesFit"}),
        ("both", {"NodeResourcesFit", "PodTopologySpread"}),
        ("gates", set()),
    ]
    for name, plugins in stored:
        info = _info(name, "SchedulingGates" if name == "gates" else "")
        info.unschedulable_plugins = plugins
        pods.add_or_update(info)
    asked: list[frozenset[str]] = []

    def moved_by(plugin: str) -> list[str]:
        asked.clear()

        def moves(group: tuple[str, frozenset[str]]) -> bool:
            asked.append(group[1])
            return plugin in group[1]

        return _names(pods.offered(lambda gating: False, moves))

    assert moved_by("PodTopologySpread") == ["spread-1", "both"]
    assert len(asked) == 3
    assert moved_by("NodeResourcesFit") == ["large-1", "large-2", "both"]
    assert moved_by("InterPodAffinity") == []
    assert _names(
        pods.offered(lambda gating: True, lambda group: "NodeResourcesFit" in group[1])
    ) == [
        "large-1",
        "large-2",
        "both",
        "gates",
    ]
    pods.delete("default/large-1")
    pods.delete("default/large-2")
    assert moved_by("NodeResourcesFit") == ["both"]
    assert len(asked) == 2
