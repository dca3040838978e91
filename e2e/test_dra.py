"""Dynamic Resource Allocation against the real resource-claim controller, checked from outside.

A fake driver (:mod:`e2e.support.dra`, dra-example-driver's shape: eight GPUs per node) publishes
a ResourceSlice for each of the test's kwok nodes and a DeviceClass of the test's own; the
control plane's kube-controller-manager makes claims from ResourceClaimTemplates. Each scenario
checks what the scheduler writes: the pod's node, the claim's ``status.allocation`` (devices,
pool, node selector) and ``status.reservedFor``, the ``Scheduled`` and ``FailedScheduling``
events and their exact messages.

The expectations are kube-scheduler v1.34.10's behaviour on this control plane:
``E2E_SCHEDULER=upstream`` runs the scenarios that take ``scheduler_name`` against it, the
default against the project's scheduler. The gang of device pods needs the Coscheduling profile:
it is in ``test_gangs.py`` (``make e2e-gangs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from e2e.support import dra
from e2e.support.dra import CLAIM_ENTRY, REQUEST, TestDevices
from e2e.support.env import TestEnv
from e2e.support.kubectl import Kubectl, condition, node_name, nominated_node
from e2e.support.messages import expected_message
from e2e.support.polling import holds_for, wait_until

CANNOT_ALLOCATE = "cannot allocate all claims"
STILL_NOT_SCHEDULABLE = "still not schedulable"


# -- helpers -------------------------------------------------------------------------------


def _claim(env: TestEnv, name: str) -> dict[str, Any] | None:
    return env.kubectl.get("resourceclaim", name, env.namespace)


def _generated_claim(env: TestEnv, pod: str) -> str:
    """The claim the resource-claim controller made for the pod's template entry."""
    found = env.wait_pod(
        pod,
        lambda p: dra.pod_claim_name(p, CLAIM_ENTRY) is not None,
        timeout=30,
        what="status.resourceClaimStatuses from the resource-claim controller",
    )
    return str(dra.pod_claim_name(found, CLAIM_ENTRY))


def _wait_allocated(env: TestEnv, name: str, consumers: int = 1) -> dict[str, Any]:
    def allocated() -> dict[str, Any] | None:
        found = _claim(env, name)
        if found is None or len(dra.reserved_for(found)) < consumers:
            return None
        return found if dra.allocated_devices(found) else None

    return wait_until(
        allocated,
        timeout=30,
        what=f"claim {name} allocated and reserved for {consumers} pod(s)",
        describe=lambda: (_claim(env, name) or {}).get("status"),
    )


def _node_selector(node: str) -> dict[str, Any]:
    """The node selector an allocation from a node-local slice carries."""
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        ]
    }


def _assert_allocation(found: Mapping[str, Any], node: str, devices: Sequence[str]) -> None:
    allocation = found["status"]["allocation"]
    assert allocation["nodeSelector"] == _node_selector(node)
    assert allocation["devices"]["results"] == [
        {"request": REQUEST, "driver": dra.EXAMPLE_DRIVER, "pool": node, "device": device}
        for device in devices
    ]
    assert dra.DELETE_PROTECTION in found["metadata"].get("finalizers", [])


def _assert_reserved_for(env: TestEnv, found: Mapping[str, Any], pods: Sequence[str]) -> None:
    reserved = found["status"]["reservedFor"]
    expected = []
    for name in pods:
        pod = env.get_pod(name)
        assert pod is not None
        expected.append({"resource": "pods", "name": name, "uid": pod["metadata"]["uid"]})
    assert sorted(reserved, key=lambda r: r["name"]) == expected


def _assert_scheduled(env: TestEnv, name: str, node: str, scheduler_name: str) -> None:
    [event] = env.wait_event(name, "Scheduled")
    assert event["reportingController"] == scheduler_name
    assert event["note"] == f"Successfully assigned {env.namespace}/{name} to {node}"


def _wait_running(env: TestEnv, name: str) -> None:
    env.wait_pod(
        name,
        lambda p: (p.get("status") or {}).get("phase") == "Running",
        timeout=30,
        what="Running (kwok prepares nothing for the claim)",
    )


