"""The shared resource-allocation scoring: request vectors, the three NodeResourcesFit strategies
and their integer rounding, and the resource-name classification.

Score tables mirror upstream's least_allocated_test.go, most_allocated_test.go,
requested_to_capacity_ratio_test.go and resource_allocation_test.go; each case is run through
the NodeResourcesFit plugin (PreScore then Score) as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from kopf_scheduler.plugins import node_resources_fit as fit
from kopf_scheduler.plugins.resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    ShapePoint,
    build_broken_linear_function,
    is_extended_resource_name,
    is_qualified_name,
    is_scalar_resource_name,
    least_allocated_scorer,
    least_requested_score,
    most_requested_score,
    requested_to_capacity_ratio_scorer,
)
from tests.builders import make_node

EXT = "abc.com/xyz"
ONE_MI = 1024 * 1024

DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_EXT = [*DEFAULT, {"name": EXT, "weight": 1}]


def pod_of(*containers: Mapping[str, Any], name: str = "p", node: str = "") -> Pod:
    """A pod with exactly these containers' requests (no containers when none are given, so
    no 100m / 200Mi scoring defaults apply)."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(containers)
        ]
    }
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "uid": f"uid-{name}-{node}"}, "spec": spec})


def requestless(name: str = "p", node: str = "") -> Pod:
    """A pod with one container that requests nothing (scores as 100m / 200Mi)."""
    return Pod(
        {
            "metadata": {"name": name, "uid": f"uid-{name}-{node}"},
            "spec": {"containers": [{"name": "c"}], "nodeName": node},
        }
    )


def node(name: str, pods: Sequence[Pod] = (), /, **allocatable: Any) -> NodeInfo:
    allocatable.setdefault("pods", 32)
    built = make_node(name).capacity(**allocatable).node()
    return NodeInfo(built, tuple(pods))


def run_scores(
    strategy: str,
    resources: list[dict[str, Any]] | None,
    pod: Pod,
    nodes: Sequence[NodeInfo],
    shape: list[dict[str, int]] | None = None,
) -> list[int]:
    raw: dict[str, Any] = {"type": strategy}
    if resources is not None:
        raw["resources"] = resources
    if shape is not None:
        raw["requestedToCapacityRatio"] = {"shape": shape}
    plugin = fit.new({"scoringStrategy": raw}, Handle())
    state = CycleState()
    assert plugin.pre_score(state, pod, list(nodes)).is_success()
    scores = []
    for node_info in nodes:
        score, status = plugin.score(state, pod, node_info)
        assert status.is_success()
        scores.append(score)
    return scores


