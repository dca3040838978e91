"""Storage objects for the volume scenarios, and one test's bookkeeping of the cluster-wide ones.

StorageClasses, PersistentVolumes and CSINodes are cluster-scoped, so every one a test creates
is named after the test and labelled ``e2e-test=<id>``; :class:`TestStorage` deletes them by
that label at teardown (without waiting: a bound PV goes once its claim is gone with the
namespace). Claims live in the test's namespace and go with it.

Kinds of volume the scenarios need:

- *local*: a ``local`` PV with node affinity to one node's hostname (the classic static local
  volume, class with ``kubernetes.io/no-provisioner``);
- *CSI*: a ``csi`` PV of a named driver, counted against a CSINode's attach limit;
- *plain*: a ``hostPath`` PV without node affinity, for claims that must not pin the pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .env import TestEnv
from .kubectl import Kubectl
from .objects import ISOLATION_KEY, SUITE_LABEL

NO_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"

CLAIM_KIND = "PersistentVolumeClaim"


def _labels(test_id: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {ISOLATION_KEY: test_id, SUITE_LABEL: "true", **(extra or {})}


def storage_class(
    name: str,
    test_id: str,
    *,
    provisioner: str = NO_PROVISIONER,
    binding_mode: str = WAIT_FOR_FIRST_CONSUMER,
    allowed_zones: Sequence[str] = (),
) -> dict[str, Any]:
    """A StorageClass; ``allowed_zones`` becomes one ``allowedTopologies`` term on the zone."""
    manifest: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "labels": _labels(test_id)},
        "provisioner": provisioner,
        "volumeBindingMode": binding_mode,
        "reclaimPolicy": "Delete",
    }
    if allowed_zones:
        manifest["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE_LABEL, "values": list(allowed_zones)}]}
        ]
    return manifest


def persistent_volume(
    name: str,
    test_id: str,
    size: str,
    *,
    class_name: str = "",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    node: str | None = None,
    csi_driver: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A static PV: CSI when ``csi_driver`` is given, else local on ``node``, else hostPath."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(access_modes),
        "storageClassName": class_name,
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
    }
    if csi_driver is not None:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    elif node is not None:
        spec["local"] = {"path": f"/mnt/{name}"}
    else:
        spec["hostPath"] = {"path": f"/tmp/{name}"}
    if node is not None:
        spec["nodeAffinity"] = node_affinity(node)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": _labels(test_id, labels)},
        "spec": spec,
    }


def node_affinity(hostname: str) -> dict[str, Any]:
    """A PV's required node affinity to the node whose hostname label is ``hostname``."""
    return {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}
                    ]
                }
            ]
        }
    }


def claim(
    name: str,
    namespace: str,
    size: str,
    *,
    class_name: str = "",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    volume_name: str | None = None,
) -> dict[str, Any]:
    """A PVC; ``volume_name`` pre-binds it to that PV (the PV controller completes the bind)."""
    spec: dict[str, Any] = {
        "accessModes": list(access_modes),
        "storageClassName": class_name,
        "resources": {"requests": {"storage": size}},
    }
    if volume_name is not None:
        spec["volumeName"] = volume_name
    return {
        "apiVersion": "v1",
        "kind": CLAIM_KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": {SUITE_LABEL: "true"}},
        "spec": spec,
    }


def claim_volume(claim_name: str, volume_name: str = "data") -> dict[str, Any]:
    """A pod's ``spec.volumes`` entry that mounts claim ``claim_name``."""
    return {"name": volume_name, "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral_volume(
    volume_name: str,
    size: str,
    *,
    class_name: str,
    access_modes: Sequence[str] = ("ReadWriteOnce",),
) -> dict[str, Any]:
    """A generic ephemeral volume: the ephemeral-volume controller creates its claim,
    ``<pod name>-<volume name>``, owned by the pod."""
    return {
        "name": volume_name,
        "ephemeral": {
            "volumeClaimTemplate": {
                "spec": {
                    "accessModes": list(access_modes),
                    "storageClassName": class_name,
                    "resources": {"requests": {"storage": size}},
                }
            }
        },
    }


def csi_node(node: str, test_id: str, driver: str, count: int) -> dict[str, Any]:
    """The CSINode a kubelet would publish for ``node``: ``driver`` may attach ``count``."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node, "labels": _labels(test_id)},
        "spec": {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": count}}]},
    }


# -- reading claims and volumes ----------------------------------------------------------


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def phase(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("status") or {}).get("phase")


def is_bound(pvc: Mapping[str, Any]) -> bool:
    """What the scheduler waits for: a volume name and the PV controller's bind-completed mark."""
    return bool((pvc.get("spec") or {}).get("volumeName")) and BIND_COMPLETED in annotations_of(pvc)


def claim_ref(pv: Mapping[str, Any]) -> dict[str, Any] | None:
    ref = (pv.get("spec") or {}).get("claimRef")
    return dict(ref) if ref else None


# -- one test's storage ------------------------------------------------------------------


class TestStorage:
    """Creates a test's storage objects and removes the cluster-scoped ones at teardown."""

    __test__ = False  # not a test class, despite the name

    def __init__(self, env: TestEnv) -> None:
        self.env = env
        self.kubectl: Kubectl = env.kubectl
        self.namespace = env.namespace

    def name(self, suffix: str) -> str:
        """A cluster-wide unique name for one of this test's objects."""
        return f"e2e-{self.env.id}-{suffix}"

    def create(self, *manifests: Mapping[str, Any]) -> None:
        self.kubectl.create(*manifests)

    def claim(self, name: str) -> dict[str, Any] | None:
        return self.kubectl.get("pvc", name, self.namespace)

    def volume(self, name: str) -> dict[str, Any] | None:
        return self.kubectl.get("pv", name)

    def close(self) -> None:
        for kind in ("persistentvolumes", "storageclasses", "csinodes"):
            self.kubectl.run(
                "delete", kind, "-l", self.env.selector, "--wait=false", "--ignore-not-found"
            )
