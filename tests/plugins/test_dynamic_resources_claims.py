"""DynamicResources for pods with ResourceClaims, point by point, modelled on the cases of
upstream's dynamicresources_test.go: claims missing, being deleted, not owned, not yet made from
their template; missing classes and request shapes; allocation on the node that has the devices
and not on the others; a claim allocated for another node; in-flight allocations between
Reserve and PreBind; PreBind's writes with their conflict handling; Unreserve; and the queueing
hints. The claim writer is the simulator's in-memory API server."""

from __future__ import annotations

import copy
from collections.abc import Coroutine
from typing import Any

import pytest

from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resource_claim import FINALIZER, ResourceClaim
from kopf_scheduler.plugins import dynamic_resources
from kopf_scheduler.plugins.dynamic_resources import (
    CANNOT_ALLOCATE,
    DEALLOCATED,
    NOT_AVAILABLE_ON_NODE,
    STILL_NOT_SCHEDULABLE,
    DynamicResources,
)
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_node, make_pod, node_info

DRIVER = "gpu.example.com"
POD_UID = "pod-uid-1"


def device_class(name: str = "gpu") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def resource_slice(node: str, *devices: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": device} for device in devices],
        },
    }


def claim(
    name: str = "my-claim",
    *,
    class_name: str = "gpu",
    count: int = 1,
    request: dict[str, Any] | None = None,
) -> dict[str, Any]:
    exactly = {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {"requests": [request or {"name": "req-1", "exactly": exactly}]},
        },
    }


def allocated_on(raw: dict[str, Any], node: str, device: str, *consumers: str) -> dict[str, Any]:
    """The claim allocated one device of ``node``, reserved for ``consumers`` (pod UIDs)."""
    raw = copy.deepcopy(raw)
    raw["metadata"]["finalizers"] = [FINALIZER]
    raw["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "req-1", "driver": DRIVER, "pool": node, "device": device}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
    }
    if consumers:
        raw["status"]["reservedFor"] = [
            {"resource": "pods", "name": uid, "uid": uid} for uid in consumers
        ]
    return raw


def pod_with(*entries: dict[str, Any], statuses: list[dict[str, Any]] | None = None) -> Pod:
    raw = make_pod("p").uid(POD_UID).obj()
    raw["spec"]["resourceClaims"] = list(entries)
    if statuses is not None:
        raw["status"]["resourceClaimStatuses"] = statuses
    return Pod(raw)


BY_NAME = {"name": "gpu", "resourceClaimName": "my-claim"}


class World:
    """The API server (in memory), the scheduler's DRA cache fed from it, and the plugin."""

    def __init__(self, *objects: dict[str, Any], filter_timeout: str = "10s") -> None:
        self.api = InMemoryCluster(VirtualClock())
        self.dra = DraCache()
        self.api.subscribe(self._deliver)
        self.spawned: list[Coroutine[Any, Any, None]] = []
        self.handle = Handle(
            dra=self.dra, claim_writer=self.api, spawn=self.spawned.append, now=lambda: 0.0
        )
        self.plugin: DynamicResources = dynamic_resources.new(
            {"filterTimeout": filter_timeout}, self.handle
        )
        for raw in objects:
            self.api.create(raw)

    def _deliver(self, kind: str, event_type: str, raw: Any) -> None:
        if kind == "DeviceClass":
            self.dra.classes[raw["metadata"]["name"]] = raw
        elif kind == "ResourceSlice":
            self.dra.slices[raw["metadata"]["name"]] = raw
        elif kind == "ResourceClaim":
            if event_type == "DELETED":
                self.dra.delete_claim(f"default/{raw['metadata']['name']}")
            else:
                self.dra.put_claim(ResourceClaim(raw))

    def stored_claim(self, name: str = "my-claim") -> dict[str, Any]:
        return self.api.storage["ResourceClaim"][f"default/{name}"]

    async def run_spawned(self) -> None:
        while self.spawned:
            await self.spawned.pop(0)

    def pre_filter(self, pod: Pod) -> tuple[CycleState, Status]:
        state = CycleState()
        result, status = self.plugin.pre_filter(state, pod, [])
        assert result is None
        return state, status


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)


