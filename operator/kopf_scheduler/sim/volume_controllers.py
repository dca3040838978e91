"""The cluster's volume controllers, simulated: PV binding, provisioning, ephemeral claims.

VolumeBinding only starts a binding: its PreBind writes a PV's ``claimRef`` (or the selected
node on a claim to provision) and then waits for the cluster to complete it. On a cluster,
kube-controller-manager's PV controller and a provisioner do that; in the simulator this module
does, following the PV controller's rules:

- a claim not yet marked ``bind-completed`` is bound to the PV already reserved for it;
  otherwise, unless its class waits for the first consumer, to the smallest Available PV of its
  class that fits (size, access modes, volume mode, selector), PVs with the fewest access modes
  first; failing that it is provisioned when its class has a real provisioner. A claim whose
  class waits for the first consumer is provisioned only once the scheduler has picked its node;
- binding writes the PV's ``claimRef`` (and ``bound-by-controller`` when the controller chose
  the PV), the PV's phase Bound, the claim's ``volumeName`` with ``bind-completed`` (and
  ``bound-by-controller`` when the claim did not name the PV), and the claim's status Bound;
- a PV without a ``claimRef``, or reserved for a claim but not yet bound by UID, is Available; a
  PV whose claim is gone is Released, and deleted if it was provisioned with the Delete policy;
  a claim marked bound whose PV is gone (or belongs to another claim) is Lost;
- provisioning creates ``pvc-<claim uid>`` with the claim's size, access modes, volume mode and
  class, a CSI source of the provisioner, and node affinity to the selected node: to the node's
  values for the keys of the class's ``allowedTopologies`` term it satisfies, or else to its
  ``kubernetes.io/hostname``. If the selected node no longer exists, the annotation is removed,
  which tells the scheduler to choose again;
- the ephemeral-volume controller creates ``<pod>-<volume>`` for each generic ephemeral volume
  of a new pod, owned by the pod; the garbage collector deletes it when the pod is gone.

Work is queued per object, as the controllers' own queues are, and runs when the simulation
lets the controllers act; every write is a watch event the scheduler sees. Where the real
controller would wait for its periodic resync (a new PV for a claim that is already Pending),
this one looks again at once.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol

from kopf_scheduler.informer.handlers import ADDED, DELETED
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod_volumes import ephemeral_claim_name, parse_pod_volumes
from kopf_scheduler.model.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    CLAIM_BOUND,
    CLAIM_LOST,
    CLAIM_PENDING,
    NO_PROVISIONER,
    SELECTED_NODE_ANNOTATION,
    STORAGE,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
    VOLUME_FAILED,
    VOLUME_RELEASED,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kopf_scheduler.sim.admission import default_claim_class
from kopf_scheduler.sim.cluster_objects import ChangingClusterObjects, controller_reference
from kopf_scheduler.sim.work_queue import QueuedController

Raw = dict[str, Any]

VOLUME = "PersistentVolume"
CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"

PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER_ANNOTATIONS = (
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
)
HOSTNAME_LABEL = "kubernetes.io/hostname"
RECLAIM_DELETE = "Delete"
DEFAULT_CLASS_RECLAIM_POLICY = RECLAIM_DELETE

_SYNC_VOLUME = "volume"
_SYNC_CLAIM = "claim"
_SYNC_POD = "pod"
_SYNC_UNBOUND_CLAIMS = "unbound claims"
_COLLECT_ORPHANS = "orphans"


class ClusterObjects(ChangingClusterObjects, Protocol):
    """The in-memory API server as the controllers use it."""

    @property
    def nodes(self) -> Mapping[str, Raw]: ...


class VolumeControllers(QueuedController):
    """The PV controller with its provisioner, the ephemeral-volume controller and the garbage
    collector's part in it, sharing one work queue."""

    def __init__(self, api: ClusterObjects) -> None:
        super().__init__()
        self._api = api

    def observe(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        """Queue what a change means for the controllers (they watch what they manage)."""
        metadata = raw.get("metadata") or {}
        name = str(metadata.get("name", ""))
        if kind == "Pod":
            if event_type == ADDED:
                self._enqueue(_SYNC_POD, f"{metadata.get('namespace') or 'default'}/{name}")
            elif event_type == DELETED:
                self._enqueue(_COLLECT_ORPHANS, str(metadata.get("uid", "")))
        elif kind == VOLUME:
            self._enqueue(_SYNC_VOLUME, name)
            reference = (raw.get("spec") or {}).get("claimRef")
            if reference:
                self._enqueue(_SYNC_CLAIM, _reference_key(reference))
            elif event_type != DELETED:
                self._enqueue(_SYNC_UNBOUND_CLAIMS, "")
        elif kind == CLAIM:
            key = f"{metadata.get('namespace') or 'default'}/{name}"
            if event_type != DELETED:
                self._enqueue(_SYNC_CLAIM, key)
                volume_name = (raw.get("spec") or {}).get("volumeName")
                if volume_name:
                    self._enqueue(_SYNC_VOLUME, str(volume_name))
            for volume_name, volume in self._api.objects(VOLUME).items():
                reference = (volume.get("spec") or {}).get("claimRef")
                if reference and _reference_key(reference) == key:
                    self._enqueue(_SYNC_VOLUME, volume_name)
        elif kind == STORAGE_CLASS and event_type != DELETED:
            self._enqueue(_SYNC_UNBOUND_CLAIMS, "")

    def resync(self) -> None:
        """Look at every volume, claim and pod, as the controllers do when they start."""
        for name in self._api.objects(VOLUME):
            self._enqueue(_SYNC_VOLUME, name)
        for key in self._api.objects(CLAIM):
            self._enqueue(_SYNC_CLAIM, key)
        for key in self._api.pods:
            self._enqueue(_SYNC_POD, key)

    def _work(self, what: str, key: str, raw: Raw | None) -> None:
        if what == _SYNC_VOLUME:
            self._sync_volume(key)
        elif what == _SYNC_CLAIM:
            self._sync_claim(key)
        elif what == _SYNC_POD:
            self._create_ephemeral_claims(key)
        elif what == _SYNC_UNBOUND_CLAIMS:
            self._enqueue_unbound_claims()
        else:
            self._collect_orphans(key)

    def _enqueue(self, what: str, key: str) -> None:
        self._queue[(what, key)] = None

    def _enqueue_unbound_claims(self) -> None:
        """Look again at every claim not yet bound (a volume or a class may suit it now)."""
        for key, claim in self._api.objects(CLAIM).items():
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if BIND_COMPLETED_ANNOTATION not in annotations:
                self._enqueue(_SYNC_CLAIM, key)

    # Claims ------------------------------------------------------------------------------------

    def _sync_claim(self, key: str) -> None:
        raw = self._api.objects(CLAIM).get(key)
        if raw is None:
            return
        claim = PersistentVolumeClaim(raw)
        if BIND_COMPLETED_ANNOTATION in claim.annotations:
            self._sync_bound_claim(raw, claim)
        elif claim.volume_name:
            self._sync_claim_naming_volume(raw, claim)
        else:
            self._sync_unbound_claim(raw, claim)

    def _sync_bound_claim(self, raw: Raw, claim: PersistentVolumeClaim) -> None:
        volume_raw = self._api.objects(VOLUME).get(claim.volume_name) if claim.volume_name else None
        if volume_raw is None:
            self._set_claim_status(raw, CLAIM_LOST, None)
            return
        reference = PersistentVolume(volume_raw).claim_ref
        if reference is None or reference.uid == claim.uid:
            self._bind(volume_raw, raw)
        else:
            self._set_claim_status(raw, CLAIM_LOST, None)

    def _sync_claim_naming_volume(self, raw: Raw, claim: PersistentVolumeClaim) -> None:
        """A claim that asks for one PV by name (``spec.volumeName``) and is not yet bound."""
        volume_raw = self._api.objects(VOLUME).get(claim.volume_name)
        if volume_raw is None:
            self._set_claim_status(raw, CLAIM_PENDING, None)
            return
        volume = PersistentVolume(volume_raw)
        if volume.claim_ref is None:
            if _satisfies(volume, claim):
                self._bind(volume_raw, raw)
            else:
                self._set_claim_status(raw, CLAIM_PENDING, None)
        elif _reserved_for(volume, claim):
            self._bind(volume_raw, raw)
        else:
            self._set_claim_status(raw, CLAIM_PENDING, None)

    def _sync_unbound_claim(self, raw: Raw, claim: PersistentVolumeClaim) -> None:
        class_raw = (
            self._api.objects(STORAGE_CLASS).get(claim.storage_class_name)
            if claim.storage_class_name
            else None
        )
        waits = class_raw is not None and StorageClass(class_raw).waits_for_first_consumer
        match = self._best_match(claim, waits)
        if match is not None:
            self._bind(match, raw)
            return
        if self._assign_default_class(raw):
            return
        if class_raw is not None and (not waits or claim.selected_node):
            self._provision(raw, claim, class_raw)
            return
        self._set_claim_status(raw, CLAIM_PENDING, None)

    def _best_match(self, claim: PersistentVolumeClaim, waits: bool) -> Raw | None:
        """The PV reserved for the claim, or else the smallest free one that fits.

        PVs are tried by their set of access modes, fewest modes first; the first set with a
        match wins. A claim whose class waits for the first consumer only takes a reserved PV.
        """
        wanted = set(claim.access_modes)
        by_modes: dict[tuple[str, ...], list[tuple[Raw, PersistentVolume]]] = {}
        for raw in self._api.objects(VOLUME).values():
            volume = PersistentVolume(raw)
            modes = tuple(sorted(set(volume.access_modes)))
            if wanted <= set(modes):
                by_modes.setdefault(modes, []).append((raw, volume))
        for modes in sorted(by_modes, key=lambda m: (len(m), m)):
            smallest: tuple[Raw, PersistentVolume] | None = None
            for raw, volume in by_modes[modes]:
                if volume.claim_ref is not None and not _reserved_for(volume, claim):
                    continue
                if volume.capacity < claim.request or volume.volume_mode != claim.volume_mode:
                    continue
                if volume.deletion_timestamp is not None:
                    continue
                if _reserved_for(volume, claim):
                    return raw
                if waits or volume.phase != VOLUME_AVAILABLE:
                    continue
                if claim.selector is not None and not claim.selector.matches(volume.labels):
                    continue
                if volume.storage_class_name != claim.storage_class_name:
                    continue
                if smallest is None or volume.capacity < smallest[1].capacity:
                    smallest = (raw, volume)
            if smallest is not None:
                return smallest[0]
        return None

    def _assign_default_class(self, raw: Raw) -> bool:
        """Give a claim that names no class the default one, now that there may be one."""
        updated = copy.deepcopy(raw)
        default_claim_class(updated, self._api.objects(STORAGE_CLASS).values())
        if updated == raw:
            return False
        self._api.replace(CLAIM, updated)
        return True

    def _bind(self, volume_raw: Raw, claim_raw: Raw) -> None:
        volume = PersistentVolume(volume_raw)
        claim = PersistentVolumeClaim(claim_raw)
        updated = copy.deepcopy(volume_raw)
        reference = volume.claim_ref
        changed = False
        if reference is None or (reference.namespace, reference.name, reference.uid) != (
            claim.namespace,
            claim.name,
            claim.uid,
        ):
            updated["spec"]["claimRef"] = _claim_reference(claim_raw)
            changed = True
        if not _reserved_for(volume, claim) and BOUND_BY_CONTROLLER_ANNOTATION not in (
            volume.annotations
        ):
            _annotations(updated)[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
            changed = True
        if changed:
            volume_raw = self._api.replace(VOLUME, updated)
        volume_raw = self._set_volume_phase(volume_raw, VOLUME_BOUND)

        updated_claim = copy.deepcopy(claim_raw)
        changed = False
        if claim.volume_name != volume.name:
            updated_claim.setdefault("spec", {})["volumeName"] = volume.name
            _annotations(updated_claim).setdefault(BOUND_BY_CONTROLLER_ANNOTATION, "yes")
            changed = True
        if BIND_COMPLETED_ANNOTATION not in claim.annotations:
            _annotations(updated_claim)[BIND_COMPLETED_ANNOTATION] = "yes"
            changed = True
        if changed:
            claim_raw = self._api.replace(CLAIM, updated_claim)
        self._set_claim_status(claim_raw, CLAIM_BOUND, volume_raw)

    def _set_claim_status(self, raw: Raw, phase: str, volume_raw: Raw | None) -> None:
        """The claim's phase, with the bound PV's access modes and capacity (none without one)."""
        status = dict(raw.get("status") or {})
        wanted = dict(status, phase=phase)
        if volume_raw is None:
            wanted.pop("accessModes", None)
            wanted.pop("capacity", None)
        else:
            volume_spec = volume_raw.get("spec") or {}
            wanted["accessModes"] = copy.deepcopy(volume_spec.get("accessModes") or [])
            wanted["capacity"] = copy.deepcopy(volume_spec.get("capacity") or {})
        if wanted != status:
            updated = copy.deepcopy(raw)
            updated["status"] = wanted
            self._api.replace(CLAIM, updated)

    # Provisioning ------------------------------------------------------------------------------

    def _provision(self, raw: Raw, claim: PersistentVolumeClaim, class_raw: Raw) -> None:
        provisioner = StorageClass(class_raw).provisioner
        if not provisioner or provisioner == NO_PROVISIONER:
            return
        node_raw: Raw | None = None
        if claim.selected_node:
            node_raw = self._api.nodes.get(claim.selected_node)
            if node_raw is None:
                updated = copy.deepcopy(raw)
                del _annotations(updated)[SELECTED_NODE_ANNOTATION]
                self._api.replace(CLAIM, updated)
                return
        if any(
            claim.annotations.get(key) != provisioner for key in STORAGE_PROVISIONER_ANNOTATIONS
        ):
            updated = copy.deepcopy(raw)
            for key in STORAGE_PROVISIONER_ANNOTATIONS:
                _annotations(updated)[key] = provisioner
            raw = self._api.replace(CLAIM, updated)
        name = f"pvc-{claim.uid}"
        if name in self._api.objects(VOLUME):
            return
        requests = ((raw.get("spec") or {}).get("resources") or {}).get("requests") or {}
        spec: Raw = {
            "accessModes": list(claim.access_modes),
            "capacity": {STORAGE: requests.get(STORAGE, str(claim.request))},
            "claimRef": _claim_reference(raw),
            "persistentVolumeReclaimPolicy": class_raw.get("reclaimPolicy")
            or DEFAULT_CLASS_RECLAIM_POLICY,
            "storageClassName": claim.storage_class_name,
            "volumeMode": claim.volume_mode,
            "csi": {"driver": provisioner, "volumeHandle": name},
        }
        term = _provisioned_topology(class_raw, node_raw)
        if term:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": term}]}}
        self._api.create(
            {
                "apiVersion": "v1",
                "kind": VOLUME,
                "metadata": {"name": name, "annotations": {PROVISIONED_BY_ANNOTATION: provisioner}},
                "spec": spec,
            }
        )

    # Volumes -----------------------------------------------------------------------------------

    def _sync_volume(self, name: str) -> None:
        raw = self._api.objects(VOLUME).get(name)
        if raw is None:
            return
        volume = PersistentVolume(raw)
        reference = volume.claim_ref
        if reference is None or not reference.uid:
            self._set_volume_phase(raw, VOLUME_AVAILABLE)
            return
        claim_raw = self._api.objects(CLAIM).get(reference.key)
        claim = PersistentVolumeClaim(claim_raw) if claim_raw is not None else None
        if claim is None or claim.uid != reference.uid:
            self._release(raw, volume)
        elif not claim.volume_name:
            if claim.volume_mode == volume.volume_mode:
                self._enqueue(_SYNC_CLAIM, reference.key)
        elif claim.volume_name == volume.name:
            self._set_volume_phase(raw, VOLUME_BOUND)
        elif self._deleted_on_release(volume):
            self._release(raw, volume)
        else:
            self._unbind(raw, volume)

    def _deleted_on_release(self, volume: PersistentVolume) -> bool:
        """A provisioned volume with the Delete policy: its provisioner deletes it once free."""
        policy = (volume.raw.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        return PROVISIONED_BY_ANNOTATION in volume.annotations and policy == RECLAIM_DELETE

    def _release(self, raw: Raw, volume: PersistentVolume) -> None:
        if volume.phase not in (VOLUME_RELEASED, VOLUME_FAILED):
            raw = self._set_volume_phase(raw, VOLUME_RELEASED)
        if self._deleted_on_release(volume):
            self._api.delete_object(VOLUME, volume.name)

    def _unbind(self, raw: Raw, volume: PersistentVolume) -> None:
        """Undo a binding the claim does not share: the controller's own entirely, a user's
        reservation down to the claim's name."""
        updated = copy.deepcopy(raw)
        if BOUND_BY_CONTROLLER_ANNOTATION in volume.annotations:
            del updated["spec"]["claimRef"]
            del _annotations(updated)[BOUND_BY_CONTROLLER_ANNOTATION]
        else:
            updated["spec"]["claimRef"]["uid"] = ""
        self._set_volume_phase(self._api.replace(VOLUME, updated), VOLUME_AVAILABLE)

    def _set_volume_phase(self, raw: Raw, phase: str) -> Raw:
        if (raw.get("status") or {}).get("phase") == phase:
            return raw
        updated = copy.deepcopy(raw)
        updated.setdefault("status", {})["phase"] = phase
        return self._api.replace(VOLUME, updated)

    # Ephemeral volumes and their garbage ------------------------------------------------------

    def _create_ephemeral_claims(self, pod_key: str) -> None:
        pod = self._api.pods.get(pod_key)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        metadata = pod["metadata"]
        try:
            volumes = parse_pod_volumes((pod.get("spec") or {}).get("volumes"), metadata["name"])
        except InvalidObjectError:
            return  # the scheduler reports a malformed pod; there is nothing to create for it
        namespace = metadata.get("namespace") or "default"
        for volume in volumes:
            if not volume.is_ephemeral:
                continue
            name = ephemeral_claim_name(metadata["name"], volume.name)
            if f"{namespace}/{name}" in self._api.objects(CLAIM):
                continue
            template = volume.source.get("volumeClaimTemplate") or {}
            template_metadata = template.get("metadata") or {}
            claim_metadata: Raw = {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [
                    controller_reference("v1", "Pod", metadata["name"], metadata.get("uid", ""))
                ],
            }
            for field in ("labels", "annotations"):
                if template_metadata.get(field):
                    claim_metadata[field] = copy.deepcopy(dict(template_metadata[field]))
            self._api.create(
                {
                    "apiVersion": "v1",
                    "kind": CLAIM,
                    "metadata": claim_metadata,
                    "spec": copy.deepcopy(dict(template.get("spec") or {})),
                }
            )

    def _collect_orphans(self, owner_uid: str) -> None:
        """Delete the claims a deleted pod owned (its ephemeral volumes' claims)."""
        owned = [
            key
            for key, claim in self._api.objects(CLAIM).items()
            if any(
                reference.get("kind") == "Pod" and reference.get("uid") == owner_uid
                for reference in (claim.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        for key in owned:
            self._api.delete_object(CLAIM, key)


def _reference_key(reference: Mapping[str, Any]) -> str:
    return f"{reference.get('namespace') or ''}/{reference.get('name') or ''}"


def _claim_reference(claim_raw: Mapping[str, Any]) -> Raw:
    metadata = claim_raw["metadata"]
    return {
        "kind": CLAIM,
        "namespace": metadata.get("namespace") or "default",
        "name": metadata["name"],
        "uid": metadata.get("uid", ""),
        "apiVersion": "v1",
        "resourceVersion": metadata.get("resourceVersion", ""),
    }


def _annotations(raw: Raw) -> dict[str, str]:
    metadata = raw.setdefault("metadata", {})
    annotations: dict[str, str] = metadata.setdefault("annotations", {}) or {}
    metadata["annotations"] = annotations
    return annotations


def _reserved_for(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """The PV's claimRef names the claim (and, if it carries a UID, this very claim)."""
    reference = volume.claim_ref
    if reference is None or (reference.namespace, reference.name) != (claim.namespace, claim.name):
        return False
    return not reference.uid or reference.uid == claim.uid


def _satisfies(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Whether a PV a claim names is good enough for it to bind."""
    return (
        volume.deletion_timestamp is None
        and volume.capacity >= claim.request
        and volume.storage_class_name == claim.storage_class_name
        and volume.volume_mode == claim.volume_mode
        and set(claim.access_modes) <= set(volume.access_modes)
    )


def _provisioned_topology(
    class_raw: Mapping[str, Any], node_raw: Mapping[str, Any] | None
) -> list[Raw]:
    """The node selector requirements of a provisioned PV (empty: reachable everywhere).

    On a selected node: the node's values for the keys of the first ``allowedTopologies`` term
    it satisfies, or else its hostname. Without one (immediate binding): the first value of each
    key of the first term, or no restriction.
    """
    terms = [
        [e for e in (term.get("matchLabelExpressions") or []) if isinstance(e, Mapping)]
        for term in class_raw.get("allowedTopologies") or []
        if isinstance(term, Mapping)
    ]
    if node_raw is None:
        if not terms or not terms[0]:
            return []
        return [_requirement(e["key"], e["values"][0]) for e in terms[0] if e.get("values")]
    metadata = node_raw.get("metadata") or {}
    labels: Mapping[str, str] = metadata.get("labels") or {}
    for term in terms:
        if term and all(labels.get(e.get("key", "")) in (e.get("values") or []) for e in term):
            return [_requirement(e["key"], labels[e["key"]]) for e in term]
    return [_requirement(HOSTNAME_LABEL, labels.get(HOSTNAME_LABEL) or metadata.get("name", ""))]


def _requirement(key: str, value: str) -> Raw:
    return {"key": key, "operator": "In", "values": [value]}
