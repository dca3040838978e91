import copy
from typing import Any

import pytest

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import EXPLANATION_ANNOTATION, Pod
from kopf_scheduler.model.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from tests.builders import make_pod

GI = 2**30


@pytest.mark.parametrize(
    ("builder", "cpu", "memory"),
    [
        pytest.param(make_pod("p").req(cpu="500m", memory="1Gi"), 500, GI, id="one-container"),
        pytest.param(
            make_pod("p").req(cpu="500m").container(cpu="250m", memory="1Gi"),
            750,
            GI,
            id="containers-add-up",
        ),
        pytest.param(
            make_pod("p").req(cpu="500m").init_container(cpu="2"),
            2000,
            0,
            id="init-container-max",
        ),
        pytest.param(
            make_pod("p").req(cpu="500m").init_container(cpu="100m"),
            500,
            0,
            id="small-init-container-ignored",
        ),
        pytest.param(
            make_pod("p").req(cpu="500m").init_container(sidecar=True, cpu="200m"),
            700,
            0,
            id="sidecar-adds-to-containers",
        ),
        pytest.param(
            make_pod("p")
            .req(cpu="100m")
            .init_container(sidecar=True, cpu="200m")
            .init_container(cpu="1"),
            1200,
            0,
            id="init-after-sidecar-runs-beside-it",
        ),
        pytest.param(
            make_pod("p")
            .req(cpu="100m")
            .init_container(cpu="1")
            .init_container(sidecar=True, cpu="200m"),
            1000,
            0,
            id="init-before-sidecar-runs-alone",
        ),
    ],
)
def test_pod_requests(builder, cpu: int, memory: int) -> None:
    pod = builder.pod()
    assert pod.requests.milli_cpu == cpu
    assert pod.requests.memory == memory


def test_pods_of_one_shape_get_requests_of_their_own() -> None:
    first = make_pod("a").req(cpu="500m", memory="1Gi").pod()
    first.requests.milli_cpu += 1
    first.non_zero_requests.memory += 1
    second = make_pod("b").req(cpu="500m", memory="1Gi").pod()
    assert (second.requests.milli_cpu, second.non_zero_requests.memory) == (500, GI)


def test_a_sidecar_is_not_a_regular_init_container_of_the_same_requests() -> None:
    regular = make_pod("a").req(cpu="1").init_container(cpu="2").pod()
    sidecar = make_pod("b").req(cpu="1").init_container(sidecar=True, cpu="2").pod()
    assert (regular.requests.milli_cpu, sidecar.requests.milli_cpu) == (2000, 3000)


def test_overhead_is_added() -> None:
    raw = make_pod("p").req(cpu="1").obj()
    raw["spec"]["overhead"] = {"cpu": "250m", "memory": "100Mi"}
    pod = Pod(raw)
    assert pod.requests.milli_cpu == 1250
    assert pod.requests.memory == 100 * 2**20


def test_non_zero_requests_default_missing_cpu_and_memory_per_container() -> None:
    pod = make_pod("p").req(cpu="300m").container().pod()
    assert pod.requests.milli_cpu == 300
    assert pod.requests.memory == 0
    assert pod.non_zero_requests.milli_cpu == 300 + DEFAULT_MILLI_CPU_REQUEST
    assert pod.non_zero_requests.memory == 2 * DEFAULT_MEMORY_REQUEST


def test_extended_resources_are_scalar() -> None:
    pod = make_pod("p").req(**{"nvidia.com/gpu": 2}).pod()
    assert pod.requests.scalar == {"nvidia.com/gpu": 2}


def test_priority_defaults_to_zero_and_reads_spec() -> None:
    assert make_pod("p").pod().priority == 0
    assert make_pod("p").priority(-5).pod().priority == -5


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda raw: raw["spec"]["containers"][0].update(
                {"resources": {"requests": {"cpu": "lots"}}}
            ),
            "spec.containers[0].resources.requests.cpu",
            id="bad-cpu",
        ),
        pytest.param(
            lambda raw: raw["spec"].update({"priority": "high"}), "spec.priority", id="bad-priority"
        ),
        pytest.param(
            lambda raw: raw["spec"].update(
                {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "a", "operator": "Near"}]}
                                ]
                            }
                        }
                    }
                }
            ),
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator",
            id="bad-node-affinity-operator",
        ),
        pytest.param(
            lambda raw: raw["spec"].update(
                {
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {"labelSelector": {"matchLabels": {"a": "b"}}}
                            ]
                        }
                    }
                }
            ),
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey",
            id="anti-affinity-without-topology-key",
        ),
        pytest.param(
            lambda raw: raw["spec"].update(
                {
                    "topologySpreadConstraints": [
                        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                    ]
                }
            ),
            "spec.topologySpreadConstraints[0].maxSkew",
            id="zero-max-skew",
        ),
        pytest.param(
            lambda raw: raw["spec"].update({"tolerations": [{"key": "k", "operator": "Maybe"}]}),
            "spec.tolerations[0].operator",
            id="bad-toleration-operator",
        ),
        pytest.param(
            lambda raw: raw["metadata"].update({"labels": {"a": 1}}),
            "metadata.labels",
            id="non-string-label",
        ),
    ],
)
def test_malformed_pods_name_the_field(mutate, field: str) -> None:
    raw = make_pod("p").obj()
    mutate(raw)
    with pytest.raises(InvalidObjectError) as info:
        Pod(raw)
    assert info.value.field == field


