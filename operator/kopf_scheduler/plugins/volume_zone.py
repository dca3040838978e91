"""VolumeZone: keep a pod in the zone and region of the PersistentVolumes its claims are bound to.

PreFilter follows each ``persistentVolumeClaim`` volume of the pod to its claim and, when the
claim names a volume (``spec.volumeName``, bind-completed or not), to that PersistentVolume, and
collects the volume's topology labels: ``topology.kubernetes.io/zone`` and ``/region`` and their
legacy ``failure-domain.beta.kubernetes.io`` forms. A label's value may list several zones joined
by ``__``; a value with an empty element is ignored, as upstream does. A claim without a volume
is skipped when its StorageClass waits for the first consumer (VolumeBinding will choose a
volume that fits the node); any other way of missing something rejects the pod as
UnschedulableAndUnresolvable:

- claim, StorageClass or PersistentVolume missing: the API's not-found text, e.g.
  ``persistentvolumeclaim "data" not found``, ``storageclass.storage.k8s.io "fast" not found``,
  ``persistentvolume "pv-1" not found``;
- claim without a volume and without a class: ``PersistentVolumeClaim had no pv name and
  storageClass name``;
- claim without a volume whose class binds immediately: ``PersistentVolume had no name``.

(Upstream also rejects a class whose ``volumeBindingMode`` is unset; the API server always sets
it, and our StorageClass view reads an unset mode as its default, Immediate.)

A pod with no topology to respect skips the plugin. Filter lets every node without any of the
four labels through (a single-zone cluster often has none); on other nodes each collected label
must have the node's value for the same key among its zones, where a legacy key the node does
not carry is looked up under its GA name. A mismatch is UnschedulableAndUnresolvable with
``node(s) had no available volume zone``: evicting pods never moves a volume. The volume's node
affinity is VolumeBinding's business and is not looked at here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import (
    LEGACY_REGION_LABEL,
    LEGACY_ZONE_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import PERSISTENT_VOLUME_CLAIM
from kopf_scheduler.model.storage import (
    MULTI_ZONE_DELIMITER,
    PersistentVolume,
    StorageClass,
)
from kopf_scheduler.plugins.claim_hints import claim_change_hint

NAME = "VolumeZone"
REASON_CONFLICT = "node(s) had no available volume zone"
REASON_NO_VOLUME_NOR_CLASS = "PersistentVolumeClaim had no pv name and storageClass name"
REASON_NO_VOLUME_NAME = "PersistentVolume had no name"

TOPOLOGY_LABELS = (LEGACY_ZONE_LABEL, LEGACY_REGION_LABEL, ZONE_LABEL, REGION_LABEL)
"""The labels compared, in the order upstream reads them off a volume."""
GA_LABEL_OF = {LEGACY_ZONE_LABEL: ZONE_LABEL, LEGACY_REGION_LABEL: REGION_LABEL}


class VolumeTopology:
    """One topology label of one volume: the key and the zones (or regions) it allows."""

    __slots__ = ("key", "values", "volume_name")

    def __init__(self, volume_name: str, key: str, values: frozenset[str]) -> None:
        self.volume_name = volume_name
        self.key = key
        self.values = values

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VolumeTopology):
            return NotImplemented
        return (self.volume_name, self.key, self.values) == (
            other.volume_name,
            other.key,
            other.values,
        )

    def __hash__(self) -> int:
        return hash((self.volume_name, self.key, self.values))

    def __repr__(self) -> str:
        return f"VolumeTopology({self.volume_name}, {self.key}={sorted(self.values)})"


def split_zones(value: str) -> frozenset[str] | None:
    """The zones of a label value (``a__b`` is two), trimmed; ``None`` if one of them is empty."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


def volume_topologies(volume: PersistentVolume) -> list[VolumeTopology]:
    """The volume's readable topology labels, in :data:`TOPOLOGY_LABELS` order."""
    topologies: list[VolumeTopology] = []
    for key in TOPOLOGY_LABELS:
        value = volume.labels.get(key)
        if value is None:
            continue
        zones = split_zones(value)
        if zones is not None:
            topologies.append(VolumeTopology(volume.name, key, zones))
    return topologies