# PreEnqueue and PreFilter: the pod's claims ------------------------------------------------------


def _owned(raw: dict[str, Any], uid: str = POD_UID) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    raw["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": uid, "controller": True}
    ]
    return raw


def _deleting(raw: dict[str, Any]) -> dict[str, Any]:
    raw = copy.deepcopy(raw)
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    raw["metadata"]["finalizers"] = ["example.com/keep"]
    return raw


TEMPLATE_ENTRY = {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}


@pytest.mark.parametrize(
    ("objects", "pod", "message"),
    [
        pytest.param(
            [],
            pod_with(BY_NAME),
            'could not find ResourceClaim "default/my-claim"',
            id="claim-missing",
        ),
        pytest.param(
            [],
            pod_with(TEMPLATE_ENTRY),
            'pod "default/p": ResourceClaim not created yet',
            id="template-claim-not-created-yet",
        ),
        pytest.param(
            [claim()],
            pod_with(TEMPLATE_ENTRY, statuses=[{"name": "gpu", "resourceClaimName": "my-claim"}]),
            "ResourceClaim default/my-claim was not created for pod default/p (pod is not owner)",
            id="template-claim-not-owned",
        ),
        pytest.param(
            [_owned(claim(), uid="someone-else")],
            pod_with(TEMPLATE_ENTRY, statuses=[{"name": "gpu", "resourceClaimName": "my-claim"}]),
            "ResourceClaim default/my-claim was not created for pod default/p (pod is not owner)",
            id="template-claim-owned-by-another-pod",
        ),
        pytest.param(
            [_deleting(claim())],
            pod_with(BY_NAME),
            'resourceclaim "my-claim" is being deleted',
            id="claim-being-deleted",
        ),
        pytest.param(
            [],
            pod_with({"name": "gpu"}),
            'pod "default/p", spec.resourceClaim "gpu": none of the supported fields are set',
            id="entry-names-nothing",
        ),
    ],
)
def test_claims_not_ready_keep_the_pod_out(
    objects: list[dict[str, Any]], pod: Pod, message: str
) -> None:
    world = World(device_class(), *objects)
    assert world.plugin.pre_enqueue(pod) == _unresolvable(message)
    assert world.pre_filter(pod)[1] == _unresolvable(message)


def test_owned_template_claim_passes_pre_enqueue() -> None:
    world = World(device_class(), _owned(claim()))
    pod = pod_with(TEMPLATE_ENTRY, statuses=[{"name": "gpu", "resourceClaimName": "my-claim"}])
    assert world.plugin.pre_enqueue(pod).is_success()


def test_template_entry_that_needed_no_claim_skips() -> None:
    world = World(device_class())
    pod = pod_with(TEMPLATE_ENTRY, statuses=[{"name": "gpu"}])
    assert world.plugin.pre_enqueue(pod).is_success()
    assert world.pre_filter(pod)[1].code == Code.SKIP


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        pytest.param(
            claim(class_name="missing"),
            _unresolvable("request req-1: device class missing does not exist"),
            id="class-missing",
        ),
        pytest.param(
            claim(request={"name": "req-1", "exactly": {"deviceClassName": ""}}),
            Status(Code.ERROR, "request req-1: unsupported request type"),
            id="class-name-empty",
        ),
        pytest.param(
            claim(
                request={
                    "name": "req-1",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "gpu"},
                        {"name": "small", "deviceClassName": "small-gpu"},
                    ],
                }
            ),
            _unresolvable("request req-1/small: device class small-gpu does not exist"),
            id="subrequest-class-missing",
        ),
        pytest.param(
            claim(request={"name": "req-1"}),
            _unresolvable("resource claim default/my-claim, request req-1: unknown request type"),
            id="request-of-unknown-type",
        ),
    ],
)
def test_requests_are_checked_in_pre_filter(raw: dict[str, Any], status: Status) -> None:
    world = World(device_class(), raw)
    assert world.pre_filter(pod_with(BY_NAME))[1] == status


# Filter, Reserve, PreBind: a claim to allocate ---------------------------------------------------


def _filter(world: World, state: CycleState, pod: Pod, node: str) -> Status:
    return world.plugin.filter(state, pod, node_info(make_node(node)))


