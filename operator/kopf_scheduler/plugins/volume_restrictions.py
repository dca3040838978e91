"""VolumeRestrictions: volumes that only one pod may use at a time.

Two kinds of exclusive volume are enforced.

In-tree disks. A pod's GCE persistent disk, AWS EBS volume, Ceph RBD image or iSCSI target
conflicts with the same disk used by a pod already on the node:

- GCE PD: same ``pdName``, unless both mounts are read-only;
- AWS EBS: same ``volumeID``, read-only or not (EBS cannot be attached twice);
- RBD: at least one Ceph monitor in common, same pool and image, unless both are read-only;
- iSCSI: same ``iqn``, unless both are read-only.

Filter rejects such a node with ``node(s) had no available disk``.

ReadWriteOncePod claims. PreFilter looks up the claim of every ``persistentVolumeClaim`` volume
(a missing claim rejects the pod, UnschedulableAndUnresolvable, with the API's not-found text),
keeps the names of those whose access modes include ``ReadWriteOncePod``, and counts how many of
them some pod on some node (bound or assumed) already uses. While that count is above zero,
Filter rejects every node: the check is cluster-wide, not per node. Generic ephemeral volumes
are not looked at, as upstream.

Both rejections are plain Unschedulable: evicting the other pod frees the volume. During
preemption's dry runs AddPod and RemovePod move the count by the number of the other pod's
``persistentVolumeClaim`` volumes named like one of the pod's ReadWriteOncePod claims; like
upstream they compare names only, not namespaces. Removing the holder of a claim therefore
clears the conflict on the holder's node, which is where the preemptor lands.

PreFilter skips the plugin for pods without any of the four in-tree disks whose ReadWriteOncePod
claims (if any) are all unused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import PERSISTENT_VOLUME_CLAIM, PodVolume
from kopf_scheduler.model.storage import READ_WRITE_ONCE_POD
from kopf_scheduler.plugins.claim_hints import claim_change_hint

NAME = "VolumeRestrictions"
REASON_DISK_CONFLICT = "node(s) had no available disk"
REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)

GCE_PERSISTENT_DISK = "gcePersistentDisk"
AWS_ELASTIC_BLOCK_STORE = "awsElasticBlockStore"
RBD = "rbd"
ISCSI = "iscsi"
EXCLUSIVE_DISK_SOURCES = frozenset({GCE_PERSISTENT_DISK, AWS_ELASTIC_BLOCK_STORE, RBD, ISCSI})
"""The in-tree volume sources whose disks a node may mount only once read-write."""

DEFAULT_RBD_POOL = "rbd"
"""The pool the API server fills in for an RBD volume that names none."""


def claim_not_found(name: str) -> str:
    """The API's not-found text for a claim, which is what the pod's status shows."""
    return f'persistentvolumeclaim "{name}" not found'


class _PreFilterState:
    """The pod's ReadWriteOncePod claim names and how many uses of them other pods hold.

    The names never change; the count does during preemption's dry runs, so clones copy it.
    """

    __slots__ = ("conflicting_claim_uses", "read_write_once_pod_claims")

    def __init__(self, read_write_once_pod_claims: frozenset[str], conflicting_uses: int) -> None:
        self.read_write_once_pod_claims = read_write_once_pod_claims
        self.conflicting_claim_uses = conflicting_uses

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.read_write_once_pod_claims, self.conflicting_claim_uses)

    def uses_by(self, other: Pod) -> int:
        """How many of ``other``'s claim volumes name one of the pod's ReadWriteOncePod claims."""
        return sum(
            1
            for volume in other.volumes
            if volume.source_kind == PERSISTENT_VOLUME_CLAIM
            and volume.claim_name in self.read_write_once_pod_claims
        )


PRE_FILTER_KEY: api.StateKey[_PreFilterState] = api.StateKey("PreFilter" + NAME)


def _rbd_monitors(source: Mapping[str, Any]) -> frozenset[str]:
    monitors = source.get("monitors")
    if not isinstance(monitors, list):
        return frozenset()
    return frozenset(monitor for monitor in monitors if isinstance(monitor, str))


def _rbd_pool(source: Mapping[str, Any]) -> Any:
    return source.get("pool") or DEFAULT_RBD_POOL


def disks_conflict(volume: PodVolume, existing: PodVolume) -> bool:
    """Whether two pod volumes use the same exclusive in-tree disk (see the module docstring)."""
    kind = volume.source_kind
    if kind != existing.source_kind or kind not in EXCLUSIVE_DISK_SOURCES:
        return False
    source, other = volume.source, existing.source
    both_read_only = volume.read_only and existing.read_only
    if kind == GCE_PERSISTENT_DISK:
        return source.get("pdName") == other.get("pdName") and not both_read_only
    if kind == AWS_ELASTIC_BLOCK_STORE:
        return bool(source.get("volumeID") == other.get("volumeID"))
    if kind == ISCSI:
        return source.get("iqn") == other.get("iqn") and not both_read_only
    return (
        not _rbd_monitors(source).isdisjoint(_rbd_monitors(other))
        and _rbd_pool(source) == _rbd_pool(other)
        and source.get("image") == other.get("image")
        and not both_read_only
    )


def _exclusive_disks(pod: Pod) -> list[PodVolume]:
    return [volume for volume in pod.volumes if volume.source_kind in EXCLUSIVE_DISK_SOURCES]


def _conflicts_with_pod(disks: list[PodVolume], existing: Pod) -> bool:
    return any(
        disks_conflict(disk, existing_volume)
        for disk in disks
        for existing_volume in existing.volumes
    )


def satisfies_disk_conflicts(pod: Pod, pods_on_node: list[Pod]) -> bool:
    """Whether none of ``pod``'s exclusive in-tree disks is already used on the node."""
    disks = _exclusive_disks(pod)
    if not disks:
        return True
    return not any(_conflicts_with_pod(disks, existing) for existing in pods_on_node)


