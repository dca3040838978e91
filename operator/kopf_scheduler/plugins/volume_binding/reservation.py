"""Reserve and Unreserve: make the node's volume decisions visible before any API write.

Reserve assumes, in the storage cache, every chosen PV as bound to its claim (``claimRef`` and
the bound-by-controller mark) and every claim to provision as annotated with the selected node.
The next pods of the same burst then see those PVs as taken and those claims as pinned, as
upstream's assume cache makes them see. The assumed objects are what PreBind later writes.

Nothing is assumed when every claim of the pod is already bound (the pod is then *all bound* and
PreBind has nothing to do). If one assumption fails, the ones made so far are dropped again.
Unreserve drops every assumption on the node's PVs and claims, whether this pod made it or not,
as upstream does.
"""

from __future__ import annotations

import copy
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import (
    SELECTED_NODE_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kopf_scheduler.plugins.volume_binding.claims import CLAIM_DESCRIPTION, pod_volumes_bound
from kopf_scheduler.plugins.volume_binding.decisions import PodVolumes, StaticBinding
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError
from kopf_scheduler.plugins.volume_binding.matching import bind_volume_to_claim
from kopf_scheduler.plugins.volume_binding.provisioning import DynamicProvision

VOLUME_DESCRIPTION = "v1.PersistentVolume"
"""How upstream's volume cache names its objects in its errors."""


def _assume(
    cache: api.AssumeCache[PersistentVolume] | api.AssumeCache[PersistentVolumeClaim],
    obj: Any,
    description: str,
) -> None:
    stored = cache.get(obj.key)
    try:
        cache.assume(obj)
    except KeyError:
        raise VolumeBindingError(f'could not find {description} "{obj.key}"') from None
    except api.AssumeConflictError:
        stored_version = stored.resource_version if stored is not None else ""
        raise VolumeBindingError(
            f'{description} "{obj.key}" is out of sync '
            f"(stored: {stored_version}, assume: {obj.resource_version})"
        ) from None


def with_selected_node(claim: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    """The claim annotated with the node chosen for provisioning it."""
    raw: dict[str, Any] = copy.deepcopy(dict(claim.raw))
    metadata = dict(raw.get("metadata") or {})
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        SELECTED_NODE_ANNOTATION: node_name,
    }
    raw["metadata"] = metadata
    return PersistentVolumeClaim(raw)


def _restore_volumes(storage: api.StorageCache, bindings: tuple[StaticBinding, ...]) -> None:
    for binding in bindings:
        storage.volumes.restore(binding.volume.key)


def _restore_claims(storage: api.StorageCache, provisions: tuple[DynamicProvision, ...]) -> None:
    for provision in provisions:
        storage.claims.restore(provision.claim.key)


def assume_pod_volumes(
    storage: api.StorageCache, pod: Pod, node_name: str, volumes: PodVolumes
) -> tuple[bool, PodVolumes]:
    """Assume the node's decisions; returns (all bound already, the decisions as assumed).

    Raises VolumeBindingError if an object cannot be assumed (nothing stays assumed then).
    """
    if pod_volumes_bound(pod, storage):
        return True, volumes
    bindings: list[StaticBinding] = []
    for binding in volumes.static_bindings:
        volume, changed = bind_volume_to_claim(binding.volume, binding.claim)
        if changed:
            try:
                _assume(storage.volumes, volume, VOLUME_DESCRIPTION)
            except VolumeBindingError:
                _restore_volumes(storage, tuple(bindings))
                raise
        bindings.append(StaticBinding(binding.claim, volume))
    provisions: list[DynamicProvision] = []
    for provision in volumes.dynamic_provisions:
        claim = with_selected_node(provision.claim, node_name)
        try:
            _assume(storage.claims, claim, CLAIM_DESCRIPTION)
        except VolumeBindingError:
            _restore_volumes(storage, tuple(bindings))
            _restore_claims(storage, tuple(provisions))
            raise
        provisions.append(DynamicProvision(claim))
    return False, PodVolumes(tuple(bindings), tuple(provisions))


def revert_assumed_pod_volumes(storage: api.StorageCache, volumes: PodVolumes) -> None:
    """Drop the assumptions on the decisions' PVs and claims."""
    _restore_volumes(storage, volumes.static_bindings)
    _restore_claims(storage, volumes.dynamic_provisions)
