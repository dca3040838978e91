"""Pods: assigned ones to the cache, pending ones of ours to the queue, as upstream's handlers.

- Assigned pods (``spec.nodeName`` set, not terminal) live in the cache; their changes are
  cluster events that may make pending pods schedulable.
- Unassigned pods whose ``schedulerName`` names one of our profiles live in the queue; others are
  only remembered (preemption and failure handling look pods up by name).
- Terminal pods (Succeeded/Failed) are treated as gone, as upstream's informer excludes them.
- A pod too malformed to parse is reported on the pod (event and condition) and kept aside
  until it is fixed or deleted; nothing else stops.
- Every pod the store holds is indexed by the PodGroup it names, for gang scheduling.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.informer.store import Store
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod, pod_key
from kopf_scheduler.scheduler.failure import invalid_pod_message
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")


def _already_reported(raw: Mapping[str, Any], message: str) -> bool:
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("message") == message
        ):
            return True
    return False


def _is_terminal(raw: Mapping[str, Any]) -> bool:
    return (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class PodEvents:
    def __init__(self, scheduler: Scheduler, store: Store) -> None:
        self._scheduler = scheduler
        self._store = store

    def _resolve_priority(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Fill ``spec.priority`` from the PriorityClass when admission did not (rare)."""
        spec = raw.get("spec") or {}
        if spec.get("priority") is not None:
            return raw
        class_name = spec.get("priorityClassName")
        priority_class = (
            self._store.priority_classes.get(class_name)
            if class_name
            else self._store.global_default_priority_class()
        )
        if priority_class is None:
            return raw
        resolved = copy.copy(dict(raw))
        resolved_spec = dict(spec)
        resolved_spec["priority"] = priority_class.value
        resolved_spec.setdefault("preemptionPolicy", priority_class.preemption_policy)
        resolved["spec"] = resolved_spec
        return resolved

    def _is_ours(self, raw: Mapping[str, Any]) -> str | None:
        name = (raw.get("spec") or {}).get("schedulerName") or "default-scheduler"
        return name if name in self._scheduler.profiles else None

    def applied(self, raw: Mapping[str, Any]) -> None:
        if _is_terminal(raw):
            self.deleted(raw)
            return
        store = self._store
        key = pod_key(raw)
        old = store.pods.get(key)
        raw = self._resolve_priority(raw)
        try:
            pod = Pod(raw)
        except InvalidObjectError as error:
            self._invalid_pod(key, raw, old, error)
            return
        store.invalid_pods.pop(key, None)
        store.pods[key] = pod
        store.pod_groups.pod_changed(old, pod)
        if old is not None and old.uid != pod.uid:
            self._pod_gone(old)
            old = None
        if old is not None:
            pod.follow(old)
        if (
            old is not None
            and old.resource_version
            and old.resource_version == pod.resource_version
        ):
            return
        if pod.node_name:
            self._assigned_pod(old, pod)
        elif self._is_ours(raw) is not None:
            self._pending_pod(old, pod)
        elif old is not None and old.node_name:
            self._pod_gone(old)

    def deleted(self, raw: Mapping[str, Any]) -> None:
        store = self._store
        key = pod_key(raw)
        old = store.pods.get(key)
        store.invalid_pods.pop(key, None)
        if old is not None:
            del store.pods[key]
            store.pod_groups.pod_changed(old, None)
            self._pod_gone(old)

    def _invalid_pod(
        self, key: str, raw: Mapping[str, Any], old: Pod | None, error: InvalidObjectError
    ) -> None:
        if old is not None:
            del self._store.pods[key]
            self._store.pod_groups.pod_changed(old, None)
            self._pod_gone(old)
        scheduler_name = self._is_ours(raw)
        node_name = (raw.get("spec") or {}).get("nodeName")
        if scheduler_name is None or node_name:
            logger.warning("malformed_pod_ignored", pod=key, reason=str(error))
            return
        self._store.invalid_pods[key] = raw
        if not _already_reported(raw, invalid_pod_message(error)):
            self._scheduler.report_invalid_pod(raw, scheduler_name, error)

    def _assigned_pod(self, old: Pod | None, pod: Pod) -> None:
        if old is not None and not old.node_name:
            # It was pending and is now bound (by us, or by someone else): to the queue, that
            # is the pending pod leaving, as if deleted.
            self._scheduler.on_pending_pod_deleted(old)
            old = None
        if old is None:
            self._scheduler.on_assigned_pod_added(pod)
        else:
            self._scheduler.on_assigned_pod_updated(old, pod)

    def _pending_pod(self, old: Pod | None, pod: Pod) -> None:
        if old is None or old.node_name:
            self._scheduler.on_pending_pod_added(pod)
        else:
            self._scheduler.on_pending_pod_updated(old, pod)

    def _pod_gone(self, old: Pod) -> None:
        if old.node_name:
            self._scheduler.on_assigned_pod_deleted(old)
        else:
            self._scheduler.on_pending_pod_deleted(old)
