"""Node, pod and volume manifests with scheduler_perf's shapes, shared by both ways of running.

Nodes are the local control plane's kwok nodes (cpu 4, memory 32Gi, pods 110, zone-a/b/c round
robin), so the in-memory cluster and the real one hold byte-for-byte the same node objects. Pods
follow the scheduler_perf templates: default, low and high priority, large high priority,
anti-affinity, spreading, and ``csi``: a default pod that mounts a claim of its own. Priority 10
comes from a PriorityClass because a real API server's Priority admission rejects a bare
``spec.priority``; scheduler_perf runs without admission.

The ``csi`` pods are SchedulingCSIPVs': each one's claim (templates/pvc.yaml) is bound to a PV of
its own (templates/pv-csi.yaml: ReadOnlyMany, 1Gi, driver ebs.csi.aws.com, Retain), both ways,
as scheduler_perf creates them: the claim names the PV in ``spec.volumeName`` and carries
``bind-completed``, the PV's ``claimRef`` names the claim, and both are in phase Bound. Two
things go further than scheduler_perf, so that the PV controller of a real cluster has nothing
to change: the ``claimRef`` carries the claim's UID (without it the controller would take the
PV for merely reserved, make it Available and the claim Lost), and the claim's status has the
access modes and capacity the controller would write there. Their nodes allow 39 volumes of the
driver, in the node's allocatable (``attachable-volumes-csi-ebs.csi.aws.com``) and in a CSINode.

The ``dra`` pods are SchedulingWithResourceClaimTemplate's (dra/templates/
pod-with-claim-template.yaml): a pause container without requests that uses one claim, made by
the resource-claim controller from the namespace's ResourceClaimTemplate ``test-claim-template``
(one device of the DeviceClass ``test-class``, that is of the driver
``test-driver.cdi.k8s.io``); every node publishes ``maxClaimsPerNode`` devices in a
ResourceSlice (:mod:`e2e.support.dra`, scheduler_perf's ``createResourceDriver``). scheduler_perf
schedules its init pods; here they are created bound, each with a claim of its own already
allocated to the next free device of its node and reserved for it, which is the state the
scheduler would have left.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from e2e.localcluster.cluster import node_manifest
from e2e.support import dra

from kopf_scheduler.model.storage import (
    BIND_COMPLETED_ANNOTATION,
    CLAIM_BOUND,
    MIGRATED_PLUGINS_ANNOTATION,
    READ_ONLY_MANY,
    STORAGE,
    VOLUME_BOUND,
)

HIGH_PRIORITY_CLASS = "bench-high"
HIGH_PRIORITY = 10
ROLE_LABEL = "bench.kopf-scheduler/role"
"""``init`` (created bound, not measured), ``measured`` or ``arrival`` (injected at a rate)."""
KIND_LABEL = "bench.kopf-scheduler/kind"
"""The template a pod was made from (``default``, ``low``, ``high``, ...)."""
VOLUME_NAMESPACE_LABEL = "bench.kopf-scheduler/namespace"
"""On PersistentVolumes (cluster-wide): the namespace of the claim a PV was made for."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

CSI_DRIVER = "ebs.csi.aws.com"
CSI_VOLUME_LIMIT = 39
ATTACHABLE_VOLUMES = f"attachable-volumes-csi-{CSI_DRIVER}"
VOLUME_SIZE = "1Gi"
CLAIM_VOLUME = "vol"
"""The name of the pod volume that mounts the claim (scheduler_perf's)."""

ROLE_INIT = "init"
ROLE_MEASURED = "measured"
ROLE_ARRIVAL = "arrival"

Raw = dict[str, Any]


def node(index: int) -> Raw:
    return node_manifest(index)


def node_with_volume_limit(index: int) -> Raw:
    """A kwok node that also allows 39 CSI volumes in its allocatable (SchedulingCSIPVs')."""
    raw = node_manifest(index)
    raw["status"]["allocatable"][ATTACHABLE_VOLUMES] = str(CSI_VOLUME_LIMIT)
    return raw


