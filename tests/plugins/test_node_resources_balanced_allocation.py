"""NodeResourcesBalancedAllocation: best-effort skipping, the standard-deviation score, args.

The score table mirrors upstream's balanced_allocation_test.go (the DRA-backed cases are out of
scope), plus edge cases for the fraction cap, one resource, and nodes offering nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import node_resources_balanced_allocation as balanced
from kopf_scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_scorer,
)
from kopf_scheduler.plugins.resource_allocation import ResourceSpec
from tests.builders import make_node

GPU = "nvidia.com/gpu"

CPU_ONLY = ({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_MEMORY_GPU = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"})

WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": GPU}]}


def pod_of(containers: Sequence[Mapping[str, Any]], name: str = "p", node: str = "") -> Pod:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(containers)
        ]
    }
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "uid": f"uid-{name}"}, "spec": spec})


def bnode(
    name: str,
    milli_cpu: int,
    memory: int,
    pods: Sequence[Pod] = (),
    scalars: Mapping[str, int] | None = None,
) -> NodeInfo:
    built = (
        make_node(name)
        .capacity(cpu=f"{milli_cpu}m", memory=memory, pods=100, **dict(scalars or {}))
        .node()
    )
    return NodeInfo(built, tuple(pods))


def plugin_with(args: Mapping[str, Any] | None = None) -> NodeResourcesBalancedAllocation:
    return balanced.new(args, Handle())


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(pod_of([]), id="pod without containers"),
        pytest.param(pod_of([{}]), id="container without requests (no 100m/200Mi defaults)"),
        pytest.param(
            pod_of([{"ephemeral-storage": "1Gi", GPU: "1"}]),
            id="requests only resources that are not configured",
        ),
    ],
)
def test_best_effort_pods_are_skipped(pod: Pod) -> None:
    plugin = plugin_with()
    state = CycleState()
    assert plugin.pre_score(state, pod, [bnode("n", 4000, 10000)]).code == Code.SKIP
    score, status = plugin.score(CycleState(), pod, bnode("n", 4000, 10000))
    assert (score, status.code) == (0, Code.SUCCESS)


def test_pod_requesting_a_configured_scalar_is_not_best_effort() -> None:
    plugin = plugin_with(WITH_GPU)
    pod = pod_of([{GPU: "1"}])
    assert plugin.pre_score(CycleState(), pod, []).is_success()


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "without PreScore"])
@pytest.mark.parametrize(
    ("pod", "nodes", "args", "want"),
    [
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [bnode("node1", 4000, 10000), bnode("node2", 6000, 10000)],
            None,
            [87, 100],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [
                bnode("node1", 10000, 20000, [pod_of(CPU_ONLY, "a", "node1")]),
                bnode("node2", 10000, 20000, [pod_of(CPU_AND_MEMORY, "b", "node2")]),
            ],
            None,
            [82, 95],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [
                bnode("node1", 10000, 20000, [pod_of(CPU_ONLY, "a", "node1")]),
                bnode("node2", 10000, 50000, [pod_of(CPU_AND_MEMORY, "b", "node2")]),
            ],
            None,
            [82, 80],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            pod_of(CPU_ONLY),
            [
                bnode("node1", 6000, 10000, [pod_of(CPU_ONLY, "a", "node1")]),
                bnode("node2", 6000, 10000, [pod_of(CPU_AND_MEMORY, "b", "node2")]),
            ],
            None,
            [50, 75],
            id="requested resources at node capacity",
        ),
        pytest.param(
            pod_of([{"memory": "0", GPU: "1"}]),
            [
                bnode("node1", 3500, 40000, [pod_of(CPU_MEMORY_GPU, "a", "node1")], {GPU: 8}),
                bnode("node2", 3500, 40000, [pod_of(CPU_AND_MEMORY, "b", "node2")], {GPU: 8}),
            ],
            WITH_GPU,
            [70, 65],
            id="include scalar resource on a node for balanced resource allocation",
        ),
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [bnode("node1", 3500, 40000, scalars={GPU: 8}), bnode("node2", 3500, 40000)],
            WITH_GPU,
            [63, 63],
            id="node without the scalar resource should skip the scalar resource",
        ),
        pytest.param(
            pod_of([{"cpu": "8000m", "memory": "1000"}]),
            [bnode("node1", 4000, 10000), bnode("node2", 8000, 10000)],
            None,
            [55, 55],
            id="fraction above 1 is capped at 1",
        ),
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [bnode("node1", 4000, 10000), bnode("node2", 6000, 10000)],
            {"resources": [{"name": "cpu"}]},
            [100, 100],
            id="one resource has no deviation",
        ),
        pytest.param(
            pod_of(CPU_AND_MEMORY),
            [bnode("node1", 0, 0)],
            None,
            [100],
            id="node offering none of the resources",
        ),
    ],
)
def test_balanced_allocation_score(
    run_pre_score: bool,
    pod: Pod,
    nodes: list[NodeInfo],
    args: Mapping[str, Any] | None,
    want: list[int],
) -> None:
    plugin = plugin_with(args)
    state = CycleState()
    if run_pre_score:
        assert plugin.pre_score(state, pod, nodes).is_success()
    got = []
    for node_info in nodes:
        score, status = plugin.score(state, pod, node_info)
        assert status.is_success()
        got.append(score)
    assert got == want
    assert plugin.score_extensions() is None


def test_pre_score_state_is_clonable() -> None:
    plugin = plugin_with()
    pod = pod_of(CPU_AND_MEMORY)
    node_info = bnode("node1", 4000, 10000)
    state = CycleState()
    plugin.pre_score(state, pod, [node_info])
    assert plugin.score(state.clone(), pod, node_info) == plugin.score(state, pod, node_info)


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([3, 5], [4, 10], 87, id="two resources: |0.75 - 0.5| / 2"),
        pytest.param([1, 1, 1], [1, 2, 4], 68, id="three resources: population std 0.3118"),
        pytest.param([5, 0], [4, 10], 50, id="capped fraction"),
        pytest.param([3, 5], [0, 10], 100, id="resource without allocatable is left out"),
        pytest.param([0, 0], [0, 0], 100, id="nothing allocatable"),
    ],
)
def test_balanced_resource_scorer(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_scorer(requested, allocatable) == want


def test_default_args() -> None:
    assert balanced.Args.parse(None).resources == (
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
    )
    assert balanced.Args.parse({"resources": []}).resources == (
        ResourceSpec("cpu", 1),
        ResourceSpec("memory", 1),
    )


def test_zero_or_missing_weight_defaults_to_one() -> None:
    args = balanced.Args.parse({"resources": [{"name": "cpu", "weight": 0}, {"name": GPU}]})
    assert args.resources == (ResourceSpec("cpu", 1), ResourceSpec(GPU, 1))


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"foo": 1}, "args.foo", id="unknown field"),
        pytest.param(
            {"resources": [{"name": "cpu", "wieght": 1}]},
            "args.resources[0].wieght",
            id="unknown resource field",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 2}]},
            "args.resources[0].weight",
            id="weight other than 1",
        ),
        pytest.param(
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "args.resources[1].name",
            id="duplicate resource",
        ),
        pytest.param({"resources": "cpu"}, "args.resources", id="resources not a list"),
    ],
)
def test_invalid_args(raw: Mapping[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgsError) as caught:
        balanced.Args.parse(raw)
    assert caught.value.field == field
