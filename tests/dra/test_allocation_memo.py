"""Answers kept across attempts: the same inputs give the kept answer without a search, and a
change of any input (devices taken, a slice, a class, what the claims ask) searches again."""

from __future__ import annotations

import copy
from typing import Any

from kopf_scheduler.dra.allocation_memo import AllocationMemo
from kopf_scheduler.dra.allocator import Allocator, DeviceID
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import Inventory, InventoryCache
from tests.dra.builders import (
    CLASS_A,
    DRIVER_A,
    NODE_1,
    POOL_1,
    REGION_1,
    REQ_0,
    SLICE_1,
    cel,
    claim_with_requests,
    device_class,
    node,
    request,
    slice_with_devices,
)

Obj = dict[str, Any]


def _versioned(raw: Obj, uid: str, version: str) -> Obj:
    raw = copy.deepcopy(raw)
    raw["metadata"].update(uid=uid, resourceVersion=version)
    return raw


SLICE = _versioned(slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 3), "slice-uid", "1")
CLASS = _versioned(device_class(CLASS_A, DRIVER_A), "class-uid", "1")


def _claims(count: int = 1, *selectors: Obj) -> list[Obj]:
    return [claim_with_requests("claim", None, request(REQ_0, CLASS_A, count, *selectors))]


class _Attempt:
    """What one scheduling attempt builds: an allocator over the cluster as it is now."""

    def __init__(
        self,
        memo: AllocationMemo,
        *,
        slices: list[Obj] | None = None,
        taken: frozenset[DeviceID] = frozenset(),
        device_class: Obj | None = None,
    ) -> None:
        selectors = SelectorCache()
        self.allocator = Allocator(
            classes={CLASS_A: device_class or CLASS},
            inventory=Inventory(slices or [SLICE], selectors),
            allocated=taken,
            selectors=selectors,
            memo=memo,
        )

    def allocate(self, claims: list[Obj]) -> tuple[list[Obj] | None, int]:
        """The answer, and how many search states it took (0: the kept answer)."""
        found = self.allocator.allocate(node(NODE_1, REGION_1), claims)
        return found, self.allocator.search_steps


def _devices(found: list[Obj] | None) -> list[str]:
    assert found is not None
    return [r["device"] for r in found[0]["devices"]["results"]]


def test_the_same_inputs_give_the_kept_answer_without_a_search() -> None:
    memo = AllocationMemo()
    first, steps = _Attempt(memo).allocate(_claims())
    assert steps > 0
    again, steps = _Attempt(memo).allocate(_claims())
    assert steps == 0
    assert again == first
    assert _devices(again) == ["device-0"]


def test_a_claim_of_another_name_asking_the_same_gets_the_kept_answer() -> None:
    memo = AllocationMemo()
    _Attempt(memo).allocate(_claims())
    other = _claims()
    other[0]["metadata"]["name"] = "another-claim"
    found, steps = _Attempt(memo).allocate(other)
    assert steps == 0
    assert _devices(found) == ["device-0"]


def test_does_not_fit_is_kept_too() -> None:
    memo = AllocationMemo()
    found, steps = _Attempt(memo).allocate(_claims(4))
    assert found is None
    assert steps > 0
    assert _Attempt(memo).allocate(_claims(4)) == (None, 0)


def test_a_device_taken_since_searches_again() -> None:
    memo = AllocationMemo()
    _Attempt(memo).allocate(_claims())
    taken = frozenset({DeviceID(DRIVER_A, POOL_1, "device-0")})
    found, steps = _Attempt(memo, taken=taken).allocate(_claims())
    assert steps > 0
    assert _devices(found) == ["device-1"]


def test_a_changed_slice_searches_again() -> None:
    memo = AllocationMemo()
    _Attempt(memo).allocate(_claims(3))
    fewer = _versioned(slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2), "slice-uid", "2")
    found, steps = _Attempt(memo, slices=[fewer]).allocate(_claims(3))
    assert found is None
    assert steps > 0


def test_a_changed_class_searches_again() -> None:
    memo = AllocationMemo()
    _Attempt(memo).allocate(_claims())
    narrower = copy.deepcopy(CLASS)
    narrower["spec"]["selectors"] = [cel('device.driver == "someone-else"')]
    narrower["metadata"]["resourceVersion"] = "2"
    found, steps = _Attempt(memo, device_class=narrower).allocate(_claims())
    assert found is None
    assert steps > 0


def test_claims_asking_something_else_search_again() -> None:
    memo = AllocationMemo()
    _Attempt(memo).allocate(_claims())
    found, steps = _Attempt(memo).allocate(_claims(2))
    assert steps > 0
    assert _devices(found) == ["device-0", "device-1"]


def test_slices_without_a_version_are_never_kept() -> None:
    memo = AllocationMemo()
    unversioned = slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 3)
    _Attempt(memo, slices=[unversioned]).allocate(_claims())
    assert len(memo) == 0
    _, steps = _Attempt(memo, slices=[unversioned]).allocate(_claims())
    assert steps > 0


def test_the_inventory_is_kept_while_the_slices_are_the_same_objects() -> None:
    inventories = InventoryCache(SelectorCache())
    slices = [SLICE]
    kept = inventories.get(slices)
    assert inventories.get(list(slices)) is kept
    replaced = inventories.get([copy.deepcopy(SLICE)])
    assert replaced is not kept
    assert inventories.get([]) is not replaced
