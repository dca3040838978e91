"""The pod's claims as volume binding sees them: present, usable, and sorted by binding state.

Two passes, as upstream makes them in PreFilter:

1. :func:`claims_rejection` checks the claims as the API last reported them (upstream's lister):
   each must exist, must not be ``Lost`` (bound to a PV that no longer exists), must not be
   terminating, and a generic ephemeral volume's claim must be controlled by the pod. The first
   problem, in volume order, rejects the pod with a text that names the claim.
2. :func:`classify_claims` reads the claims as the scheduler sees them, assumptions included (a
   claim an earlier pod of the burst chose a node for is seen with that node), and splits them:
   *bound* (``volumeName`` and the bind-completed mark), *delay binding* (unbound, class
   ``WaitForFirstConsumer``, no ``volumeName``) and *immediate* (any other unbound claim, which
   the PV controller should already have bound, so the pod waits). For each delay-binding class
   it takes the volumes of that class once, for every node's Filter to match against.

Every volume is taken as it comes: a claim named by two volumes is listed twice, as upstream
lists it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import PodVolume
from kopf_scheduler.model.storage import (
    CLAIM_LOST,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError

CLAIM_DESCRIPTION = "v1.PersistentVolumeClaim"
"""How upstream's claim cache names its objects in its errors."""


@dataclass(frozen=True)
class PodVolumeClaims:
    """The pod's claims split by binding state, and the candidate volumes per class."""

    bound: tuple[PersistentVolumeClaim, ...]
    delay_binding: tuple[PersistentVolumeClaim, ...]
    immediate_unbound: tuple[PersistentVolumeClaim, ...]
    volumes_by_class: Mapping[str, tuple[PersistentVolume, ...]]
    """For each class of a delay-binding claim: its volumes when PreFilter ran."""


def _claim_volumes(pod: Pod) -> list[PodVolume]:
    return [volume for volume in pod.volumes if volume.claim_name]


def controlled_by_pod(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    """Whether the claim's controlling owner reference is the pod (by UID)."""
    return claim.controller_uid is not None and claim.controller_uid == pod.uid


def ephemeral_claim_problem(claim: PersistentVolumeClaim, pod: Pod) -> str:
    """Why a generic ephemeral volume's claim is not the pod's own (``""`` when it is)."""
    if claim.namespace != pod.namespace or not controlled_by_pod(claim, pod):
        return (
            f"PVC {claim.namespace}/{claim.name} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return ""


def claims_rejection(pod: Pod, storage: api.StorageCache) -> tuple[bool, str]:
    """Whether the pod uses claims at all, and the first reason it cannot be scheduled now.

    Reads the claims as the API reported them, never the scheduler's assumptions.
    """
    uses_claims = False
    for volume in _claim_volumes(pod):
        uses_claims = True
        claim = storage.claims.get_api_object(f"{pod.namespace}/{volume.claim_name}")
        if claim is None:
            if volume.is_ephemeral:
                return True, (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{volume.claim_name}"'
                )
            return True, f'persistentvolumeclaim "{volume.claim_name}" not found'
        if claim.phase == CLAIM_LOST:
            return True, (
                f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                f'persistentvolume "{claim.volume_name}"'
            )
        if claim.deletion_timestamp is not None:
            return True, f'persistentvolumeclaim "{claim.name}" is being deleted'
        if volume.is_ephemeral:
            problem = ephemeral_claim_problem(claim, pod)
            if problem:
                return True, problem
    return uses_claims, ""


def current_claim(pod: Pod, volume: PodVolume, storage: api.StorageCache) -> PersistentVolumeClaim:
    """The volume's claim as the scheduler sees it; raises VolumeBindingError if it is unusable."""
    key = f"{pod.namespace}/{volume.claim_name}"
    claim = storage.claims.get(key)
    if claim is None:
        raise VolumeBindingError(
            f'error getting PVC "{key}": could not find {CLAIM_DESCRIPTION} "{key}"'
        )
    if volume.is_ephemeral:
        problem = ephemeral_claim_problem(claim, pod)
        if problem:
            raise VolumeBindingError(problem)
    return claim


def waits_for_first_consumer(claim: PersistentVolumeClaim, storage: api.StorageCache) -> bool:
    """Delay binding: the claim's class exists and binds on first consumer (no class: no)."""
    if not claim.storage_class_name:
        return False
    storage_class = storage.storage_class(claim.storage_class_name)
    return storage_class is not None and storage_class.waits_for_first_consumer


def classify_claims(pod: Pod, storage: api.StorageCache) -> PodVolumeClaims:
    """Split the pod's claims by binding state; raises VolumeBindingError for an unusable one."""
    bound: list[PersistentVolumeClaim] = []
    delay_binding: list[PersistentVolumeClaim] = []
    immediate_unbound: list[PersistentVolumeClaim] = []
    for volume in _claim_volumes(pod):
        claim = current_claim(pod, volume, storage)
        if claim.is_bound:
            bound.append(claim)
        elif waits_for_first_consumer(claim, storage) and not claim.volume_name:
            delay_binding.append(claim)
        else:
            immediate_unbound.append(claim)
    volumes_by_class = {
        claim.storage_class_name: tuple(storage.volumes_of_class(claim.storage_class_name))
        for claim in delay_binding
    }
    return PodVolumeClaims(
        tuple(bound), tuple(delay_binding), tuple(immediate_unbound), volumes_by_class
    )


def pod_volumes_bound(pod: Pod, storage: api.StorageCache) -> bool:
    """Whether every claim of the pod is bound as the scheduler sees it (an unusable one is not)."""
    for volume in _claim_volumes(pod):
        try:
            claim = current_claim(pod, volume, storage)
        except VolumeBindingError:
            return False
        if not claim.is_bound:
            return False
    return True
