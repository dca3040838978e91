"""Every kind the scheduler watches, written once: its API group, collection and watcher.

The initial listing, the periodic resync, kopf's watches, the reflectors, the what-if snapshot
and the RBAC rules the manifests must grant all read this one table, so a kind the plugins start
to need is added here and nowhere else. Where its events go is
:meth:`~kopf_scheduler.informer.handlers.EventHandlers.route`.

The order is the order of the initial listing: storage objects and nodes before pods, so a pod's
claims and node are known when its first attempt runs.

A kind that only one plugin reads names that plugin: it is listed and watched only when an
enabled profile has the plugin. So a cluster without scheduler-plugins' PodGroup CRD runs every
configuration without Coscheduling, and the objects of dynamic resource allocation
(``resource.k8s.io/v1``) are read only for DynamicResources.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum


class Watcher(Enum):
    """What keeps a kind's store current once it is listed."""

    KOPF = "kopf"
    """A kopf ``on.event`` handler (``kopf_watches/``): the low-volume kinds."""
    REFLECTOR = "reflector"
    """``k8s/reflector.py``: the busy collections, where kopf's per-event cost shows."""


@dataclass(frozen=True)
class WatchedKind:
    kind: str
    group: str
    """The API group; ``""`` for the core group."""
    version: str
    plural: str
    watcher: Watcher = Watcher.KOPF
    plugin: str = ""
    """The plugin that needs the kind, when only one does; ``""`` for a kind always watched."""
    definition: str = ""
    """The manifest that installs the kind's CustomResourceDefinition, for a kind that is not
    built into Kubernetes."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        """The cluster-wide collection, e.g. ``/apis/apps/v1/replicasets``."""
        if self.group:
            return f"/apis/{self.group}/{self.version}/{self.plural}"
        return f"/api/{self.version}/{self.plural}"


WATCHED_KINDS: tuple[WatchedKind, ...] = (
    WatchedKind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses"),
    WatchedKind("Namespace", "", "v1", "namespaces"),
    WatchedKind("Node", "", "v1", "nodes", Watcher.REFLECTOR),
    WatchedKind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets"),
    WatchedKind("Service", "", "v1", "services"),
    WatchedKind("ReplicationController", "", "v1", "replicationcontrollers"),
    WatchedKind("ReplicaSet", "apps", "v1", "replicasets"),
    WatchedKind("StatefulSet", "apps", "v1", "statefulsets"),
    WatchedKind("StorageClass", "storage.k8s.io", "v1", "storageclasses"),
    WatchedKind("CSIDriver", "storage.k8s.io", "v1", "csidrivers"),
    WatchedKind("CSINode", "storage.k8s.io", "v1", "csinodes"),
    WatchedKind("CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities"),
    WatchedKind("PersistentVolume", "", "v1", "persistentvolumes"),
    WatchedKind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims"),
    WatchedKind("VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments"),
    WatchedKind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", plugin="DynamicResources"),
    WatchedKind(
        "ResourceSlice", "resource.k8s.io", "v1", "resourceslices", plugin="DynamicResources"
    ),
    WatchedKind(
        "ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", plugin="DynamicResources"
    ),
    WatchedKind(
        "PodGroup",
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        plugin="Coscheduling",
        definition="manifests/crds/scheduling.x-k8s.io_podgroups.yaml",
    ),
    WatchedKind("Pod", "", "v1", "pods", Watcher.REFLECTOR),
)


def watched_by(watcher: Watcher, plugins: Collection[str] = ()) -> tuple[WatchedKind, ...]:
    """The kinds ``watcher`` keeps current when the enabled plugins are ``plugins``, in listing
    order."""
    return tuple(
        kind
        for kind in WATCHED_KINDS
        if kind.watcher is watcher and (not kind.plugin or kind.plugin in plugins)
    )


def watched_kind(kind: str) -> WatchedKind:
    """The table's row for ``kind`` (a kind the table does not hold is a programming error)."""
    for row in WATCHED_KINDS:
        if row.kind == kind:
            return row
    raise KeyError(kind)
