"""NodeResourcesFit: the fit filter, its v1.34 status codes, arguments, scoring and queueing hints.

The tables mirror upstream's fit_test.go (TestEnoughRequests, TestNotEnoughRequests,
TestStorageRequests, TestRestartableInitContainers, TestFitScore, TestEventsToRegister and the
queueing-hint tests), re-expressed with this project's model; a property test then checks the
filter against the plain arithmetic definition of "fits".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resources import Resource
from kopf_scheduler.plugins import node_resources_fit as fit
from kopf_scheduler.plugins.node_resources_fit import (
    InsufficientResource,
    NodeResourcesFit,
    fits_request,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_change,
)
from kopf_scheduler.plugins.resource_allocation import ResourceSpec, ShapePoint
from tests.builders import make_node

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

Requests = Mapping[str, Any]


def spec_pod(
    *containers: Requests,
    init: Sequence[Requests] = (),
    sidecars: Sequence[Requests] = (),
    overhead: Requests | None = None,
    pod_level: Requests | None = None,
    name: str = "p",
    uid: str | None = None,
    node: str = "",
    nominated: str = "",
) -> Pod:
    """A pod with exactly the given containers (none when called without any), init
    containers, sidecars (started before the plain init containers) and overhead."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(containers)
        ]
    }
    init_containers: list[dict[str, Any]] = [
        {"name": f"s{i}", "restartPolicy": "Always", "resources": {"requests": dict(r)}}
        for i, r in enumerate(sidecars)
    ]
    init_containers += [
        {"name": f"i{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(init)
    ]
    if init_containers:
        spec["initContainers"] = init_containers
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if pod_level is not None:
        spec["resources"] = {"requests": dict(pod_level)}
    if node:
        spec["nodeName"] = node
    status = {"nominatedNodeName": nominated} if nominated else {}
    return Pod(
        {
            "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
            "spec": spec,
            "status": status,
        }
    )


def req(cpu: int = 0, memory: int = 0, **scalars: int) -> dict[str, Any]:
    """Requests in upstream's test units: cpu in millicores, everything else in units; other
    resources are passed by the short keyword names in :data:`_NAMES`."""
    result: dict[str, Any] = {"cpu": f"{cpu}m", "memory": memory}
    for key, value in scalars.items():
        result[_NAMES[key]] = value
    return result


_NAMES = {
    "ext_a": EXT_A,
    "ext_b": EXT_B,
    "k8s_a": K8S_A,
    "k8s_b": K8S_B,
    "huge_a": HUGE_A,
    "storage": "ephemeral-storage",
}


def node_with(allocatable: Requests, *pods: Pod, name: str = "n1") -> NodeInfo:
    builder = make_node(name).capacity(**{k.replace("-", "_"): v for k, v in allocatable.items()})
    node = builder.node()
    placed = [
        Pod({**p.raw, "spec": {**p.raw["spec"], "nodeName": name}}) if not p.node_name else p
        for p in pods
    ]
    return NodeInfo(node, tuple(placed))


ENOUGH_NODE = {
    "cpu": "10m",
    "memory": 20,
    "pods": 32,
    EXT_A: 5,
    "ephemeral-storage": 20,
    HUGE_A: 5,
}


def run_filter(plugin: NodeResourcesFit, pod: Pod, node_info: NodeInfo) -> Status:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [node_info])
    assert status.is_success()
    return plugin.filter(state, pod, node_info)


def plugin_with(args: Mapping[str, Any] | None = None) -> NodeResourcesFit:
    return fit.new(args, Handle())


def short(
    name: str, requested: int, used: int, capacity: int, unresolvable: bool = False
) -> InsufficientResource:
    reason = "Too many pods" if name == "pods" else f"Insufficient {name}"
    return InsufficientResource(name, reason, requested, used, capacity, unresolvable)


# --------------------------------------------------------------------------------------------
# Filter.

