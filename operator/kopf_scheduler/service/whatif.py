"""What-if on a live cluster: "if I create these pods, where do they go, and who is evicted?"

The current state is read with LIST requests only (nodes, pods, PDBs with the disruption
controller's status, PriorityClasses, namespaces, and the storage objects the volume plugins read:
PersistentVolumes and claims, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
VolumeAttachments, PodGroups when a profile enables Coscheduling, and DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates when one enables DynamicResources, as the
scheduler itself lists them only then) and handed to the simulator together with the pods to add
(and any new claims, ResourceClaims, templates or PodGroups they use; a Deployment, ReplicaSet,
StatefulSet or Job added stands for the pods its controller would create); nothing is ever written
to the cluster, so a read-only identity can run it. An identity that may not list one of these
collections gets an error naming it, not a silently partial answer. Kubernetes has no such dry run
(kubernetes #58242).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from kopf_scheduler.config.profiles import merged_multi_point
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.storage_events import STORAGE_KINDS
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.ports import ApiError
from kopf_scheduler.sim.scenario import Scenario, load_scenario

_DROPPED_METADATA = ("managedFields", "resourceVersion", "generation", "selfLink")


def _clean(raw: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    obj = dict(raw)
    obj["kind"] = kind
    obj["apiVersion"] = api_version
    metadata = dict(obj.get("metadata") or {})
    for key in _DROPPED_METADATA:
        metadata.pop(key, None)
    obj["metadata"] = metadata
    return obj


async def _list(api: Api, path: str) -> list[dict[str, Any]]:
    try:
        return (await api.list(path)).items
    except ApiError as error:
        if error.status in (401, 403):
            raise ValueError(f"cannot list {path}: {error}") from None
        raise


_DRA_PLUGIN = "DynamicResources"
_TEMPLATES_PATH = "/apis/resource.k8s.io/v1/resourceclaimtemplates"
"""ResourceClaimTemplates: the scheduler never reads them, the simulated resource-claim
controller makes the added pods' claims from them."""
_ADDABLE_DRA_KINDS = ("ResourceClaim", "ResourceClaimTemplate")


def named_plugins(config: SchedulerConfig) -> set[str]:
    """The plugins some profile of ``config`` enables: its multiPoint list (the defaults with the
    profile's changes) and those named at any extension point; a kind only one plugin reads is
    listed when its plugin is among them."""
    named = {
        ref.name
        for profile in config.profiles
        for plugin_set in profile.plugins.values()
        for ref in plugin_set.enabled
    }
    for profile in config.profiles:
        named.update(ref.name for ref in merged_multi_point(profile.plugins.get("multiPoint")))
    return named