def test_assigned_to_copies_view_with_node() -> None:
    pod = make_pod("p").req(cpu="1").pod()
    assumed = pod.assigned_to("n1")
    assert assumed.node_name == "n1"
    assert pod.node_name == ""
    assert assumed.uid == pod.uid
    assert assumed.requests is pod.requests


def test_preempted_by_scheduler_needs_deletion_and_condition() -> None:
    base = make_pod("p").condition("DisruptionTarget", "True", "PreemptionByScheduler")
    assert not base.pod().is_preempted_by_scheduler
    assert base.terminating().pod().is_preempted_by_scheduler
    other = (
        make_pod("q").terminating().condition("DisruptionTarget", "True", "EvictionByEvictionAPI")
    )
    assert not other.pod().is_preempted_by_scheduler


def _version(raw: dict[str, Any], resource_version: str, **changes: Any) -> Pod:
    """``raw`` as the API server would return it after a write: a new resourceVersion, a new
    managed-fields timestamp, and ``changes`` (``annotations``, ``status``, ``labels``)."""
    new = copy.deepcopy(raw)
    metadata = new["metadata"]
    metadata["resourceVersion"] = resource_version
    metadata["managedFields"] = [{"manager": "kopf-scheduler", "time": resource_version}]
    for key in ("annotations", "labels"):
        if key in changes:
            metadata[key] = changes[key]
    if "status" in changes:
        new["status"] = changes["status"]
    return Pod(new)


_UNSCHEDULABLE = {
    "conditions": [{"type": "PodScheduled", "status": "False", "message": "1 Insufficient cpu"}]
}


@pytest.mark.parametrize(
    ("changes", "revision"),
    [
        pytest.param(
            {"annotations": {EXPLANATION_ANNOTATION: '{"attempt":2}'}}, "10", id="explanation-only"
        ),
        pytest.param(
            {"annotations": {EXPLANATION_ANNOTATION: '{"attempt":2}'}, "status": _UNSCHEDULABLE},
            "11",
            id="explanation-and-condition",
        ),
        pytest.param({"status": _UNSCHEDULABLE}, "11", id="condition-only"),
        pytest.param(
            {"annotations": {EXPLANATION_ANNOTATION: '{"attempt":1}', "team": "x"}},
            "11",
            id="another-annotation",
        ),
        pytest.param(
            {"annotations": {EXPLANATION_ANNOTATION: '{"attempt":2}'}, "labels": {"app": "b"}},
            "11",
            id="explanation-and-labels",
        ),
        pytest.param({}, "11", id="nothing-but-the-version"),
    ],
)
def test_a_version_that_only_changes_our_explanation_keeps_the_revision(
    changes: dict[str, Any], revision: str
) -> None:
    raw = make_pod("p").label("app", "a").obj()
    raw["metadata"]["annotations"] = {EXPLANATION_ANNOTATION: '{"attempt":1}'}
    previous = _version(raw, "10")
    current = _version(previous.raw, "11", **changes)  # type: ignore[arg-type]

    current.follow(previous)

    assert current.resource_version == "11"
    assert current.revision == revision


def test_a_recreated_pod_never_keeps_the_revision() -> None:
    raw = make_pod("p").uid("old").obj()
    raw["metadata"]["annotations"] = {EXPLANATION_ANNOTATION: '{"attempt":1}'}
    previous = _version(raw, "10")
    recreated = copy.deepcopy(previous.raw)
    recreated["metadata"]["uid"] = "new"  # type: ignore[index]
    current = _version(recreated, "11", annotations={EXPLANATION_ANNOTATION: '{"attempt":2}'})

    current.follow(previous)

    assert current.revision == "11"
