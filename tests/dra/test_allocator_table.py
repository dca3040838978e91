# ruff: noqa: F405
"""The shared allocator test table of k8s.io/dynamic-resource-allocation v0.34.10, restated.

Upstream keeps one table of cases (``structured/internal/allocatortesting``) that every variant
of its allocator must pass; these are the same cases, written with our builders, run against
:class:`~kopf_scheduler.dra.allocator.Allocator` with kube-scheduler v1.34's default gates.

Cases that need a gate that is off in v1.34 by default (partitionable devices, device taints,
binding conditions, consumable capacity), or that test AdminAccess or PrioritizedList switched
off, are not restated; ``SKIPPED`` lists each by name with the reason, so the table stays
complete. Upstream compares results as unordered sets (its pools come from a Go map); here the
devices must also come in the order our search finds them, which is upstream's order within a
pool.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kopf_scheduler.dra.allocator import AllocationError, Allocator, DeviceID
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import Inventory
from tests.dra.builders import *  # noqa: F403  (the table speaks the builders' vocabulary)

Obj = dict[str, Any]


@dataclass
class Case:
    name: str
    claims: list[Obj] = field(default_factory=list)
    classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    node: Obj | None = None
    allocated: list[DeviceID] = field(default_factory=list)
    expect: list[Obj] | None = None
    error: str | None = None


def _with(raw: Obj, change: Callable[[Obj], None]) -> Obj:
    change(raw)
    return raw


def _exactly(claim_obj: Obj, index: int = 0) -> Obj:
    return claim_obj["spec"]["devices"]["requests"][index]["exactly"]


INT_ATTRIBUTE = DRIVER_A + "/numa"
BOOL_ATTRIBUTE = DRIVER_A + "/boolAttribute"
STRING_ATTRIBUTE = DRIVER_A + "/stringAttribute"
VERSION_ATTRIBUTE = DRIVER_A + "/driverVersion"
NON_EXISTENT_ATTRIBUTE = DRIVER_A + "/NonExistentAttribute"
LOCAL = local_node_selector(NODE_1)

CASES: list[Case] = [
    Case("empty", expect=[]),
    Case(
        "simple",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "other-node",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
            slice_with_one_device(SLICE_2, NODE_2, POOL_2, DRIVER_A),
        ],
        node=node(NODE_2, REGION_2),
        expect=[allocation(local_node_selector(NODE_2), result(REQ_0, DRIVER_A, POOL_2, DEVICE_1))],
    ),
]

_SMALL = cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0')
_LARGE = cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0')
_SMALL_DEVICE = device(DEVICE_1, {"memory": "1Gi"})
_LARGE_DEVICE = device(DEVICE_2, {"memory": "2Gi"})

CASES += [
    Case(
        "small-and-large",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, _SMALL),
                request(REQ_1, CLASS_A, 1, _LARGE),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _SMALL_DEVICE, _LARGE_DEVICE)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "small-and-large-backtrack-requests",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, _SMALL),
                request(REQ_1, CLASS_A, 1, _LARGE),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _LARGE_DEVICE, _SMALL_DEVICE)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "small-and-large-backtrack-claims",
        claims=[
            claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1, _SMALL)),
            claim_with_requests(CLAIM_1, None, request(REQ_1, CLASS_A, 1, _LARGE)),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _LARGE_DEVICE, _SMALL_DEVICE)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
            allocation(LOCAL, result(REQ_1, DRIVER_A, POOL_1, DEVICE_2)),
        ],
    ),
    Case(
        "devices-split-across-different-slices",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    Case(
        "obsolete-slice",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device("slice-1-obsolete", NODE_1, POOL_1, DRIVER_A),
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), generation=2),
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "duplicate-slice",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _with(
                slice_with_one_device(name, NODE_1, POOL_1, DRIVER_A),
                lambda s: s["spec"]["pool"].update(resourceSliceCount=2),
            )
            for name in (SLICE_1, SLICE_1 + "-2")
        ],
        node=node(NODE_1, REGION_1),
        error=f"pool {POOL_1} is invalid: duplicate device name {DEVICE_1}",
    ),
    Case(
        "no-slices",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "not-enough-suitable-devices",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A), claim(CLAIM_0, REQ_1, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "no-classes",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="could not retrieve device class class-a",
    ),
    Case(
        "unknown-class",
        claims=[claim(CLAIM_0, REQ_0, "unknown-class")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="could not retrieve device class unknown-class",
    ),
    Case(
        "empty-class",
        claims=[claim(CLAIM_0, REQ_0, "")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    Case(
        "no-claims-to-allocate",
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[],
    ),
    Case(
        "all-devices-single",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "all-devices-many",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_1, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    Case(
        "all-devices-of-the-incomplete-pool",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                _with(all_request(REQ_0, CLASS_A), lambda r: r["exactly"].update(count=1)),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _with(
                slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
                lambda s: s["spec"]["pool"].update(resourceSliceCount=2),
            )
        ],
        node=node(NODE_1, REGION_1),
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    ),
]

_A_AND_B_CLASSES = [device_class(CLASS_A, DRIVER_A), device_class(CLASS_B, DRIVER_B)]
_ONE_OF_EACH = [
    slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
    slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
]
_TWO_A_ONE_B = [
    resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), device(DEVICE_2)),
    slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_B),
]
_TWO_DEVICES = resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), device(DEVICE_2))

CASES += [
    Case(
        "all-devices-plus-another",
        claims=[
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_B, 1)),
        ],
        classes=_A_AND_B_CLASSES,
        slices=_ONE_OF_EACH,
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
            allocation(LOCAL, result(REQ_0, DRIVER_B, POOL_1, DEVICE_1)),
        ],
    ),
    Case(
        "all-devices-plus-another-reversed",
        claims=[
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_B, 1)),
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
        ],
        classes=_A_AND_B_CLASSES,
        slices=_ONE_OF_EACH,
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_B, POOL_1, DEVICE_1)),
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
        ],
    ),
    Case(
        "all-devices-many-plus-another",
        claims=[
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_B, 1)),
        ],
        classes=_A_AND_B_CLASSES,
        slices=_TWO_A_ONE_B,
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            ),
            allocation(LOCAL, result(REQ_0, DRIVER_B, POOL_1, DEVICE_1)),
        ],
    ),
    Case(
        "all-devices-many-plus-another-reversed",
        claims=[
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_B, 1)),
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
        ],
        classes=_A_AND_B_CLASSES,
        slices=_TWO_A_ONE_B,
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_B, POOL_1, DEVICE_1)),
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            ),
        ],
    ),
    Case(
        "all-devices-no-solution",
        claims=[
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1)),
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "all-devices-no-solution-reversed",
        claims=[
            claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A)),
            claim_with_requests(CLAIM_1, None, request(REQ_0, CLASS_A, 1)),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "all-devices-slice-without-devices",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "all-devices-no-slices",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "all-devices-some-allocated",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "all-devices-some-allocated-admin-access",
        claims=[claim_with_requests(CLAIM_0, None, admin(all_request(REQ_0, CLASS_A)))],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True),
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, admin=True),
            )
        ],
    ),
    Case(
        "all-devices-some-allocating-admin-access",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                admin(request(REQ_0, CLASS_A, 1)),
                admin(all_request(REQ_1, CLASS_A)),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "count-devices-some-allocated-admin-access",
        claims=[claim_with_requests(CLAIM_0, None, admin(request(REQ_0, CLASS_A, 2)))],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True),
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, admin=True),
            )
        ],
    ),
    Case(
        "separate-claims-share-device-admin-access",
        claims=[
            claim_with_requests(CLAIM_0, None, admin(request(REQ_0, CLASS_A, 1))),
            claim_with_requests(CLAIM_1, None, admin(request(REQ_0, CLASS_A, 1))),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True)),
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True)),
        ],
    ),
    Case(
        "admin-access-claims-device-allocating-for-non-admin-access",
        claims=[
            claim(CLAIM_0, REQ_0, CLASS_A),
            claim_with_requests(CLAIM_1, None, admin(request(REQ_0, CLASS_A, 1))),
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True)),
        ],
    ),
]

_ALL_A_OR_ONE_B = first_available(
    REQ_0, all_sub_request(SUB_REQ_0, CLASS_A), sub_request(SUB_REQ_1, CLASS_B, 1)
)

CASES += [
    Case(
        "all-devices-slice-without-devices-prioritized-list",
        claims=[claim_with_requests(CLAIM_0, None, _ALL_A_OR_ONE_B)],
        classes=_A_AND_B_CLASSES,
        slices=[
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1))],
    ),
    Case(
        "all-devices-no-slices-prioritized-list",
        claims=[claim_with_requests(CLAIM_0, None, _ALL_A_OR_ONE_B)],
        classes=_A_AND_B_CLASSES,
        slices=[slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1))],
    ),
    Case(
        "all-devices-some-allocated-prioritized-list",
        claims=[claim_with_requests(CLAIM_0, None, _ALL_A_OR_ONE_B)],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1)],
        classes=_A_AND_B_CLASSES,
        slices=[_TWO_DEVICES, slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_2, DEVICE_1))],
    ),
    Case(
        "network-attached-device",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector("region", REGION_1), POOL_1, DRIVER_A
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                node_label_selector("region", REGION_1), result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)
            )
        ],
    ),
    Case(
        "unsuccessful-allocation-network-attached-device",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector("region", REGION_1), POOL_1, DRIVER_A
            )
        ],
        node=node(NODE_2, REGION_2),
    ),
    Case(
        "many-network-attached-devices",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 4))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector("region", REGION_1), POOL_1, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, ALL_NODES, POOL_2, DRIVER_A),
            slice_with_one_device(
                SLICE_1, node_label_selector("planet", "earth"), POOL_3, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, local_node_selector(NODE_1), POOL_4, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "region", "operator": "In", "values": [REGION_1]},
                                {"key": "planet", "operator": "In", "values": ["earth"]},
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [NODE_1]}
                            ],
                        }
                    ]
                },
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_3, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_4, DEVICE_1),
            )
        ],
    ),
    Case(
        "local-and-network-attached-devices",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_with_one_device(
                SLICE_1, node_label_selector("region", REGION_1), POOL_1, DRIVER_A
            ),
            slice_with_one_device(SLICE_1, NODE_1, POOL_2, DRIVER_A),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
            )
        ],
    ),
    Case(
        "several-different-drivers",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A), claim(CLAIM_0, REQ_0, CLASS_B)],
        classes=_A_AND_B_CLASSES,
        slices=_TWO_A_ONE_B,
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
            allocation(LOCAL, result(REQ_0, DRIVER_B, POOL_1, DEVICE_1)),
        ],
    ),
    Case(
        "already-allocated-devices",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1), DeviceID(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "admin-access-enabled",
        claims=[claim_with_requests(CLAIM_0, None, admin(request(REQ_0, CLASS_A, 1)))],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1), DeviceID(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True))],
    ),
]


def _attributes(
    numa: int = 1, version: str = "1.0.0", text: str = "stringAttributeValue", flag: bool = True
) -> Obj:
    return {
        "driverVersion": version_attr(version),
        "numa": int_attr(numa),
        "stringAttribute": string_attr(text),
        "boolAttribute": bool_attr(flag),
    }


def _two_devices_with(name: str, first: Obj, second: Obj) -> Obj:
    return resource_slice(
        SLICE_1,
        NODE_1,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, attributes={name: first}),
        device(DEVICE_2, attributes={name: second}),
    )


CASES += [
    Case(
        "with-constraint",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [
                    match_attribute(INT_ATTRIBUTE),
                    match_attribute(VERSION_ATTRIBUTE),
                    match_attribute(STRING_ATTRIBUTE),
                    match_attribute(BOOL_ATTRIBUTE),
                ],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(DEVICE_1, attributes=_attributes()),
                device(DEVICE_2, attributes=_attributes()),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "with-constraint-non-existent-attribute",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A, match_attribute(NON_EXISTENT_ATTRIBUTE))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "with-constraint-not-matching-int-attribute",
        claims=[
            claim_with_requests(
                CLAIM_0, [match_attribute(INT_ATTRIBUTE)], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[_two_devices_with("numa", int_attr(1), int_attr(2))],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "with-constraint-not-matching-int-attribute-all-devices",
        claims=[
            claim_with_requests(
                CLAIM_0, [match_attribute(INT_ATTRIBUTE)], all_request(REQ_0, CLASS_A)
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[_two_devices_with("numa", int_attr(1), int_attr(2))],
        node=node(NODE_1, REGION_1),
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because "
        "a claim constraint would not be satisfied",
    ),
    Case(
        "with-constraint-not-matching-string-attribute",
        claims=[
            claim_with_requests(
                CLAIM_0, [match_attribute(STRING_ATTRIBUTE)], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[
            _two_devices_with(
                "stringAttribute",
                string_attr("stringAttributeValue"),
                string_attr("stringAttributeValue2"),
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "with-constraint-not-matching-bool-attribute",
        claims=[
            claim_with_requests(
                CLAIM_0, [match_attribute(BOOL_ATTRIBUTE)], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[_two_devices_with("boolAttribute", bool_attr(True), bool_attr(False))],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "with-constraint-not-matching-version-attribute",
        claims=[
            claim_with_requests(
                CLAIM_0, [match_attribute(VERSION_ATTRIBUTE)], request(REQ_0, CLASS_A, 2)
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[_two_devices_with("driverVersion", version_attr("1.0.0"), version_attr("2.0.0"))],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "with-constraint-for-request",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [match_attribute(VERSION_ATTRIBUTE, REQ_0)],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[_two_devices_with("driverVersion", version_attr("1.0.0"), version_attr("2.0.0"))],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "with-constraint-for-request-retry",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [match_attribute(VERSION_ATTRIBUTE, REQ_0), match_attribute(STRING_ATTRIBUTE)],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[
            resource_slice(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                device(
                    DEVICE_1,
                    attributes={
                        "driverVersion": version_attr("1.0.0"),
                        "stringAttribute": string_attr("a"),
                    },
                ),
                device(
                    DEVICE_2,
                    attributes={
                        "driverVersion": version_attr("2.0.0"),
                        "stringAttribute": string_attr("b"),
                    },
                ),
                device(
                    DEVICE_3,
                    attributes={
                        "driverVersion": version_attr("3.0.0"),
                        "stringAttribute": string_attr("b"),
                    },
                ),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
            )
        ],
    ),
    Case(
        "with-class-device-config",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[class_with_config(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                config=[
                    config_entry(
                        "FromClass", [REQ_0], device_configuration(DRIVER_A, "classAttribute")
                    )
                ],
            )
        ],
    ),
    Case(
        "with-class-device-config-with-multiple-request-and-configs",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [],
                request(REQ_0, CLASS_A, 1),
                request(REQ_1, CLASS_A, 1),
                request(REQ_2, CLASS_B, 1),
            )
        ],
        classes=[
            class_with_config(CLASS_A, DRIVER_A, "classAttribute-A"),
            class_with_config(CLASS_B, DRIVER_B, "classAttribute-B"),
        ],
        slices=[
            slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 2),
            slice_with_one_device(SLICE_2, NODE_1, POOL_1, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_0),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_2, DRIVER_B, POOL_1, DEVICE_1),
                config=[
                    config_entry(
                        "FromClass",
                        [REQ_0, REQ_1],
                        device_configuration(DRIVER_A, "classAttribute-A"),
                    ),
                    config_entry(
                        "FromClass", [REQ_2], device_configuration(DRIVER_B, "classAttribute-B")
                    ),
                ],
            )
        ],
    ),
    Case(
        "claim-with-device-config",
        claims=[claim_with_device_config(CLAIM_0, REQ_0, CLASS_A, DRIVER_A, "deviceAttribute")],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                config=[
                    config_entry(
                        "FromClaim", None, device_configuration(DRIVER_A, "deviceAttribute")
                    )
                ],
            )
        ],
    ),
    Case(
        "unknown-selector",
        claims=[
            _with(claim(CLAIM_0, REQ_0, CLASS_A), lambda c: _exactly(c).update(selectors=[{}]))
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="CEL expression empty (unsupported selector type?)",
    ),
    Case(
        "unknown-allocation-mode",
        claims=[
            _with(
                claim(CLAIM_0, REQ_0, CLASS_A),
                lambda c: _exactly(c).update(allocationMode="future-mode"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="unsupported count mode future-mode",
    ),
    Case(
        "unknown-constraint",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A, {})],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="empty constraint (unsupported constraint type?)",
    ),
    Case(
        "invalid-CEL-one-device",
        claims=[
            _with(
                claim(CLAIM_0, REQ_0, CLASS_A),
                lambda c: _exactly(c).update(selectors=[cel("noSuchVar")]),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="undeclared reference",
    ),
    Case(
        "invalid-CEL-one-device-class",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[
            _with(
                device_class(CLASS_A, DRIVER_A),
                lambda c: c["spec"].update(selectors=[cel("noSuchVar")]),
            )
        ],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="undeclared reference",
    ),
    Case(
        "invalid-CEL-all-devices",
        claims=[
            _with(
                claim(CLAIM_0, REQ_0, CLASS_A),
                lambda c: _exactly(c).update(selectors=[cel("noSuchVar")], allocationMode="All"),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        error="undeclared reference",
    ),
    Case(
        "too-many-devices-single-request",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 500))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error="exceeds the claim limit",
    ),
    Case(
        "many-devices-okay",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 32))],
        classes=[device_class(CLASS_A, DRIVER_A)],
    ),
    Case(
        "too-many-devices-total",
        claims=[
            claim_with_requests(
                CLAIM_0, None, request(REQ_0, CLASS_A, 32), request(REQ_1, CLASS_A, 1)
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 33)],
        node=node(NODE_1, REGION_1),
        error="exceeds the claim limit",
    ),
    Case(
        "all-devices-invalid-CEL",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 500))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        error="exceeds the claim limit",
    ),
]


def _memory_at_least(size: str) -> Obj:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{size}")) >= 0')


def _device_with(name: str, memory: str, version: str | None = None) -> Obj:
    attributes = {"driverVersion": version_attr(version)} if version else None
    return device(name, {"memory": memory}, attributes)


CASES += [
    Case(
        "prioritized-list-first-unavailable",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 1), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "prioritized-list-non-available",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 2), sub_request(SUB_REQ_1, CLASS_A, 2)
                ),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[
            slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A),
            slice_with_one_device(SLICE_2, NODE_1, POOL_2, DRIVER_B),
        ],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "prioritized-list-device-config",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 1), sub_request(SUB_REQ_1, CLASS_B, 2)
                ),
                config=[
                    claim_config([REQ_0_SUB_REQ_0], device_configuration(DRIVER_A, "foo")),
                    claim_config([REQ_0_SUB_REQ_1], device_configuration(DRIVER_B, "bar")),
                ],
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_B, device(DEVICE_1), device(DEVICE_2))
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_1),
                result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_2),
                config=[
                    config_entry(
                        "FromClaim", [REQ_0_SUB_REQ_1], device_configuration(DRIVER_B, "bar")
                    )
                ],
            )
        ],
    ),
    Case(
        "prioritized-list-class-config",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_A, 2), sub_request(SUB_REQ_1, CLASS_B, 2)
                ),
            )
        ],
        classes=[
            class_with_config(CLASS_A, DRIVER_A, "foo"),
            class_with_config(CLASS_B, DRIVER_B, "bar"),
        ],
        slices=[
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_B, device(DEVICE_1), device(DEVICE_2)),
            resource_slice(SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_3)),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_1),
                result(REQ_0_SUB_REQ_1, DRIVER_B, POOL_1, DEVICE_2),
                config=[
                    config_entry(
                        "FromClass", [REQ_0_SUB_REQ_1], device_configuration(DRIVER_B, "bar")
                    )
                ],
            )
        ],
    ),
    Case(
        "prioritized-list-subrequests-with-expressions",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1, _memory_at_least("1Gi")),
                first_available(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, 1, _memory_at_least("4Gi")),
                    sub_request(SUB_REQ_1, CLASS_A, 2, _memory_at_least("2Gi")),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                _device_with(DEVICE_1, "2Gi"),
                _device_with(DEVICE_2, "2Gi"),
                _device_with(DEVICE_3, "1Gi"),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
                result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "prioritized-list-subrequests-with-constraints-ref-parent-request",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [match_attribute(VERSION_ATTRIBUTE, REQ_0, REQ_1)],
                request(REQ_0, CLASS_A, 1, _memory_at_least("8Gi")),
                first_available(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, 1, _memory_at_least("2Gi")),
                    sub_request(SUB_REQ_1, CLASS_A, 1, _memory_at_least("1Gi")),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _device_with(DEVICE_1, "8Gi", "1.0.0")
            ),
            resource_slice(
                SLICE_2,
                NODE_1,
                POOL_2,
                DRIVER_A,
                _device_with(DEVICE_2, "2Gi", "2.0.0"),
                _device_with(DEVICE_3, "1Gi", "1.0.0"),
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_3),
            )
        ],
    ),
    Case(
        "prioritized-list-subrequests-with-constraints-ref-sub-request",
        claims=[
            claim_with_requests(
                CLAIM_0,
                [match_attribute(VERSION_ATTRIBUTE, REQ_0, REQ_1_SUB_REQ_0)],
                request(REQ_0, CLASS_A, 1, _memory_at_least("8Gi")),
                first_available(
                    REQ_1,
                    sub_request(SUB_REQ_0, CLASS_A, 1, _memory_at_least("2Gi")),
                    sub_request(SUB_REQ_1, CLASS_A, 1, _memory_at_least("1Gi")),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _device_with(DEVICE_1, "8Gi", "1.0.0")
            ),
            resource_slice(
                SLICE_2, NODE_1, POOL_2, DRIVER_A, _device_with(DEVICE_2, "2Gi", "2.0.0")
            ),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    Case(
        "prioritized-list-subrequests-with-allocation-mode-all",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, all_sub_request(SUB_REQ_0, CLASS_A), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2))],
    ),
    Case(
        "prioritized-list-allocation-mode-all-multiple-requests",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_0, CLASS_A, 1),
                first_available(
                    REQ_1, all_sub_request(SUB_REQ_0, CLASS_A), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            )
        ],
    ),
    Case(
        "prioritized-list-multi-request",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                request(REQ_1, CLASS_A, 1, _memory_at_least("8Gi")),
                first_available(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1, _memory_at_least("8Gi")),
                    sub_request(SUB_REQ_1, CLASS_A, 1, _memory_at_least("4Gi")),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _device_with(DEVICE_1, "8Gi")),
            resource_slice(SLICE_2, NODE_1, POOL_2, DRIVER_A, _device_with(DEVICE_2, "4Gi")),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
            )
        ],
    ),
    Case(
        "prioritized-list-with-backtracking",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0,
                    sub_request(SUB_REQ_0, CLASS_A, 1, _memory_at_least("8Gi")),
                    sub_request(SUB_REQ_1, CLASS_A, 1, _memory_at_least("4Gi")),
                ),
                request(REQ_1, CLASS_A, 1, _memory_at_least("8Gi")),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _device_with(DEVICE_1, "8Gi")),
            resource_slice(SLICE_2, NODE_1, POOL_2, DRIVER_A, _device_with(DEVICE_2, "4Gi")),
        ],
        node=node(NODE_1, REGION_1),
        expect=[
            allocation(
                LOCAL,
                result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_2, DEVICE_2),
                result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
            )
        ],
    ),
    Case(
        "prioritized-list-too-many-in-first-subrequest",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 500), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[slice_with_one_device(SLICE_1, NODE_1, POOL_1, DRIVER_A)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1))],
    ),
]

_TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
_TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}


def _consuming(raw_device: Obj) -> Obj:
    raw_device["consumesCounters"] = [
        {"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}
    ]
    return raw_device


def _with_counter_set(raw_slice: Obj) -> Obj:
    raw_slice["spec"]["sharedCounters"] = [
        {"name": "counter-set-1", "counters": {"memory": {"value": "18Gi"}}}
    ]
    return raw_slice


def _tainted(raw_device: Obj, *taints: Obj) -> Obj:
    raw_device["taints"] = list(taints)
    return raw_device


def _with_binding_conditions(raw_device: Obj) -> Obj:
    raw_device["bindingConditions"] = ["IsPrepare"]
    raw_device["bindingFailureConditions"] = ["BindingFailed"]
    return raw_device


CASES += [
    Case(
        "partitionable-devices-disabled-device-consumes-counters",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _with_counter_set(
                resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, _consuming(device(DEVICE_1)))
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "partitionable-devices-disabled-other-device-do-not-consume-counters",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _with_counter_set(
                resource_slice(
                    SLICE_1,
                    NODE_1,
                    POOL_1,
                    DRIVER_A,
                    _consuming(device(DEVICE_1)),
                    device(DEVICE_2),
                )
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))],
    ),
    Case(
        "partitionable-devices-disabled-per-device-node-selection",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, PER_DEVICE, POOL_1, DRIVER_A, {"name": DEVICE_2, "nodeName": NODE_1}
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "tainted-disabled",
        claims=[claim(CLAIM_0, REQ_0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                _tainted(device(DEVICE_1), _TAINT_NO_SCHEDULE, _TAINT_NO_EXECUTE),
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "tainted-prioritized-list-disabled",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, CLASS_B, 1), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=_A_AND_B_CLASSES,
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _tainted(device(DEVICE_1), _TAINT_NO_SCHEDULE)
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "tainted-admin-access-disabled",
        claims=[claim_with_requests(CLAIM_0, None, admin(request(REQ_0, CLASS_A, 1)))],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_1), DeviceID(DRIVER_A, POOL_1, DEVICE_2)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _tainted(device(DEVICE_1), _TAINT_NO_SCHEDULE)
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin=True))],
    ),
    Case(
        "tainted-all-devices-single-disabled",
        claims=[claim_with_requests(CLAIM_0, None, all_request(REQ_0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _tainted(device(DEVICE_1), _TAINT_NO_SCHEDULE)
            )
        ],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "prioritized-list-allocation-mode-all",
        claims=[
            claim_with_requests(
                CLAIM_0,
                None,
                first_available(
                    REQ_0, all_sub_request(SUB_REQ_0, CLASS_A), sub_request(SUB_REQ_1, CLASS_A, 1)
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_TWO_DEVICES],
        allocated=[DeviceID(DRIVER_A, POOL_1, DEVICE_2)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1))],
    ),
    Case(
        "max-number-devices",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 32))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 32)],
        node=node(NODE_1, REGION_1),
        expect=[allocation(LOCAL, *results(REQ_0, DRIVER_A, POOL_1, 32))],
    ),
    Case(
        "binding-conditions-without-feature-gate",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _with_binding_conditions(device(DEVICE_1))
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
    Case(
        "device-binding-conditions-without-binding-conditions-feature-gate",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1, NODE_1, POOL_1, DRIVER_A, _with_binding_conditions(device(DEVICE_1))
            )
        ],
        node=node(NODE_1, REGION_1),
    ),
]

STEPS_CASES: list[tuple[Case, int]] = [
    (
        Case(
            "prioritized-list-max-allocation-limit-request",
            claims=[
                claim_with_requests(
                    CLAIM_0,
                    None,
                    first_available(
                        REQ_0,
                        sub_request(SUB_REQ_0, CLASS_A, 32),
                        sub_request(SUB_REQ_1, CLASS_A, 16),
                    ),
                    first_available(
                        REQ_1,
                        sub_request(SUB_REQ_0, CLASS_A, 32),
                        sub_request(SUB_REQ_1, CLASS_A, 16),
                    ),
                )
            ],
            classes=[device_class(CLASS_A, DRIVER_A)],
            slices=[slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 64)],
            node=node(NODE_1, REGION_1),
            expect=[
                allocation(
                    LOCAL,
                    *results(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, 16),
                    *results(REQ_1_SUB_REQ_1, DRIVER_A, POOL_1, 16, start=16),
                )
            ],
        ),
        75,
    ),
    (
        Case(
            "prioritized-list-max-allocation-allocation-mode-all",
            claims=[
                claim_with_requests(
                    CLAIM_0,
                    None,
                    first_available(
                        REQ_0,
                        all_sub_request(SUB_REQ_0, CLASS_A),
                        sub_request(SUB_REQ_1, CLASS_A, 2),
                    ),
                    request(REQ_1, CLASS_B, 2),
                )
            ],
            classes=_A_AND_B_CLASSES,
            slices=[
                slice_with_devices(SLICE_1, NODE_1, POOL_1, DRIVER_A, 31),
                slice_with_devices(SLICE_2, NODE_1, POOL_2, DRIVER_B, 2),
            ],
            node=node(NODE_1, REGION_1),
            expect=[
                allocation(
                    LOCAL,
                    result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_0),
                    result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, DEVICE_1),
                    result(REQ_1, DRIVER_B, POOL_2, DEVICE_0),
                    result(REQ_1, DRIVER_B, POOL_2, DEVICE_1),
                )
            ],
        ),
        42,
    ),
]


SKIPPED: dict[str, str] = {
    "admin-access-disabled": "tests DRAAdminAccess switched off (beta, on in v1.34)",
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "allow-multiple-allocations-with-partitionable-device": "needs DRAPartitionableDevices, DRAConsumableCapacity (alpha, off in v1.34)",
    "binding-conditions-multiple-devices": "needs DRADeviceBindingConditions (alpha, off in v1.34)",
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-some-remaining-consumable-capacity": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-subrequest": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "consumable-capacity-with-multi-allocatable-device-backtrack": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "device-binding-conditions": "needs DRADeviceBindingConditions (alpha, off in v1.34)",
    "device-binding-conditions-without-device-status-feature-gate": "needs DRADeviceBindingConditions (alpha, off in v1.34)",
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": "needs DRAConsumableCapacity (alpha, off in v1.34)",
    "node-restriction": "needs DRADeviceBindingConditions (alpha, off in v1.34)",
    "partitionable-devices-multiple-capacity-pools": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-multiple-counters": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-multiple-devices": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-multiple-pools": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-no-capacity-available": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-overallocated-capacity-pool": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-per-device-node-selection-node-selector": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-per-device-node-selection-nodename": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-prioritized-list": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-single-device": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-unused-counters-in-counter-set": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-with-attribute-selector": "needs DRAPartitionableDevices (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions": "needs DRAPartitionableDevices, DRADeviceBindingConditions (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions-and-taints": "needs DRAPartitionableDevices, DRADeviceBindingConditions, DRADeviceTaints (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": "needs DRAPartitionableDevices, DRADeviceBindingConditions, DRADeviceTaints (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions-multi-slices": "needs DRAPartitionableDevices, DRADeviceBindingConditions (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions-multiple": "needs DRAPartitionableDevices, DRADeviceBindingConditions (alpha, off in v1.34)",
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": "needs DRAPartitionableDevices, DRADeviceBindingConditions (alpha, off in v1.34)",
    "prioritized-list-disabled": "tests DRAPrioritizedList switched off (beta, on in v1.34)",
    "tainted-admin-access": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-all-devices-single": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-one-device-two-taints": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-one-device-two-taints-both-tolerated": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-prioritized-list": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-two-devices": "needs DRADeviceTaints (alpha, off in v1.34)",
    "tainted-two-devices-tolerated": "needs DRADeviceTaints (alpha, off in v1.34)",
}
"""Upstream's cases not restated, with why: each needs a gate that v1.34 keeps off."""


