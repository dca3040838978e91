"""Volume-aware scheduling against the real PV controller, checked on what a user sees.

The four volume plugins of the default profile (VolumeRestrictions, NodeVolumeLimits,
VolumeBinding, VolumeZone) decide where a pod with claims may go; the PV controller of
kube-controller-manager completes the binding the scheduler starts; a minimal provisioner
of the suite (``e2e/support/provisioner.py``) plays the external provisioner. Each scenario
checks the pod's node, the claim's phase, the PV's ``claimRef``, the ``Scheduled`` and
``FailedScheduling`` events and the exact messages.

The expectations are kube-scheduler v1.34.10's behaviour on this control plane:
``E2E_SCHEDULER=upstream`` runs the same scenarios against it (``schedulerName:
default-scheduler``), the default against the project's scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from e2e.support.env import TestEnv
from e2e.support.kubectl import (
    Kubectl,
    condition,
    node_name,
    nominated_node,
    unschedulable_message,
)
from e2e.support.messages import (
    MAX_VOLUME_COUNT,
    NO_VICTIMS,
    NO_VOLUME_TO_BIND,
    NO_VOLUME_ZONE,
    RWOP_IN_USE,
    expected_message,
)
from e2e.support.polling import holds_for, wait_until
from e2e.support.provisioner import PROVISIONER_NAME, Provisioner
from e2e.support.volumes import (
    CLAIM_KIND,
    HOSTNAME_LABEL,
    SELECTED_NODE,
    STORAGE_PROVISIONER,
    ZONE_LABEL,
    TestStorage,
    annotations_of,
    claim,
    claim_ref,
    claim_volume,
    csi_node,
    ephemeral_volume,
    is_bound,
    persistent_volume,
    phase,
    storage_class,
)
from e2e.support.watch import ObjectWatch

RWOP = ("ReadWriteOncePod",)
ATTACH_DRIVER = "e2e-attach.csi.kopf-scheduler.io"
DISRUPTION_MESSAGE = "{}: preempting to accommodate a higher priority pod"

ExpectedMessage = Callable[[list[dict[str, Any]]], str]
"""The exact FailedScheduling message, given the nodes the cluster has at that moment."""


@pytest.fixture
def storage(env: TestEnv) -> Iterator[TestStorage]:
    test_storage = TestStorage(env)
    try:
        yield test_storage
    finally:
        test_storage.close()


@pytest.fixture
def provisioner(env: TestEnv) -> Iterator[Provisioner]:
    running = Provisioner(env.kubectl, env.namespace)
    try:
        yield running
    finally:
        running.stop()
    assert not running.errors, running.errors


@pytest.fixture
def claims(env: TestEnv) -> Iterator[ObjectWatch]:
    """Every change of the test's claims, in the API server's order."""
    watch = ObjectWatch(env.kubectl, env.namespace, "persistentvolumeclaims", CLAIM_KIND)
    try:
        yield watch
    finally:
        watch.stop()


# -- helpers -------------------------------------------------------------------------------


def _wait_message(
    kube: Kubectl,
    env: TestEnv,
    manifest: Mapping[str, Any],
    expected: ExpectedMessage,
    *,
    scheduler_name: str,
    timeout: float = 30,
) -> str:
    """Wait until the pod's PodScheduled=False message is exactly ``expected(nodes)``.

    The expected text is recomputed from the nodes present at each look, because it counts
    every node of the cluster. Then check the condition's reason and the matching
    FailedScheduling event, and that the pod is not bound.
    """
    name = manifest["metadata"]["name"]
    seen: dict[str, str | None] = {}

    def probe() -> str | None:
        pod = env.get_pod(name)
        seen["actual"] = unschedulable_message(pod) if pod else None
        seen["expected"] = expected(kube.nodes())
        return seen["actual"] if seen["actual"] == seen["expected"] else None

    message = wait_until(
        probe,
        timeout=timeout,
        what=f"{name}: the exact FailedScheduling message",
        describe=lambda: seen,
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
        assert event["action"] == "Scheduling"
        assert event["reportingController"] == scheduler_name
    return message


def _on_own_nodes(
    manifest: Mapping[str, Any],
    own: Mapping[str, str],
    own_preemption: Mapping[str, str] | None = None,
) -> ExpectedMessage:
    return lambda nodes: expected_message(nodes, manifest, own, own_preemption)


def _prefilter_message(text: str) -> ExpectedMessage:
    """A PreFilter rejection, which kube-scheduler v1.34 ends in ``. not found``.

    The DynamicResources PostFilter fails (its own PreFilter, ordered after the volume
    plugins, never ran), so preemption is not tried and there is no preemption part.
    """
    return lambda nodes: f"0/{len(nodes)} nodes are available: {text}. not found"


def _assert_scheduled(env: TestEnv, name: str, node: str, scheduler_name: str) -> None:
    [event] = env.wait_event(name, "Scheduled")
    assert event["type"] == "Normal"
    assert event["reportingController"] == scheduler_name
    assert event["note"] == f"Successfully assigned {env.namespace}/{name} to {node}"


def _wait_volumes_available(storage: TestStorage, names: Sequence[str]) -> None:
    """Static PVs are candidates only once the PV controller has made them Available.

    A pod created earlier races kube-scheduler: its queue may retry the pod on the PV's
    update before its volume cache has that update, and the pod then waits for the next
    unrelated event (or the five-minute flush of unschedulable pods).
    """

    def available() -> bool:
        found = [storage.volume(name) for name in names]
        return all(v is not None and phase(v) == "Available" for v in found)

    wait_until(available, timeout=30, what=f"volumes {list(names)} Available")


def _assert_bound_to(storage: TestStorage, claim_name: str, volume_name: str) -> dict[str, Any]:
    """The claim is Bound to the volume and the volume's claimRef names exactly that claim."""

    def bound() -> dict[str, Any] | None:
        found = storage.claim(claim_name)
        return found if found is not None and phase(found) == "Bound" else None

    found = wait_until(bound, timeout=15, what=f"claim {claim_name} Bound")
    assert found["spec"]["volumeName"] == volume_name
    assert is_bound(found)
    volume = storage.volume(volume_name)
    assert volume is not None
    ref = claim_ref(volume)
    assert ref is not None
    assert (ref["namespace"], ref["name"], ref["uid"]) == (
        storage.namespace,
        claim_name,
        found["metadata"]["uid"],
    )
    assert phase(volume) == "Bound"
    return found