REQ_3000_5000 = pod_of({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


# --------------------------------------------------------------------------------------------
# LeastAllocated.


@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "want"),
    [
        pytest.param(
            pod_of(),
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="4000", memory="10000")],
            DEFAULT,
            [100, 100],
            id="nothing scheduled, nothing requested",
        ),
        pytest.param(
            REQ_3000_5000,
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="6000", memory="10000")],
            DEFAULT,
            [37, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            pod_of(),
            [
                node("node1", [pod_of(name="a"), pod_of(name="b")], cpu="4000", memory="10000"),
                node("node2", [pod_of(name="c"), pod_of(name="d")], cpu="4000", memory="10000"),
            ],
            DEFAULT,
            [100, 100],
            id="no resources requested, pods scheduled",
        ),
        pytest.param(
            pod_of(),
            [
                node(
                    "node1",
                    [
                        pod_of({"cpu": "3000", "memory": "0"}, name="a"),
                        pod_of({"cpu": "3000", "memory": "0"}, name="b"),
                    ],
                    cpu="10000",
                    memory="20000",
                ),
                node(
                    "node2",
                    [
                        pod_of({"cpu": "3000", "memory": "0"}, name="c"),
                        pod_of({"cpu": "3000", "memory": "5000"}, name="d"),
                    ],
                    cpu="10000",
                    memory="20000",
                ),
            ],
            DEFAULT,
            [70, 57],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node(
                    "node1",
                    [pod_of({"cpu": "3000", "memory": "0"}, name="a")],
                    cpu="10000",
                    memory="20000",
                ),
                node(
                    "node2",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="b")],
                    cpu="10000",
                    memory="20000",
                ),
            ],
            DEFAULT,
            [57, 45],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node(
                    "node1",
                    [pod_of({"cpu": "3000", "memory": "0"}, name="a")],
                    cpu="10000",
                    memory="20000",
                ),
                node(
                    "node2",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="b")],
                    cpu="10000",
                    memory="50000",
                ),
            ],
            DEFAULT,
            [57, 60],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "0"}),
            [
                node(
                    "node1",
                    [pod_of({"cpu": "3000", "memory": "0"}, name="a")],
                    cpu="4000",
                    memory="10000",
                ),
                node(
                    "node2",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="b")],
                    cpu="4000",
                    memory="10000",
                ),
            ],
            DEFAULT,
            [50, 25],
            id="requested resources exceed node capacity",
        ),
        pytest.param(
            pod_of(),
            [
                node("node1", [pod_of({"cpu": "3000", "memory": "0"}, name="a")]),
                node("node2", [pod_of({"cpu": "3000", "memory": "5000"}, name="b")]),
            ],
            DEFAULT,
            [0, 0],
            id="zero node resources, pods scheduled with resources",
        ),
        pytest.param(
            REQ_3000_5000,
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="6000", memory="10000")],
            [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
            [41, 50],
            id="different weights on cpu and memory, differently sized nodes",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node("node1", cpu="6000", memory="10000"),
                node("node2", cpu="6000", memory="10000", **{EXT: 4}),
            ],
            WITH_EXT,
            [50, 50],
            id="bypass extended resource if the pod does not request it",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "5000", EXT: "2"}),
            [
                node("node1", cpu="6000", memory="10000", **{EXT: 4}),
                node("node2", cpu="6000", memory="10000", **{EXT: 10}),
            ],
            WITH_EXT,
            [50, 60],
            id="honor extended resource if the pod requests it",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "4000"}),
            [
                node("node1", cpu="6000", memory="10000"),
                node("node2", cpu="6000", memory="10000", **{EXT: 4}),
            ],
            [{"name": EXT, "weight": 2}, *DEFAULT],
            [55, 55],
            id="node without a configured resource",
        ),
        pytest.param(
            pod_of({"cpu": "1", "memory": "1", "ephemeral-storage": "5"}),
            [
                node(
                    "node1",
                    [pod_of({"ephemeral-storage": "5"}, name="a")],
                    cpu="2",
                    memory="2",
                    ephemeral_storage="20",
                ),
                node("node2", cpu="2", memory="2"),
            ],
            [{"name": "ephemeral-storage", "weight": 1}],
            [50, 0],
            id="ephemeral storage uses actual requests and skips nodes without it",
        ),
    ],
)
def test_least_allocated(
    pod: Pod, nodes: list[NodeInfo], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert run_scores("LeastAllocated", resources, pod, nodes) == want


# --------------------------------------------------------------------------------------------
# MostAllocated.


@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "want"),
    [
        pytest.param(
            pod_of(),
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="4000", memory="10000")],
            DEFAULT,
            [0, 0],
            id="nothing scheduled, nothing requested",
        ),
        pytest.param(
            REQ_3000_5000,
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="6000", memory="10000")],
            DEFAULT,
            [62, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            pod_of(),
            [
                node(
                    "node1",
                    [
                        pod_of({"cpu": "3000", "memory": "0"}, name="a"),
                        pod_of({"cpu": "3000", "memory": "0"}, name="b"),
                    ],
                    cpu="10000",
                    memory="20000",
                ),
                node(
                    "node2",
                    [
                        pod_of({"cpu": "3000", "memory": "0"}, name="c"),
                        pod_of({"cpu": "3000", "memory": "5000"}, name="d"),
                    ],
                    cpu="10000",
                    memory="20000",
                ),
            ],
            DEFAULT,
            [30, 42],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node(
                    "node1",
                    [pod_of({"cpu": "3000", "memory": "0"}, name="a")],
                    cpu="10000",
                    memory="20000",
                ),
                node(
                    "node2",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="b")],
                    cpu="10000",
                    memory="20000",
                ),
            ],
            DEFAULT,
            [42, 55],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            pod_of({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
            [node("node1", cpu="5000", memory="10000"), node("node2", cpu="10000", memory="9000")],
            DEFAULT,
            [95, 75],
            id="resources requested equal node capacity",
        ),
        pytest.param(
            REQ_3000_5000,
            [node("node1", cpu="4000", memory="10000"), node("node2", cpu="6000", memory="10000")],
            [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
            [58, 50],
            id="different weights on cpu and memory",
        ),
        pytest.param(
            requestless(),
            [
                node(
                    "node1",
                    [requestless("a", "node1"), requestless("b", "node1")],
                    cpu="250m",
                    memory="1000Mi",
                ),
                node("node2", cpu="250m", memory="1000Mi"),
            ],
            DEFAULT,
            [80, 30],
            id="no resources requested, pods scheduled, nonzero request for resource",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node("node1", cpu="6000", memory="10000"),
                node("node2", cpu="6000", memory="10000", **{EXT: 4}),
            ],
            WITH_EXT,
            [50, 50],
            id="bypass extended resource if the pod does not request it",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "5000", EXT: "2"}),
            [
                node("node1", cpu="6000", memory="10000", **{EXT: 4}),
                node("node2", cpu="6000", memory="10000", **{EXT: 10}),
            ],
            WITH_EXT,
            [50, 40],
            id="honor extended resource if the pod requests it",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "4000"}),
            [
                node("node1", cpu="6000", memory="10000"),
                node("node2", cpu="6000", memory="10000", **{EXT: 4}),
            ],
            [{"name": EXT, "weight": 2}, *DEFAULT],
            [45, 45],
            id="node without a configured resource",
        ),
    ],
)
def test_most_allocated(
    pod: Pod, nodes: list[NodeInfo], resources: list[dict[str, Any]], want: list[int]
) -> None:
    assert run_scores("MostAllocated", resources, pod, nodes) == want