ENOUGH_CASES = [
    pytest.param(spec_pod(), [req(10, 20)], None, [], id="no resources requested always fits"),
    pytest.param(
        spec_pod(req(1, 1)),
        [req(10, 20)],
        None,
        [short("cpu", 1, 10, 10), short("memory", 1, 20, 20)],
        id="too many resources fails",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(3, 1)]),
        [req(8, 19)],
        None,
        [short("cpu", 3, 8, 10)],
        id="too many resources fails due to init container cpu",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(3, 1), req(2, 1)]),
        [req(8, 19)],
        None,
        [short("cpu", 3, 8, 10)],
        id="too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(1, 3)]),
        [req(9, 19)],
        None,
        [short("memory", 3, 19, 20)],
        id="too many resources fails due to init container memory",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(1, 3), req(1, 2)]),
        [req(9, 19)],
        None,
        [short("memory", 3, 19, 20)],
        id="too many resources fails due to highest init container memory",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(1, 1)]),
        [req(9, 19)],
        None,
        [],
        id="init container fits because it is the max not the sum",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(1, 1), req(1, 1)]),
        [req(9, 19)],
        None,
        [],
        id="multiple init containers fit because it is the max not the sum",
    ),
    pytest.param(spec_pod(req(1, 1)), [req(5, 5)], None, [], id="both resources fit"),
    pytest.param(
        spec_pod(req(2, 1)),
        [req(9, 5)],
        None,
        [short("cpu", 2, 9, 10)],
        id="one resource memory fits",
    ),
    pytest.param(
        spec_pod(req(1, 2)),
        [req(5, 19)],
        None,
        [short("memory", 2, 19, 20)],
        id="one resource cpu fits",
    ),
    pytest.param(spec_pod(req(5, 1)), [req(5, 19)], None, [], id="equal edge case"),
    pytest.param(
        spec_pod(req(4, 1), init=[req(5, 1)]),
        [req(5, 19)],
        None,
        [],
        id="equal edge case for init container",
    ),
    pytest.param(spec_pod({EXT_A: 1}), [{}], None, [], id="extended resource fits"),
    pytest.param(
        spec_pod(init=[{EXT_A: 1}]), [{}], None, [], id="extended resource fits for init container"
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_a=10)),
        [req(0, 0, ext_a=0)],
        None,
        [short(EXT_A, 10, 0, 5, True)],
        id="extended resource capacity enforced",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, ext_a=10)]),
        [req(0, 0, ext_a=0)],
        None,
        [short(EXT_A, 10, 0, 5, True)],
        id="extended resource capacity enforced for init container",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_a=1)),
        [req(0, 0, ext_a=5)],
        None,
        [short(EXT_A, 1, 5, 5)],
        id="extended resource allocatable enforced",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, ext_a=1)]),
        [req(0, 0, ext_a=5)],
        None,
        [short(EXT_A, 1, 5, 5)],
        id="extended resource allocatable enforced for init container",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_a=3), req(1, 1, ext_a=3)),
        [req(0, 0, ext_a=2)],
        None,
        [short(EXT_A, 6, 2, 5, True)],
        id="extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, ext_a=3), req(1, 1, ext_a=3)]),
        [req(0, 0, ext_a=2)],
        None,
        [],
        id="extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, ext_a=6), req(1, 1, ext_a=3)]),
        [req(0, 0, ext_a=2)],
        None,
        [short(EXT_A, 6, 2, 5, True)],
        id="extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_b=1)),
        [req(0, 0)],
        None,
        [short(EXT_B, 1, 0, 0, True)],
        id="extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, ext_b=1)]),
        [req(0, 0)],
        None,
        [short(EXT_B, 1, 0, 0, True)],
        id="extended resource allocatable enforced for unknown resource for init container",
    ),
    pytest.param(
        spec_pod(req(1, 1, k8s_a=10)),
        [req(0, 0)],
        None,
        [short(K8S_A, 10, 0, 0, True)],
        id="kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, k8s_b=10)]),
        [req(0, 0)],
        None,
        [short(K8S_B, 10, 0, 0, True)],
        id="kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        spec_pod(req(1, 1, huge_a=10)),
        [req(0, 0, huge_a=0)],
        None,
        [short(HUGE_A, 10, 0, 5, True)],
        id="hugepages resource capacity enforced",
    ),
    pytest.param(
        spec_pod(init=[req(1, 1, huge_a=10)]),
        [req(0, 0, huge_a=0)],
        None,
        [short(HUGE_A, 10, 0, 5, True)],
        id="hugepages resource capacity enforced for init container",
    ),
    pytest.param(
        spec_pod(req(1, 1, huge_a=3), req(1, 1, huge_a=3)),
        [req(0, 0, huge_a=2)],
        None,
        [short(HUGE_A, 6, 2, 5, True)],
        id="hugepages resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_b=1)),
        [req(0, 0)],
        {"ignoredResources": [EXT_B]},
        [],
        id="skip checking ignored extended resource",
    ),
    pytest.param(
        spec_pod(req(1, 1), overhead={"cpu": "3m", "memory": 13}),
        [req(5, 5)],
        None,
        [],
        id="resources + pod overhead fits",
    ),
    pytest.param(
        spec_pod(req(1, 1), overhead={"cpu": "1m", "memory": 15}),
        [req(5, 5)],
        None,
        [short("memory", 16, 5, 20)],
        id="requests + overhead does not fit for memory",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_b=1, k8s_a=1)),
        [req(0, 0)],
        {"ignoredResourceGroups": ["example.com"]},
        [short(K8S_A, 1, 0, 0, True)],
        id="skip checking ignored extended resource via resource groups",
    ),
    pytest.param(
        spec_pod(req(1, 1, k8s_a=1)),
        [req(0, 0)],
        {"ignoredResources": [K8S_A]},
        [short(K8S_A, 1, 0, 0, True)],
        id="native kubernetes.io resources cannot be ignored",
    ),
    pytest.param(
        spec_pod(req(1, 1, ext_a=0)),
        [req(0, 0, ext_a=6)],
        None,
        [],
        id="skip checking extended resource request with quantity zero",
    ),
    pytest.param(
        spec_pod({EXT_A: 1}),
        [req(20, 30, ext_a=1)],
        None,
        [],
        id="resources the pod does not request are not checked on an overcommitted node",
    ),
    pytest.param(
        spec_pod(req(1, 1), pod_level={"cpu": "1m", "memory": 2}),
        [req(5, 5)],
        None,
        [],
        id="both pod-level and container-level resources fit",
    ),
    pytest.param(
        spec_pod(req(1, 1), pod_level={"cpu": "7m", "memory": 2}),
        [req(5, 5)],
        None,
        [short("cpu", 7, 5, 10)],
        id="pod-level cpu resource not fit",
    ),
    pytest.param(
        spec_pod(req(1, 1), pod_level={"cpu": "3m", "memory": 2}),
        [req(5, 19)],
        None,
        [short("memory", 2, 19, 20)],
        id="pod-level memory resource not fit",
    ),
    pytest.param(
        spec_pod(req(1, 1), init=[req(1, 1)], pod_level={"cpu": "3m", "memory": 2}),
        [req(5, 19)],
        None,
        [short("memory", 2, 19, 20)],
        id="pod-level requests win over init and regular containers",
    ),
    pytest.param(
        spec_pod(req(11, 2, ext_a=1, ext_b=1, huge_a=6, storage=3)),
        [req(0, 19, ext_a=5, storage=18)],
        None,
        [
            short("cpu", 11, 0, 10, True),
            short("memory", 2, 19, 20),
            short("ephemeral-storage", 3, 18, 20),
            short(EXT_A, 1, 5, 5),
            short(EXT_B, 1, 0, 0, True),
            short(HUGE_A, 6, 0, 5, True),
        ],
        id="all shortfalls reported in upstream order",
    ),
]


