"""Namespaces: their labels, which the namespace selectors of pod affinity terms match.

A namespace's change raises no cluster event, as upstream's handlers raise none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.scheduler.loop import Scheduler


class NamespaceEvents:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def applied(self, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        labels = metadata.get("labels") or {}
        self._scheduler.on_namespace_updated(
            metadata.get("name", ""), labels if isinstance(labels, Mapping) else {}
        )

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._scheduler.on_namespace_deleted((raw.get("metadata") or {}).get("name", ""))
