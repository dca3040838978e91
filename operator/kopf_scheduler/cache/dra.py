"""The objects of dynamic resource allocation as the scheduler sees them: DeviceClasses,
ResourceSlices, ResourceClaims, and the allocations the scheduler has made but not yet written.

This is upstream's DRA manager with its claim tracker:

- Claims sit in an :class:`~kopf_scheduler.cache.storage_cache.AssumeCache`. After the
  scheduler wrote a claim's allocation (PreBind), it assumes the written object, so the next pod
  sees the devices as taken even before the watch delivers the claim; a watch event not newer
  than the assumption is ignored, a newer one replaces it.
- In-flight allocations: between Reserve and the end of PreBind, the allocation exists only
  here (by claim UID). Their devices count as allocated, and a pod sharing such a claim waits
  ("is in the process of being allocated").
- The devices in use are kept as a set, updated as claims gain or lose an allocation (an
  allocation changed in place is not looked at, as upstream), so a PreFilter need not walk
  every claim.

Every change of a claim's visible version (watch, assume, restore) is passed to the listeners:
the scheduler's event handlers turn it into the ResourceClaim cluster event, as upstream's
handlers sit on the assume cache. Which devices of a claim count is the allocator's rule, given
as ``devices_of``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kopf_scheduler.cache.storage_cache import AssumeCache
from kopf_scheduler.dra.allocator import DeviceID, allocated_devices
from kopf_scheduler.model.resource_claim import ResourceClaim

ClaimListener = Callable[[ResourceClaim | None, ResourceClaim | None], None]
"""Called with ``(old, new)``: an add has no old, a delete no new."""


class DraCache:
    def __init__(self) -> None:
        self.classes: dict[str, Mapping[str, Any]] = {}
        """DeviceClasses by name."""
        self.slices: dict[str, Mapping[str, Any]] = {}
        """ResourceSlices by name."""
        self._claims: AssumeCache[ResourceClaim] = AssumeCache()
        self._in_flight: dict[str, Mapping[str, Any]] = {}
        self._allocated: set[DeviceID] = set()
        self._listeners: list[ClaimListener] = []

    def subscribe(self, listener: ClaimListener) -> None:
        self._listeners.append(listener)

    # Claims as the scheduler sees them ----------------------------------------------------------

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self._claims.get(f"{namespace}/{name}")

    def claims(self) -> list[ResourceClaim]:
        return list(self._claims.values())

    def api_claim(self, key: str) -> ResourceClaim | None:
        """The claim as the API server last delivered it."""
        return self._claims.get_api_object(key)

    def put_claim(self, claim: ResourceClaim) -> None:
        """A watch event (add or update); ignored unless newer than what is seen now."""
        old = self._claims.get(claim.key)
        self._claims.upsert(claim)
        if self._claims.get(claim.key) is claim:
            self._changed(old, claim)

    def delete_claim(self, key: str) -> None:
        old = self._claims.get(key)
        if old is None:
            return
        self._claims.delete(key)
        self._changed(old, None)

    def assume_claim(self, claim: ResourceClaim) -> None:
        """The scheduler wrote ``claim``: see it so until the watch catches up.

        Raises :class:`~kopf_scheduler.cache.storage_cache.AssumeConflictError` when a newer
        version is already known, and ``KeyError`` for a claim the watch never delivered.
        """
        old = self._claims.get(claim.key)
        self._claims.assume(claim)
        self._changed(old, claim)

    def restore_claim(self, key: str) -> None:
        """Drop an assumption: back to the watch's version."""
        old = self._claims.get(key)
        if old is None or not self._claims.is_assumed(key):
            return
        self._claims.restore(key)
        self._changed(old, self._claims.get(key))

    def _changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        had = old is not None and old.allocation is not None
        has = new is not None and new.allocation is not None
        if old is not None and had and (new is None or not has):
            self._allocated.difference_update(allocated_devices(old.raw))
        if new is not None and has and not had:
            self._allocated.update(allocated_devices(new.raw))
        for listener in self._listeners:
            listener(old, new)

    # In-flight allocations ----------------------------------------------------------------------

    def has_pending_allocation(self, uid: str) -> bool:
        return uid in self._in_flight

    def signal_pending_allocation(self, uid: str, allocated_claim: Mapping[str, Any]) -> None:
        """Reserve made an allocation for the claim ``uid`` (the claim with it, as raw)."""
        self._in_flight[uid] = allocated_claim

    def pending_allocation(self, uid: str) -> Mapping[str, Any] | None:
        """The claim with its in-flight allocation, if Reserve made one."""
        return self._in_flight.get(uid)

    def remove_pending_allocation(self, uid: str) -> bool:
        """Forget the claim's in-flight allocation; whether there was one."""
        return self._in_flight.pop(uid, None) is not None

    def allocated_devices(self) -> set[DeviceID]:
        """Every device taken: by the claims seen now, and by the in-flight allocations."""
        allocated = set(self._allocated)
        for claim in self._in_flight.values():
            allocated.update(allocated_devices(claim))
        return allocated