@pytest.mark.parametrize(("pod", "existing", "args", "want"), ENOUGH_CASES)
def test_enough_requests(
    pod: Pod,
    existing: list[Requests],
    args: Mapping[str, Any] | None,
    want: list[InsufficientResource],
) -> None:
    existing_pods = [spec_pod(r, name=f"e{i}") for i, r in enumerate(existing)]
    node_info = node_with(ENOUGH_NODE, *existing_pods)
    plugin = plugin_with(args)

    got = fits_request(
        pod.requests,
        node_info,
        plugin.args.ignored_resources,
        plugin.args.ignored_resource_groups,
    )
    assert got == want

    status = run_filter(plugin, pod, node_info)
    if not want:
        assert status.is_success()
    else:
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(w.unresolvable for w in want)
            else Code.UNSCHEDULABLE
        )
        assert status.code == code
        assert status.reasons == tuple(w.reason for w in want)


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(spec_pod(), id="even without requests no space for another pod"),
        pytest.param(spec_pod(req(1, 1)), id="resources fit but no space for another pod"),
        pytest.param(spec_pod(req(5, 1)), id="equal edge case but no space for another pod"),
        pytest.param(
            spec_pod(req(5, 1), init=[req(5, 1)]),
            id="equal edge case with init container but no space for another pod",
        ),
    ],
)
def test_not_enough_pod_slots(pod: Pod) -> None:
    node_info = node_with({"cpu": "10m", "memory": 20, "pods": 1}, spec_pod(req(5, 5), name="e"))
    status = run_filter(plugin_with(), pod, node_info)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods",)