# --------------------------------------------------------------------------------------------
# RequestedToCapacityRatio.

DECREASING = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
BIN_PACKING = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


@pytest.mark.parametrize(
    ("pod", "nodes", "resources", "shape", "want"),
    [
        pytest.param(
            pod_of(),
            [
                node("node1", [pod_of(name="a"), pod_of(name="b")], cpu="4000", memory="10000"),
                node("node2", cpu="4000", memory="10000"),
            ],
            DEFAULT,
            DECREASING,
            [100, 100],
            id="nothing scheduled, nothing requested",
        ),
        pytest.param(
            REQ_3000_5000,
            [
                node("node1", [pod_of(name="a"), pod_of(name="b")], cpu="4000", memory="10000"),
                node("node2", cpu="6000", memory="10000"),
            ],
            DEFAULT,
            DECREASING,
            [38, 50],
            id="resources requested, differently sized nodes (37.5 rounds up)",
        ),
        pytest.param(
            pod_of(),
            [
                node(
                    "node1",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="a")],
                    cpu="4000",
                    memory="10000",
                ),
                node(
                    "node2",
                    [pod_of({"cpu": "3000", "memory": "5000"}, name="b")],
                    cpu="6000",
                    memory="10000",
                ),
            ],
            DEFAULT,
            DECREASING,
            [38, 50],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            pod_of(),
            [
                node("node1", cpu="4000", memory="10000Mi", **{"intel.com/foo": 8}),
                node("node2", cpu="4000", memory="10000Mi", **{"intel.com/foo": 4}),
            ],
            [{"name": "intel.com/foo", "weight": 1}],
            BIN_PACKING,
            [0, 0],
            id="single extended resource, nothing requested",
        ),
        pytest.param(
            pod_of({"intel.com/foo": "2"}),
            [
                node("node1", cpu="4000", memory="10000Mi", **{"intel.com/foo": 8}),
                node("node2", cpu="4000", memory="10000Mi", **{"intel.com/foo": 4}),
            ],
            [{"name": "intel.com/foo", "weight": 1}],
            BIN_PACKING,
            [2, 5],
            id="single extended resource requested",
        ),
        pytest.param(
            pod_of({"intel.com/foo": "2"}),
            [
                node("node1", cpu="4000", memory="10000Mi", **{"intel.com/foo": 8}),
                node(
                    "node2",
                    [pod_of({"intel.com/foo": "2"}, name="a")],
                    cpu="4000",
                    memory="10000Mi",
                    **{"intel.com/foo": 4},
                ),
            ],
            [{"name": "intel.com/foo", "weight": 1}],
            BIN_PACKING,
            [2, 10],
            id="single extended resource, node with an existing pod using it",
        ),
        pytest.param(
            pod_of({"intel.com/foo": "4"}),
            [
                node("node1", cpu="4000", memory="10000Mi", **{"intel.com/foo": 8}),
                node("node2", cpu="4000", memory="10000Mi", **{"intel.com/foo": 4}),
            ],
            [{"name": "intel.com/foo", "weight": 1}],
            BIN_PACKING,
            [5, 10],
            id="single extended resource, request fills a node",
        ),
        pytest.param(
            pod_of({"intel.com/foo": "2", "intel.com/bar": "2"}),
            [
                node(
                    "node1",
                    cpu="4000",
                    memory="10000Mi",
                    **{"intel.com/foo": 8, "intel.com/bar": 4},
                ),
                node(
                    "node2",
                    cpu="4000",
                    memory="10000Mi",
                    **{"intel.com/foo": 4, "intel.com/bar": 8},
                ),
            ],
            [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
            BIN_PACKING,
            [4, 3],
            id="multiple weighted extended resources, weighted mean rounded",
        ),
        pytest.param(
            pod_of({"cpu": "3000", "memory": "5000"}),
            [
                node(
                    "node1",
                    [pod_of({"cpu": "2000", "memory": "4000"}, name="a")],
                    cpu="4000",
                    memory="10000",
                ),
            ],
            DEFAULT,
            DECREASING,
            [10],
            id="overfull resource scores the shape at 100 and drops out when that is 0",
        ),
    ],
)
def test_requested_to_capacity_ratio(
    pod: Pod,
    nodes: list[NodeInfo],
    resources: list[dict[str, Any]],
    shape: list[dict[str, int]],
    want: list[int],
) -> None:
    assert run_scores("RequestedToCapacityRatio", resources, pod, nodes, shape) == want


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
            id="increasing",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="up then down",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="flat",
        ),
        pytest.param(
            [(0, 10), (100, 0)],
            [(15, 9), (99, 1), (100, 0)],
            id="decreasing segment truncates toward zero",
        ),
    ],
)
def test_broken_linear_function(
    points: list[tuple[int, int]], assertions: list[tuple[int, int]]
) -> None:
    function = build_broken_linear_function([ShapePoint(u, s) for u, s in points])
    assert [(p, function(p)) for p, _ in assertions] == assertions


