"""What the API server does to a pod or a claim as it is created, where it changes scheduling.

A scenario describes a cluster, so its objects go through the defaulting and admission a real
API server applies before any controller or scheduler sees them:

- pod defaulting: a container (or init container) that sets a limit but no request for a
  resource requests its limit; with pod-level limits, a resource no container requests gets the
  pod-level limit as its pod-level request; on the host network, a container port without a
  host port takes the container port as its host port;
- Priority admission: ``spec.priority`` (and the preemption policy) come from the PriorityClass
  the pod names, or from the global default class (the lowest if several claim to be); with no
  class at all the priority is 0;
- DefaultStorageClass admission: a claim that names no class at all gets the default
  StorageClass (the newest if several are marked default).

One shorthand is kept on purpose: a scenario pod may state ``spec.priority`` directly, and that
value stands (an API server would refuse a value that differs from its class's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kopf_scheduler.model.storage import BETA_STORAGE_CLASS_ANNOTATION
from kopf_scheduler.model.timeutil import parse_timestamp

Raw = dict[str, Any]

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


def default_pod(spec: Raw) -> None:
    """Apply the API server's pod defaults that change scheduling decisions, in place."""
    containers = _containers(spec)
    for container in containers:
        _default_requests_from_limits(container)
    _default_pod_level_requests(spec, containers)
    if spec.get("hostNetwork"):
        for container in containers:
            for port in container.get("ports") or []:
                if (
                    isinstance(port, dict)
                    and port.get("containerPort")
                    and not port.get("hostPort")
                ):
                    port["hostPort"] = port["containerPort"]


def _containers(spec: Mapping[str, Any]) -> list[Raw]:
    found: list[Raw] = []
    for group in ("containers", "initContainers"):
        entries = spec.get(group)
        if isinstance(entries, list):
            found.extend(entry for entry in entries if isinstance(entry, dict))
    return found


def _resources_with_limits(owner: Raw) -> tuple[Raw, Mapping[str, Any]] | None:
    """``owner``'s ``resources`` and its limits, when it sets any (a container or a pod spec)."""
    resources = owner.get("resources")
    if not isinstance(resources, dict):
        return None
    limits = resources.get("limits")
    if not isinstance(limits, Mapping) or not limits:
        return None
    return resources, limits


def _default_requests_from_limits(container: Raw) -> None:
    found = _resources_with_limits(container)
    if found is None:
        return
    resources, limits = found
    requests = resources.get("requests")
    if not isinstance(requests, dict):
        requests = resources["requests"] = {}
    for name, quantity in limits.items():
        requests.setdefault(name, quantity)


def _is_pod_level_resource(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _default_pod_level_requests(spec: Raw, containers: Iterable[Mapping[str, Any]]) -> None:
    """Pod-level limits become pod-level requests for resources no container requests.

    (Resources some container requests get the containers' total, which is what the scheduler
    computes without a pod-level value, so only the limits change a decision.)
    """
    found = _resources_with_limits(spec)
    if found is None:
        return
    resources, limits = found
    requested: set[str] = set()
    for container in containers:
        container_requests = (container.get("resources") or {}).get("requests")
        if isinstance(container_requests, Mapping):
            requested.update(container_requests)
    pod_requests = resources.get("requests")
    defaults = {
        name: quantity
        for name, quantity in limits.items()
        if _is_pod_level_resource(name)
        and name not in requested
        and not (isinstance(pod_requests, Mapping) and name in pod_requests)
    }
    if defaults:
        resources["requests"] = {**(pod_requests or {}), **defaults}


def admit_priority(spec: Raw, classes: Mapping[str, Raw]) -> None:
    """Resolve the pod's PriorityClass into ``spec.priority`` and its preemption policy."""
    class_name = spec.get("priorityClassName")
    if spec.get("priority") is not None:
        # The given value stands, but the named class still supplies the preemption policy.
        named = classes.get(class_name) if class_name else None
        if named is not None:
            spec.setdefault(
                "preemptionPolicy", named.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
            )
        return
    chosen: Raw | None = None
    if class_name:
        chosen = classes.get(class_name)
    else:
        defaults = [c for c in classes.values() if c.get("globalDefault")]
        chosen = min(defaults, key=lambda c: int(c["value"])) if defaults else None
        if chosen is not None:
            spec["priorityClassName"] = chosen["metadata"]["name"]
    spec["priority"] = int(chosen["value"]) if chosen is not None else 0
    if chosen is not None:
        spec.setdefault(
            "preemptionPolicy", chosen.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY
        )


def default_claim_class(claim: Raw, storage_classes: Iterable[Mapping[str, Any]]) -> None:
    """Give a claim that names no class (not even ``""``) the default StorageClass, in place."""
    metadata = claim.get("metadata") or {}
    spec = claim.setdefault("spec", {})
    if BETA_STORAGE_CLASS_ANNOTATION in (metadata.get("annotations") or {}):
        return
    if spec.get("storageClassName") is not None:
        return
    chosen = default_storage_class(storage_classes)
    if chosen is not None:
        spec["storageClassName"] = chosen["metadata"]["name"]


def default_storage_class(storage_classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The default StorageClass: of those marked default, the newest, then the first by name."""
    marked = [
        c
        for c in storage_classes
        if any(
            ((c.get("metadata") or {}).get("annotations") or {}).get(key) == "true"
            for key in DEFAULT_CLASS_ANNOTATIONS
        )
    ]

    def newest_first(storage_class: Mapping[str, Any]) -> tuple[float, str]:
        metadata = storage_class.get("metadata") or {}
        created = parse_timestamp(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
        return (-(created or 0.0), str(metadata.get("name", "")))

    return min(marked, key=newest_first) if marked else None
