"""Static binding: which existing PersistentVolume a delay-binding claim gets on a node.

The rules are the ones the PV controller itself uses to match, with the node added (upstream's
``FindMatchingVolume`` in the scheduler's path):

- a volume already chosen for another claim of the same pod is skipped, and so is one whose
  ``claimRef`` names another claim (same name and namespace, and the same UID when the ref has
  one, counts as this claim);
- capacity must cover the request, the volume modes must be equal, the
  ``volumeAttributesClassName`` must be equal (the feature is GA in v1.34), and a volume being
  deleted is skipped;
- a volume *pre-bound* to this claim by its ``claimRef`` is the answer, or no answer at all when
  its node affinity rejects the node, whatever other volumes would fit;
- otherwise the volume must be ``Available``, match the claim's selector, have the claim's class,
  accept the node and offer every access mode the claim asks for; the smallest such volume wins
  (the first one met among equals).

Node affinity is checked against the node's labels only, as upstream builds a name-less node for
the check: a ``metadata.name`` field requirement never matches.

:func:`bind_volume_to_claim` builds the volume as Reserve assumes it and PreBind writes it: the
``claimRef`` set to the claim and, when the claim was not already named by the volume, the
``pv.kubernetes.io/bound-by-controller`` mark the PV controller expects.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kopf_scheduler.model.selectors import NodeSelector
from kopf_scheduler.model.storage import (
    BOUND_BY_CONTROLLER_ANNOTATION,
    VOLUME_AVAILABLE,
    PersistentVolume,
    PersistentVolumeClaim,
)


def affinity_admits(affinity: NodeSelector | None, node_labels: Mapping[str, str]) -> bool:
    """Whether a volume's required node affinity admits a node with these labels."""
    return affinity is None or affinity.matches("", node_labels)


def volume_bound_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The volume's ``claimRef`` names the claim (and its UID, if the ref carries one)."""
    ref = volume.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def access_modes_satisfied(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    return set(claim.access_modes) <= set(volume.access_modes)


def _attributes_class(raw: Mapping[str, Any]) -> str:
    spec = raw.get("spec")
    value = spec.get("volumeAttributesClassName") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) else ""


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: set[str],
) -> PersistentVolume | None:
    """The volume the claim would be bound to on a node with these labels, if any."""
    claim_attributes = _attributes_class(claim.raw)
    smallest: PersistentVolume | None = None
    for volume in volumes:
        if volume.name in excluded:
            continue
        bound_here = volume_bound_to_claim(volume, claim)
        if volume.claim_ref is not None and not bound_here:
            continue
        if volume.capacity < claim.request:
            continue
        if volume.volume_mode != claim.volume_mode:
            continue
        if _attributes_class(volume.raw) != claim_attributes:
            continue
        if volume.deletion_timestamp is not None:
            continue
        admits_node = affinity_admits(volume.node_affinity, node_labels)
        if bound_here:
            return volume if admits_node else None
        if volume.phase != VOLUME_AVAILABLE:
            continue
        if claim.selector is not None and not claim.selector.matches(volume.labels):
            continue
        if volume.storage_class_name != claim.storage_class_name:
            continue
        if not admits_node or not access_modes_satisfied(claim, volume):
            continue
        if smallest is None or smallest.capacity > volume.capacity:
            smallest = volume
    return smallest


def claim_reference(claim: PersistentVolumeClaim) -> dict[str, str]:
    """The ``ObjectReference`` to the claim that a volume's ``claimRef`` holds."""
    fields = {
        "kind": "PersistentVolumeClaim",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
        "apiVersion": "v1",
        "resourceVersion": claim.resource_version,
    }
    return {key: value for key, value in fields.items() if value}


def bind_volume_to_claim(
    volume: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """The volume bound to the claim, and whether that changed anything."""
    raw: dict[str, Any] = copy.deepcopy(dict(volume.raw))
    changed = False
    ref = volume.claim_ref
    if (
        ref is None
        or ref.name != claim.name
        or ref.namespace != claim.namespace
        or ref.uid != claim.uid
    ):
        raw["spec"] = {**(raw.get("spec") or {}), "claimRef": claim_reference(claim)}
        changed = True
    if (
        not volume_bound_to_claim(volume, claim)
        and BOUND_BY_CONTROLLER_ANNOTATION not in volume.annotations
    ):
        metadata = dict(raw.get("metadata") or {})
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            BOUND_BY_CONTROLLER_ANNOTATION: "yes",
        }
        raw["metadata"] = metadata
        changed = True
    return PersistentVolume(raw), changed
