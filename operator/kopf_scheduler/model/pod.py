"""A read-only, fully parsed view of a raw Pod dict.

Everything the scheduler reads from a pod is parsed in the constructor, so a malformed pod fails
once, up front, with an :class:`InvalidObjectError` that names the field; the scheduling loop then
reports that error on the pod instead of tripping over it inside a plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kopf_scheduler.model.affinity import (
    AffinityTerm,
    TopologySpreadConstraint,
    WeightedAffinityTerm,
    parse_pod_affinity,
)
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod_volumes import (
    PERSISTENT_VOLUME_CLAIM,
    PodVolume,
    parse_pod_volumes,
)
from kopf_scheduler.model.resource_claim import named_claims
from kopf_scheduler.model.resources import Resource, pod_requests_and_non_zero
from kopf_scheduler.model.selectors import NodeSelector, PreferredSchedulingTerm, parse_string_map
from kopf_scheduler.model.taints import Toleration
from kopf_scheduler.model.timeutil import parse_timestamp

DEFAULT_SCHEDULER_NAME = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
EXPLANATION_ANNOTATION = "kopf-scheduler.io/explanation"
"""Where the scheduler stores a pod's latest decision record: a write kube-scheduler never makes."""
_UNCOMPARED_METADATA = frozenset({"resourceVersion", "managedFields", "annotations"})


class HostPort(NamedTuple):
    ip: str
    protocol: str
    port: int