def csi_node(node_name: str, node_uid: str | None = None) -> Raw:
    """The CSINode of a node: the driver with room for 39 volumes, no migrated plugins.

    Given the node's UID, the node owns it (as a kubelet's CSINode is owned), so the garbage
    collector deletes it with the node.
    """
    metadata: Raw = {"name": node_name, "annotations": {MIGRATED_PLUGINS_ANNOTATION: ""}}
    if node_uid is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid}
        ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": metadata,
        "spec": {
            "drivers": [
                {
                    "name": CSI_DRIVER,
                    "nodeID": node_name,
                    "allocatable": {"count": CSI_VOLUME_LIMIT},
                }
            ]
        },
    }


def priority_class() -> Raw:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HIGH_PRIORITY_CLASS},
        "value": HIGH_PRIORITY,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "scheduler_perf's high-priority pods (priority 10)",
    }


def _container(cpu: str, memory: str = "500Mi") -> Raw:
    amounts = {"cpu": cpu, "memory": memory}
    return {
        "name": "pause",
        "image": PAUSE_IMAGE,
        "ports": [{"containerPort": 80}],
        "resources": {"requests": dict(amounts), "limits": dict(amounts)},
    }


def _anti_affinity() -> Raw:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"color": "green"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def _spread() -> list[Raw]:
    return [
        {
            "maxSkew": 5,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]


def _spec(kind: str) -> tuple[Raw, dict[str, str]]:
    """The pod spec of one template, and the labels it carries."""
    if kind in ("default", "csi"):
        return {"containers": [_container("100m")]}, {}
    if kind == "dra":
        container = {
            "name": "pause",
            "image": PAUSE_IMAGE,
            "resources": {"claims": [{"name": DRA_ENTRY}]},
        }
        return {"containers": [container]}, {}
    if kind == "low":
        return {"containers": [_container("900m")], "terminationGracePeriodSeconds": 0}, {}
    if kind == "high":
        return {"containers": [_container("3000m")], "priorityClassName": HIGH_PRIORITY_CLASS}, {}
    if kind == "large":
        return {"containers": [_container("9")], "priorityClassName": HIGH_PRIORITY_CLASS}, {}
    if kind == "anti":
        return {"containers": [_container("100m")], "affinity": _anti_affinity()}, {
            "color": "green"
        }
    if kind == "spread":
        spec = {"containers": [_container("100m")], "topologySpreadConstraints": _spread()}
        return spec, {"color": "blue"}
    raise ValueError(f"unknown pod template {kind!r}")


VOLUME_KINDS = frozenset({"csi"})
"""The templates whose pods each mount a claim of their own, bound to a PV of their own."""
DEVICE_KINDS = frozenset({"dra"})
"""The templates whose pods each use a ResourceClaim of their own."""
DRA_ENTRY = "resource"
"""The pod's entry in ``spec.resourceClaims`` (scheduler_perf's)."""


def pod(
    kind: str,
    name: str,
    namespace: str,
    scheduler_name: str,
    role: str,
    node_name: str | None = None,
) -> Raw:
    """One pod from template ``kind``; bound at creation when ``node_name`` is given."""
    spec, labels = _spec(kind)
    spec = {
        **spec,
        "schedulerName": scheduler_name,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
    }
    if kind in VOLUME_KINDS:
        # The claim is named after the pod (the pods of one namespace never share one).
        spec["volumes"] = [{"name": CLAIM_VOLUME, "persistentVolumeClaim": {"claimName": name}}]
    if kind in DEVICE_KINDS:
        # A bound pod's claim is made already allocated (see init_claim); a pending pod's
        # comes from the template.
        source = (
            {"resourceClaimName": init_claim_name(name)}
            if node_name is not None
            else {"resourceClaimTemplateName": dra.PERF_CLAIM_TEMPLATE}
        )
        spec["resourceClaims"] = [{"name": DRA_ENTRY, **source}]
    if node_name is not None:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**labels, ROLE_LABEL: role, KIND_LABEL: kind},
        },
        "spec": spec,
    }


