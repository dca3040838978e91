"""PreBind: write the assumed volume decisions, then wait until the PV controller completes them.

The writes, in order, through the StorageWriter port (full updates, so a stale copy fails):

- every chosen PV with its ``claimRef`` to the claim (the scheduler never writes the claim of a
  static binding: the PV controller binds it once it sees the ref);
- every claim to provision with the ``volume.kubernetes.io/selected-node`` annotation (the
  provisioner creates the PV for that node, the PV controller binds it).

A failed write ends PreBind with the API's own message; the assumptions of the objects not yet
written are dropped at once (Unreserve drops the rest).

Then, every second of the scheduler's clock and for at most ``bindTimeoutSeconds``, the objects
as the watches last delivered them (the storage cache's API side, never the assumptions) are
checked. A PV or claim older than the version written is not judged yet. The wait fails at once,
as upstream's does, when the pod's node or the pod is gone, a written object or a provisioned
claim's new PV no longer admits the node, a PV's ``claimRef`` lost its UID (the PV controller
undid the binding), or a claim's selected-node annotation was removed or changed (the
provisioner's signal to reschedule). It succeeds when every claim is bound. The failures read
``binding volumes: <why>``; running out of time reads ``binding volumes: context deadline
exceeded``, the text of the Go context that bounds upstream's wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import (
    SELECTED_NODE_ANNOTATION,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
)
from kopf_scheduler.plugins.volume_binding.claims import CLAIM_DESCRIPTION
from kopf_scheduler.plugins.volume_binding.decisions import (
    PodVolumes,
    StaticBinding,
    node_affinity_on,
)
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError
from kopf_scheduler.plugins.volume_binding.matching import affinity_admits
from kopf_scheduler.plugins.volume_binding.reservation import VOLUME_DESCRIPTION

POLL_INTERVAL_SECONDS = 1.0
DEADLINE_EXCEEDED = "context deadline exceeded"
NO_STORAGE_WRITER = "no storage writer is attached to the scheduler"


@dataclass(frozen=True)
class WrittenObjects:
    """The PVs and claims as the API server stored them (their new resourceVersions)."""

    bindings: tuple[StaticBinding, ...]
    claims: tuple[PersistentVolumeClaim, ...]


def _api_message(error: api.ApiError) -> str:
    return error.message or str(error)


async def write_pod_volumes(handle: api.Handle, volumes: PodVolumes) -> WrittenObjects:
    """Write the assumed PVs and claims; raises VolumeBindingError on the first failure."""
    writer = handle.storage_writer
    if writer is None:
        raise VolumeBindingError(NO_STORAGE_WRITER)
    storage = handle.storage
    bindings = volumes.static_bindings
    claims = tuple(provision.claim for provision in volumes.dynamic_provisions)
    written_bindings: list[StaticBinding] = []
    written_claims: list[PersistentVolumeClaim] = []
    try:
        for binding in bindings:
            stored = await writer.update_volume(binding.volume.raw)
            written_bindings.append(StaticBinding(binding.claim, PersistentVolume(stored)))
        for claim in claims:
            written_claims.append(PersistentVolumeClaim(await writer.update_claim(claim.raw)))
    except BaseException as error:
        for binding in bindings[len(written_bindings) :]:
            storage.volumes.restore(binding.volume.key)
        for claim in claims[len(written_claims) :]:
            storage.claims.restore(claim.key)
        if isinstance(error, api.ApiError):
            raise VolumeBindingError(_api_message(error)) from error
        raise
    return WrittenObjects(tuple(written_bindings), tuple(written_claims))


def _api_lags(api_version: str, written_version: str) -> bool:
    """Whether the watch has not yet delivered the version written (unparsable: it has)."""
    try:
        return int(written_version) > int(api_version)
    except ValueError:
        return False


def _affinity_mismatch(volume: PersistentVolume, node: Node) -> str:
    return (
        f'pv "{volume.name}" node affinity doesn\'t match node "{node.name}": '
        "no matching NodeSelectorTerms"
    )


def _check_static_binding(
    handle: api.Handle, binding: StaticBinding, node: Node, csi_node: CSINode | None
) -> bool:
    storage = handle.storage
    volume = storage.volumes.get_api_object(binding.volume.key)
    if volume is None:
        raise VolumeBindingError(
            f'failed to check binding: could not find {VOLUME_DESCRIPTION} "{binding.volume.key}"'
        )
    claim = storage.claims.get_api_object(binding.claim.key)
    if claim is None:
        raise VolumeBindingError(
            f'failed to check binding: could not find {CLAIM_DESCRIPTION} "{binding.claim.key}"'
        )
    if _api_lags(volume.resource_version, binding.volume.resource_version):
        return False
    try:
        affinity = node_affinity_on(volume, csi_node)
    except VolumeBindingError as error:
        raise VolumeBindingError(f"failed to translate pv to csi: {error.message}") from error
    if not affinity_admits(affinity, node.labels):
        raise VolumeBindingError(_affinity_mismatch(volume, node))
    if volume.claim_ref is None or not volume.claim_ref.uid:
        raise VolumeBindingError(f'ClaimRef got reset for pv "{volume.name}"')
    return claim.is_bound


def _check_provisioned_claim(
    handle: api.Handle, written: PersistentVolumeClaim, node: Node, csi_node: CSINode | None
) -> bool:
    storage = handle.storage
    claim = storage.claims.get_api_object(written.key)
    if claim is None:
        raise VolumeBindingError(
            f'failed to check provisioning pvc: could not find {CLAIM_DESCRIPTION} "{written.key}"'
        )
    if _api_lags(claim.resource_version, written.resource_version):
        return False
    if not claim.annotations:
        raise VolumeBindingError(f'selectedNode annotation reset for PVC "{claim.name}"')
    if claim.annotations.get(SELECTED_NODE_ANNOTATION) != node.name:
        raise VolumeBindingError(f'provisioning failed for PVC "{claim.name}"')
    if claim.volume_name:
        volume = storage.volumes.get_api_object(claim.volume_name)
        if volume is None:
            return False
        if not affinity_admits(node_affinity_on(volume, csi_node), node.labels):
            raise VolumeBindingError(_affinity_mismatch(volume, node))
    return claim.is_bound


def bindings_complete(
    handle: api.Handle, pod: Pod, node_name: str, written: WrittenObjects
) -> bool:
    """Whether every written binding is complete; raises VolumeBindingError when it never will."""
    node_info = handle.snapshot.get(node_name)
    node = node_info.node if node_info is not None else None
    if node is None:
        raise VolumeBindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
    csi_node = handle.storage.csi_node(node_name)
    if handle.get_pod(pod.key) is None:
        raise VolumeBindingError(f'pod does not exist any more: pod "{pod.name}" not found')
    return all(
        _check_static_binding(handle, binding, node, csi_node) for binding in written.bindings
    ) and all(_check_provisioned_claim(handle, claim, node, csi_node) for claim in written.claims)


async def wait_for_bindings(
    handle: api.Handle, pod: Pod, node_name: str, written: WrittenObjects, timeout: float
) -> None:
    """Poll every second until the bindings are complete; raises VolumeBindingError."""
    deadline = handle.now() + timeout
    while True:
        remaining = deadline - handle.now()
        if remaining <= 0:
            raise VolumeBindingError(f"binding volumes: {DEADLINE_EXCEEDED}")
        await handle.sleep(min(POLL_INTERVAL_SECONDS, remaining))
        if handle.now() >= deadline:
            raise VolumeBindingError(f"binding volumes: {DEADLINE_EXCEEDED}")
        try:
            if bindings_complete(handle, pod, node_name, written):
                return
        except VolumeBindingError as error:
            raise VolumeBindingError(f"binding volumes: {error.message}") from error


async def bind_pod_volumes(
    handle: api.Handle, pod: Pod, node_name: str, volumes: PodVolumes, timeout: float
) -> None:
    """Write the node's assumed decisions and wait for the PV controller to complete them."""
    written = await write_pod_volumes(handle, volumes)
    await wait_for_bindings(handle, pod, node_name, written, timeout)
