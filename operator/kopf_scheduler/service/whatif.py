"""What-if on a live cluster: "if I create these pods, where do they go, and who is evicted?"

The current state is read with LIST requests only (nodes, pods, PDBs with the disruption
controller's status, PriorityClasses, namespaces) and handed to the simulator together with the
pods to add; nothing is ever written to the cluster, so a read-only identity can run it.
Kubernetes has no such dry run (kubernetes #58242).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kopf_scheduler.k8s.client import Api
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


async def cluster_scenario(api: Api, added: Iterable[str | Path]) -> tuple[Scenario, list[str]]:
    """The live cluster as a scenario, plus the added pods (pending, in file order).

    Returns the scenario and the ``namespace/name`` keys of the added pods.
    """
    classes = (await api.list("/apis/scheduling.k8s.io/v1/priorityclasses")).items
    extra = load_scenario(added, known_priority_classes=[c["metadata"]["name"] for c in classes])
    if extra.nodes or extra.running_pods or extra.pdbs:
        names = [n["metadata"]["name"] for n in extra.nodes]
        raise ValueError(
            "--add takes pending pods (and PriorityClasses or Namespaces they need); "
            f"it got nodes, running pods or PDBs {names or ''}".rstrip()
        )
    scenario = Scenario()
    for raw in (await api.list("/api/v1/namespaces")).items:
        scenario.namespaces.append(_clean(raw, "Namespace", "v1"))
    for raw in classes:
        scenario.priority_classes.append(_clean(raw, "PriorityClass", "scheduling.k8s.io/v1"))
    for raw in (await api.list("/api/v1/nodes")).items:
        scenario.nodes.append(_clean(raw, "Node", "v1"))
    for raw in (await api.list("/apis/policy/v1/poddisruptionbudgets")).items:
        pdb = _clean(raw, "PodDisruptionBudget", "policy/v1")
        pdb.setdefault("status", {}).setdefault("disruptionsAllowed", 0)
        scenario.pdbs.append(pdb)
    for raw in (await api.list("/api/v1/pods")).items:
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
    keys = []
    for pod in extra.pending_pods:
        metadata = pod.get("metadata") or {}
        keys.append(f"{metadata.get('namespace') or 'default'}/{metadata['name']}")
        scenario.pending_pods.append(pod)
    return scenario, keys
