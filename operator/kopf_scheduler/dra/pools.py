"""Resource pools as a node sees them: its drivers' slices, grouped, newest generation only.

A driver publishes the devices of a pool in one or more ResourceSlices that share the pool's
name and generation. For one node, upstream's ``GatherPools`` takes the slices that are
available there (``nodeName`` equal to the node's, ``allNodes``, or a ``nodeSelector`` that
matches it), keeps per pool only the slices of the highest generation seen, and records two
facts the allocator needs: a pool with fewer slices than ``resourceSliceCount`` is incomplete
(being updated), and a pool that lists a device name twice is invalid ("duplicate device name
X"). Slices with ``perDeviceNodeSelection`` belong to partitionable devices (alpha, off in v1.34)
and are left out, as are slices that set none of the node fields (a future extension).

Devices with binding conditions (alpha, off) are never allocated, but, as upstream, slices that
list such devices are added after the others and pools that contain them come last, so the
other devices of such pools are tried after everything else.

Pools are listed in the order their first slice appears in the input. Upstream collects them in
a Go map, so its order between pools is random: when devices of two pools would both do, either
may be picked there, while here it is always the same one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kopf_scheduler.dra.objects import Device, DeviceID, ResourceSlice


class Candidate(NamedTuple):
    """One device of a pool, in the order the search visits them."""

    id: DeviceID
    device: Device
    slice: ResourceSlice
    position: int
    """The device's index in its slice."""


@dataclass(slots=True)
class Pool:
    """The slices of one pool (driver and pool name) that a node can use.

    Never changed once gathered, so one pool may serve many searches.
    """

    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid_reason: str | None = None
    candidates: tuple[Candidate, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


class SliceIndex:
    """Every usable slice, indexed so a node's pools are found without visiting all slices."""

    __slots__ = ("_by_node_name", "_elsewhere", "selects_by_label", "slices")

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.slices = tuple(slices)
        self._by_node_name: dict[str, list[int]] = defaultdict(list)
        self._elsewhere: list[int] = []
        for position, resource_slice in enumerate(self.slices):
            if resource_slice.per_device_node_selection:
                continue
            if resource_slice.node_name:
                self._by_node_name[resource_slice.node_name].append(position)
            elif resource_slice.all_nodes or resource_slice.node_selector is not None:
                self._elsewhere.append(position)
        self.selects_by_label = any(
            self.slices[position].node_selector is not None for position in self._elsewhere
        )
        """Whether a node's labels matter to which pools it sees."""

    def available(self, node_name: str, labels: Mapping[str, str]) -> list[ResourceSlice]:
        """The slices available on the node, those with binding conditions last."""
        positions = list(self._by_node_name.get(node_name, ()))
        for position in self._elsewhere:
            resource_slice = self.slices[position]
            if resource_slice.all_nodes or (
                resource_slice.node_selector is not None
                and resource_slice.node_selector.matches(node_name, labels)
            ):
                positions.append(position)
        positions.sort()
        positions.sort(key=lambda position: self.slices[position].has_binding_conditions)
        return [self.slices[position] for position in positions]


def gather_pools(available: Sequence[ResourceSlice]) -> list[Pool]:
    """The pools of these slices (see :meth:`SliceIndex.available`), in the order of their first
    slice, newest generation only, those with binding conditions last."""
    pools: dict[tuple[str, str], Pool] = {}
    for resource_slice in available:
        key = (resource_slice.driver, resource_slice.pool)
        pool = pools.get(key)
        if pool is None:
            pools[key] = Pool(resource_slice.driver, resource_slice.pool, [resource_slice])
            continue
        current = pool.slices[0].generation
        if resource_slice.generation < current:
            continue
        if resource_slice.generation > current:
            pool.slices.clear()
        pool.slices.append(resource_slice)
    for pool in pools.values():
        pool.incomplete = len(pool.slices) != pool.slices[0].slice_count
        pool.invalid_reason = _duplicate_device(pool)
        pool.candidates = tuple(
            Candidate(DeviceID(pool.driver, pool.name, device.name), device, s, index)
            for s in pool.slices
            for index, device in enumerate(s.devices)
        )
    return sorted(
        pools.values(),
        key=lambda pool: any(s.has_binding_conditions for s in pool.slices),
    )


def _duplicate_device(pool: Pool) -> str | None:
    seen: set[str] = set()
    for resource_slice in pool.slices:
        for device in resource_slice.devices:
            if device.name in seen:
                return f"duplicate device name {device.name}"
            seen.add(device.name)
    return None