def test_allocates_on_the_node_with_a_free_device_and_not_elsewhere() -> None:
    world = World(device_class(), resource_slice("n1", "gpu-0"), claim())
    pod = pod_with(BY_NAME)
    state, status = world.pre_filter(pod)
    assert status.is_success()
    assert _filter(world, state, pod, "n2") == _unresolvable(CANNOT_ALLOCATE)
    assert _filter(world, state, pod, "n1").is_success()


def test_devices_of_allocated_claims_are_taken() -> None:
    other = allocated_on(claim("other"), "n1", "gpu-0", "other-pod")
    world = World(device_class(), resource_slice("n1", "gpu-0"), other, claim())
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    assert _filter(world, state, pod, "n1") == _unresolvable(CANNOT_ALLOCATE)


async def test_reserve_then_prebind_writes_allocation_reservation_and_finalizer() -> None:
    world = World(device_class(), resource_slice("n1", "gpu-0"), claim())
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    assert _filter(world, state, pod, "n1").is_success()
    assert world.plugin.reserve(state, pod, "n1").is_success()
    claim_uid = world.stored_claim()["metadata"]["uid"]
    assert world.dra.has_pending_allocation(claim_uid)
    # While in flight, the device counts as taken and the claim waits.
    assert len(world.dra.allocated_devices()) == 1
    second = Pod({**pod.raw, "metadata": {**pod.raw["metadata"], "uid": "pod-uid-2"}})
    assert world.pre_filter(second)[1] == _unresolvable(
        "resource claim default/my-claim is in the process of being allocated"
    )

    assert (await world.plugin.pre_bind(state, pod, "n1")).is_success()
    stored = world.stored_claim()
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    results = stored["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [("n1", "gpu-0")]
    assert stored["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": POD_UID}]
    assert not world.dra.has_pending_allocation(claim_uid)
    seen = world.dra.claim("default", "my-claim")
    assert seen is not None
    assert seen.resource_version == stored["metadata"]["resourceVersion"]
    assert len(world.dra.allocated_devices()) == 1


async def test_shared_claim_already_allocated_is_only_reserved() -> None:
    shared = allocated_on(claim(), "n1", "gpu-0", "first-pod")
    world = World(device_class(), resource_slice("n1", "gpu-0"), shared)
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    assert _filter(world, state, pod, "n2") == _unresolvable(NOT_AVAILABLE_ON_NODE)
    assert _filter(world, state, pod, "n1").is_success()
    assert world.plugin.reserve(state, pod, "n1").is_success()
    assert (await world.plugin.pre_bind(state, pod, "n1")).is_success()
    reserved = [entry["uid"] for entry in world.stored_claim()["status"]["reservedFor"]]
    assert reserved == ["first-pod", POD_UID]


def test_unreserve_forgets_the_in_flight_allocation() -> None:
    world = World(device_class(), resource_slice("n1", "gpu-0"), claim())
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    _filter(world, state, pod, "n1")
    world.plugin.reserve(state, pod, "n1")
    world.plugin.unreserve(state, pod, "n1")
    assert world.dra.allocated_devices() == set()
    assert world.pre_filter(pod)[1].is_success()