@pytest.mark.parametrize(
    ("pod", "existing", "want_code", "want_reasons"),
    [
        pytest.param(
            spec_pod(req(11)),
            [req(5, 5)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Too many pods", "Insufficient cpu"),
            id="pod count and an oversized request: unresolvable",
        ),
        pytest.param(
            spec_pod(req(6)),
            [req(5, 5)],
            Code.UNSCHEDULABLE,
            ("Too many pods", "Insufficient cpu"),
            id="pod count and a request that preemption could free",
        ),
        pytest.param(
            spec_pod(),
            [req(5, 5)],
            Code.UNSCHEDULABLE,
            ("Too many pods",),
            id="pod count alone is never unresolvable",
        ),
    ],
)
def test_pod_count_with_resources(
    pod: Pod, existing: list[Requests], want_code: Code, want_reasons: tuple[str, ...]
) -> None:
    node_info = node_with(
        {"cpu": "10m", "memory": 20, "pods": 1},
        *[spec_pod(r, name=f"e{i}") for i, r in enumerate(existing)],
    )
    status = run_filter(plugin_with(), pod, node_info)
    assert status.code == want_code
    assert status.reasons == want_reasons


def test_node_without_pod_capacity_rejects_resolvably() -> None:
    node_info = node_with({"cpu": "10m", "memory": 20})
    status = run_filter(plugin_with(), spec_pod(req(1, 1)), node_info)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods",)


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        pytest.param(spec_pod(req(1, 1)), req(2, 10), None, id="empty storage requested fits"),
        pytest.param(
            spec_pod({"ephemeral-storage": 25}),
            req(2, 2),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient ephemeral-storage"),
            id="ephemeral storage request exceeds allocatable",
        ),
        pytest.param(
            spec_pod({"ephemeral-storage": 5}),
            req(2, 2, storage=10),
            None,
            id="ephemeral local storage is sufficient",
        ),
        pytest.param(spec_pod({"ephemeral-storage": 10}), req(2, 2), None, id="pod fits"),
        pytest.param(
            spec_pod({"ephemeral-storage": 11}),
            req(2, 2, storage=10),
            Status(Code.UNSCHEDULABLE, "Insufficient ephemeral-storage"),
            id="ephemeral storage short but within allocatable",
        ),
    ],
)
def test_storage_requests(pod: Pod, existing: Requests, want: Status | None) -> None:
    node_info = node_with(ENOUGH_NODE, spec_pod(existing, name="e"))
    status = run_filter(plugin_with(), pod, node_info)
    if want is None:
        assert status.is_success()
    else:
        assert status == want


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(spec_pod({}), None, id="pod without sidecars"),
        pytest.param(spec_pod({}, sidecars=[{}]), None, id="pod with a sidecar"),
        pytest.param(
            spec_pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}]),
            None,
            id="sidecar and container together within allocatable",
        ),
        pytest.param(
            spec_pod({"cpu": "1m"}, sidecars=[{"cpu": "2m"}]),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu"),
            id="sidecar and container together exceed allocatable",
        ),
        pytest.param(
            spec_pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}], init=[{"cpu": "2m"}]),
            Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu"),
            id="init container runs beside the sidecar started before it",
        ),
    ],
)
def test_restartable_init_containers(pod: Pod, want: Status | None) -> None:
    node_info = node_with({"cpu": "2m", "memory": 0, "pods": 1})
    status = run_filter(plugin_with(), pod, node_info)
    if want is None:
        assert status.is_success()
    else:
        assert status == want


def test_filter_without_pre_filter_is_an_error() -> None:
    node_info = node_with(ENOUGH_NODE)
    status = plugin_with().filter(CycleState(), spec_pod(), node_info)
    assert status.code == Code.ERROR


def test_pre_filter_state_survives_cloning() -> None:
    plugin = plugin_with()
    pod = spec_pod(req(6))
    node_info = node_with(ENOUGH_NODE, spec_pod(req(5), name="e"))
    state = CycleState()
    plugin.pre_filter(state, pod, [node_info])
    clone = state.clone()
    assert plugin.filter(clone, pod, node_info).reasons == ("Insufficient cpu",)
    freed = node_info.clone()
    freed.remove_pod(node_info.pods[0])
    assert plugin.filter(clone, pod, freed).is_success()
    assert plugin.pre_filter_extensions() is None


