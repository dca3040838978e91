"""A read-only view of a scheduler-plugins PodGroup (``scheduling.x-k8s.io/v1alpha1``).

A PodGroup says that its pods are worth running only together: at least ``minMember`` of them
must be placed at once, or none is. A pod joins a group by the label
``scheduling.x-k8s.io/pod-group: <group name>``, and the group lives in the pod's namespace, so
a group's identity is ``namespace/name``. The fields and their meaning are those of
scheduler-plugins' CRD, so the objects its users already have are read unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.parts import object_parts
from kopf_scheduler.model.resources import Resource
from kopf_scheduler.model.timeutil import parse_timestamp

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
"""The pod label naming the PodGroup (in the pod's namespace) the pod belongs to."""


def pod_group_key(namespace: str, labels: Mapping[str, str]) -> str | None:
    """``namespace/name`` of the group a pod with ``labels`` in ``namespace`` belongs to, or
    ``None`` for a pod of no group."""
    name = labels.get(POD_GROUP_LABEL)
    if not name:
        return None
    return f"{namespace}/{name}"


class PodGroup:
    __slots__ = (
        "creation_timestamp",
        "failed",
        "min_member",
        "min_resources",
        "name",
        "namespace",
        "occupied_by",
        "phase",
        "raw",
        "resource_version",
        "running",
        "schedule_start_time",
        "schedule_timeout_seconds",
        "scheduled",
        "succeeded",
        "uid",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        metadata, spec, status, name = object_parts(raw, "PodGroup")
        self.raw = raw
        self.name = name
        self.namespace: str = metadata.get("namespace") or "default"
        self.uid: str = metadata.get("uid") or self.key
        self.resource_version: str = metadata.get("resourceVersion") or ""
        created = parse_timestamp(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
        self.creation_timestamp: float = created if created is not None else 0.0
        min_member = _count(spec.get("minMember"), "spec.minMember", minimum=0)
        self.min_member: int = min_member if min_member is not None else 0
        min_resources = spec.get("minResources")
        self.min_resources: Resource | None = (
            Resource.from_list(min_resources, "spec.minResources")
            if min_resources is not None
            else None
        )
        self.schedule_timeout_seconds: int | None = _count(
            spec.get("scheduleTimeoutSeconds"), "spec.scheduleTimeoutSeconds", minimum=0
        )
        """``None`` or 0: the plugin's ``permitWaitingTimeSeconds`` applies (the CRD allows 0)."""
        phase = status.get("phase") or ""
        if not isinstance(phase, str):
            raise InvalidObjectError("status.phase", f"must be a string, got {phase!r}")
        self.phase: str = phase
        self.scheduled: int = _count(status.get("scheduled"), "status.scheduled", minimum=0) or 0
        self.running: int = _count(status.get("running"), "status.running", minimum=0) or 0
        self.succeeded: int = _count(status.get("succeeded"), "status.succeeded", minimum=0) or 0
        self.failed: int = _count(status.get("failed"), "status.failed", minimum=0) or 0
        occupied_by = status.get("occupiedBy") or ""
        if not isinstance(occupied_by, str):
            raise InvalidObjectError("status.occupiedBy", f"must be a string, got {occupied_by!r}")
        self.occupied_by: str = occupied_by
        self.schedule_start_time = parse_timestamp(
            status.get("scheduleStartTime"), "status.scheduleStartTime"
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"PodGroup({self.key}, minMember={self.min_member})"


def _count(value: Any, field: str, *, minimum: int) -> int | None:
    """An optional integer field of at least ``minimum``."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidObjectError(field, f"must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidObjectError(field, f"must be at least {minimum}, got {value}")
    return value
