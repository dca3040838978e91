"""The latest known version of every watched object (what upstream calls listers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.informer.pod_groups import PodGroupStore
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.priority_class import PriorityClass


class Store:
    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.invalid_pods: dict[str, Mapping[str, Any]] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.storage = StorageCache()
        """Claims, volumes and the other storage objects the volume plugins read."""
        self.pod_groups = PodGroupStore()
        """PodGroups (watched only when a profile enables Coscheduling) and their pods."""
        self.dra = DraCache()
        """DeviceClasses, ResourceSlices and ResourceClaims (watched only when a profile enables
        DynamicResources), with the scheduler's in-flight allocations."""

    def get_pod(self, key: str) -> Pod | None:
        return self.pods.get(key)

    def list_pdbs(self) -> list[PodDisruptionBudget]:
        return list(self.pdbs.values())

    def global_default_priority_class(self) -> PriorityClass | None:
        defaults = [pc for pc in self.priority_classes.values() if pc.global_default]
        if not defaults:
            return None
        return min(defaults, key=lambda pc: pc.value)