def _assert_claim_bound_before_pod(
    env: TestEnv, claims: ObjectWatch, claim_name: str, pod_name: str
) -> None:
    """The pod was bound only after the PV controller had bound its claim (etcd order)."""
    claim_bound = claims.first(lambda e: is_bound(e.object), claim_name)
    pod_bound = env.watch.bound(pod_name)
    assert claim_bound is not None and pod_bound is not None, claims.summary()
    assert claim_bound.resource_version < pod_bound.resource_version, (
        claims.summary(),
        env.watch.summary(pod_name),
    )


def _bound_claims(
    storage: TestStorage,
    names: Sequence[str],
    *,
    size: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    csi_driver: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> None:
    """One PV without node affinity per name, each with a claim of that name pre-bound to it.

    The claims are created once the PVs are Available (a claim naming a PV the PV controller
    has not seen yet waits for its next periodic sync); this returns when they are Bound.
    """
    volumes = {name: storage.name(name) for name in names}
    storage.create(
        *(
            persistent_volume(
                volume,
                storage.env.id,
                size,
                access_modes=access_modes,
                csi_driver=csi_driver,
                labels=labels,
            )
            for volume in volumes.values()
        )
    )
    _wait_volumes_available(storage, list(volumes.values()))
    storage.create(
        *(
            claim(name, storage.namespace, size, access_modes=access_modes, volume_name=volume)
            for name, volume in volumes.items()
        )
    )

    def bound() -> bool:
        found = [storage.claim(name) for name in names]
        return all(c is not None and is_bound(c) and phase(c) == "Bound" for c in found)

    wait_until(bound, timeout=30, what=f"claims {list(names)} Bound by the PV controller")


# -- scenarios ------------------------------------------------------------------------------


def test_static_local_volume_steers_the_pod_to_its_node(
    kube: Kubectl, env: TestEnv, storage: TestStorage, claims: ObjectWatch, scheduler_name: str
) -> None:
    nodes = env.create_nodes(3)
    local = storage.name("local")
    volume = storage.name("pv")
    storage.create(
        storage_class(local, env.id),
        persistent_volume(volume, env.id, "2Gi", class_name=local, node=nodes[2]),
        claim("first", env.namespace, "1Gi", class_name=local),
        claim("second", env.namespace, "1Gi", class_name=local),
    )
    _wait_volumes_available(storage, [volume])
    env.create(env.pod("first", scheduler=scheduler_name, volumes=[claim_volume("first")]))

    # The only local PV is on the last node, so the pod goes there.
    assert env.wait_bound("first") == nodes[2]
    _assert_scheduled(env, "first", nodes[2], scheduler_name)
    _assert_bound_to(storage, "first", volume)
    _assert_claim_bound_before_pod(env, claims, "first", "first")
    # kwok plays the kubelet without mounting anything: the pod runs like any other.
    env.wait_pod(
        "first",
        lambda p: (p.get("status") or {}).get("phase") == "Running",
        timeout=30,
        what="Running",
    )

    # That PV is taken now: no node of the test has one left for the next claim.
    second = env.pod("second", scheduler=scheduler_name, volumes=[claim_volume("second")])
    env.create(second)
    _wait_message(
        kube,
        env,
        second,
        _on_own_nodes(second, dict.fromkeys(nodes, NO_VOLUME_TO_BIND)),
        scheduler_name=scheduler_name,
    )
    pending = storage.claim("second")
    assert pending is not None and phase(pending) == "Pending"
    assert not (pending.get("spec") or {}).get("volumeName")


def test_wait_for_first_consumer_binds_the_smallest_fitting_volume_first(
    env: TestEnv, storage: TestStorage, claims: ObjectWatch, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    local = storage.name("local")
    sizes = {"tiny": "500Mi", "large": "5Gi", "small": "2Gi"}
    storage.create(
        storage_class(local, env.id),
        *(
            persistent_volume(storage.name(key), env.id, size, class_name=local, node=nodes[0])
            for key, size in sizes.items()
        ),
        claim("data", env.namespace, "1Gi", class_name=local),
    )
    _wait_volumes_available(storage, [storage.name(key) for key in sizes])
    env.create(env.pod("app", scheduler=scheduler_name, volumes=[claim_volume("data")]))

    assert env.wait_bound("app") == nodes[0]
    _assert_scheduled(env, "app", nodes[0], scheduler_name)
    bound = _assert_bound_to(storage, "data", storage.name("small"))
    # Static binding goes through the PV's claimRef only; the claim never gets a selected node.
    assert SELECTED_NODE not in annotations_of(bound)
    assert all(SELECTED_NODE not in annotations_of(e.object) for e in claims.events("data"))
    for key in ("tiny", "large"):
        untouched = storage.volume(storage.name(key))
        assert untouched is not None
        assert claim_ref(untouched) is None and phase(untouched) == "Available", untouched
    _assert_claim_bound_before_pod(env, claims, "data", "app")


def test_dynamic_provisioning_follows_allowed_topologies(
    kube: Kubectl,
    env: TestEnv,
    storage: TestStorage,
    claims: ObjectWatch,
    provisioner: Provisioner,
    scheduler_name: str,
) -> None:
    zones = ("zone-a", "zone-b", "zone-c")
    nodes = env.create_nodes(3, labels=[{ZONE_LABEL: zone} for zone in zones])
    fast, nowhere = storage.name("fast"), storage.name("nowhere")
    storage.create(
        storage_class(fast, env.id, provisioner=PROVISIONER_NAME, allowed_zones=["zone-b"]),
        storage_class(nowhere, env.id, provisioner=PROVISIONER_NAME, allowed_zones=["zone-x"]),
        claim("data", env.namespace, "3Gi", class_name=fast),
        claim("stray", env.namespace, "1Gi", class_name=nowhere),
    )
    env.create(env.pod("app", scheduler=scheduler_name, volumes=[claim_volume("data")]))

    assert env.wait_bound("app") == nodes[1]
    _assert_scheduled(env, "app", nodes[1], scheduler_name)
    data = storage.claim("data")
    assert data is not None
    volume_name = f"pvc-{data['metadata']['uid']}"
    bound = _assert_bound_to(storage, "data", volume_name)
    marks = annotations_of(bound)
    assert marks[SELECTED_NODE] == nodes[1]
    assert marks[STORAGE_PROVISIONER] == PROVISIONER_NAME
    assert provisioner.created == {"data": volume_name}
    volume = storage.volume(volume_name)
    assert volume is not None
    [term] = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": HOSTNAME_LABEL, "operator": "In", "values": [nodes[1]]}
    ]
    assert volume["spec"]["capacity"]["storage"] == "3Gi"
    _assert_claim_bound_before_pod(env, claims, "data", "app")

    # A class whose topology no node has: nothing to provision anywhere, nothing selected.
    stray = env.pod("stray", scheduler=scheduler_name, volumes=[claim_volume("stray")])
    env.create(stray)
    _wait_message(
        kube,
        env,
        stray,
        _on_own_nodes(stray, dict.fromkeys(nodes, NO_VOLUME_TO_BIND)),
        scheduler_name=scheduler_name,
    )
    unprovisioned = storage.claim("stray")
    assert unprovisioned is not None and phase(unprovisioned) == "Pending"
    assert SELECTED_NODE not in annotations_of(unprovisioned)
    assert "stray" not in provisioner.created


def test_generic_ephemeral_volume_is_bound_like_a_claim(
    env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    local = storage.name("local")
    volume = storage.name("pv")
    storage.create(
        storage_class(local, env.id),
        persistent_volume(volume, env.id, "1Gi", class_name=local, node=nodes[1]),
    )
    _wait_volumes_available(storage, [volume])
    env.create(
        env.pod(
            "app",
            scheduler=scheduler_name,
            volumes=[ephemeral_volume("scratch", "1Gi", class_name=local)],
        )
    )

    assert env.wait_bound("app") == nodes[1]
    _assert_scheduled(env, "app", nodes[1], scheduler_name)
    # The controller named the claim after the pod and the volume, and the pod owns it.
    created = _assert_bound_to(storage, "app-scratch", volume)
    pod = env.get_pod("app")
    assert pod is not None
    [owner] = created["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "app", pod["metadata"]["uid"])
    assert owner["controller"] is True


def test_bound_volume_in_a_zone_no_node_has(
    kube: Kubectl, env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2, labels=[{ZONE_LABEL: "zone-a"}, {ZONE_LABEL: "zone-b"}])
    _bound_claims(storage, ["data"], labels={ZONE_LABEL: "zone-nowhere"})
    pod = env.pod("app", scheduler=scheduler_name, volumes=[claim_volume("data")])
    env.create(pod)

    _wait_message(
        kube,
        env,
        pod,
        _on_own_nodes(pod, dict.fromkeys(nodes, NO_VOLUME_ZONE)),
        scheduler_name=scheduler_name,
    )


def test_missing_claim_rejects_the_pod_until_it_is_created(
    kube: Kubectl, env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    local = storage.name("local")
    volume = storage.name("pv")
    storage.create(
        storage_class(local, env.id),
        persistent_volume(volume, env.id, "1Gi", class_name=local, node=nodes[1]),
    )
    _wait_volumes_available(storage, [volume])
    pod = env.pod("app", scheduler=scheduler_name, volumes=[claim_volume("data")])
    env.create(pod)

    _wait_message(
        kube,
        env,
        pod,
        _prefilter_message('persistentvolumeclaim "data" not found'),
        scheduler_name=scheduler_name,
    )

    storage.create(claim("data", env.namespace, "1Gi", class_name=local))
    assert env.wait_bound("app") == nodes[1]
    _assert_scheduled(env, "app", nodes[1], scheduler_name)
    _assert_bound_to(storage, "data", volume)


def test_read_write_once_pod_claim_in_use_keeps_a_second_pod_pending(
    kube: Kubectl, env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    _bound_claims(storage, ["data"], access_modes=RWOP)
    env.create(
        env.pod(
            "holder",
            scheduler=scheduler_name,
            priority_class="e2e-p10",
            volumes=[claim_volume("data")],
        )
    )
    holder_node = env.wait_bound("holder")
    assert holder_node in nodes

    second = env.pod(
        "second", scheduler=scheduler_name, priority_class="e2e-p10", volumes=[claim_volume("data")]
    )
    env.create(second)
    # Every node fails (the claim is in use anywhere), but only as Unschedulable: preemption
    # looks at both nodes and finds no lower-priority pod to evict.
    _wait_message(
        kube,
        env,
        second,
        _on_own_nodes(second, dict.fromkeys(nodes, RWOP_IN_USE), dict.fromkeys(nodes, NO_VICTIMS)),
        scheduler_name=scheduler_name,
    )

    def still_pending() -> bool:
        pod = env.get_pod("second")
        holder = env.get_pod("holder")
        return (
            pod is not None
            and node_name(pod) is None
            and (pod.get("status") or {}).get("phase") == "Pending"
            and holder is not None
            and node_name(holder) == holder_node
        )

    assert holds_for(still_pending, seconds=2), env.watch.summary()
    assert env.watch.terminating("holder") is None


def test_read_write_once_pod_preemption_evicts_exactly_the_holder(
    env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    free_node, holder_node = env.create_nodes(2)
    _bound_claims(storage, ["data"], access_modes=RWOP)
    pinned = {HOSTNAME_LABEL: holder_node}
    env.create(
        env.pod(
            "holder",
            scheduler=scheduler_name,
            priority_class="e2e-p10",
            grace=2,
            node_selector=pinned,
            volumes=[claim_volume("data")],
        ),
        env.pod(
            "bystander",
            scheduler=scheduler_name,
            priority_class="e2e-p10",
            grace=2,
            node_selector=pinned,
        ),
    )
    assert env.wait_bound("holder") == holder_node
    assert env.wait_bound("bystander") == holder_node

    # The other node is empty, yet only evicting the holder frees the claim.
    env.create(
        env.pod(
            "high",
            scheduler=scheduler_name,
            priority_class="e2e-p100",
            volumes=[claim_volume("data")],
        )
    )
    nominated = env.watch.wait_first(
        lambda e: nominated_node(e.pod) is not None, name="high", timeout=30, what="high nominated"
    )
    assert nominated_node(nominated.pod) == holder_node
    assert env.wait_bound("high", timeout=30) == holder_node
    _assert_scheduled(env, "high", holder_node, scheduler_name)

    marked = env.watch.with_condition("holder", "DisruptionTarget")
    assert marked is not None, env.watch.summary()
    target = condition(marked.pod, "DisruptionTarget")
    assert target is not None and target["reason"] == "PreemptionByScheduler"
    assert target["message"] == DISRUPTION_MESSAGE.format(scheduler_name)
    [preempted] = env.wait_event("holder", "Preempted")
    assert preempted["reportingController"] == scheduler_name
    assert preempted["note"] == (
        f"Preempted by pod {nominated.pod['metadata']['uid']} on node {holder_node}"
    )
    deleted = env.watch.deleted("holder")
    bound = env.watch.bound("high")
    assert deleted is not None and bound is not None and deleted.index < bound.index
    assert env.watch.terminating("bystander") is None
    assert env.watch.with_condition("bystander", "DisruptionTarget") is None
    assert env.watch.ever_bound_to("high") == {holder_node}
    assert not [e for e in env.watch.events() if node_name(e.pod) == free_node]


def test_csi_attach_limit_counts_volumes_per_node(
    kube: Kubectl, env: TestEnv, storage: TestStorage, scheduler_name: str
) -> None:
    nodes = env.create_nodes(2)
    storage.create(*(csi_node(node, env.id, ATTACH_DRIVER, 1) for node in nodes))
    names = ["vol-a", "vol-b", "vol-c"]
    _bound_claims(storage, names, csi_driver=ATTACH_DRIVER)

    def uses(pod_name: str, claim_name: str) -> dict[str, Any]:
        return env.pod(pod_name, scheduler=scheduler_name, volumes=[claim_volume(claim_name)])

    env.create(uses("a", "vol-a"))
    first = env.wait_bound("a")
    env.create(uses("b", "vol-b"))
    second = env.wait_bound("b")
    assert {first, second} == set(nodes)
    # vol-a is attached to the first node already, so a second user fits there (and only there).
    env.create(uses("a-again", "vol-a"))
    assert env.wait_bound("a-again") == first

    third = uses("c", "vol-c")
    env.create(third)
    _wait_message(
        kube,
        env,
        third,
        _on_own_nodes(
            third, dict.fromkeys(nodes, MAX_VOLUME_COUNT), dict.fromkeys(nodes, NO_VICTIMS)
        ),
        scheduler_name=scheduler_name,
    )
