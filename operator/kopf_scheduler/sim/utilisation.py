"""How full each node is: the requests of the pods bound to it against what it offers.

A node's utilisation is the sum of the requests of its pods that have not finished (a Succeeded
or Failed pod holds nothing) beside its allocatable, per resource: CPU in millicores, memory in
bytes, the number of pods, and each extended resource the node offers or its pods request. These
are the amounts NodeResourcesFit compares, so a node near full is one the next pod of that size
does not fit. ``simulate`` reports it at the start of the run and at its end, ``capacity``'s
matrix before the first copy and after the last. A node or pod the scheduler ignores as malformed
(a quantity it cannot read) is left out here as well.

Given the ResourceSlices and ResourceClaims, a node also counts its DRA devices per driver
(``devices/<driver>``): the devices of the pools its node-local slices publish (the newest
generation of each pool, as the allocator sees them) against those an allocated claim holds.
Devices of slices shared by several nodes (``allNodes``, a ``nodeSelector``) belong to no one
node and are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.dra.objects import DeviceID, ResourceSlice
from kopf_scheduler.dra.pools import gather_pools
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.resources import CPU, MEMORY, PODS, pod_requests

BASIC_RESOURCES = (CPU, MEMORY, PODS)
"""Shown for every node, in this order; extended resources and devices follow, by name."""
DEVICES = "devices/"
"""The prefix of a driver's DRA devices among the resources (``devices/gpu.example.com``)."""


@dataclass
class Utilisation:
    """One node's (or the cluster's) requested and allocatable amounts, by resource name."""

    requested: dict[str, int]
    allocatable: dict[str, int]


def node_utilisation(
    nodes: Mapping[str, Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    slices: Iterable[Mapping[str, Any]] = (),
    claims: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Utilisation]:
    """Each node's utilisation, in the order of ``nodes``, from the pods bound to it (and the
    DRA devices of ``slices`` that ``claims`` hold)."""
    result: dict[str, Utilisation] = {}
    for name, raw in nodes.items():
        try:
            allocatable = Node(raw).allocatable
        except InvalidObjectError:
            continue
        offered = {CPU: allocatable.milli_cpu, MEMORY: allocatable.memory}
        offered[PODS] = allocatable.allowed_pod_number
        offered.update(sorted((key, value) for key, value in allocatable.scalar.items() if value))
        result[name] = Utilisation(dict.fromkeys(offered, 0), offered)
    for pod in pods:
        spec = pod.get("spec") or {}
        entry = result.get(spec.get("nodeName") or "")
        if entry is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        try:
            requests = pod_requests(spec)
        except InvalidObjectError:
            continue
        used = entry.requested
        used[CPU] += requests.milli_cpu
        used[MEMORY] += requests.memory
        used[PODS] += 1
        for key, value in requests.scalar.items():
            if value:
                used[key] = used.get(key, 0) + value
                entry.allocatable.setdefault(key, 0)
    _count_devices(result, slices, claims)
    return result


def _count_devices(
    result: dict[str, Utilisation],
    slices: Iterable[Mapping[str, Any]],
    claims: Iterable[Mapping[str, Any]],
) -> None:
    by_node: dict[str, list[ResourceSlice]] = {}
    for raw in slices:
        try:
            resource_slice = ResourceSlice(raw)
        except InvalidObjectError:
            continue  # the scheduler's inventory leaves a malformed slice out too
        if resource_slice.node_name in result and not resource_slice.per_device_node_selection:
            by_node.setdefault(resource_slice.node_name, []).append(resource_slice)
    owner: dict[DeviceID, str] = {}
    for node, node_slices in by_node.items():
        offered = result[node].allocatable
        for pool in gather_pools(node_slices):
            for candidate in pool.candidates:
                owner[candidate.id] = node
                key = DEVICES + pool.driver
                offered[key] = offered.get(key, 0) + 1
                result[node].requested.setdefault(key, 0)
    for raw in claims:
        for held in _allocated(raw):
            device = DeviceID(
                str(held.get("driver")), str(held.get("pool")), str(held.get("device"))
            )
            holder = owner.get(device)
            if holder is not None:
                result[holder].requested[DEVICES + device.driver] += 1


def _allocated(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The device results of a claim's allocation (none when it is not allocated)."""
    found: Any = claim
    for field in ("status", "allocation", "devices", "results"):
        found = found.get(field) if isinstance(found, Mapping) else None
    return [held for held in found or () if isinstance(held, Mapping)]


def resources_of(utilisations: Iterable[Utilisation]) -> list[str]:
    """The resources any of ``utilisations`` has: the basic ones, then the extended by name."""
    extended = {key for each in utilisations for key in each.allocatable} - set(BASIC_RESOURCES)
    return [*BASIC_RESOURCES, *sorted(extended)]


def total(utilisations: Iterable[Utilisation], resources: Iterable[str]) -> Utilisation:
    """The sum over nodes, with every one of ``resources`` (0 where no node has it)."""
    every = list(utilisations)
    return Utilisation(
        {key: sum(each.requested.get(key, 0) for each in every) for key in resources},
        {key: sum(each.allocatable.get(key, 0) for each in every) for key in resources},
    )