def test_a_reserved_allocation_is_the_claims_own_copy() -> None:
    """Pods asking the same get the allocator's kept answer; what Reserve hands on to PreBind
    may be changed there without changing what the next pod is told."""
    world = World(device_class(), resource_slice("n1", "gpu-0", "gpu-1"), claim("c1"), claim("c2"))
    first = pod_with({"name": "gpu", "resourceClaimName": "c1"})
    state, _ = world.pre_filter(first)
    assert _filter(world, state, first, "n1").is_success()
    assert world.plugin.reserve(state, first, "n1").is_success()
    in_flight = world.dra.pending_allocation(world.stored_claim("c1")["metadata"]["uid"])
    assert in_flight is not None
    in_flight["status"]["allocation"]["devices"]["results"][0]["device"] = "changed"
    world.plugin.unreserve(state, first, "n1")

    raw = make_pod("q").uid("pod-uid-2").obj()
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "c2"}]
    second = Pod(raw)
    state, _ = world.pre_filter(second)
    assert _filter(world, state, second, "n1").is_success()
    assert world.plugin.reserve(state, second, "n1").is_success()
    allocated = world.dra.pending_allocation(world.stored_claim("c2")["metadata"]["uid"])
    assert allocated is not None
    results = allocated["status"]["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == ["gpu-0"]


async def test_unreserve_takes_the_pod_out_of_reserved_for() -> None:
    mine = allocated_on(claim(), "n1", "gpu-0", "first-pod", POD_UID)
    world = World(device_class(), mine)
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    world.plugin.unreserve(state, pod, "n1")
    await world.run_spawned()
    reserved = [entry["uid"] for entry in world.stored_claim()["status"]["reservedFor"]]
    assert reserved == ["first-pod"]


class _ConflictOnce:
    """The API server, with someone else's write landing right before the scheduler's first."""

    def __init__(self, world: World, change: Any) -> None:
        self._world = world
        self._change = change
        self._done = False

    async def get_resource_claim(self, namespace: str, name: str) -> Any:
        return await self._world.api.get_resource_claim(namespace, name)

    async def update_resource_claim(self, raw: Any) -> Any:
        await self._interfere()
        return await self._world.api.update_resource_claim(raw)

    async def update_resource_claim_status(self, raw: Any) -> Any:
        await self._interfere()
        return await self._world.api.update_resource_claim_status(raw)

    async def remove_resource_claim_reservation(self, *args: Any) -> None:
        await self._world.api.remove_resource_claim_reservation(*args)

    async def _interfere(self) -> None:
        if not self._done:
            self._done = True
            stored = copy.deepcopy(self._world.stored_claim())
            self._change(stored)
            await self._world.api.update_resource_claim(stored)
            stored["metadata"] = self._world.stored_claim()["metadata"]
            await self._world.api.update_resource_claim_status(stored)


async def _bind_with_interference(change: Any) -> tuple[World, Status]:
    world = World(device_class(), resource_slice("n1", "gpu-0"), claim())
    world.handle.claim_writer = _ConflictOnce(world, change)
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    _filter(world, state, pod, "n1")
    world.plugin.reserve(state, pod, "n1")
    return world, await world.plugin.pre_bind(state, pod, "n1")


async def test_prebind_retries_after_a_conflict() -> None:
    def annotate(stored: dict[str, Any]) -> None:
        stored["metadata"]["labels"] = {"team": "a"}

    world, status = await _bind_with_interference(annotate)
    assert status.is_success()
    assert world.stored_claim()["status"]["allocation"] is not None


async def test_prebind_fails_when_the_claim_got_allocated_elsewhere() -> None:
    def allocate_elsewhere(stored: dict[str, Any]) -> None:
        stored["status"] = allocated_on(stored, "n2", "gpu-9")["status"]

    world, status = await _bind_with_interference(allocate_elsewhere)
    assert status == Status(
        Code.ERROR, "claim default/my-claim got allocated elsewhere in the meantime"
    )
    assert not world.dra.has_pending_allocation(world.stored_claim()["metadata"]["uid"])


async def test_prebind_reports_a_claim_deleted_meanwhile() -> None:
    world = World(device_class(), resource_slice("n1", "gpu-0"), claim())
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    _filter(world, state, pod, "n1")
    world.plugin.reserve(state, pod, "n1")
    world.api.delete_object("ResourceClaim", "default/my-claim")
    status = await world.plugin.pre_bind(state, pod, "n1")
    assert status.code == Code.ERROR
    assert status.message() == (
        'add finalizer to claim default/my-claim: resourceclaims.resource.k8s.io "my-claim" '
        "not found"
    )


# PostFilter -------------------------------------------------------------------------------------


async def test_post_filter_deallocates_a_claim_no_node_could_use() -> None:
    stuck = allocated_on(claim(), "gone-node", "gpu-0")
    world = World(device_class(), stuck)
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    assert _filter(world, state, pod, "n1") == _unresolvable(NOT_AVAILABLE_ON_NODE)
    assert world.plugin.post_filter(state, pod, NodeToStatus()) == (
        None,
        Status(Code.UNSCHEDULABLE, DEALLOCATED),
    )
    await world.run_spawned()
    assert "allocation" not in world.stored_claim()["status"]


async def test_post_filter_keeps_a_claim_other_pods_use() -> None:
    shared = allocated_on(claim(), "gone-node", "gpu-0", "other-pod")
    world = World(device_class(), shared)
    pod = pod_with(BY_NAME)
    state, _ = world.pre_filter(pod)
    _filter(world, state, pod, "n1")
    assert world.plugin.post_filter(state, pod, NodeToStatus()) == (
        None,
        Status(Code.UNSCHEDULABLE, STILL_NOT_SCHEDULABLE),
    )
    assert not world.spawned


# Queueing hints ---------------------------------------------------------------------------------


def test_claim_hints() -> None:
    world = World(device_class(), claim())
    pod = pod_with(BY_NAME)
    mine = world.dra.claim("default", "my-claim")
    assert mine is not None
    hint = world.plugin._after_claim_change
    other = ResourceClaim({**claim("other"), "metadata": {"name": "other", "uid": "x"}})
    other_allocated = ResourceClaim(allocated_on(other.raw, "n1", "gpu-0"))
    assert hint(pod, None, mine) == QueueingHint.QUEUE
    assert hint(pod, mine, mine) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, other) == QueueingHint.QUEUE_SKIP
    assert hint(pod, other_allocated, other) == QueueingHint.QUEUE
    changed = ResourceClaim(allocated_on(mine.raw, "n1", "gpu-0"))
    assert hint(pod, mine, changed) == QueueingHint.QUEUE
    waiting = pod_with(TEMPLATE_ENTRY)
    assert hint(waiting, None, mine) == QueueingHint.QUEUE_SKIP