def test_filter_classifies_the_pods_scalar_resources_once_per_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Which of the pod's scalar resources count, and are not ignored, depends on the pod alone:
    PreFilter works it out and the filter of every node only compares amounts."""
    plugin = plugin_with({"ignoredResources": [EXT_B]})
    pod = spec_pod({"cpu": "1m", EXT_A: 2, EXT_B: 5})
    nodes = [node_with(ENOUGH_NODE) for _ in range(20)]
    state = CycleState()
    plugin.pre_filter(state, pod, nodes)
    asked: list[str] = []

    def classify(name: str) -> bool:
        asked.append(name)
        return True

    monkeypatch.setattr(fit, "is_scalar_resource_name", classify)
    statuses = [plugin.filter(state, pod, node_info) for node_info in nodes]
    assert asked == []
    assert all(status.is_success() for status in statuses)
    short_of_a = node_with(ENOUGH_NODE, spec_pod({EXT_A: 4}, name="e"))
    assert plugin.filter(state, pod, short_of_a).reasons == (f"Insufficient {EXT_A}",)


def test_fits_uses_the_pods_effective_request() -> None:
    node_info = node_with(ENOUGH_NODE, spec_pod(req(9), name="e"))
    assert fit.insufficient_resources(spec_pod(req(1)), node_info) == []
    assert fit.insufficient_resources(spec_pod(req(1), init=[req(2)]), node_info) == [
        short("cpu", 2, 9, 10)
    ]
    assert fit.fits_request(Resource(milli_cpu=2), node_info) == [short("cpu", 2, 9, 10)]


# --------------------------------------------------------------------------------------------
# Property: the filter is exactly the arithmetic definition of "fits".

_RESOURCES = ("cpu", "memory", "ephemeral-storage", EXT_A)


def _quantities(values: Mapping[str, int]) -> dict[str, Any]:
    return {name: f"{v}m" if name == "cpu" else v for name, v in values.items()}


_amounts = st.fixed_dictionaries({name: st.integers(0, 6) for name in _RESOURCES})


@settings(max_examples=200, deadline=None)
@given(
    allocatable=_amounts,
    allowed_pods=st.integers(0, 4),
    existing=st.lists(_amounts, max_size=3),
    wanted=_amounts,
)
def test_filter_admits_exactly_when_everything_fits(
    allocatable: dict[str, int],
    allowed_pods: int,
    existing: list[dict[str, int]],
    wanted: dict[str, int],
) -> None:
    node_info = node_with(
        {**_quantities(allocatable), "pods": allowed_pods},
        *[spec_pod(_quantities(r), name=f"e{i}") for i, r in enumerate(existing)],
    )
    pod = spec_pod(_quantities(wanted))
    status = run_filter(plugin_with(), pod, node_info)

    used = {name: sum(r[name] for r in existing) for name in _RESOURCES}
    short_resources = [
        name
        for name in _RESOURCES
        if wanted[name] > 0 and used[name] + wanted[name] > allocatable[name]
    ]
    too_many_pods = len(existing) + 1 > allowed_pods
    admitted = not short_resources and not too_many_pods
    assert status.is_success() == admitted
    if not admitted:
        oversized = any(wanted[name] > allocatable[name] for name in short_resources)
        want_code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if oversized else Code.UNSCHEDULABLE
        assert status.code == want_code
        expected = (["Too many pods"] if too_many_pods else []) + [
            f"Insufficient {name}" for name in short_resources
        ]
        assert list(status.reasons) == expected


# --------------------------------------------------------------------------------------------
# Scoring through the plugin (upstream TestFitScore).

SCORE_NODES = (("node1", "4000"), ("node2", "6000"))


def _score_nodes(
    sizes: Sequence[tuple[str, str]], existing: Mapping[str, Sequence[Pod]]
) -> list[NodeInfo]:
    return [
        node_with({"cpu": cpu, "memory": "10000", "pods": 32}, *existing.get(name, ()), name=name)
        for name, cpu in sizes
    ]


def _ratio(shape: list[dict[str, int]]) -> dict[str, Any]:
    return {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": shape},
        }
    }


@pytest.mark.parametrize("run_pre_score", [True, False], ids=["with PreScore", "without PreScore"])
@pytest.mark.parametrize(
    ("args", "pod", "existing", "sizes", "want"),
    [
        pytest.param(
            _ratio([{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]),
            spec_pod({"cpu": "3000", "memory": "5000"}),
            {
                "node1": [spec_pod({"cpu": "2000", "memory": "4000"}, name="e1")],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            SCORE_NODES,
            [10, 32],
            id="RequestedToCapacityRatio decreasing shape",
        ),
        pytest.param(
            _ratio([{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]),
            spec_pod({"cpu": "3000", "memory": "5000"}),
            {
                "node1": [spec_pod({"cpu": "2000", "memory": "4000"}, name="e1")],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            SCORE_NODES,
            [95, 68],
            id="RequestedToCapacityRatio increasing shape",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            spec_pod({"cpu": "1000", "memory": "2000"}),
            {
                "node1": [spec_pod({"cpu": "2000", "memory": "4000"}, name="e1")],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            SCORE_NODES,
            [67, 36],
            id="MostAllocated",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated"}},
            spec_pod({"cpu": "1000", "memory": "2000"}),
            {
                "node1": [spec_pod({"cpu": "2000", "memory": "4000"}, name="e1")],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            SCORE_NODES,
            [32, 63],
            id="LeastAllocated",
        ),
        pytest.param(
            None,
            spec_pod({"cpu": "1000", "memory": "2000"}),
            {
                "node1": [spec_pod({"cpu": "2000", "memory": "4000"}, name="e1")],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            SCORE_NODES,
            [32, 63],
            id="default arguments score LeastAllocated on cpu and memory",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            spec_pod({"cpu": "1000", "memory": "2000"}),
            {
                "node1": [
                    spec_pod(
                        {"cpu": "1000", "memory": "2000"},
                        sidecars=[{"cpu": "1000", "memory": "2000"}],
                        name="e1",
                    )
                ],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            (("node1", "4000"), ("node2", "4000")),
            [67, 45],
            id="MostAllocated with sidecar container",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated"}},
            spec_pod({"cpu": "1000", "memory": "2000"}),
            {
                "node1": [
                    spec_pod(
                        {"cpu": "1000", "memory": "2000"},
                        sidecars=[{"cpu": "1000", "memory": "2000"}],
                        name="e1",
                    )
                ],
                "node2": [spec_pod({"cpu": "1000", "memory": "2000"}, name="e2")],
            },
            (("node1", "4000"), ("node2", "4000")),
            [32, 55],
            id="LeastAllocated with sidecar container",
        ),
    ],
)
def test_fit_score(
    run_pre_score: bool,
    args: Mapping[str, Any] | None,
    pod: Pod,
    existing: Mapping[str, Sequence[Pod]],
    sizes: Sequence[tuple[str, str]],
    want: list[int],
) -> None:
    plugin = plugin_with(args)
    nodes = _score_nodes(sizes, existing)
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


# --------------------------------------------------------------------------------------------
# Arguments.


def test_default_args() -> None:
    args = fit.Args.parse(None)
    assert args.ignored_resources == frozenset()
    assert args.ignored_resource_groups == frozenset()
    assert args.scoring_strategy.type == "LeastAllocated"
    assert args.scoring_strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            fit.ScoringStrategy("MostAllocated"),
            id="resources default to cpu and memory",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated", "resources": []}},
            fit.ScoringStrategy("MostAllocated"),
            id="empty resources default to cpu and memory",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": 0}, {"name": "cpu"}],
                }
            },
            fit.ScoringStrategy(
                "LeastAllocated", (ResourceSpec("memory", 1), ResourceSpec("cpu", 1))
            ),
            id="zero or missing weight defaults to 1",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": "nvidia.com/gpu", "weight": 100}],
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                    },
                }
            },
            fit.ScoringStrategy(
                "RequestedToCapacityRatio",
                (ResourceSpec("nvidia.com/gpu", 100),),
                (ShapePoint(0, 0), ShapePoint(100, 10)),
            ),
            id="RequestedToCapacityRatio with a shape",
        ),
    ],
)
def test_parse_scoring_strategy(raw: Mapping[str, Any], want: fit.ScoringStrategy) -> None:
    assert fit.Args.parse(raw).scoring_strategy == want


def test_parse_ignored_resources() -> None:
    args = fit.Args.parse(
        {"ignoredResources": ["example.com/foo"], "ignoredResourceGroups": ["example.com"]}
    )
    assert args.ignored_resources == frozenset({"example.com/foo"})
    assert args.ignored_resource_groups == frozenset({"example.com"})


def _strategy(**fields: Any) -> dict[str, Any]:
    return {"scoringStrategy": fields}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"foo": 1}, "args.foo", id="unknown top-level field"),
        pytest.param(
            _strategy(type="LeastAllocated", extra=1),
            "args.scoringStrategy.extra",
            id="unknown strategy field",
        ),
        pytest.param(
            _strategy(type="LeastAllocated", resources=[{"name": "cpu", "wieght": 1}]),
            "args.scoringStrategy.resources[0].wieght",
            id="unknown resource field",
        ),
        pytest.param(
            _strategy(
                type="RequestedToCapacityRatio",
                requestedToCapacityRatio={"shape": [{"utilization": 0, "scor": 1}]},
            ),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].scor",
            id="unknown shape point field",
        ),
        pytest.param(
            _strategy(type="RequestedToCapacityRatio", requestedToCapacityRatio={"shap": []}),
            "args.scoringStrategy.requestedToCapacityRatio.shap",
            id="unknown requestedToCapacityRatio field",
        ),
        pytest.param(_strategy(), "args.scoringStrategy.type", id="strategy without a type"),
        pytest.param(
            _strategy(type="Balanced"), "args.scoringStrategy.type", id="unsupported type"
        ),
        pytest.param(
            _strategy(type="LeastAllocated", resources=[{"name": "memory", "weight": -1}]),
            "args.scoringStrategy.resources[0].weight",
            id="negative weight",
        ),
        pytest.param(
            _strategy(
                type="MostAllocated",
                resources=[{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}],
            ),
            "args.scoringStrategy.resources[1].weight",
            id="weight larger than MaxNodeScore",
        ),
        pytest.param(
            _strategy(type="LeastAllocated", resources=[{"name": "cpu", "weight": "1"}]),
            "args.scoringStrategy.resources[0].weight",
            id="weight not an integer",
        ),
        pytest.param(
            _strategy(type="RequestedToCapacityRatio"),
            "args.scoringStrategy.requestedToCapacityRatio",
            id="ratio strategy without its parameters",
        ),
        pytest.param(
            _strategy(type="RequestedToCapacityRatio", requestedToCapacityRatio={"shape": []}),
            "args.scoringStrategy.requestedToCapacityRatio.shape",
            id="empty shape",
        ),
        pytest.param(
            _strategy(
                type="RequestedToCapacityRatio",
                requestedToCapacityRatio={
                    "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                },
            ),
            "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            id="shape utilization not increasing",
        ),
        pytest.param(
            _strategy(
                type="RequestedToCapacityRatio",
                requestedToCapacityRatio={"shape": [{"utilization": 101, "score": 1}]},
            ),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
            id="shape utilization above 100",
        ),
        pytest.param(
            _strategy(
                type="RequestedToCapacityRatio",
                requestedToCapacityRatio={"shape": [{"utilization": -1, "score": 1}]},
            ),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
            id="shape utilization below 0",
        ),
        pytest.param(
            _strategy(
                type="RequestedToCapacityRatio",
                requestedToCapacityRatio={"shape": [{"utilization": 10, "score": 11}]},
            ),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
            id="shape score above 10",
        ),
        pytest.param(
            _strategy(
                type="LeastAllocated",
                requestedToCapacityRatio={"shape": [{"utilization": 10, "score": 1}]},
            ),
            "args.scoringStrategy.requestedToCapacityRatio",
            id="ratio parameters with another strategy",
        ),
        pytest.param(
            {"ignoredResources": ["not a name"]},
            "args.ignoredResources[0]",
            id="ignored resource not a qualified name",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/foo"]},
            "args.ignoredResourceGroups[0]",
            id="ignored resource group with a slash",
        ),
        pytest.param(
            {"ignoredResources": "example.com/foo"},
            "args.ignoredResources",
            id="ignored resources not a list",
        ),
    ],
)
def test_invalid_args(raw: Mapping[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgsError) as caught:
        fit.Args.parse(raw)
    assert caught.value.field == field


# --------------------------------------------------------------------------------------------
# Events and queueing hints.


def test_events_to_register() -> None:
    events = plugin_with().events_to_register()
    got = [(e.event.resource, e.event.action) for e in events]
    assert got == [
        (EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    assert events[0].hint is is_schedulable_after_pod_change
    assert events[1].hint is is_schedulable_after_node_change


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(spec_pod(), "not-a-pod", None, QueueingHint.QUEUE, id="wrong old object"),
        pytest.param(
            spec_pod(), spec_pod(name="o"), "not-a-pod", QueueingHint.QUEUE, id="wrong new object"
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1"),
            spec_pod({"cpu": "1"}, name="pod2", node="fake"),
            None,
            QueueingHint.QUEUE,
            id="queue on other assigned pod deleted",
        ),
        pytest.param(
            spec_pod(name="pod1"),
            spec_pod(name="pod2"),
            None,
            QueueingHint.QUEUE_SKIP,
            id="skip on unscheduled pod deleted",
        ),
        pytest.param(
            spec_pod(name="pod1"),
            spec_pod(name="pod2", nominated="n1"),
            None,
            QueueingHint.QUEUE,
            id="queue on nominated pod deleted",
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1", uid="uid0"),
            spec_pod({"cpu": "2"}, name="pod2", uid="uid1"),
            spec_pod({"cpu": "1"}, name="pod2", uid="uid1"),
            QueueingHint.QUEUE_SKIP,
            id="skip on other unscheduled pod scaled down",
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1"),
            spec_pod({"memory": "2"}, name="pod2", node="fake"),
            spec_pod({"memory": "1"}, name="pod2", node="fake"),
            QueueingHint.QUEUE_SKIP,
            id="skip on other pod unrelated resource scaled down",
        ),
        pytest.param(
            spec_pod(pod_level={"cpu": "1"}, name="pod1"),
            spec_pod(pod_level={"memory": "2"}, name="pod2", node="fake"),
            spec_pod(pod_level={"memory": "1"}, name="pod2", node="fake"),
            QueueingHint.QUEUE_SKIP,
            id="skip on other pod unrelated pod-level resource scaled down",
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1"),
            spec_pod({"cpu": "2"}, name="pod2", node="fake"),
            spec_pod({"cpu": "1"}, name="pod2", node="fake"),
            QueueingHint.QUEUE,
            id="queue on other pod requested resource scaled down",
        ),
        pytest.param(
            spec_pod(pod_level={"cpu": "1"}, name="pod1"),
            spec_pod(pod_level={"cpu": "2"}, name="pod2", node="fake"),
            spec_pod(pod_level={"cpu": "1"}, name="pod2", node="fake"),
            QueueingHint.QUEUE,
            id="queue on other pod pod-level resource scaled down",
        ),
        pytest.param(
            spec_pod({EXT_A: 1}, name="pod1"),
            spec_pod({EXT_A: 2}, name="pod2", node="fake"),
            spec_pod({EXT_A: 1}, name="pod2", node="fake"),
            QueueingHint.QUEUE,
            id="queue on other pod extended resource scaled down",
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1"),
            spec_pod({"cpu": "1"}, name="pod2", node="fake"),
            spec_pod({"cpu": "2"}, name="pod2", node="fake"),
            QueueingHint.QUEUE_SKIP,
            id="skip on other pod scaled up",
        ),
        pytest.param(
            spec_pod({"cpu": "1"}, name="pod1"),
            spec_pod({"cpu": "2"}, name="pod1"),
            spec_pod({"cpu": "1"}, name="pod1"),
            QueueingHint.QUEUE,
            id="queue on the target pod itself scaled down",
        ),
    ],
)
def test_hint_after_pod_change(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_pod_change(pod, old, new) == want


def _node(**allocatable: Any) -> Node:
    allocatable.setdefault("pods", 32)
    return make_node("n").capacity(**allocatable).node()


_POD_MEM2_EXT = spec_pod({"memory": 2, EXT_A: 1})


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(spec_pod(), None, "not-a-node", QueueingHint.QUEUE, id="wrong new object"),
        pytest.param(spec_pod(), "not-a-node", _node(), QueueingHint.QUEUE, id="wrong old object"),
        pytest.param(
            spec_pod({"memory": 2}),
            None,
            _node(memory=1),
            QueueingHint.QUEUE_SKIP,
            id="skip on node added without sufficient resources",
        ),
        pytest.param(
            spec_pod({EXT_A: 1}),
            None,
            _node(**{"example.com/bbb": 1}),
            QueueingHint.QUEUE_SKIP,
            id="skip on node added without the required resource type",
        ),
        pytest.param(
            _POD_MEM2_EXT,
            None,
            _node(memory=4, **{"example.com/aaa": 2}),
            QueueingHint.QUEUE,
            id="queue on node added with sufficient resources",
        ),
        pytest.param(
            _POD_MEM2_EXT,
            _node(memory=2, **{"example.com/aaa": 2}),
            _node(memory=2, **{"example.com/aaa": 1, "example.com/bbb": 2}),
            QueueingHint.QUEUE_SKIP,
            id="skip on node unrelated changes",
        ),
        pytest.param(
            _POD_MEM2_EXT,
            _node(memory=2, **{"example.com/aaa": 1}),
            _node(memory=2, **{"example.com/aaa": 2}),
            QueueingHint.QUEUE,
            id="queue on pod requested resources increase",
        ),
        pytest.param(
            _POD_MEM2_EXT,
            _node(memory=4, **{"example.com/aaa": 2}),
            _node(memory=1, **{"example.com/aaa": 2}),
            QueueingHint.QUEUE_SKIP,
            id="skip on node changes from suitable to unsuitable",
        ),
        pytest.param(
            _POD_MEM2_EXT,
            _node(memory=1, **{"example.com/aaa": 2}),
            _node(memory=4, **{"example.com/aaa": 2}),
            QueueingHint.QUEUE,
            id="queue on node changes from unsuitable to suitable",
        ),
        pytest.param(
            spec_pod(),
            _node(pods=0),
            _node(pods=10),
            QueueingHint.QUEUE,
            id="queue on pod capacity increase",
        ),
        pytest.param(
            spec_pod(),
            _node(pods=10),
            _node(pods=10, memory=5),
            QueueingHint.QUEUE_SKIP,
            id="skip when a best-effort pod gains nothing",
        ),
    ],
)
def test_hint_after_node_change(pod: Pod, old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_node_change(pod, old, new) == want
