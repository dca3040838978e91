"""Dynamic provisioning: whether the claims left without a PV can be provisioned for a node.

Checked per claim, in order, stopping at the first that cannot be provisioned:

- the claim must name a class and the class must exist (otherwise an error, not a misfit);
- the class needs a real provisioner: none, or ``kubernetes.io/no-provisioner``, means the claim
  can only ever be bound statically, so the node does not fit;
- the node must satisfy the class's ``allowedTopologies``: no terms admit every node, a term
  admits a node whose labels have one of the listed values for each of its keys, and a term
  without expressions admits none;
- when the provisioner is a CSI driver whose CSIDriver object declares ``storageCapacity: true``,
  some CSIStorageCapacity of the class must reach the node (its ``nodeTopology`` selector matches
  the node's labels; a capacity without topology reaches no node) and offer at least the request
  (``maximumVolumeSize`` when published, else ``capacity``; neither means nothing). A driver
  without a CSIDriver object, or one that does not declare it, is not checked.

A claim that cannot be provisioned makes the node unfit for binding (``didn't find available
persistent volumes to bind``); one that lacks capacity makes it unfit for storage (``did not have
enough free storage``). The capacity found is kept with the claim, as upstream keeps it for the
capacity scoring it offers behind an alpha gate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.storage import (
    NO_PROVISIONER,
    STORAGE,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
)
from kopf_scheduler.plugins.volume_binding.errors import VolumeBindingError


@dataclass(frozen=True)
class DynamicProvision:
    """A claim to be provisioned on the node, and the capacity that admitted it (if checked)."""

    claim: PersistentVolumeClaim
    capacity: CSIStorageCapacity | None = None


@dataclass(frozen=True)
class ProvisioningCheck:
    provisionable: bool
    """Every claim has a class that can provision it on the node."""
    enough_storage: bool
    provisions: tuple[DynamicProvision, ...] = ()
    """The claims with their capacities; empty unless both checks passed."""


def volume_limit(capacity: CSIStorageCapacity) -> int | None:
    """The largest volume a capacity object admits: ``maximumVolumeSize``, else ``capacity``."""
    if capacity.maximum_volume_size is not None:
        return capacity.maximum_volume_size
    return capacity.capacity


def _requests_storage(claim: PersistentVolumeClaim) -> bool:
    spec = claim.raw.get("spec")
    resources = spec.get("resources") if isinstance(spec, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    return isinstance(requests, Mapping) and STORAGE in requests


def matching_capacity(
    provisioner: str,
    claim: PersistentVolumeClaim,
    storage_class: StorageClass,
    node_labels: Mapping[str, str],
    storage: api.StorageCache,
) -> tuple[bool, CSIStorageCapacity | None]:
    """Whether there is room for the claim's volume where the node can reach it, and where."""
    if not _requests_storage(claim):
        return True, None
    driver = storage.csi_driver(provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    for capacity in storage.capacities.values():
        limit = volume_limit(capacity)
        if (
            capacity.storage_class_name == storage_class.name
            and limit is not None
            and limit >= claim.request
            and capacity.node_topology is not None
            and capacity.node_topology.matches(node_labels)
        ):
            return True, capacity
    return False, None


def check_provisioning(
    claims: Iterable[PersistentVolumeClaim],
    node_labels: Mapping[str, str],
    storage: api.StorageCache,
) -> ProvisioningCheck:
    """Whether every claim can be provisioned for a node with these labels.

    Raises VolumeBindingError for a claim without a class or whose class does not exist.
    """
    provisions: list[DynamicProvision] = []
    for claim in claims:
        class_name = claim.storage_class_name
        if not class_name:
            raise VolumeBindingError(f'no class for claim "{claim.key}"')
        storage_class = storage.storage_class(class_name)
        if storage_class is None:
            raise VolumeBindingError(f'failed to find storage class "{class_name}"')
        provisioner = storage_class.provisioner
        if not provisioner or provisioner == NO_PROVISIONER:
            return ProvisioningCheck(provisionable=False, enough_storage=True)
        if not storage_class.allows_topology(node_labels):
            return ProvisioningCheck(provisionable=False, enough_storage=True)
        enough, capacity = matching_capacity(
            provisioner, claim, storage_class, node_labels, storage
        )
        if not enough:
            return ProvisioningCheck(provisionable=True, enough_storage=False)
        provisions.append(DynamicProvision(claim, capacity))
    return ProvisioningCheck(True, True, tuple(provisions))
