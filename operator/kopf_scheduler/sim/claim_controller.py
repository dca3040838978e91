"""kube-controller-manager's resource-claim controller, simulated.

For a pod whose ``spec.resourceClaims`` entry names a ResourceClaimTemplate, it creates the claim
from the template, named ``<pod>-<entry>-<five characters>`` (both parts shortened in proportion
when together longer than 57 characters, as upstream), controlled by the pod, with the
``resource.kubernetes.io/pod-claim-name`` annotation, and records it in the pod's
``status.resourceClaimStatuses``. A template that does not exist yet leaves the pod waiting; its
creation makes the controller look again.

When a pod is gone, its entry leaves the ``status.reservedFor`` of every claim reserved for it;
a claim left without consumers is deallocated (allocation and the scheduler's finalizer
removed), and a claim made for the gone pod is deleted, as the controller and the garbage
collector do.

The suffix is drawn from the API server's alphabet for generated names by a counter, so a
simulation stays reproducible.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from typing import Any, Protocol

from kopf_scheduler.informer.handlers import ADDED, DELETED
from kopf_scheduler.model.resource_claim import FINALIZER
from kopf_scheduler.sim.cluster_objects import ChangingClusterObjects, controller_reference
from kopf_scheduler.sim.work_queue import QueuedController

Raw = dict[str, Any]

CLAIM = "ResourceClaim"
TEMPLATE = "ResourceClaimTemplate"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
MAX_BASE_LENGTH = 57
"""What is left of a 63-character name for the base, after a hyphen and five characters."""
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters the API server draws generated name suffixes from."""
_SYNC_POD = "pod"
_POD_GONE = "pod gone"


class ClusterObjects(ChangingClusterObjects, Protocol):
    """The in-memory API server as the controller uses it."""

    def set_pod_claim_statuses(self, key: str, statuses: list[Raw]) -> None: ...


def generated_claim_base(pod_name: str, entry: str) -> str:
    """The generateName of a claim made for ``entry`` of pod ``pod_name``."""
    base = f"{pod_name}-{entry}-"
    if len(base) <= MAX_BASE_LENGTH:
        return base
    length = len(base)
    return (
        pod_name[: len(pod_name) * MAX_BASE_LENGTH // length]
        + "-"
        + entry[: len(entry) * MAX_BASE_LENGTH // length]
    )


def _asks_for_claims(pod: Mapping[str, Any]) -> bool:
    """Whether the pod names ResourceClaims (a field fixed at creation): the others, nearly every
    pod of a large snapshot, have nothing for the controller to do."""
    return bool((pod.get("spec") or {}).get("resourceClaims"))


class ResourceClaimController(QueuedController):
    def __init__(self, api: ClusterObjects) -> None:
        super().__init__()
        self._api = api
        self._suffixes = itertools.count()

    def observe(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        if kind == "Pod":
            key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
            if event_type == DELETED:
                self._queue[(_POD_GONE, str(metadata.get("uid", "")))] = copy.deepcopy(dict(raw))
            elif event_type == ADDED and _asks_for_claims(raw):
                self._queue[(_SYNC_POD, key)] = None
        elif kind == TEMPLATE and event_type == ADDED:
            self.resync()

    def resync(self) -> None:
        for key, pod in self._api.pods.items():
            if _asks_for_claims(pod):
                self._queue[(_SYNC_POD, key)] = None

    def _work(self, what: str, key: str, raw: Raw | None) -> None:
        if what == _SYNC_POD:
            self._sync_pod(key)
        elif raw is not None:
            self._pod_gone(key, raw)

    def _suffix(self) -> str:
        number = next(self._suffixes)
        characters = []
        for _ in range(5):
            number, digit = divmod(number, len(_ALPHABET))
            characters.append(_ALPHABET[digit])
        return "".join(characters)

    def _sync_pod(self, key: str) -> None:
        pod = self._api.pods.get(key)
        if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        metadata = pod["metadata"]
        if metadata.get("deletionTimestamp"):
            return
        namespace = metadata.get("namespace") or "default"
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        recorded = {entry.get("name") for entry in statuses}
        added = False
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in recorded:
                continue
            template = self._api.objects(TEMPLATE).get(f"{namespace}/{template_name}")
            if template is None:
                continue
            claim = self._create_claim(pod, str(entry.get("name") or ""), template)
            statuses.append({"name": entry.get("name"), "resourceClaimName": claim})
            added = True
        if added:
            self._api.set_pod_claim_statuses(key, statuses)

    def _create_claim(self, pod: Raw, entry: str, template: Raw) -> str:
        metadata = pod["metadata"]
        template_spec = template.get("spec") or {}
        template_metadata = template_spec.get("metadata") or {}
        annotations = dict(template_metadata.get("annotations") or {})
        annotations[POD_CLAIM_NAME_ANNOTATION] = entry
        name = generated_claim_base(str(metadata["name"]), entry) + self._suffix()
        claim: Raw = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": CLAIM,
            "metadata": {
                "name": name,
                "namespace": metadata.get("namespace") or "default",
                "annotations": annotations,
                "ownerReferences": [
                    controller_reference("v1", "Pod", metadata["name"], metadata.get("uid", ""))
                ],
            },
            "spec": copy.deepcopy(template_spec.get("spec") or {}),
        }
        if template_metadata.get("labels"):
            claim["metadata"]["labels"] = dict(template_metadata["labels"])
        self._api.create(claim)
        return name

    def _pod_gone(self, uid: str, pod: Raw) -> None:
        for key, claim in list(self._api.objects(CLAIM).items()):
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if any(entry.get("uid") == uid for entry in reserved):
                self._release(claim, uid)
            owners = (self._api.objects(CLAIM).get(key) or {}).get("metadata", {})
            if any(
                owner.get("uid") == uid and owner.get("controller")
                for owner in owners.get("ownerReferences") or []
            ):
                self._api.delete_object(CLAIM, key)

    def _release(self, claim: Raw, uid: str) -> None:
        updated = copy.deepcopy(claim)
        status = updated.setdefault("status", {})
        status["reservedFor"] = [e for e in status.get("reservedFor") or [] if e.get("uid") != uid]
        if not status["reservedFor"]:
            status.pop("reservedFor")
            finalizers = updated["metadata"].get("finalizers") or []
            if FINALIZER in finalizers:
                status.pop("allocation", None)
                updated["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        self._api.replace(CLAIM, updated)