def _claim_names(pod: Pod) -> set[str]:
    return {
        volume.claim_name for volume in pod.volumes if volume.source_kind == PERSISTENT_VOLUME_CLAIM
    }


def _is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when the deleted pod, in the pod's namespace, used one of its in-tree disks or one
    of its claims (the claim's access mode is not looked up, so any shared claim counts)."""
    deleted = old
    if not isinstance(deleted, Pod):
        return api.QueueingHint.QUEUE
    if deleted.namespace != pod.namespace:
        return api.QueueingHint.QUEUE_SKIP
    if not satisfies_disk_conflicts(pod, [deleted]):
        return api.QueueingHint.QUEUE
    if _claim_names(pod) & _claim_names(deleted):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _is_schedulable_after_claim_added(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when the new claim is one the pod's ``persistentVolumeClaim`` volumes name."""
    return claim_change_hint(pod, new, ephemeral=False)


def _state_not_found() -> api.Status:
    return api.Status.from_error(
        RuntimeError(f'cannot read "{PRE_FILTER_KEY.name}" from cycleState')
    )


class VolumeRestrictions(api.CountingPreFilterExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle) -> None:
        self._handle = handle

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        read_write_once_pod_claims: set[str] = set()
        for volume in pod.volumes:
            if volume.source_kind != PERSISTENT_VOLUME_CLAIM:
                continue
            claim = self._handle.storage.claim(pod.namespace, volume.claim_name)
            if claim is None:
                return None, api.Status(
                    api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, claim_not_found(volume.claim_name)
                )
            if READ_WRITE_ONCE_POD in claim.access_modes:
                read_write_once_pod_claims.add(claim.name)
        snapshot = self._handle.snapshot
        conflicting_uses = sum(
            1
            for name in read_write_once_pod_claims
            if snapshot.is_pvc_used_by_pods(f"{pod.namespace}/{name}")
        )
        if conflicting_uses == 0 and not _exclusive_disks(pod):
            return None, api.SKIP
        state.write(
            PRE_FILTER_KEY, _PreFilterState(frozenset(read_write_once_pod_claims), conflicting_uses)
        )
        return None, api.SUCCESS

    def count_pod(
        self, state: api.CycleState, pod: Pod, other: Pod, node_info: api.NodeInfo, delta: int
    ) -> api.Status:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return _state_not_found()
        pre_filter.conflicting_claim_uses += delta * pre_filter.uses_by(other)
        return api.SUCCESS

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        if not satisfies_disk_conflicts(pod, node_info.pods):
            return api.Status(api.Code.UNSCHEDULABLE, REASON_DISK_CONFLICT)
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return _state_not_found()
        if pre_filter.conflicting_claim_uses > 0:
            return api.Status(api.Code.UNSCHEDULABLE, REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return api.SUCCESS

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            # Volumes are immutable, so only a deletion can free a disk or a claim.
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, api.ActionType.DELETE),
                _is_schedulable_after_pod_deleted,
            ),
            api.ClusterEventWithHint(api.ClusterEvent(api.EventResource.NODE, api.ActionType.ADD)),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.PERSISTENT_VOLUME_CLAIM, api.ActionType.ADD),
                _is_schedulable_after_claim_added,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> VolumeRestrictions:
    api.reject_unknown(api.ensure_mapping(args), set())
    return VolumeRestrictions(handle)
