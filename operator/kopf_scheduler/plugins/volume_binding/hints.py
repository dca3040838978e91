"""The cluster events that can make a pod rejected by VolumeBinding schedulable, with hints.

As upstream registers them (with queueing hints on, as in v1.34):

- StorageClass added, or updated with different ``allowedTopologies`` (the binding mode cannot
  change);
- PersistentVolumeClaim added or updated, when it is one of the pod's claims (same namespace and
  the name of a ``persistentVolumeClaim`` volume or of a generic ephemeral volume's claim);
- PersistentVolume added or updated, always;
- Node added or its labels changed, always;
- CSINode added, or updated with a different migrated-plugins annotation;
- CSIDriver updated from ``storageCapacity: true`` to not declaring it, when the pod has an inline
  ``csi`` volume of that driver (upstream looks at the pod's inline CSI volumes here);
- CSIStorageCapacity added, or updated so that the largest volume it admits grew.

An object of an unexpected type always requeues, as upstream's conversion error does.
"""

from __future__ import annotations

from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import CSI
from kopf_scheduler.model.storage import (
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    StorageClass,
)
from kopf_scheduler.plugins.claim_hints import claim_change_hint
from kopf_scheduler.plugins.volume_binding.provisioning import volume_limit

_ADD_OR_UPDATE = api.ActionType.ADD | api.ActionType.UPDATE

TopologyTerms = tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]


def _topology_terms(storage_class: StorageClass) -> TopologyTerms:
    """``allowedTopologies`` as comparable values, list order kept as the API keeps it."""
    raw_terms = storage_class.raw.get("allowedTopologies") or []
    terms = []
    for term in raw_terms:
        expressions = term.get("matchLabelExpressions") or []
        terms.append(
            tuple(
                (str(expression.get("key") or ""), tuple(expression.get("values") or ()))
                for expression in expressions
            )
        )
    return tuple(terms)


def is_schedulable_after_storage_class_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if not isinstance(new, StorageClass) or (old is not None and not isinstance(old, StorageClass)):
        return api.QueueingHint.QUEUE
    if old is None or _topology_terms(old) != _topology_terms(new):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def is_schedulable_after_claim_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    return claim_change_hint(pod, new, ephemeral=True)


def is_schedulable_after_csi_node_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if old is None:
        return api.QueueingHint.QUEUE
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return api.QueueingHint.QUEUE
    old_plugins = old.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    if old_plugins != new.annotations.get(MIGRATED_PLUGINS_ANNOTATION, ""):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def is_schedulable_after_csi_driver_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if not isinstance(old, CSIDriver) or not isinstance(new, CSIDriver):
        return api.QueueingHint.QUEUE
    for volume in pod.volumes:
        if volume.source_kind != CSI or volume.source.get("driver") != new.name:
            continue
        if old.storage_capacity and not new.storage_capacity:
            return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def is_schedulable_after_capacity_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if not isinstance(new, CSIStorageCapacity) or (
        old is not None and not isinstance(old, CSIStorageCapacity)
    ):
        return api.QueueingHint.QUEUE
    if old is None:
        return api.QueueingHint.QUEUE
    old_limit = volume_limit(old)
    new_limit = volume_limit(new)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def events_to_register() -> list[api.ClusterEventWithHint]:
    return [
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.STORAGE_CLASS, _ADD_OR_UPDATE),
            is_schedulable_after_storage_class_change,
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.PERSISTENT_VOLUME_CLAIM, _ADD_OR_UPDATE),
            is_schedulable_after_claim_change,
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.PERSISTENT_VOLUME, _ADD_OR_UPDATE)
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(
                api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_LABEL
            )
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.CSI_NODE, _ADD_OR_UPDATE),
            is_schedulable_after_csi_node_change,
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.CSI_DRIVER, api.ActionType.UPDATE),
            is_schedulable_after_csi_driver_change,
        ),
        api.ClusterEventWithHint(
            api.ClusterEvent(api.EventResource.CSI_STORAGE_CAPACITY, _ADD_OR_UPDATE),
            is_schedulable_after_capacity_change,
        ),
    ]