def _wait_failed_scheduling(
    kube: Kubectl,
    env: TestEnv,
    manifest: Mapping[str, Any],
    own: Mapping[str, str],
    postfilter: str,
    scheduler_name: str,
    own_preemption: Mapping[str, str] | None = None,
) -> str:
    """The exact message (every node of the cluster counted) in the condition and an event;
    ``own``/``own_preemption``: the test's nodes' filter and preemption reasons."""
    name = manifest["metadata"]["name"]
    seen: dict[str, str | None] = {}

    def probe() -> str | None:
        pod = env.get_pod(name)
        scheduled = condition(pod, "PodScheduled") if pod else None
        seen["actual"] = scheduled.get("message") if scheduled else None
        seen["expected"] = expected_message(
            kube.nodes(), manifest, own, own_preemption, postfilter=postfilter
        )
        return seen["actual"] if seen["actual"] == seen["expected"] else None

    message = wait_until(
        probe, timeout=30, what=f"{name}: the exact FailedScheduling message", describe=lambda: seen
    )
    pod = env.get_pod(name)
    assert pod is not None and node_name(pod) is None
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None and scheduled["reason"] == "Unschedulable", scheduled
    events = wait_until(
        lambda: [e for e in env.pod_events(name, "FailedScheduling") if e.get("note") == message],
        timeout=10,
        what=f"a FailedScheduling event for {name} with the message",
        describe=lambda: [e.get("note") for e in env.pod_events(name)],
    )
    for event in events:
        assert event["type"] == "Warning"
        assert event["reportingController"] == scheduler_name
    return str(message)


# -- scenarios -----------------------------------------------------------------------------


def test_claim_from_template_is_allocated_on_the_pods_node(
    env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    devices.publish(nodes)
    env.create(devices.template("one-gpu"))
    env.create(
        dra.with_claims(
            env.pod("app", scheduler=scheduler_name), templates={CLAIM_ENTRY: "one-gpu"}
        )
    )

    claim_name = _generated_claim(env, "app")
    assert claim_name.startswith(f"app-{CLAIM_ENTRY}-")
    node = env.wait_bound("app")
    assert node in nodes
    found = _wait_allocated(env, claim_name)
    # The first device of the node's only pool: the allocator visits devices in slice order.
    _assert_allocation(found, node, ["gpu-0"])
    _assert_reserved_for(env, found, ["app"])
    owners = found["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"]) for o in owners] == [("Pod", "app")]
    _assert_scheduled(env, "app", node, scheduler_name)
    _wait_running(env, "app")


