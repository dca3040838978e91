"""Resource vectors and the pod request arithmetic kube-scheduler uses.

A :class:`Resource` holds CPU in millicores, memory and ephemeral storage in bytes, the pod count,
and every other (extended, hugepages, attachable-volume) resource by name, all as integers so that
sums and comparisons are exact and cheap. :func:`pod_requests` reproduces upstream's effective
request: the sum of the regular containers and sidecars, against the largest init-container step,
plus the pod overhead; with ``non_zero`` set, containers without a CPU or memory request count as
100m / 200Mi, which is what scoring uses.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from typing import Any

import cachetools

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.quantity import milli_value, whole_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


class Resource:
    """An integer resource vector; mutable, copied with :meth:`copy`."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, resources: Mapping[str, Any] | None, field: str) -> Resource:
        """Parse a ResourceList (``{"cpu": "500m", "memory": "1Gi", ...}``)."""
        result = cls()
        if not resources:
            return result
        if not isinstance(resources, Mapping):
            raise InvalidObjectError(
                field, f"expected a map of resource quantities, got {resources!r}"
            )
        for name, quantity in resources.items():
            result.set(name, quantity, f"{field}.{name}")
        return result

    def set(self, name: str, quantity: object, field: str) -> None:
        """Set one named resource from a quantity."""
        if name == CPU:
            self.milli_cpu = milli_value(quantity, field)
        elif name == MEMORY:
            self.memory = whole_value(quantity, field)
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = whole_value(quantity, field)
        elif name == PODS:
            self.allowed_pod_number = whole_value(quantity, field)
        else:
            self.scalar[name] = whole_value(quantity, field)

    def get(self, name: str) -> int:
        """One named resource (CPU in millicores)."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def names(self) -> list[str]:
        """The names of the resources that are set (non-zero) in this vector."""
        result = [
            name
            for name, value in (
                (CPU, self.milli_cpu),
                (MEMORY, self.memory),
                (EPHEMERAL_STORAGE, self.ephemeral_storage),
                (PODS, self.allowed_pod_number),
            )
            if value
        ]
        result.extend(name for name, value in self.scalar.items() if value)
        return result

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar) if self.scalar else None,
        )

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + value

    def subtract(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, value in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - value

    def set_max(self, other: Resource) -> None:
        """Raise each resource to at least ``other``'s amount."""
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for name, value in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), value)

    def is_zero(self) -> bool:
        return not (
            self.milli_cpu
            or self.memory
            or self.ephemeral_storage
            or self.allowed_pod_number
            or any(self.scalar.values())
        )

    def as_dict(self) -> dict[str, int]:
        result = {
            CPU: self.milli_cpu,
            MEMORY: self.memory,
            EPHEMERAL_STORAGE: self.ephemeral_storage,
            PODS: self.allowed_pod_number,
        }
        result.update(self.scalar)
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        mine = {k: v for k, v in self.as_dict().items() if v}
        theirs = {k: v for k, v in other.as_dict().items() if v}
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.as_dict().items() if v)
        return f"Resource({fields})"


def _container_requests(container: Mapping[str, Any], field: str) -> Resource:
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InvalidObjectError(f"{field}.resources", f"expected an object, got {resources!r}")
    return Resource.from_list(resources.get("requests"), f"{field}.resources.requests")


def _has_request(container: Mapping[str, Any], name: str) -> bool:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    return name in requests


def _non_zero_container(container: Mapping[str, Any], requests: Resource) -> Resource:
    """The container's requests with the scoring defaults for missing CPU or memory."""
    result = requests.copy()
    if not _has_request(container, CPU):
        result.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
    if not _has_request(container, MEMORY):
        result.memory = DEFAULT_MEMORY_REQUEST
    return result


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def pod_requests(spec: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """The effective request of a pod ``spec``, computed as kube-scheduler does.

    Regular containers and sidecars (init containers with ``restartPolicy: Always``) add up; each
    regular init container runs alone beside the sidecars started before it, so the pod needs the
    largest such step if it exceeds the sum. Pod-level ``spec.resources.requests`` for CPU and
    memory replace the container aggregate; ``spec.overhead`` is added last. With ``non_zero``,
    a container without a CPU or memory request counts the scoring defaults instead.
    """
    requests, non_zero_requests = pod_requests_and_non_zero(spec)
    return non_zero_requests if non_zero else requests


_REQUESTS_BY_SHAPE: cachetools.LRUCache[bytes, tuple[Resource, Resource]] = cachetools.LRUCache(
    maxsize=4096
)
"""Both requests of a pod by everything they depend on: the pods of one workload share it."""


def _requests_shape(spec: Mapping[str, Any]) -> bytes | None:
    """The parts of ``spec`` its requests depend on, as a key; None when they cannot be one."""
    try:
        return marshal.dumps(
            (
                [c.get("resources") for c in spec.get("containers") or []],
                [
                    (c.get("resources"), c.get("restartPolicy"))
                    for c in spec.get("initContainers") or []
                ],
                spec.get("resources"),
                spec.get("overhead"),
            )
        )
    except (AttributeError, TypeError, ValueError):  # malformed: computed, and refused, in full
        return None


def pod_requests_and_non_zero(spec: Mapping[str, Any]) -> tuple[Resource, Resource]:
    """:func:`pod_requests` of ``spec`` without and with ``non_zero``, each container read once.

    The pair is fresh for each call (a :class:`Resource` can be changed); the arithmetic is done
    once per distinct shape of requests.
    """
    shape = _requests_shape(spec)
    known = _REQUESTS_BY_SHAPE.get(shape) if shape is not None else None
    if known is None:
        known = _compute_pod_requests(spec)
        if shape is not None:
            _REQUESTS_BY_SHAPE[shape] = known
    return known[0].copy(), known[1].copy()


def _compute_pod_requests(spec: Mapping[str, Any]) -> tuple[Resource, Resource]:
    totals = (Resource(), Resource())
    for index, container in enumerate(spec.get("containers") or []):
        requests = _container_requests(container, f"spec.containers[{index}]")
        totals[0].add(requests)
        totals[1].add(_non_zero_container(container, requests))

    sidecars = (Resource(), Resource())
    init_step_max = (Resource(), Resource())
    for index, container in enumerate(spec.get("initContainers") or []):
        requests = _container_requests(container, f"spec.initContainers[{index}]")
        pair = (requests, _non_zero_container(container, requests))
        for total, sidecar, step_max, own in zip(
            totals, sidecars, init_step_max, pair, strict=True
        ):
            if _is_sidecar(container):
                total.add(own)
                sidecar.add(own)
                step = sidecar.copy()
            else:
                step = own.copy()
                step.add(sidecar)
            step_max.set_max(step)
    for total, step_max in zip(totals, init_step_max, strict=True):
        total.set_max(step_max)

    pod_level = (spec.get("resources") or {}).get("requests")
    if pod_level:
        level = Resource.from_list(pod_level, "spec.resources.requests")
        for total in totals:
            if CPU in pod_level:
                total.milli_cpu = level.milli_cpu
            if MEMORY in pod_level:
                total.memory = level.memory

    overhead = spec.get("overhead")
    if overhead:
        extra = Resource.from_list(overhead, "spec.overhead")
        for total in totals:
            total.add(extra)
    return totals


__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "Resource",
    "pod_requests",
    "pod_requests_and_non_zero",
]