# --------------------------------------------------------------------------------------------
# Building blocks.


@pytest.mark.parametrize(
    ("requested", "capacity", "least", "most"),
    [
        pytest.param(0, 0, 0, 0, id="nothing allocatable"),
        pytest.param(0, 10, 100, 0, id="empty node"),
        pytest.param(3, 4, 25, 75, id="integer division"),
        pytest.param(1, 3, 66, 33, id="truncation"),
        pytest.param(4, 4, 0, 100, id="full"),
        pytest.param(5, 4, 0, 100, id="overfull"),
    ],
)
def test_per_resource_scores(requested: int, capacity: int, least: int, most: int) -> None:
    assert least_requested_score(requested, capacity) == least
    assert most_requested_score(requested, capacity) == most


def test_weighted_mean_skips_resources_without_allocatable() -> None:
    scorer = least_allocated_scorer([ResourceSpec("cpu", 1), ResourceSpec("x.io/y", 100)])
    assert scorer([50, 0], [100, 0]) == 50
    assert scorer([0, 0], [0, 0]) == 0


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([1, 2], [8, 8], 82, id="scores 88 and 75: 81.5 rounds half up"),
        pytest.param([8, 8], [8, 8], 0, id="all resources score 0: nothing counted"),
        pytest.param([8, 1], [8, 8], 88, id="a zero-scoring resource drops out of the mean"),
    ],
)
def test_ratio_rounding(requested: list[int], allocatable: list[int], want: int) -> None:
    scorer = requested_to_capacity_ratio_scorer(
        [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)],
        [ShapePoint(0, 10), ShapePoint(100, 0)],
    )
    assert scorer(requested, allocatable) == want


def test_empty_resource_list_is_an_error() -> None:
    scorer = ResourceAllocationScorer("x", least_allocated_scorer([]), [], use_requested=False)
    score, status = scorer.score(node("n", cpu="1", memory="1"), [])
    assert (score, status.code, status.reasons) == (0, Code.ERROR, ("resources not found",))


