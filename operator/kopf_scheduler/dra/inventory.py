"""The devices drivers publish, as the allocator reads them: parsed once, looked up per node.

Every scheduling attempt of a pod with claims reads all ResourceSlices, and every node its
Filter visits needs that node's pools. Slices change rarely (a driver publishes a node's devices
when it starts and when they change), so the parsed slices, their index by node and each node's
pools are kept in an :class:`Inventory` until one slice changes; :class:`InventoryCache` hands
out the same inventory as long as the scheduler's cache holds the very same slice objects (the
cache replaces an object on every watch event, never changes one in place).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.objects import DeviceID, ResourceSlice
from kopf_scheduler.dra.pools import Pool, SliceIndex, gather_pools
from kopf_scheduler.model.errors import InvalidObjectError


@dataclass(frozen=True, slots=True)
class NodeView:
    """One node's pools, with what names their state."""

    pools: list[Pool]
    versions: tuple[tuple[str, str], ...] | None
    """The uid and resourceVersion of every slice in the pools; ``None`` when one has none."""
    device_ids: tuple[DeviceID, ...]
    """Every device of the pools, in the order the search visits them."""


class Inventory:
    """Every slice, parsed; the first slice that does not parse makes every allocation fail."""

    def __init__(self, slices: Sequence[Mapping[str, Any]], selectors: SelectorCache) -> None:
        self._selectors = selectors
        self.slice_error: str | None = None
        parsed: list[ResourceSlice] = []
        for raw in slices:
            try:
                parsed.append(selectors.resource_slice(raw))
            except InvalidObjectError as error:
                name = (raw.get("metadata") or {}).get("name", "")
                self.slice_error = f"convert ResourceSlice {name}: {error}"
                break
        self._index = SliceIndex(parsed)
        self._views: dict[tuple[str, tuple[tuple[str, str], ...]], NodeView] = {}

    def node_view(self, node_name: str, labels: Mapping[str, str]) -> NodeView:
        """The node's pools; the search never changes a pool, so views are shared."""
        key = (node_name, tuple(sorted(labels.items())) if self._index.selects_by_label else ())
        view = self._views.get(key)
        if view is None:
            available = self._index.available(node_name, labels)
            versions = tuple(s.version for s in available if s.version is not None)
            pools = self._selectors.pools(available, gather_pools)
            view = NodeView(
                pools=pools,
                versions=versions if len(versions) == len(available) else None,
                device_ids=tuple(candidate.id for pool in pools for candidate in pool.candidates),
            )
            self._views[key] = view
        return view


class InventoryCache:
    """The inventory of the slices seen last; a new one when any slice is not the same object."""

    def __init__(self, selectors: SelectorCache) -> None:
        self._selectors = selectors
        self._lock = threading.Lock()
        self._kept: tuple[tuple[Mapping[str, Any], ...], Inventory] | None = None

    def get(self, slices: Sequence[Mapping[str, Any]]) -> Inventory:
        with self._lock:
            kept = self._kept
        if kept is not None and same_objects(kept[0], slices):
            return kept[1]
        inventory = Inventory(slices, self._selectors)
        # The slices are held, so no other object can take the identity of one of them.
        with self._lock:
            self._kept = (tuple(slices), inventory)
        return inventory


def same_objects(kept: Sequence[object], current: Sequence[object]) -> bool:
    """Whether both hold the very same objects, in the same order."""
    return len(kept) == len(current) and all(a is b for a, b in zip(kept, current, strict=True))