def _annotations(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = raw.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def _only_explanation_differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` is ``old`` with another explanation annotation and nothing else changed
    (beyond the resourceVersion and the managed-fields bookkeeping every write updates)."""
    old_annotations, new_annotations = _annotations(old), _annotations(new)
    if old_annotations.get(EXPLANATION_ANNOTATION) == new_annotations.get(EXPLANATION_ANNOTATION):
        return False
    if old.keys() != new.keys() or any(old[k] != new[k] for k in old if k != "metadata"):
        return False
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if {k: v for k, v in old_meta.items() if k not in _UNCOMPARED_METADATA} != {
        k: v for k, v in new_meta.items() if k not in _UNCOMPARED_METADATA
    }:
        return False
    return {k: v for k, v in old_annotations.items() if k != EXPLANATION_ANNOTATION} == {
        k: v for k, v in new_annotations.items() if k != EXPLANATION_ANNOTATION
    }


def _int_field(value: Any, field: str, default: int | None) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidObjectError(field, f"must be an integer, got {value!r}")
    return value


def parse_preemption_policy(raw: Any, field: str) -> str:
    """A pod's or a PriorityClass's ``preemptionPolicy`` at ``field``: unset means
    ``PreemptLowerPriority``."""
    policy: str = raw or PREEMPT_LOWER_PRIORITY
    if policy not in (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER):
        raise InvalidObjectError(
            field, f'supported values: "Never", "PreemptLowerPriority"; got {policy!r}'
        )
    return policy


class Pod:
    """A pod as the scheduler sees it. ``raw`` is the original dict, never modified."""

    __slots__ = (
        "affinity_preferred",
        "anti_affinity_preferred",
        "anti_affinity_required",
        "claim_keys",
        "conditions",
        "deletion_timestamp",
        "host_ports",
        "images",
        "key",
        "labels",
        "name",
        "namespace",
        "node_affinity_preferred",
        "node_affinity_required",
        "node_name",
        "node_selector",
        "nominated_node_name",
        "non_zero_requests",
        "phase",
        "pod_affinity_required",
        "preemption_policy",
        "priority",
        "priority_class_name",
        "pvc_volume_keys",
        "raw",
        "requests",
        "resource_claim_names",
        "resource_version",
        "revision",
        "scheduler_name",
        "scheduling_gates",
        "start_time",
        "termination_grace_period",
        "tolerations",
        "topology_spread_constraints",
        "uid",
        "volumes",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise InvalidObjectError("", f"a pod must be an object, got {raw!r}")
        self.raw = raw
        metadata = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
            raise InvalidObjectError("metadata", "metadata and spec must be objects")
        if not isinstance(status, Mapping):
            raise InvalidObjectError("status", "must be an object")

        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObjectError("metadata.name", "must be a non-empty string")
        self.name: str = name
        self.namespace: str = metadata.get("namespace") or "default"
        self.key = f"{self.namespace}/{self.name}"
        self.uid: str = metadata.get("uid") or self.key
        self.resource_version: str = metadata.get("resourceVersion") or ""
        self.revision: str = self.resource_version
        """The resourceVersion this pod would have if the scheduler had not stored explanations
        on it: events about the pod are told apart by it (see :meth:`follow`)."""
        self.labels = parse_string_map(metadata.get("labels"), "metadata.labels")
        self.deletion_timestamp = parse_timestamp(
            metadata.get("deletionTimestamp"), "metadata.deletionTimestamp"
        )

        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        priority = _int_field(spec.get("priority"), "spec.priority", 0)
        assert priority is not None
        self.priority: int = priority
        self.priority_class_name: str = spec.get("priorityClassName") or ""
        self.preemption_policy = parse_preemption_policy(
            spec.get("preemptionPolicy"), "spec.preemptionPolicy"
        )
        self.termination_grace_period = _int_field(
            spec.get("terminationGracePeriodSeconds"), "spec.terminationGracePeriodSeconds", 30
        )
        self.node_selector = parse_string_map(spec.get("nodeSelector"), "spec.nodeSelector")

        tolerations_raw = spec.get("tolerations") or []
        if not isinstance(tolerations_raw, list):
            raise InvalidObjectError("spec.tolerations", "must be a list")
        self.tolerations = (
            tuple(
                Toleration.parse(t, f"spec.tolerations[{i}]") for i, t in enumerate(tolerations_raw)
            )
            if tolerations_raw
            else ()
        )

        containers = spec.get("containers") or []
        if not isinstance(containers, list):
            raise InvalidObjectError("spec.containers", "must be a list")
        init_containers = spec.get("initContainers") or []
        if not isinstance(init_containers, list):
            raise InvalidObjectError("spec.initContainers", "must be a list")
        for index, container in enumerate(containers):
            if not isinstance(container, Mapping):
                raise InvalidObjectError(f"spec.containers[{index}]", "must be an object")
        for index, container in enumerate(init_containers):
            if not isinstance(container, Mapping):
                raise InvalidObjectError(f"spec.initContainers[{index}]", "must be an object")
        self.requests: Resource
        self.non_zero_requests: Resource
        self.requests, self.non_zero_requests = pod_requests_and_non_zero(spec)
        self.host_ports = _host_ports(containers, init_containers)
        self.images: tuple[str, ...] = tuple(
            c["image"] for c in containers if isinstance(c.get("image"), str) and c["image"]
        )

        self._parse_affinity(spec.get("affinity"))
        spread_raw = spec.get("topologySpreadConstraints") or []
        if not isinstance(spread_raw, list):
            raise InvalidObjectError("spec.topologySpreadConstraints", "must be a list")
        self.topology_spread_constraints = (
            tuple(
                TopologySpreadConstraint.parse(
                    c, f"spec.topologySpreadConstraints[{i}]", self.labels
                )
                for i, c in enumerate(spread_raw)
            )
            if spread_raw
            else ()
        )
        gates = spec.get("schedulingGates") or []
        if not isinstance(gates, list):
            raise InvalidObjectError("spec.schedulingGates", "must be a list")
        self.scheduling_gates: tuple[str, ...] = (
            tuple(g.get("name", "") if isinstance(g, Mapping) else str(g) for g in gates)
            if gates
            else ()
        )

        self.volumes: tuple[PodVolume, ...] = parse_pod_volumes(spec.get("volumes"), name)
        self.claim_keys: tuple[str, ...] = ()
        """``namespace/name`` of every claim the pod uses (PVC and generic ephemeral volumes)."""
        self.pvc_volume_keys: tuple[str, ...] = ()
        """``namespace/name`` of the claims named by ``persistentVolumeClaim`` volumes only: the
        ones a node counts as in use (ReadWriteOncePod conflicts)."""
        if self.volumes:
            self.claim_keys = tuple(
                f"{self.namespace}/{volume.claim_name}"
                for volume in self.volumes
                if volume.claim_name
            )
            self.pvc_volume_keys = tuple(
                f"{self.namespace}/{volume.claim_name}"
                for volume in self.volumes
                if volume.source_kind == PERSISTENT_VOLUME_CLAIM
            )

        self.resource_claim_names = named_claims(raw)
        """Names of the ResourceClaims (``resource.k8s.io``) the pod refers to so far."""

        self.nominated_node_name: str = status.get("nominatedNodeName") or ""
        self.start_time = parse_timestamp(status.get("startTime"), "status.startTime")
        self.phase: str = status.get("phase") or ""
        conditions = status.get("conditions")
        self.conditions: tuple[Mapping[str, Any], ...] = (
            tuple(c for c in conditions if isinstance(c, Mapping)) if conditions else ()
        )

    def follow(self, previous: Pod) -> None:
        """Keep ``previous``'s revision when this version only adds our explanation to it.

        kube-scheduler folds a repeated event into the series of an earlier one while the pod it
        reports on is the very same object version, whatever the notes say; a write in between
        (a new condition message, say) makes the next event a new one. The explanation
        annotation is a write of ours alone, so it must not count as one.
        """
        if self.uid == previous.uid and _only_explanation_differs(previous.raw, self.raw):
            self.revision = previous.revision

    def assigned_to(self, node_name: str) -> Pod:
        """A copy of this view with ``spec.nodeName`` set (the scheduler's assumed pod).

        ``raw`` is shared with the original; only the parsed ``node_name`` differs.
        """
        clone = object.__new__(Pod)
        for slot in Pod.__slots__:
            object.__setattr__(clone, slot, getattr(self, slot))
        clone.node_name = node_name
        return clone

    def _parse_affinity(self, affinity: Any) -> None:
        if not affinity:  # most pods: nothing to parse
            self.node_affinity_required: NodeSelector | None = None
            self.node_affinity_preferred: tuple[PreferredSchedulingTerm, ...] = ()
            self.pod_affinity_required: tuple[AffinityTerm, ...] = ()
            self.affinity_preferred: tuple[WeightedAffinityTerm, ...] = ()
            self.anti_affinity_required: tuple[AffinityTerm, ...] = ()
            self.anti_affinity_preferred: tuple[WeightedAffinityTerm, ...] = ()
            return
        if not isinstance(affinity, Mapping):
            raise InvalidObjectError("spec.affinity", "must be an object")
        node_affinity = affinity.get("nodeAffinity") or {}
        pod_affinity = affinity.get("podAffinity") or {}
        pod_anti_affinity = affinity.get("podAntiAffinity") or {}
        for name, part in (
            ("nodeAffinity", node_affinity),
            ("podAffinity", pod_affinity),
            ("podAntiAffinity", pod_anti_affinity),
        ):
            if not isinstance(part, Mapping):
                raise InvalidObjectError(f"spec.affinity.{name}", "must be an object")
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        field = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        self.node_affinity_required = (
            NodeSelector.parse(required, field) if required is not None else None
        )
        preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        field = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(preferred, list):
            raise InvalidObjectError(field, "must be a list")
        self.node_affinity_preferred = tuple(
            PreferredSchedulingTerm.parse(t, f"{field}[{i}]") for i, t in enumerate(preferred)
        )
        self.pod_affinity_required, self.affinity_preferred = parse_pod_affinity(
            pod_affinity, "spec.affinity.podAffinity", self.namespace
        )
        self.anti_affinity_required, self.anti_affinity_preferred = parse_pod_affinity(
            pod_anti_affinity, "spec.affinity.podAntiAffinity", self.namespace
        )

    @property
    def is_assigned(self) -> bool:
        return bool(self.node_name)

    @property
    def is_terminating(self) -> bool:
        return self.deletion_timestamp is not None

    @property
    def has_affinity_terms(self) -> bool:
        return bool(
            self.pod_affinity_required
            or self.affinity_preferred
            or self.anti_affinity_required
            or self.anti_affinity_preferred
        )

    @property
    def has_required_anti_affinity(self) -> bool:
        return bool(self.anti_affinity_required)

    @property
    def explanation(self) -> str | None:
        """The decision record stored on the pod (:data:`EXPLANATION_ANNOTATION`), if any."""
        stored = _annotations(self.raw).get(EXPLANATION_ANNOTATION)
        return stored if isinstance(stored, str) else None

    @property
    def generation(self) -> int:
        """``metadata.generation`` (0 when the API server keeps none, as before v1.34)."""
        metadata = self.raw.get("metadata") or {}
        value = metadata.get("generation") if isinstance(metadata, Mapping) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def condition(self, condition_type: str) -> Mapping[str, Any] | None:
        for condition in self.conditions:
            if condition.get("type") == condition_type:
                return condition
        return None

    @property
    def is_preempted_by_scheduler(self) -> bool:
        """Terminating because a scheduler preempted it (DisruptionTarget/PreemptionByScheduler)."""
        if self.deletion_timestamp is None:
            return False
        condition = self.condition(DISRUPTION_TARGET)
        return (
            condition is not None
            and condition.get("status") == "True"
            and condition.get("reason") == PREEMPTION_BY_SCHEDULER
        )

    def __repr__(self) -> str:
        return f"Pod({self.key}, node={self.node_name!r}, priority={self.priority})"


def _host_ports(containers: list[Any], init_containers: list[Any]) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    for group, items in (("containers", containers), ("initContainers", init_containers)):
        for index, container in enumerate(items):
            if group == "initContainers" and container.get("restartPolicy") != "Always":
                continue
            for port_index, port in enumerate(container.get("ports") or []):
                field = f"spec.{group}[{index}].ports[{port_index}]"
                if not isinstance(port, Mapping):
                    raise InvalidObjectError(field, "must be an object")
                host_port = _int_field(port.get("hostPort"), f"{field}.hostPort", 0)
                if not host_port:
                    continue
                if not 0 < host_port < 65536:
                    raise InvalidObjectError(
                        f"{field}.hostPort", f"must be between 1 and 65535, got {host_port}"
                    )
                ports.append(
                    HostPort(
                        port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port
                    )
                )
    return tuple(ports)


def pod_key(raw: Mapping[str, Any]) -> str:
    """``namespace/name`` of a raw pod without parsing the rest of it."""
    metadata = raw.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
