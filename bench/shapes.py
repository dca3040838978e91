"""Node and pod manifests with scheduler_perf's shapes, shared by both ways of running.

Nodes are the local control plane's kwok nodes (cpu 4, memory 32Gi, pods 110, zone-a/b/c round
robin), so the in-memory cluster and the real one hold byte-for-byte the same node objects. Pods
follow the scheduler_perf templates: default, low and high priority, large high priority,
anti-affinity and spreading. Priority 10 comes from a PriorityClass because a real API server's
Priority admission rejects a bare ``spec.priority``; scheduler_perf runs without admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from e2e.localcluster.cluster import node_manifest

HIGH_PRIORITY_CLASS = "bench-high"
HIGH_PRIORITY = 10
ROLE_LABEL = "bench.kopf-scheduler/role"
"""``init`` (created bound, not measured), ``measured`` or ``arrival`` (injected at a rate)."""
KIND_LABEL = "bench.kopf-scheduler/kind"
"""The template a pod was made from (``default``, ``low``, ``high``, ...)."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

ROLE_INIT = "init"
ROLE_MEASURED = "measured"
ROLE_ARRIVAL = "arrival"

Raw = dict[str, Any]


def node(index: int) -> Raw:
    return node_manifest(index)


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
    if kind == "default":
        return {"containers": [_container("100m")]}, {}
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


KINDS = ("default", "low", "high", "large", "anti", "spread")


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


def pod_kind(raw: Mapping[str, Any]) -> str:
    return str(((raw.get("metadata") or {}).get("labels") or {}).get(KIND_LABEL, ""))
