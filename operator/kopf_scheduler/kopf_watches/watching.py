"""Register kopf event handlers that forward watch events to the scheduler's event handlers.

Only ``@kopf.on.event`` handlers are registered: the scheduler keeps its own state (the cache and
the queue), so none of kopf's change detection is used. kopf still computes a "diff base" (a deep
copy of every object, minus ignored fields) for each event unless told not to; it was the largest
single cost of kopf's event handling in profiles, so the settings below swap in a storage that
keeps nothing. Pods and nodes, the busy collections, are watched by ``k8s.reflector`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf
import structlog

from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED, EventHandlers

logger = structlog.get_logger("kopf_scheduler.kopf_watches")

# Pods and nodes are not here: they are watched by k8s/reflector.py (see there why).
WATCHED = (
    ("", "v1", "namespaces"),
    ("policy", "v1", "poddisruptionbudgets"),
    ("scheduling.k8s.io", "v1", "priorityclasses"),
    ("", "v1", "services"),
    ("", "v1", "replicationcontrollers"),
    ("apps", "v1", "replicasets"),
    ("apps", "v1", "statefulsets"),
    ("", "v1", "persistentvolumeclaims"),
    ("", "v1", "persistentvolumes"),
    ("storage.k8s.io", "v1", "storageclasses"),
    ("storage.k8s.io", "v1", "csinodes"),
    ("storage.k8s.io", "v1", "csidrivers"),
    ("storage.k8s.io", "v1", "csistoragecapacities"),
    ("storage.k8s.io", "v1", "volumeattachments"),
)


def _event_type(raw_type: Any) -> str:
    # kopf reports objects from the initial listing with no type: they are current state.
    if raw_type == DELETED:
        return DELETED
    return MODIFIED if raw_type == MODIFIED else ADDED


def register(registry: kopf.OperatorRegistry, handlers: Callable[[], EventHandlers]) -> None:
    """Register a watch per kind in ``WATCHED``; ``handlers()`` returns the live handlers."""

    def route(kind: str) -> Callable[[EventHandlers, str, Any], None]:
        return {
            "namespaces": lambda h, t, o: h.on_namespace(t, o),
            "poddisruptionbudgets": lambda h, t, o: h.on_pdb(t, o),
            "priorityclasses": lambda h, t, o: h.on_priority_class(t, o),
            "services": lambda h, t, o: h.on_service(t, o),
            "replicationcontrollers": lambda h, t, o: h.on_controller(
                "ReplicationController", t, o
            ),
            "replicasets": lambda h, t, o: h.on_controller("ReplicaSet", t, o),
            "statefulsets": lambda h, t, o: h.on_controller("StatefulSet", t, o),
            "persistentvolumeclaims": lambda h, t, o: h.on_storage("PersistentVolumeClaim", t, o),
            "persistentvolumes": lambda h, t, o: h.on_storage("PersistentVolume", t, o),
            "storageclasses": lambda h, t, o: h.on_storage("StorageClass", t, o),
            "csinodes": lambda h, t, o: h.on_storage("CSINode", t, o),
            "csidrivers": lambda h, t, o: h.on_storage("CSIDriver", t, o),
            "csistoragecapacities": lambda h, t, o: h.on_storage("CSIStorageCapacity", t, o),
            "volumeattachments": lambda h, t, o: h.on_storage("VolumeAttachment", t, o),
        }[kind]

    for group, version, plural in WATCHED:
        forward = route(plural)

        async def on_event(
            event: Any, _forward: Any = forward, _plural: str = plural, **_: Any
        ) -> None:
            raw = event.get("object")
            if not isinstance(raw, dict):
                return
            try:
                _forward(handlers(), _event_type(event.get("type")), raw)
            except Exception:
                # A bug in one event must not stop the watch of every other object.
                logger.exception("event_handling_failed", kind=_plural)

        kopf.on.event(group, version, plural, registry=registry, id=f"forward-{plural}")(on_event)


class NoDiffBase(kopf.DiffBaseStorage):
    """A diff-base storage for operators without change handlers: builds and stores nothing.

    kopf only reads the diff base to detect causes for ``on.create/update/delete`` handlers and to
    reset daemons' idle timers; an operator with neither never looks at it.
    """

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> Any:
        return None

    def fetch(self, *, body: kopf.Body) -> None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: Any) -> None:
        return None


def apply_settings(configure: kopf.OperatorSettings) -> None:
    """kopf settings for a scheduler: silent, standalone, no object writes, no CRD scanning."""
    configure.peering.standalone = True
    configure.peering.clusterwide = True
    configure.posting.enabled = False
    configure.scanning.disabled = True
    configure.persistence.diffbase_storage = NoDiffBase()
    configure.watching.reconnect_backoff = 0.5
    configure.watching.inactivity_timeout = 300.0
