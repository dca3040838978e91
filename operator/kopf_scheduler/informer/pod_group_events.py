"""PodGroups (gang scheduling): kept in the store, each change the event that may let the
group's pods in.

A PodGroup created or changed is the PodGroup add or update event that gives the group's
rejected pods another try; the same version again (a relist) changes nothing, and a malformed
one is logged and dropped. Which pods name a group is indexed from the pod events
(``pod_events.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.framework.events import ActionType, EventResource, object_event
from kopf_scheduler.informer.pod_groups import PodGroupStore
from kopf_scheduler.informer.raw_metadata import namespaced_key, resource_version
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")


class PodGroupEvents:
    def __init__(self, scheduler: Scheduler, pod_groups: PodGroupStore) -> None:
        self._scheduler = scheduler
        self._groups = pod_groups.groups

    def applied(self, raw: Mapping[str, Any]) -> None:
        key = namespaced_key(raw)
        old = self._groups.get(key)
        version = resource_version(raw)
        if old is not None and version and old.resource_version == version:
            return
        try:
            group = PodGroup(raw)
        except InvalidObjectError as error:
            logger.error("malformed_pod_group_ignored", pod_group=key, reason=str(error))
            self._groups.pop(key, None)
            return
        self._groups[key] = group
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        self._scheduler.on_cluster_event(object_event(EventResource.POD_GROUP, action), old, group)

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._groups.pop(namespaced_key(raw), None)