def test_claim_hint_resolves_no_claim_of_the_pod_for_a_claim_not_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every claim event is put to every waiting pod; one that is none of the pod's claims and
    frees no device is skipped from the pod's claim names alone, before any claim lookup."""
    world = World(device_class(), claim())
    pod = pod_with(BY_NAME)
    hint = world.plugin._after_claim_change
    other_raw = {**claim("other"), "metadata": {"name": "other", "uid": "x"}}
    other = ResourceClaim(other_raw)
    other_allocated = ResourceClaim(allocated_on(other_raw, "n1", "gpu-0"))
    elsewhere = ResourceClaim(
        {**claim(), "metadata": {"name": "my-claim", "namespace": "team-b", "uid": "y"}}
    )
    looked_up: list[str] = []
    real_lookup = world.dra.claim

    def counted_lookup(namespace: str, name: str) -> ResourceClaim | None:
        looked_up.append(f"{namespace}/{name}")
        return real_lookup(namespace, name)

    monkeypatch.setattr(world.dra, "claim", counted_lookup)
    assert hint(pod, None, other) == QueueingHint.QUEUE_SKIP
    assert hint(pod, other, other_allocated) == QueueingHint.QUEUE_SKIP
    assert hint(pod, None, elsewhere) == QueueingHint.QUEUE_SKIP
    assert looked_up == []
    assert hint(pod, other_allocated, other) == QueueingHint.QUEUE
    assert looked_up == ["default/my-claim"]


def test_pod_names_its_claims_from_spec_and_recorded_statuses() -> None:
    assert pod_with(TEMPLATE_ENTRY).resource_claim_names == frozenset()
    recorded = pod_with(
        BY_NAME, TEMPLATE_ENTRY, statuses=[{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]
    )
    assert recorded.resource_claim_names == {"my-claim", "p-gpu-x1"}
    assert Pod(make_pod("plain").obj()).resource_claim_names == frozenset()


def test_pod_hint_waits_for_every_generated_claim() -> None:
    world = World(device_class(), _owned(claim()))
    waiting = pod_with(TEMPLATE_ENTRY)
    recorded = pod_with(TEMPLATE_ENTRY, statuses=[{"name": "gpu", "resourceClaimName": "my-claim"}])
    hint = world.plugin._after_pod_change
    assert hint(waiting, waiting, recorded) == QueueingHint.QUEUE
    assert hint(waiting, recorded, waiting) == QueueingHint.QUEUE_SKIP
    stranger = Pod({**recorded.raw, "metadata": {**recorded.raw["metadata"], "uid": "other"}})
    assert hint(waiting, waiting, stranger) == QueueingHint.QUEUE_SKIP