@pytest.mark.parametrize(
    ("pod", "cpu", "memory"),
    [
        pytest.param(
            Pod({"metadata": {"name": "p"}, "spec": {"overhead": {"cpu": "1", "memory": "1Mi"}}}),
            1000,
            ONE_MI,
            id="overhead only",
        ),
        pytest.param(
            requestless(), DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST, id="1x requestless"
        ),
        pytest.param(
            Pod(
                {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
            ),
            2 * DEFAULT_MILLI_CPU_REQUEST,
            2 * DEFAULT_MEMORY_REQUEST,
            id="2x requestless container",
        ),
        pytest.param(
            Pod(
                {
                    "metadata": {"name": "p"},
                    "spec": {
                        "overhead": {"cpu": "1", "memory": "1Mi"},
                        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
                        "containers": [
                            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Mi"}}},
                            {"name": "b"},
                        ],
                    },
                }
            ),
            4000,
            2 * ONE_MI + DEFAULT_MEMORY_REQUEST,
            id="init container + container + requestless container + overhead",
        ),
        pytest.param(
            Pod(
                {
                    "metadata": {"name": "p"},
                    "spec": {
                        "initContainers": [
                            {"name": "i0"},
                            {"name": "i1", "resources": {"requests": {"cpu": "1m", "memory": 1}}},
                        ],
                        "containers": [
                            {"name": "a", "resources": {"requests": {"cpu": "3m", "memory": 3}}}
                        ],
                    },
                }
            ),
            DEFAULT_MILLI_CPU_REQUEST,
            DEFAULT_MEMORY_REQUEST,
            id="requestless init container dominates small containers",
        ),
        pytest.param(
            Pod(
                {
                    "metadata": {"name": "p"},
                    "spec": {
                        "initContainers": [
                            {"name": "i0"},
                            {"name": "i1", "resources": {"requests": {"cpu": "1m", "memory": 1}}},
                        ],
                        "containers": [
                            {"name": "a", "resources": {"requests": {"cpu": "3m", "memory": 3}}},
                            {"name": "b"},
                        ],
                    },
                }
            ),
            3 + DEFAULT_MILLI_CPU_REQUEST,
            3 + DEFAULT_MEMORY_REQUEST,
            id="small container + requestless container beat the init containers",
        ),
    ],
)
def test_non_zero_pod_request(pod: Pod, cpu: int, memory: int) -> None:
    scoring = ResourceAllocationScorer(
        "x",
        least_allocated_scorer([]),
        [ResourceSpec("cpu"), ResourceSpec("memory")],
        use_requested=False,
    )
    assert scoring.pod_request_list(pod) == [cpu, memory]


def test_actual_pod_request_has_no_defaults() -> None:
    scoring = ResourceAllocationScorer(
        "x",
        least_allocated_scorer([]),
        [ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec("pods")],
        use_requested=True,
    )
    assert scoring.pod_request_list(requestless()) == [0, 0, 0]


@pytest.mark.parametrize(
    ("use_requested", "name", "pod_request", "want"),
    [
        pytest.param(False, "cpu", 0, (4000, 300), id="cpu non-zero node requests"),
        pytest.param(True, "cpu", 0, (4000, 0), id="cpu actual node requests"),
        pytest.param(False, "memory", 5, (8000, 600 * ONE_MI + 5), id="memory non-zero"),
        pytest.param(True, "memory", 5, (8000, 5), id="memory actual"),
        pytest.param(False, EXT, 0, (0, 0), id="extended resource not requested"),
        pytest.param(False, EXT, 1, (4, 3), id="extended resource requested"),
        pytest.param(False, "example.com/none", 1, (0, 0), id="resource the node lacks"),
        pytest.param(False, "pods", 1, (0, 0), id="pods never scored"),
        pytest.param(False, "ephemeral-storage", 0, (30, 10), id="ephemeral storage actual"),
    ],
)
def test_allocatable_and_requested(
    use_requested: bool, name: str, pod_request: int, want: tuple[int, int]
) -> None:
    existing = [
        requestless("a", "n"),
        requestless("b", "n"),
        pod_of({EXT: "2", "ephemeral-storage": "10"}, name="c", node="n"),
    ]
    node_info = node("n", existing, cpu="4", memory="8000", ephemeral_storage="30", **{EXT: 4})
    scoring = ResourceAllocationScorer(
        "x", least_allocated_scorer([]), [], use_requested=use_requested
    )
    assert scoring.allocatable_and_requested(node_info, name, pod_request) == want


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        pytest.param("cpu", False, False, id="cpu"),
        pytest.param("pods", False, False, id="pods"),
        pytest.param("ephemeral-storage", False, False, id="ephemeral-storage"),
        pytest.param("example.com/aaa", True, True, id="extended"),
        pytest.param("nvidia.com/gpu", True, True, id="gpu"),
        pytest.param("kubernetes.io/something", False, True, id="kubernetes.io prefixed"),
        pytest.param("sub.kubernetes.io/something", False, True, id="kubernetes.io subdomain"),
        pytest.param("hugepages-2Mi", False, True, id="hugepages"),
        pytest.param("attachable-volumes-aws-ebs", False, True, id="attachable volumes"),
        pytest.param("requests.example.com/x", False, False, id="requests prefix"),
        pytest.param("Example.com/x", False, False, id="uppercase domain"),
        pytest.param("example.com/-x", False, False, id="invalid name part"),
    ],
)
def test_resource_name_classification(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("example.com/foo", True),
        ("foo", True),
        ("foo.bar-baz_1", True),
        ("", False),
        ("/foo", False),
        ("example.com/", False),
        ("Example.com/foo", False),
        ("a/b/c", False),
        ("x" * 64, False),
        ("not a name", False),
    ],
)
def test_is_qualified_name(value: str, valid: bool) -> None:
    assert is_qualified_name(value) is valid
