"""The outside world as the scheduling core sees it: Protocols for time, API writes and metrics.

The operator implements them with kubernetes-asyncio (``k8s/``), the simulator in memory
(``sim/``); tests use small fakes. Nothing here names a Kubernetes client library, so the same
scheduling path runs in a cluster, in simulation, in tests and in benchmarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kopf_scheduler.model.pod import Pod


class Clock(Protocol):
    """Wall time in seconds and a way to wait; the simulator's runs virtually."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class PodRef(Protocol):
    """What API writes need to name a pod; :class:`Pod` views and :class:`ObjectRef` both fit."""

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def uid(self) -> str: ...

    @property
    def key(self) -> str: ...


@dataclass(frozen=True)
class ObjectRef:
    """An object named without a parsed view: a pod too malformed to parse, or another kind
    that events are about (a PodGroup)."""

    namespace: str
    name: str
    uid: str
    api_version: str = "v1"
    kind: str = "Pod"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class ApiError(Exception):
    """A failed API request, already stripped of the client library's types."""

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message


class NotFoundError(ApiError):
    def __init__(self, message: str = "") -> None:
        super().__init__(404, "NotFound", message)


class ConflictError(ApiError):
    def __init__(self, message: str = "") -> None:
        super().__init__(409, "Conflict", message)


@dataclass
class PodStatusPatch:
    """A change to ``pod.status``: conditions merged by type, optionally the nomination, and
    annotations that travel with it.

    ``nominated_node_name`` is written only when ``set_nominated_node_name`` is true; an empty
    name then clears it. ``annotations`` are merged into the pod's (``None`` removes one): the
    ``pods/status`` subresource takes metadata annotations too, so a note about the pod that is
    due at the same time as a status change costs no request of its own.
    """

    conditions: list[dict[str, Any]] = field(default_factory=list)
    nominated_node_name: str = ""
    set_nominated_node_name: bool = False
    annotations: dict[str, str | None] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The strategic-merge-patch body for ``pods/status``."""
        status: dict[str, Any] = {}
        if self.conditions:
            status["conditions"] = self.conditions
        if self.set_nominated_node_name:
            status["nominatedNodeName"] = self.nominated_node_name or None
        body: dict[str, Any] = {"status": status}
        if self.annotations:
            body["metadata"] = {"annotations": self.annotations}
        return body


class Binder(Protocol):
    async def bind(self, pod: Pod, node_name: str) -> None:
        """Create the Binding; a 409 for the same node counts as done (raise otherwise)."""


class PodStatusWriter(Protocol):
    async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None: ...


class PodDeleter(Protocol):
    async def delete_pod(self, pod: Pod) -> None:
        """Delete with a UID precondition and the pod's own grace period; NotFound is success."""


class StorageWriter(Protocol):
    """The writes of volume binding: a PV's ``claimRef``, a claim's selected-node annotation.

    Both are full-object updates (PUT) with the object's resourceVersion, so a write based on a
    stale copy fails with :class:`ConflictError` instead of overwriting someone else's change.
    """

    async def update_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Update a PersistentVolume; returns the object as stored (new resourceVersion)."""

    async def update_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Update a PersistentVolumeClaim; returns the object as stored."""


class ResourceClaimWriter(Protocol):
    """The writes of dynamic resource allocation to ResourceClaims (``resource.k8s.io/v1``).

    Updates are full-object PUTs carrying the resourceVersion they were based on, so a stale
    copy fails with :class:`ConflictError`; a deleted claim raises :class:`NotFoundError`. The
    reply is the claim as stored.
    """

    async def get_resource_claim(self, namespace: str, name: str) -> Mapping[str, Any]:
        """The claim as the API server has it now (after a conflict)."""

    async def update_resource_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Update the claim's metadata and spec (its finalizers)."""

    async def update_resource_claim_status(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Update the ``status`` subresource (allocation, reservedFor)."""

    async def remove_resource_claim_reservation(
        self, namespace: str, name: str, claim_uid: str, pod_uid: str
    ) -> None:
        """Take the pod out of ``status.reservedFor`` (a strategic-merge patch with a UID
        precondition on the claim)."""


@dataclass(frozen=True)
class Event:
    """An events.k8s.io/v1 Event about a pod, as ``kubectl describe`` shows it."""

    regarding: PodRef
    type: str
    reason: str
    action: str
    note: str
    reporting_controller: str
    related: PodRef | None = None
    regarding_revision: str = ""
    """The version of ``regarding`` the event is about (:attr:`Pod.revision`): a repeat of an
    event about the same version joins its series, a new version starts a new event."""
    related_revision: str = ""


class EventRecorder(Protocol):
    def record(self, event: Event) -> None:
        """Queue the event for posting; never blocks the scheduling loop."""


class Metrics(Protocol):
    """Upstream-named metrics; label values are passed as a mapping."""

    def inc(self, name: str, labels: Mapping[str, str] | None = None, value: float = 1) -> None: ...

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None: ...

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None: ...


class NullMetrics:
    """Metrics that go nowhere (tests, simulation without a registry)."""

    def inc(self, name: str, labels: Mapping[str, str] | None = None, value: float = 1) -> None:
        return None

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        return None

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        return None