async def cluster_scenario(
    api: Api, added: Iterable[str | Path], plugins: Collection[str] = ()
) -> tuple[Scenario, list[str]]:
    """The live cluster as a scenario, plus the added pods (pending, in file order; a StatefulSet's
    OrderedReady pods after the others).

    ``plugins`` are the enabled plugins (:func:`named_plugins`): the kinds only one plugin
    reads (PodGroups) are listed when that plugin is among them. Returns the scenario and the
    ``namespace/name`` keys of the added pods.
    """
    classes = await _list(api, "/apis/scheduling.k8s.io/v1/priorityclasses")
    extra = load_scenario(added, known_priority_classes=[c["metadata"]["name"] for c in classes])
    foreign_storage = [s for s in extra.storage if s["kind"] != "PersistentVolumeClaim"]
    foreign_storage += [d for d in extra.dra if d["kind"] not in _ADDABLE_DRA_KINDS]
    if extra.nodes or extra.running_pods or extra.pdbs or foreign_storage:
        names = [n["metadata"]["name"] for n in extra.nodes + foreign_storage]
        raise ValueError(
            "--add takes pending pods (and PriorityClasses, Namespaces, "
            "PersistentVolumeClaims, ResourceClaims, ResourceClaimTemplates or PodGroups they "
            "need); it got nodes, running pods, PDBs or other storage or device objects "
            f"{names or ''}".rstrip()
        )
    scenario = Scenario()
    for raw in await _list(api, "/api/v1/namespaces"):
        scenario.namespaces.append(_clean(raw, "Namespace", "v1"))
    for raw in classes:
        scenario.priority_classes.append(_clean(raw, "PriorityClass", "scheduling.k8s.io/v1"))
    for raw in await _list(api, "/api/v1/nodes"):
        scenario.nodes.append(_clean(raw, "Node", "v1"))
    for watched in WATCHED_KINDS:
        if watched.kind in STORAGE_KINDS:
            for raw in await _list(api, watched.path):
                scenario.storage.append(_clean(raw, watched.kind, watched.api_version))
        elif watched.kind == "PodGroup" and watched.plugin in plugins:
            for raw in await _list(api, watched.path):
                scenario.pod_groups.append(_clean(raw, watched.kind, watched.api_version))
        elif watched.plugin == _DRA_PLUGIN and _DRA_PLUGIN in plugins:
            for raw in await _list(api, watched.path):
                scenario.dra.append(_clean(raw, watched.kind, watched.api_version))
    if _DRA_PLUGIN in plugins:
        for raw in await _list(api, _TEMPLATES_PATH):
            scenario.dra.append(_clean(raw, "ResourceClaimTemplate", "resource.k8s.io/v1"))
    for raw in await _list(api, "/apis/policy/v1/poddisruptionbudgets"):
        pdb = _clean(raw, "PodDisruptionBudget", "policy/v1")
        pdb.setdefault("status", {}).setdefault("disruptionsAllowed", 0)
        scenario.pdbs.append(pdb)
    for raw in await _list(api, "/api/v1/pods"):
        pod = _clean(raw, "Pod", "v1")
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            continue
        spec = dict(pod.get("spec") or {})
        spec.setdefault("schedulerName", "default-scheduler")
        pod["spec"] = spec
        if spec.get("nodeName"):
            scenario.running_pods.append(pod)
        else:
            scenario.pending_pods.append(pod)
    known_namespaces = {n["metadata"]["name"] for n in scenario.namespaces}
    known_classes = {c["metadata"]["name"] for c in scenario.priority_classes}
    scenario.namespaces += [
        n for n in extra.namespaces if n["metadata"]["name"] not in known_namespaces
    ]
    scenario.priority_classes += [
        c for c in extra.priority_classes if c["metadata"]["name"] not in known_classes
    ]
    known_claims = {
        _namespaced_key(c) for c in scenario.storage if c["kind"] == "PersistentVolumeClaim"
    }
    for claim in extra.storage:
        if _namespaced_key(claim) in known_claims:
            raise ValueError(
                f"--add: PersistentVolumeClaim {_namespaced_key(claim)} already exists "
                "in the cluster"
            )
        scenario.storage.append(claim)
    known_groups = {_namespaced_key(g) for g in scenario.pod_groups}
    for group in extra.pod_groups:
        if _namespaced_key(group) in known_groups:
            raise ValueError(
                f"--add: PodGroup {_namespaced_key(group)} already exists in the cluster"
            )
        scenario.pod_groups.append(group)
    known_dra = {(d["kind"], _namespaced_key(d)) for d in scenario.dra}
    for added_object in extra.dra:
        identity = (added_object["kind"], _namespaced_key(added_object))
        if identity in known_dra:
            raise ValueError(f"--add: {identity[0]} {identity[1]} already exists in the cluster")
        scenario.dra.append(added_object)
    scenario.controllers += extra.controllers
    keys = []
    for pod in extra.pending_pods:
        keys.append(_namespaced_key(pod))
        scenario.pending_pods.append(pod)
    for waiting in extra.waiting_pods:
        keys.append(_namespaced_key(waiting.pod))
        scenario.waiting_pods.append(waiting)
    return scenario, keys


def _namespaced_key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
