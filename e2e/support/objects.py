"""Manifests the scenarios create: fake kwok nodes, pods, PDBs and the PriorityClasses.

Admission fills ``spec.priority`` and ``spec.preemptionPolicy`` from the PriorityClass and
rejects pods that set them differently, so priorities are always given as a class name.
"""

from __future__ import annotations

from typing import Any

from e2e.localcluster import kwok_node

from . import SCHEDULER_NAME

ISOLATION_KEY = "e2e-test"
"""Label and taint key that ties a test's pods to that test's nodes."""
SUITE_LABEL = "e2e.kopf-scheduler/suite"

# name -> (value, preemptionPolicy)
PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "e2e-p10": (10, "PreemptLowerPriority"),
    "e2e-p10-never": (10, "Never"),
    "e2e-p50": (50, "PreemptLowerPriority"),
    "e2e-p100": (100, "PreemptLowerPriority"),
    "e2e-p100-never": (100, "Never"),
}


def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name, "labels": {SUITE_LABEL: "true"}},
            "value": value,
            "preemptionPolicy": policy,
            "globalDefault": False,
            "description": "kopf-scheduler end-to-end suite",
        }
        for name, (value, policy) in PRIORITY_CLASSES.items()
    ]


def fake_node(
    name: str,
    test_id: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A node kwok manages, reserved for one test by a label and a matching NoSchedule taint.

    ``labels`` adds to the standard ones (for example a zone).
    """
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    reserved = {ISOLATION_KEY: test_id, SUITE_LABEL: "true", **(labels or {})}
    node = kwok_node(name, resources, reserved)
    node["spec"]["taints"] = [{"key": ISOLATION_KEY, "value": test_id, "effect": "NoSchedule"}]
    return node


def pod(
    name: str,
    namespace: str,
    test_id: str,
    *,
    cpu: str = "100m",
    memory: str | None = None,
    priority_class: str | None = None,
    grace: int | None = None,
    scheduler: str = SCHEDULER_NAME,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A pod that tolerates and selects only the test's own nodes.

    ``volumes`` go into ``spec.volumes`` as given; the container mounts none of them, which
    is all that scheduling looks at.
    """
    requests = {"cpu": cpu}
    if memory:
        requests["memory"] = memory
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "nodeSelector": {ISOLATION_KEY: test_id, **(node_selector or {})},
        "tolerations": [
            {"key": ISOLATION_KEY, "operator": "Equal", "value": test_id, "effect": "NoSchedule"}
        ],
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": requests},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if volumes:
        spec["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {SUITE_LABEL: "true", **(labels or {})},
        },
        "spec": spec,
    }


def pdb(
    name: str, namespace: str, min_available: int, match_labels: dict[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": match_labels}},
    }


def namespace(name: str, test_id: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {SUITE_LABEL: "true", ISOLATION_KEY: test_id}},
    }
