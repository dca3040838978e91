"""NodeInfo: a removed pod's place goes to the list's last pod, in the node and in its clones."""

from __future__ import annotations

from typing import Any

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.model.pod import Pod
from tests.builders import make_node, make_pod

_ANTI_AFFINITY: dict[str, Any] = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def _pod(name: str, *, anti_affinity: bool = False) -> Pod:
    builder = make_pod(name).uid(f"uid-{name}").req(cpu="100m")
    if anti_affinity:
        builder = builder.affinity(_ANTI_AFFINITY)
    return builder.pod()


def _names(pods: list[Pod]) -> list[str]:
    return [pod.name for pod in pods]


def test_the_last_pod_takes_the_removed_pods_place() -> None:
    a, b, c, d = _pod("a", anti_affinity=True), _pod("b"), _pod("c", anti_affinity=True), _pod("d")
    node = NodeInfo(make_node("n").node(), (a, b, c, d))
    assert node.remove_pod(a)
    assert _names(node.pods) == ["d", "b", "c"]
    assert _names(node.pods_with_affinity) == ["c"]
    assert _names(node.pods_with_required_anti_affinity) == ["c"]
    assert node.remove_pod(c)
    assert _names(node.pods) == ["d", "b"]
    assert node.pods_with_affinity == []
    assert not node.remove_pod(c)
    node.add_pod(c)
    assert node.remove_pod(b)
    assert _names(node.pods) == ["d", "c"]
    assert node.requested.milli_cpu == 200


def test_a_clone_removes_pods_without_touching_the_node_it_came_from() -> None:
    pods = tuple(_pod(name) for name in ("a", "b", "c"))
    node = NodeInfo(make_node("n").node(), pods)
    clone = node.clone()
    assert clone.remove_pod(pods[0])
    clone.add_pod(pods[0])
    assert clone.remove_pod(pods[2])
    assert _names(clone.pods) == ["a", "b"]
    assert clone.requested.milli_cpu == 200
    assert _names(node.pods) == ["a", "b", "c"]
    assert node.requested.milli_cpu == 300
    assert node.remove_pod(pods[1])
    assert _names(node.pods) == ["a", "c"]
