"""Filter's question for one node: can every claim of the pod be satisfied there, and how?

The answer is the node's :class:`PodVolumes` (the static PVs chosen for claims, the claims to
provision) or the reasons it does not fit, in upstream's order, several at once if need be:

1. ``node(s) didn't match PersistentVolume's node affinity`` — a bound claim's PV rejects the
   node (checked in claim order, stopping at the first problem). An in-tree PV on a node that
   has migrated its plugin to CSI is checked as :mod:`kopf_scheduler.plugins.csi_translation`
   rewrites it; one the translation refuses is an error, ``could not translate pv: <why>``;
2. ``node(s) didn't find available persistent volumes to bind`` — a delay-binding claim has no
   fitting PV and cannot be provisioned here, or it already carries the selected-node annotation
   for another node;
3. ``node(s) did not have enough free storage`` — provisioning would lack CSI storage capacity;
4. ``node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)`` — a bound
   claim's PV is not in the cache.

Claims with a selected node are provisioned there; the others are matched against static PVs,
smallest request first, each PV used once per pod; those left unmatched go to provisioning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.selectors import NodeSelector
from kopf_scheduler.model.storage import (
    SELECTED_NODE_ANNOTATION,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kopf_scheduler.plugins.csi_translation import TranslationError, migrated_node_affinity
from kopf_scheduler.plugins.volume_binding.claims import PodVolumeClaims
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError
from kopf_scheduler.plugins.volume_binding.matching import affinity_admits, find_matching_volume
from kopf_scheduler.plugins.volume_binding.provisioning import DynamicProvision, check_provisioning

REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(frozen=True)
class StaticBinding:
    """A delay-binding claim and the existing PV chosen for it."""

    claim: PersistentVolumeClaim
    volume: PersistentVolume


@dataclass(frozen=True)
class PodVolumes:
    """What binding the pod's claims on one node takes."""

    static_bindings: tuple[StaticBinding, ...] = ()
    dynamic_provisions: tuple[DynamicProvision, ...] = ()


def node_affinity_on(volume: PersistentVolume, csi_node: CSINode | None) -> NodeSelector | None:
    """A bound PV's required node affinity as checked on the node whose CSINode is given: an
    in-tree PV of a plugin the node has migrated is read as translated for its CSI driver.

    Raises VolumeBindingError (``could not translate pv: ...``) for a volume the translation
    library refuses.
    """
    try:
        return migrated_node_affinity(volume, csi_node)
    except TranslationError as error:
        raise VolumeBindingError(f"could not translate pv: {error}") from error


def check_bound_claims(
    claims: Iterable[PersistentVolumeClaim], node: Node, storage: api.StorageCache
) -> tuple[bool, bool]:
    """(every bound claim's PV admits the node, every bound claim's PV exists).

    Stops at the first problem. Raises VolumeBindingError for an untranslatable in-tree PV.
    """
    csi_node = storage.csi_node(node.name)
    for claim in claims:
        volume = storage.volume(claim.volume_name)
        if volume is None:
            return True, False
        if not affinity_admits(node_affinity_on(volume, csi_node), node.labels):
            return False, True
    return True, True


def match_static_volumes(
    claims: Iterable[PersistentVolumeClaim],
    volumes_by_class: Mapping[str, tuple[PersistentVolume, ...]],
    node_labels: Mapping[str, str],
) -> tuple[bool, tuple[StaticBinding, ...], tuple[PersistentVolumeClaim, ...]]:
    """(every claim matched, the bindings found, the claims left unmatched)."""
    chosen: set[str] = set()
    bindings: list[StaticBinding] = []
    unmatched: list[PersistentVolumeClaim] = []
    for claim in sorted(claims, key=lambda claim: claim.request):
        candidates = volumes_by_class.get(claim.storage_class_name, ())
        volume = find_matching_volume(claim, candidates, node_labels, chosen)
        if volume is None:
            unmatched.append(claim)
            continue
        chosen.add(volume.name)
        bindings.append(StaticBinding(claim, volume))
    return not unmatched, tuple(bindings), tuple(unmatched)


def _reasons(
    bound_fit: bool, unbound_fit: bool, enough_storage: bool, volumes_exist: bool
) -> list[str]:
    reasons: list[str] = []
    if not bound_fit:
        reasons.append(REASON_NODE_CONFLICT)
    if not unbound_fit:
        reasons.append(REASON_BIND_CONFLICT)
    if not enough_storage:
        reasons.append(REASON_NOT_ENOUGH_SPACE)
    if not volumes_exist:
        reasons.append(REASON_PV_NOT_EXIST)
    return reasons


def find_pod_volumes(
    claims: PodVolumeClaims, node: Node, storage: api.StorageCache
) -> tuple[PodVolumes, list[str]]:
    """The node's PodVolumes and the reasons it does not fit (none: it fits).

    Raises VolumeBindingError when the question cannot be answered (see :mod:`.errors`).
    """
    bound_fit = volumes_exist = unbound_fit = enough_storage = True
    if claims.bound:
        bound_fit, volumes_exist = check_bound_claims(claims.bound, node, storage)
    bindings: tuple[StaticBinding, ...] = ()
    provisions: tuple[DynamicProvision, ...] = ()
    if claims.delay_binding:
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.delay_binding:
            if SELECTED_NODE_ANNOTATION not in claim.annotations:
                to_match.append(claim)
            elif claim.selected_node == node.name:
                to_provision.append(claim)
            else:
                reasons = _reasons(bound_fit, False, enough_storage, volumes_exist)
                return PodVolumes(), reasons
        if to_match:
            unbound_fit, bindings, unmatched = match_static_volumes(
                to_match, claims.volumes_by_class, node.labels
            )
            to_provision.extend(unmatched)
        if to_provision:
            check = check_provisioning(to_provision, node.labels, storage)
            unbound_fit, enough_storage = check.provisionable, check.enough_storage
            provisions = check.provisions
    reasons = _reasons(bound_fit, unbound_fit, enough_storage, volumes_exist)
    return PodVolumes(bindings, provisions), reasons