def node_matches(labels: Mapping[str, str], topologies: list[VolumeTopology]) -> bool:
    """Whether a node with ``labels`` satisfies every volume topology (see the module docstring)."""
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return True
    for topology in topologies:
        value = labels.get(topology.key)
        if value is None:
            value = labels.get(GA_LABEL_OF.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return False
    return True


def _claim_names(pod: Pod) -> list[str]:
    return [
        volume.claim_name for volume in pod.volumes if volume.source_kind == PERSISTENT_VOLUME_CLAIM
    ]


def _not_found(resource: str, name: str) -> api.Status:
    return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f'{resource} "{name}" not found')


@dataclass(frozen=True, slots=True, eq=False)
class _PreFilterState(api.SharedState):
    """The topologies of the volumes the pod's claims name. Never modified, so clones share it."""

    topologies: list[VolumeTopology]


PRE_FILTER_KEY: api.StateKey[_PreFilterState] = api.StateKey("PreFilter" + NAME)


def _is_schedulable_after_claim_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when a claim the pod's ``persistentVolumeClaim`` volumes name appears or changes."""
    return claim_change_hint(pod, new, ephemeral=False)


def _is_schedulable_after_class_added(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue only for a class that waits for the first consumer: its claims are then skipped."""
    if not isinstance(new, StorageClass):
        return api.QueueingHint.QUEUE
    if new.waits_for_first_consumer:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _is_schedulable_after_volume_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue for every new volume, and for an update that changes its topology labels."""
    if not isinstance(new, PersistentVolume) or (
        old is not None and not isinstance(old, PersistentVolume)
    ):
        return api.QueueingHint.QUEUE
    if old is None or volume_topologies(old) != volume_topologies(new):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


class VolumeZone:
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle) -> None:
        self._handle = handle

    def pod_topologies(self, pod: Pod) -> tuple[list[VolumeTopology], api.Status]:
        """The topologies of the volumes the pod's claims name, or the status rejecting it."""
        storage = self._handle.storage
        topologies: list[VolumeTopology] = []
        for claim_name in _claim_names(pod):
            claim = storage.claim(pod.namespace, claim_name)
            if claim is None:
                return [], _not_found("persistentvolumeclaim", claim_name)
            if not claim.volume_name:
                class_name = claim.storage_class_name
                if not class_name:
                    return [], api.Status(
                        api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_NO_VOLUME_NOR_CLASS
                    )
                storage_class = storage.storage_class(class_name)
                if storage_class is None:
                    return [], _not_found("storageclass.storage.k8s.io", class_name)
                if storage_class.waits_for_first_consumer:
                    continue
                return [], api.Status(
                    api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_NO_VOLUME_NAME
                )
            volume = storage.volume(claim.volume_name)
            if volume is None:
                return [], _not_found("persistentvolume", claim.volume_name)
            topologies.extend(volume_topologies(volume))
        return topologies, api.SUCCESS

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        topologies, status = self.pod_topologies(pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, api.SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(topologies))
        return None, api.SUCCESS

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        if not pod.volumes:
            return api.SUCCESS
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is not None:
            topologies = pre_filter.topologies
        else:
            topologies, status = self.pod_topologies(pod)
            if not status.is_success():
                return status
        node = node_info.node
        if node is None:
            return api.Status(api.Code.ERROR, "node not found")
        if node_matches(node.labels, topologies):
            return api.SUCCESS
        return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            # A class's binding mode is immutable: only a new class can change the outcome.
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.STORAGE_CLASS, api.ActionType.ADD),
                _is_schedulable_after_class_added,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_LABEL
                )
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.PERSISTENT_VOLUME_CLAIM,
                    api.ActionType.ADD | api.ActionType.UPDATE_GENERIC,
                ),
                _is_schedulable_after_claim_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.PERSISTENT_VOLUME,
                    api.ActionType.ADD | api.ActionType.UPDATE_GENERIC,
                ),
                _is_schedulable_after_volume_change,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> VolumeZone:
    api.reject_unknown(api.ensure_mapping(args), set())
    return VolumeZone(handle)
