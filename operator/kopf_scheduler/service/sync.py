"""Initial listing and periodic resynchronisation of the watched collections.

Scheduling starts only once the cache holds every node and pod (a scheduler with a partial view
double-books capacity). The collections are requested together and delivered one after
another, storage objects before pods, so a pod's claims are known when it is queued. Watches
can also lose deletions across a restart with a fresh listing (410 Gone), so the store is
periodically reconciled against a full LIST: objects the API no longer has are fed in as
deletions, so nothing stays counted twice or forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from kopf_scheduler.informer.handlers import ADDED, DELETED, EventHandler, EventHandlers
from kopf_scheduler.informer.storage_events import STORAGE_KINDS
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS, WatchedKind
from kopf_scheduler.ports import ApiError

logger = structlog.get_logger("kopf_scheduler.sync")

ALWAYS_WATCHED = tuple(kind for kind in WATCHED_KINDS if not kind.plugin)
"""Every kind any configuration needs (a plugin's own kinds only when it is enabled)."""


class Lister(Protocol):
    async def list_items(self, path: str) -> list[dict[str, Any]]: ...


def _key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else name


class Synchronizer:
    """Lists ``kinds`` in order; by default every kind the cache needs whatever the plugins.

    Listed objects go where the watches send theirs: ``route(kind)``, by default the handlers'.
    """

    def __init__(
        self,
        lister: Lister,
        handlers: EventHandlers,
        kinds: tuple[WatchedKind, ...] = ALWAYS_WATCHED,
        route: Callable[[str], EventHandler] | None = None,
    ) -> None:
        self._lister = lister
        self._handlers = handlers
        self._route = route if route is not None else handlers.route
        self._kinds = kinds
        self._seen: dict[str, dict[str, Mapping[str, Any]]] = {k.kind: {} for k in kinds}
        self.synced = False

    async def list_all(self) -> None:
        """LIST every collection at once, feed them in in dependency order, mark the cache synced.

        The requests go out together (each one is a round trip, and on a busy API server the
        round trips, not the bytes, were most of the start-up); the objects are delivered kind
        by kind in the table's order, as if listed one after another.
        """
        listings = await asyncio.gather(*(self._list(watched) for watched in self._kinds))
        for watched, items in zip(self._kinds, listings, strict=True):
            kind = watched.kind
            route = self._route(kind)
            fresh: dict[str, Mapping[str, Any]] = {}
            for raw in items:
                fresh[_key(raw)] = raw
                route(ADDED, raw)
            for key, gone in self._seen[kind].items():
                if key not in fresh and self._still_known(kind, key):
                    logger.info("resync_deleted", kind=kind, name=key)
                    route(DELETED, gone)
            self._seen[kind] = fresh
        self.synced = True

    async def _list(self, watched: WatchedKind) -> list[dict[str, Any]]:
        """The collection's items; a custom kind the API server does not serve is an ApiError
        that says which CRD to install (startup retries until it is there)."""
        try:
            return await self._lister.list_items(watched.path)
        except ApiError as error:
            if error.status != 404 or not watched.definition:
                raise
            needed_by = f" (the {watched.plugin} plugin needs it)" if watched.plugin else ""
            raise ApiError(
                404,
                error.reason or "NotFound",
                f"the API server does not serve {watched.path}{needed_by}: "
                f"install the CRD {watched.definition}",
            ) from None

    def _still_known(self, kind: str, key: str) -> bool:
        store = self._handlers.store
        if kind == "Pod":
            return key in store.pods or key in store.invalid_pods
        if kind == "Node":
            return self._handlers.get_node(key) is not None
        if kind == "PodDisruptionBudget":
            return key in store.pdbs
        if kind == "PriorityClass":
            return key in store.priority_classes
        if kind in STORAGE_KINDS:
            return STORAGE_KINDS[kind].shelf(store.storage).known(key) is not None
        return True
