"""Initial listing and periodic resynchronisation of the watched collections.

Scheduling starts only once the cache holds every node and pod (a scheduler with a partial view
double-books capacity). Storage objects are listed before pods, so a pod's claims are known when
its first attempt runs. Watches can also lose deletions across a restart with a fresh listing
(410 Gone), so the store is periodically reconciled against a full LIST: objects the API no
longer has are fed in as deletions, so nothing stays counted twice or forever.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from kopf_scheduler.informer.handlers import ADDED, DELETED, STORAGE_KINDS, EventHandlers
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS, WatchedKind

logger = structlog.get_logger("kopf_scheduler.sync")


class Lister(Protocol):
    async def list_items(self, path: str) -> list[dict[str, Any]]: ...


def _key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else name


class Synchronizer:
    """Lists ``kinds`` in order; by default every kind the cache needs."""

    def __init__(
        self,
        lister: Lister,
        handlers: EventHandlers,
        kinds: tuple[WatchedKind, ...] = WATCHED_KINDS,
    ) -> None:
        self._lister = lister
        self._handlers = handlers
        self._kinds = kinds
        self._seen: dict[str, dict[str, Mapping[str, Any]]] = {k.kind: {} for k in kinds}
        self.synced = False

    async def list_all(self) -> None:
        """LIST every collection in dependency order and feed it in; then mark the cache synced."""
        for watched in self._kinds:
            kind = watched.kind
            items = await self._lister.list_items(watched.path)
            route = self._handlers.route(kind)
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