def test_pods_take_distinct_devices_until_the_node_has_none_left(
    kube: Kubectl, env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    [node] = env.create_nodes(1)
    devices.publish([node], gpus=2)
    env.create(devices.template("one-gpu"))
    for name in ("first", "second"):
        env.create(
            dra.with_claims(
                env.pod(name, scheduler=scheduler_name), templates={CLAIM_ENTRY: "one-gpu"}
            )
        )
        assert env.wait_bound(name) == node
    chosen = sorted(
        device
        for name in ("first", "second")
        for _, _, _, device in dra.allocated_devices(
            _wait_allocated(env, _generated_claim(env, name))
        )
    )
    assert chosen == ["gpu-0", "gpu-1"]

    third = dra.with_claims(
        env.pod("third", scheduler=scheduler_name), templates={CLAIM_ENTRY: "one-gpu"}
    )
    env.create(third)
    _wait_failed_scheduling(
        kube, env, third, {node: CANNOT_ALLOCATE}, STILL_NOT_SCHEDULABLE, scheduler_name
    )
    third_claim = _claim(env, _generated_claim(env, "third"))
    assert third_claim is not None and "allocation" not in (third_claim.get("status") or {})


def test_shared_claim_is_allocated_once_for_two_pods(
    env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    devices.publish(nodes)
    env.create(dra.claim("shared-gpu", env.namespace, dra.claim_spec([devices.request()])))
    env.create(
        dra.with_claims(
            env.pod("first", scheduler=scheduler_name), claims={CLAIM_ENTRY: "shared-gpu"}
        )
    )
    node = env.wait_bound("first")
    _wait_allocated(env, "shared-gpu")
    env.create(
        dra.with_claims(
            env.pod("second", scheduler=scheduler_name), claims={CLAIM_ENTRY: "shared-gpu"}
        )
    )
    # The allocation's node selector pins every later user of the claim to the same node.
    assert env.wait_bound("second") == node
    found = _wait_allocated(env, "shared-gpu", consumers=2)
    _assert_allocation(found, node, ["gpu-0"])
    _assert_reserved_for(env, found, ["first", "second"])
    for name in ("first", "second"):
        _assert_scheduled(env, name, node, scheduler_name)
        _wait_running(env, name)


def test_selector_that_matches_no_device_is_unschedulable_everywhere(
    kube: Kubectl, env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    devices.publish(nodes)
    missing_model = f'device.attributes["{dra.EXAMPLE_DRIVER}"].model == "NO-SUCH-MODEL"'
    env.create(devices.template("no-such-gpu", selectors=[missing_model]))
    pod = dra.with_claims(
        env.pod("app", scheduler=scheduler_name), templates={CLAIM_ENTRY: "no-such-gpu"}
    )
    env.create(pod)
    _wait_failed_scheduling(
        kube,
        env,
        pod,
        {node: CANNOT_ALLOCATE for node in nodes},
        STILL_NOT_SCHEDULABLE,
        scheduler_name,
    )
    found = _claim(env, _generated_claim(env, "app"))
    assert found is not None and not (found.get("status") or {}).get("allocation")


def test_device_holders_are_not_preempted_for_a_device(
    kube: Kubectl, env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    """A higher-priority pod that needs the node's only device does not preempt its holder.

    The DynamicResources Filter turns the node away with UnschedulableAndUnresolvable ("cannot
    allocate all claims"), and DefaultPreemption never considers such a node: the holder keeps
    its device, the preemptor gets no nomination and waits.
    """
    [node] = env.create_nodes(1)
    devices.publish([node], gpus=1)
    env.create(devices.template("one-gpu"))
    env.create(
        dra.with_claims(
            env.pod("holder", scheduler=scheduler_name, priority_class="e2e-p10", grace=1),
            templates={CLAIM_ENTRY: "one-gpu"},
        )
    )
    assert env.wait_bound("holder") == node
    held = _wait_allocated(env, _generated_claim(env, "holder"))
    preemptor = dra.with_claims(
        env.pod("high", scheduler=scheduler_name, priority_class="e2e-p100"),
        templates={CLAIM_ENTRY: "one-gpu"},
    )
    env.create(preemptor)
    _wait_failed_scheduling(
        kube, env, preemptor, {node: CANNOT_ALLOCATE}, STILL_NOT_SCHEDULABLE, scheduler_name
    )

    def untouched() -> bool:
        holder = env.get_pod("holder")
        high = env.get_pod("high")
        return (
            holder is not None
            and "deletionTimestamp" not in holder["metadata"]
            and condition(holder, "DisruptionTarget") is None
            and high is not None
            and nominated_node(high) is None
        )

    assert holds_for(untouched, seconds=5)
    assert not env.pod_events("holder", "Preempted")
    still = _claim(env, held["metadata"]["name"])
    assert still is not None and dra.allocated_devices(still) == dra.allocated_devices(held)


def test_preemption_that_would_free_cpu_still_finds_the_device_taken(
    kube: Kubectl, env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    """The node is also out of CPU, which evicting the holder would free. NodeResourcesFit
    fails first (Unschedulable, so the node is a preemption candidate); the dry run without
    the holder then runs DynamicResources' Filter, which still finds the only device allocated
    (the holder's claim stays allocated until its pod is gone), so the node's preemption reason
    is "cannot allocate all claims" and nobody is evicted."""
    [node] = env.create_nodes(1, cpu="2")
    devices.publish([node], gpus=1)
    env.create(devices.template("one-gpu"))
    env.create(
        dra.with_claims(
            env.pod("holder", cpu="2", scheduler=scheduler_name, priority_class="e2e-p10", grace=1),
            templates={CLAIM_ENTRY: "one-gpu"},
        )
    )
    assert env.wait_bound("holder") == node
    _wait_allocated(env, _generated_claim(env, "holder"))
    preemptor = dra.with_claims(
        env.pod("high", cpu="2", scheduler=scheduler_name, priority_class="e2e-p100"),
        templates={CLAIM_ENTRY: "one-gpu"},
    )
    env.create(preemptor)
    _wait_failed_scheduling(
        kube,
        env,
        preemptor,
        {node: "Insufficient cpu"},
        STILL_NOT_SCHEDULABLE,
        scheduler_name,
        own_preemption={node: CANNOT_ALLOCATE},
    )

    def untouched() -> bool:
        holder = env.get_pod("holder")
        high = env.get_pod("high")
        return (
            holder is not None
            and "deletionTimestamp" not in holder["metadata"]
            and high is not None
            and nominated_node(high) is None
        )

    assert holds_for(untouched, seconds=3)
    assert not env.pod_events("holder", "Preempted")


def test_a_device_holder_is_an_ordinary_victim_for_a_pod_without_claims(
    env: TestEnv, devices: TestDevices, scheduler_name: str
) -> None:
    """Preemption for CPU evicts a pod that holds a device like any other victim; its claim,
    made for it from a template, goes with it (the resource-claim controller deletes it)."""
    [node] = env.create_nodes(1, cpu="2")
    devices.publish([node], gpus=1)
    env.create(devices.template("one-gpu"))
    env.create(
        dra.with_claims(
            env.pod("holder", cpu="2", scheduler=scheduler_name, priority_class="e2e-p10", grace=1),
            templates={CLAIM_ENTRY: "one-gpu"},
        )
    )
    assert env.wait_bound("holder") == node
    held = _wait_allocated(env, _generated_claim(env, "holder"))
    env.create(env.pod("high", cpu="2", scheduler=scheduler_name, priority_class="e2e-p100"))

    [preempted] = env.wait_event("holder", "Preempted")
    assert preempted["reportingController"] == scheduler_name
    high = env.get_pod("high")
    assert high is not None
    assert preempted["note"] == f"Preempted by pod {high['metadata']['uid']} on node {node}"
    assert env.wait_bound("high") == node
    wait_until(
        lambda: _claim(env, held["metadata"]["name"]) is None,
        timeout=30,
        what="the holder's claim deleted with it",
    )
