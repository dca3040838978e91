"""Why claims cannot be allocated on a node, as explanations say it: the first request no device
of the node serves, or that the requests only fail together."""

from __future__ import annotations

from typing import Any

from kopf_scheduler.dra.allocator import Allocator, DeviceID
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import Inventory
from tests.dra.builders import (
    CLAIM_0,
    CLAIM_1,
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    NODE_1,
    NODE_2,
    POOL_1,
    REGION_1,
    REQ_0,
    SLICE_1,
    SUB_REQ_0,
    SUB_REQ_1,
    cel,
    claim,
    claim_with_requests,
    device_class,
    first_available,
    node,
    request,
    slice_with_devices,
    sub_request,
)

Obj = dict[str, Any]
TWO_DEVICES = slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2)


def _why_not(
    claims: list[Obj],
    *,
    slices: list[Obj] | None = None,
    taken: frozenset[DeviceID] = frozenset(),
    on: str = NODE_1,
) -> str:
    selectors = SelectorCache()
    allocator = Allocator(
        classes={
            CLASS_A: device_class(CLASS_A, DRIVER_A),
            CLASS_B: device_class(CLASS_B, DRIVER_B),
        },
        inventory=Inventory([TWO_DEVICES] if slices is None else slices, selectors),
        allocated=taken,
        selectors=selectors,
    )
    target = node(on, REGION_1)
    assert allocator.allocate(target, claims) is None
    return allocator.why_not(target, claims)


def test_a_node_without_devices() -> None:
    assert _why_not([claim(CLAIM_0, REQ_0, CLASS_A)], on=NODE_2) == "the node has no devices"


def test_no_device_of_the_class() -> None:
    assert _why_not([claim(CLAIM_0, REQ_0, CLASS_B)]) == (
        f"claim {CLAIM_0}, request {REQ_0}: no device matches class {CLASS_B}"
    )


def test_no_device_the_request_selects() -> None:
    picky = request(REQ_0, CLASS_A, 1, cel('device.driver == "none"'))
    assert _why_not([claim_with_requests(CLAIM_0, None, picky)]) == (
        f"claim {CLAIM_0}, request {REQ_0}: no device matches class {CLASS_A} and its selectors"
    )


def test_too_few_free() -> None:
    taken = frozenset({DeviceID(DRIVER_A, POOL_1, "device-0")})
    asks_two = claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))
    assert _why_not([asks_two], taken=taken) == (
        f"claim {CLAIM_0}, request {REQ_0}: needs 2, 2 match, 1 of them free"
    )


def test_every_subrequest_is_listed() -> None:
    either = first_available(
        REQ_0, sub_request(SUB_REQ_0, CLASS_B, 1), sub_request(SUB_REQ_1, CLASS_A, 3)
    )
    assert _why_not([claim_with_requests(CLAIM_0, None, either)]) == (
        f"claim {CLAIM_0}, request {REQ_0}: no subrequest can be served "
        f"({SUB_REQ_0}: no device matches class {CLASS_B}; "
        f"{SUB_REQ_1}: needs 3, 2 match, 2 of them free)"
    )


def test_requests_that_only_fail_together() -> None:
    taken = frozenset({DeviceID(DRIVER_A, POOL_1, "device-0")})
    claims = [claim(CLAIM_0, REQ_0, CLASS_A), claim(CLAIM_1, REQ_0, CLASS_A)]
    assert _why_not(claims, taken=taken) == (
        "the requests together need more free devices than the node has"
    )
