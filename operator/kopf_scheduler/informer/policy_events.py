"""PodDisruptionBudgets and PriorityClasses: kept in the store, with no cluster event.

Preemption reads the budgets when it chooses victims; a pod admitted without a priority takes
its PriorityClass's (``pod_events.py``). A malformed one is logged and left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.informer.raw_metadata import namespaced_key
from kopf_scheduler.informer.store import Store
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.priority_class import PriorityClass

logger = structlog.get_logger("kopf_scheduler.informer")


class PodDisruptionBudgetEvents:
    def __init__(self, store: Store) -> None:
        self._budgets = store.pdbs

    def applied(self, raw: Mapping[str, Any]) -> None:
        key = namespaced_key(raw)
        try:
            self._budgets[key] = PodDisruptionBudget(raw)
        except InvalidObjectError as error:
            logger.error("malformed_pdb_ignored", pdb=key, reason=str(error))
            self._budgets.pop(key, None)

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._budgets.pop(namespaced_key(raw), None)


class PriorityClassEvents:
    def __init__(self, store: Store) -> None:
        self._classes = store.priority_classes

    def applied(self, raw: Mapping[str, Any]) -> None:
        name = (raw.get("metadata") or {}).get("name", "")
        try:
            self._classes[name] = PriorityClass(raw)
        except InvalidObjectError as error:
            logger.error("malformed_priority_class_ignored", priority_class=name, reason=str(error))

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._classes.pop((raw.get("metadata") or {}).get("name", ""), None)
