"""Raw pods and PodGroups as the watches deliver them, and fakes of the keeper's ports."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kopf_scheduler.model.pod_group import POD_GROUP_LABEL
from kopf_scheduler.ports import ApiError, Event, NotFoundError

CREATED = "2026-11-01T00:00:00Z"


def raw_pod(
    name: str,
    group: str | None = "gang",
    *,
    namespace: str = "team",
    phase: str = "Pending",
    node: str = "",
    owners: Sequence[str] = ("trainer",),
) -> dict[str, Any]:
    labels = {POD_GROUP_LABEL: group} if group is not None else {"app": "web"}
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "labels": labels,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": f"uid-{owner}"}
                for owner in owners
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": phase},
    }


def raw_pod_group(
    name: str = "gang",
    *,
    namespace: str = "team",
    min_member: int = 2,
    status: Mapping[str, Any] | None = None,
    created: str = CREATED,
) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-pg-{namespace}-{name}",
            "resourceVersion": "1",
            "creationTimestamp": created,
        },
        "spec": {"minMember": min_member},
        "status": dict(status or {}),
    }


class FakeWriter:
    """The status subresource of an API server holding ``groups`` (merge patches applied)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], dict[str, Any]] = {}
        self.patches: list[tuple[str, str, Mapping[str, Any]]] = []
        self.failures: list[ApiError] = []
        """Raised, in order, by the next patches instead of writing."""

    def hold(self, raw: dict[str, Any]) -> None:
        self.groups[(raw["metadata"]["namespace"], raw["metadata"]["name"])] = copy.deepcopy(raw)

    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        self.patches.append((namespace, name, copy.deepcopy(dict(patch))))
        if self.failures:
            raise self.failures.pop(0)
        stored = self.groups.get((namespace, name))
        if stored is None:
            raise NotFoundError(f'podgroups.scheduling.x-k8s.io "{name}" not found')
        status = stored.setdefault("status", {})
        for field, value in patch["status"].items():
            if value is None:
                status.pop(field, None)
            else:
                status[field] = value
        version = int(stored["metadata"]["resourceVersion"]) + 1
        stored["metadata"]["resourceVersion"] = str(version)
        return copy.deepcopy(stored)


class FakeEvents:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)
