"""DeviceClasses, ResourceSlices and ResourceClaims (dynamic resource allocation).

They fill the DRA cache the DynamicResources plugin allocates from. DeviceClasses and
ResourceSlices are kept raw, as the allocator reads them whole; each change is the kind's add,
update or delete event. A claim's change, whether the watch delivered it or the scheduler
assumed or restored it, is the ResourceClaim add, update or delete event, as upstream's handlers
sit on its assume cache. A version not newer than the one known changes nothing; a malformed
object is logged and left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.framework.events import ActionType, EventResource, object_event
from kopf_scheduler.informer.raw_metadata import object_key, resource_version
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.resource_claim import ResourceClaim
from kopf_scheduler.model.storage import resource_version_newer
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")


class DeviceObjectEvents:
    """DeviceClasses or ResourceSlices (``resource``), kept raw in ``objects`` by name."""

    def __init__(
        self,
        scheduler: Scheduler,
        objects: dict[str, Mapping[str, Any]],
        resource: EventResource,
    ) -> None:
        self._scheduler = scheduler
        self._objects = objects
        self._resource = resource

    def _name(self, raw: Mapping[str, Any]) -> str:
        name = object_key(raw, namespaced=False)
        if not name:
            logger.error("malformed_object_ignored", kind=self._resource.value, reason="no name")
        return name

    def applied(self, raw: Mapping[str, Any]) -> None:
        name = self._name(raw)
        if not name:
            return
        old = self._objects.get(name)
        version = resource_version(raw)
        if (
            old is not None
            and version
            and not resource_version_newer(version, resource_version(old))
        ):
            return
        self._objects[name] = raw
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        self._scheduler.on_cluster_event(object_event(self._resource, action), old, raw)

    def deleted(self, raw: Mapping[str, Any]) -> None:
        name = self._name(raw)
        if not name:
            return
        old = self._objects.get(name)
        if old is not None:
            del self._objects[name]
            self._scheduler.on_cluster_event(
                object_event(self._resource, ActionType.DELETE), old, None
            )


class ResourceClaimEvents:
    """Claims go to the DRA cache; the cache tells every change of a claim, the watch's and the
    scheduler's own, to the scheduler as the ResourceClaim event."""

    def __init__(self, scheduler: Scheduler, dra: DraCache) -> None:
        self._scheduler = scheduler
        self._dra = dra
        dra.subscribe(self._claim_changed)

    def applied(self, raw: Mapping[str, Any]) -> None:
        key = object_key(raw, namespaced=True)
        try:
            claim = ResourceClaim(raw)
        except InvalidObjectError as error:
            logger.error(
                "malformed_resource_claim_ignored",
                claim=key,
                field=error.field,
                reason=error.reason,
            )
            self._dra.delete_claim(key)
            return
        self._dra.put_claim(claim)

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._dra.delete_claim(object_key(raw, namespaced=True))

    def _claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        if new is None:
            action = ActionType.DELETE
        elif old is None:
            action = ActionType.ADD
        else:
            action = ActionType.UPDATE_GENERIC
        self._scheduler.on_cluster_event(
            object_event(EventResource.RESOURCE_CLAIM, action), old, new
        )