def pod_role(raw: Mapping[str, Any]) -> str:
    return str(((raw.get("metadata") or {}).get("labels") or {}).get(ROLE_LABEL, ""))


# Volumes ---------------------------------------------------------------------------------------


def volume_name(namespace: str, claim_name: str) -> str:
    """PVs are cluster-wide: their names carry the claim's namespace, as scheduler_perf's do."""
    return f"{namespace}-{claim_name}"


def pod_claims(raw: Mapping[str, Any]) -> list[Raw]:
    """The claims a pod mounts, each bound to its PV (see :func:`bound_volume`)."""
    metadata = raw["metadata"]
    volumes = (raw.get("spec") or {}).get("volumes") or []
    return [
        claim(str(v["persistentVolumeClaim"]["claimName"]), metadata["namespace"], pod_role(raw))
        for v in volumes
        if v.get("persistentVolumeClaim")
    ]


def claim(name: str, namespace: str, role: str) -> Raw:
    """A claim already bound to its PV; a real API server ignores ``status`` on creation, so
    the status is written afterwards through the status subresource."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {ROLE_LABEL: role},
            "annotations": {BIND_COMPLETED_ANNOTATION: "true"},
        },
        "spec": {
            "accessModes": [READ_ONLY_MANY],
            "resources": {"requests": {STORAGE: VOLUME_SIZE}},
            "volumeName": volume_name(namespace, name),
        },
        "status": claim_status(),
    }


def claim_status() -> Raw:
    return {
        "phase": CLAIM_BOUND,
        "accessModes": [READ_ONLY_MANY],
        "capacity": {STORAGE: VOLUME_SIZE},
    }


def bound_volume(stored_claim: Mapping[str, Any]) -> Raw:
    """The CSI PV bound to a claim as stored (the ``claimRef`` needs the claim's UID)."""
    metadata = stored_claim["metadata"]
    namespace = str(metadata["namespace"])
    name = volume_name(namespace, str(metadata["name"]))
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": {VOLUME_NAMESPACE_LABEL: namespace}},
        "spec": {
            "accessModes": [READ_ONLY_MANY],
            "capacity": {STORAGE: VOLUME_SIZE},
            "csi": {"driver": CSI_DRIVER, "volumeHandle": name},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": namespace,
                "name": str(metadata["name"]),
                "uid": str(metadata["uid"]),
            },
        },
        "status": {"phase": VOLUME_BOUND},
    }


# Devices ---------------------------------------------------------------------------------------


def device_class() -> Raw:
    """dra/templates/deviceclass.yaml."""
    return dra.device_class(dra.PERF_DEVICE_CLASS, dra.PERF_DRIVER)


def claim_spec() -> Raw:
    """The spec of dra/templates/resourceclaimtemplate.yaml: one device of ``test-class``."""
    return dra.claim_spec([dra.exactly("req-0", dra.PERF_DEVICE_CLASS)])


def claim_template(namespace: str) -> Raw:
    return dra.claim_template(dra.PERF_CLAIM_TEMPLATE, namespace, claim_spec())


def node_slice(node_name: str, devices: int) -> Raw:
    return dra.perf_slice(node_name, devices)


def init_claim_name(pod_name: str) -> str:
    return f"{pod_name}-{DRA_ENTRY}"


def init_claim(pod_name: str, namespace: str) -> Raw:
    """An init pod's claim with the finalizer the scheduler's PreBind adds along with the
    allocation: the resource-claim controller then deallocates it and lets it go with its pod."""
    raw = dra.claim(init_claim_name(pod_name), namespace, claim_spec())
    raw["metadata"]["finalizers"] = [dra.DELETE_PROTECTION]
    return raw


def init_claim_status(node_name: str, device_index: int, pod_name: str, pod_uid: str) -> Raw:
    """The allocation the scheduler would have written for an init pod: device
    ``instance-<device_index>`` of the node's pool, reserved for the pod."""
    return {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "req-0",
                        "driver": dra.PERF_DRIVER,
                        "pool": node_name,
                        "device": f"instance-{device_index}",
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": pod_name, "uid": pod_uid}],
    }
