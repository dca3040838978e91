"""Which workloads select or own a pod: the selectors PodTopologySpread's default spreading uses.

Upstream spreads a pod without its own constraints by the selectors of the Services that select
it and of its controlling ReplicationController, ReplicaSet or StatefulSet. This index keeps those
selectors from watch events; :meth:`selectors_for` answers the plugin's question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.selectors import LabelSelector

logger = structlog.get_logger("kopf_scheduler.workloads")

DELETED = "DELETED"
_CONTROLLERS = {
    ("v1", "ReplicationController"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
}


def _key(raw: Mapping[str, Any]) -> tuple[str, str]:
    metadata = raw.get("metadata") or {}
    return metadata.get("namespace") or "default", metadata.get("name", "")


class WorkloadIndex:
    def __init__(self) -> None:
        self._services: dict[tuple[str, str], dict[str, str]] = {}
        self._controllers: dict[tuple[str, str, str], LabelSelector] = {}

    def on_service(self, event_type: str, raw: Mapping[str, Any]) -> None:
        key = _key(raw)
        selector = (raw.get("spec") or {}).get("selector")
        if event_type == DELETED or not isinstance(selector, Mapping) or not selector:
            self._services.pop(key, None)
            return
        self._services[key] = {str(k): str(v) for k, v in selector.items()}

    def on_controller(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        namespace, name = _key(raw)
        key = (kind, namespace, name)
        if event_type == DELETED:
            self._controllers.pop(key, None)
            return
        selector = (raw.get("spec") or {}).get("selector")
        try:
            if kind == "ReplicationController":
                parsed = (
                    LabelSelector(dict(selector))
                    if isinstance(selector, Mapping) and selector
                    else LabelSelector.nothing()
                )
            else:
                parsed = LabelSelector.parse(selector, "spec.selector")
        except (InvalidObjectError, TypeError, ValueError) as error:
            logger.warning(
                "malformed_workload_ignored",
                kind=kind,
                name=f"{namespace}/{name}",
                reason=str(error),
            )
            self._controllers.pop(key, None)
            return
        self._controllers[key] = parsed

    def selectors_for(self, pod: Pod) -> list[LabelSelector]:
        result = [
            LabelSelector(selector)
            for (namespace, _), selector in self._services.items()
            if namespace == pod.namespace
            and all(pod.labels.get(k) == v for k, v in selector.items())
        ]
        for owner in (pod.raw.get("metadata") or {}).get("ownerReferences") or []:
            if not isinstance(owner, Mapping) or not owner.get("controller"):
                continue
            if (owner.get("apiVersion"), owner.get("kind")) not in _CONTROLLERS:
                break
            found = self._controllers.get((owner["kind"], pod.namespace, owner.get("name", "")))
            if found is not None and not found.matches_nothing:
                result.append(found)
            break
        return result