def _run(case: Case) -> tuple[Allocator, list[Obj] | None]:
    classes = {raw["metadata"]["name"]: raw for raw in case.classes}
    selectors = SelectorCache(maxsize=1)
    allocator = Allocator(
        classes=classes,
        allocated=frozenset(case.allocated),
        selectors=selectors,
        inventory=Inventory(case.slices, selectors),
    )
    before = copy.deepcopy((case.claims, case.classes, case.slices))
    try:
        return allocator, allocator.allocate(case.node or {"metadata": {}}, case.claims)
    finally:
        # The allocator reads its input and never changes it, as upstream checks too.
        assert (case.claims, case.classes, case.slices) == before


def test_the_table_is_complete() -> None:
    names = [case.name for case in CASES] + [case.name for case, _ in STEPS_CASES]
    assert len(names) == len(set(names))
    assert not set(names) & set(SKIPPED)
    assert len(names) + len(SKIPPED) == UPSTREAM_CASES


UPSTREAM_CASES = 151
"""The number of cases in upstream's table at v0.34.10."""


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_upstream_case(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(AllocationError) as raised:
            _run(case)
        assert case.error in raised.value.message
        return
    _, allocations = _run(case)
    assert allocations == case.expect


@pytest.mark.parametrize(
    ("case", "steps"), STEPS_CASES, ids=lambda value: getattr(value, "name", str(value))
)
def test_upstream_case_with_search_steps(case: Case, steps: int) -> None:
    """The search also visits as many states as upstream's (its allocateOne invocations)."""
    allocator, allocations = _run(case)
    assert allocations == case.expect
    assert allocator.search_steps == steps


def _interrupt_case() -> Case:
    return Case(
        "interrupt",
        claims=[claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 6))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            resource_slice(
                SLICE_1,
                NODE_1,
                POOL_1,
                DRIVER_A,
                *(device(name) for name in (DEVICE_1, DEVICE_2, DEVICE_3, DEVICE_4, "device-5")),
            )
        ],
        node=node(NODE_1, REGION_1),
    )


def test_interrupt_off() -> None:
    case = _interrupt_case()
    selectors = SelectorCache()
    allocator = Allocator(
        classes={CLASS_A: case.classes[0]},
        allocated=frozenset(),
        selectors=selectors,
        inventory=Inventory(case.slices, selectors),
        deadline=lambda: False,
    )
    assert allocator.allocate(case.node or {}, case.claims) is None


def test_interrupt_deadline() -> None:
    case = _interrupt_case()
    selectors = SelectorCache()
    allocator = Allocator(
        classes={CLASS_A: case.classes[0]},
        allocated=frozenset(),
        selectors=selectors,
        inventory=Inventory(case.slices, selectors),
        deadline=lambda: True,
    )
    with pytest.raises(
        AllocationError, match=r"^filter operation aborted: context deadline exceeded$"
    ):
        allocator.allocate(case.node or {}, case.claims)
