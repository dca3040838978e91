"""Register kopf event handlers that forward watch events to the operator's route of each kind.

Only ``@kopf.on.event`` handlers are registered: the scheduler keeps its own state (the cache and
the queue), so none of kopf's change detection is used, and kopf puts no finalizers or progress
annotations on users' objects (PodGroups included: an uninstalled scheduler leaves nothing that
cannot be deleted). Each kind has one handler, the operator's route for that kind.

kopf still computes a "diff base" (a deep copy of every object, minus ignored fields) for each
event unless told not to; it was the largest single cost of kopf's event handling in profiles, so
the settings below swap in a storage that keeps nothing. Which kinds kopf watches is
``informer/watched_kinds.py``'s table; pods and nodes, the busy collections, are watched by
``k8s.reflector`` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf
import structlog

from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED, EventHandler
from kopf_scheduler.informer.watched_kinds import WatchedKind, Watcher, watched_by

logger = structlog.get_logger("kopf_scheduler.kopf_watches")


def _event_type(raw_type: Any) -> str:
    # kopf reports objects from the initial listing with no type: they are current state.
    if raw_type == DELETED:
        return DELETED
    return MODIFIED if raw_type == MODIFIED else ADDED


def register(
    registry: kopf.OperatorRegistry,
    route: Callable[[str], EventHandler],
    kinds: tuple[WatchedKind, ...] | None = None,
) -> None:
    """Register one watch per kind in ``kinds`` (by default those kopf keeps current for any
    configuration); ``route(kind)`` gives the one handler of that kind's events."""
    for watched in kinds if kinds is not None else watched_by(Watcher.KOPF):
        deliver = route(watched.kind)

        async def on_event(
            event: Any, _kind: str = watched.kind, _deliver: EventHandler = deliver, **_: Any
        ) -> None:
            raw = event.get("object")
            if not isinstance(raw, dict):
                return
            try:
                _deliver(_event_type(event.get("type")), raw)
            except Exception:
                # A bug in one event must not stop the watch of every other object.
                logger.exception("event_handling_failed", kind=_kind)

        kopf.on.event(
            watched.group,
            watched.version,
            watched.plural,
            registry=registry,
            id=f"forward-{watched.plural}",
        )(on_event)


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
