"""The allocator beyond upstream's shared table: what v1.34's experimental variant adds with its
alpha gates off, the devices in use, and the input it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.dra.allocator import AllocationError, Allocator, DeviceID, allocated_devices
from kopf_scheduler.dra.cel import SelectorCache
from kopf_scheduler.dra.inventory import Inventory
from tests.dra.builders import (
    CLAIM_0,
    CLASS_A,
    CLASS_B,
    DEVICE_1,
    DEVICE_2,
    DRIVER_A,
    NODE_1,
    POOL_1,
    POOL_2,
    REGION_1,
    REQ_0,
    REQ_0_SUB_REQ_1,
    SLICE_1,
    SLICE_2,
    SUB_REQ_0,
    SUB_REQ_1,
    all_sub_request,
    allocation,
    claim,
    claim_with_requests,
    device,
    device_class,
    first_available,
    local_node_selector,
    node,
    node_label_selector,
    request,
    resource_slice,
    result,
    sub_request,
)

Obj = dict[str, Any]


def _allocate(
    slices: list[Obj], claims: list[Obj], allocated: frozenset[DeviceID] = frozenset()
) -> Any:
    selectors = SelectorCache()
    allocator = Allocator(
        classes={CLASS_A: device_class(CLASS_A, DRIVER_A)},
        allocated=allocated,
        selectors=selectors,
        inventory=Inventory(slices, selectors),
    )
    return allocator.allocate(node(NODE_1, REGION_1), claims)


def test_allocated_devices_leave_out_admin_access_results() -> None:
    raw = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
                        result(REQ_0, DRIVER_A, POOL_1, DEVICE_2, admin=True),
                    ]
                }
            }
        }
    }
    assert allocated_devices(raw) == {DeviceID(DRIVER_A, POOL_1, DEVICE_1)}
    assert allocated_devices(claim(CLAIM_0, REQ_0, CLASS_A)) == set()


def test_devices_in_use_by_other_claims_are_skipped() -> None:
    slices = [resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), device(DEVICE_2))]
    assert _allocate(
        slices, [claim(CLAIM_0, REQ_0, CLASS_A)], frozenset({DeviceID(DRIVER_A, POOL_1, DEVICE_1)})
    ) == [allocation(local_node_selector(NODE_1), result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))]


def test_pools_with_binding_conditions_come_last() -> None:
    """Such devices are never taken with the gate off, but their pool's other devices are tried
    after every other pool's (the experimental variant's order)."""
    conditional = device("conditional")
    conditional["bindingConditions"] = ["IsPrepared"]
    slices = [
        resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, conditional, device(DEVICE_1)),
        resource_slice(SLICE_2, NODE_1, POOL_2, DRIVER_A, device(DEVICE_1)),
    ]
    assert _allocate(slices, [claim(CLAIM_0, REQ_0, CLASS_A)]) == [
        allocation(local_node_selector(NODE_1), result(REQ_0, DRIVER_A, POOL_2, DEVICE_1))
    ]


def test_a_device_bound_to_a_node_restricts_the_allocation_to_it() -> None:
    bound = device(DEVICE_1)
    bound["bindsToNode"] = True
    slices = [
        resource_slice(SLICE_1, node_label_selector("planet", "earth"), POOL_1, DRIVER_A, bound)
    ]
    assert _allocate(slices, [claim(CLAIM_0, REQ_0, CLASS_A)]) == [
        allocation(local_node_selector(NODE_1), result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]


def test_capacity_requests_are_refused_while_consumable_capacity_is_off() -> None:
    raw_request = request(REQ_0, CLASS_A, 1)
    raw_request["exactly"]["capacity"] = {"requests": {"memory": "1Gi"}}
    slices = [resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1))]
    with pytest.raises(AllocationError) as raised:
        _allocate(slices, [claim_with_requests(CLAIM_0, None, raw_request)])
    assert raised.value.message == (
        "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity "
        "feature is disabled"
    )


def test_a_namespaced_claim_is_named_with_its_namespace() -> None:
    raw = claim(CLAIM_0, REQ_0, "missing")
    raw["metadata"]["namespace"] = "team"
    with pytest.raises(AllocationError) as raised:
        _allocate([], [raw])
    assert raised.value.message == (
        "claim team/claim-0, request req-0: could not retrieve device class missing: "
        'deviceclass.resource.k8s.io "missing" not found'
    )


def test_a_malformed_slice_is_an_error_not_a_crash() -> None:
    broken = resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1))
    broken["spec"]["devices"] = "not a list"
    with pytest.raises(
        AllocationError,
        match=r"^gather pool information: convert ResourceSlice slice-1: spec.devices",
    ):
        _allocate([broken], [claim(CLAIM_0, REQ_0, CLASS_A)])


def test_selector_runtime_errors_name_the_class_or_claim() -> None:
    slices = [resource_slice(SLICE_1, NODE_1, POOL_1, DRIVER_A, device(DEVICE_1))]
    selector = {"cel": {"expression": 'device.attributes["driver-a"].model == "x"'}}
    with pytest.raises(AllocationError) as raised:
        _allocate(
            slices, [claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1, selector))]
        )
    assert (
        raised.value.message == "claim claim-0: selector #0: CEL runtime error: no such key: model"
    )


def test_a_changed_slice_is_read_again_though_selectors_are_shared() -> None:
    """Parsed slices and selector answers are kept per uid and resourceVersion across
    allocators; a new resourceVersion of the same slice is never answered from the old one."""
    selectors = SelectorCache()
    wanted = {"cel": {"expression": 'device.attributes["driver-a"].model == "b"'}}
    claims = [claim_with_requests(CLAIM_0, None, request(REQ_0, CLASS_A, 1, wanted))]

    def published(version: str, model: str) -> Obj:
        raw = resource_slice(
            SLICE_1,
            NODE_1,
            POOL_1,
            DRIVER_A,
            device(DEVICE_1, attributes={"model": {"string": model}}),
        )
        raw["metadata"].update(uid="slice-uid", resourceVersion=version)
        return raw

    def allocate(raw_slice: Obj) -> Any:
        allocator = Allocator(
            classes={CLASS_A: device_class(CLASS_A, DRIVER_A)},
            allocated=frozenset(),
            selectors=selectors,
            inventory=Inventory([raw_slice], selectors),
        )
        return allocator.allocate(node(NODE_1, REGION_1), claims)

    assert allocate(published("1", "a")) is None
    assert allocate(published("2", "b")) == [
        allocation(local_node_selector(NODE_1), result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]
    assert allocate(published("1", "a")) is None


def _two_models() -> list[Obj]:
    return [
        resource_slice(
            SLICE_1,
            NODE_1,
            POOL_1,
            DRIVER_A,
            device("device-0", attributes={"model": {"string": "a"}}),
            device(DEVICE_1, attributes={"model": {"string": "b"}}),
        )
    ]


def test_an_all_subrequest_after_the_first_continues_as_the_first() -> None:
    """Upstream looks for the next device of an "All" subrequest other than the first under the
    first subrequest's index; with a first subrequest of one device, such an "All" subrequest
    gets one device only. Checked against k8s.io/dynamic-resource-allocation v0.34.10."""
    nothing = {"cel": {"expression": 'device.driver == "other"'}}
    claims = [
        claim_with_requests(
            CLAIM_0,
            None,
            first_available(
                REQ_0,
                sub_request(SUB_REQ_0, CLASS_A, 1, nothing),
                all_sub_request(SUB_REQ_1, CLASS_A),
            ),
        )
    ]
    assert _allocate(_two_models(), claims) == [
        allocation(
            local_node_selector(NODE_1), result(REQ_0_SUB_REQ_1, DRIVER_A, POOL_1, "device-0")
        )
    ]


def test_an_all_subrequest_counts_devices_with_the_previous_subrequests_answers() -> None:
    """Upstream counts the devices of "All" subrequest i under the key of subrequest i-1, so it
    reuses that one's selector answers: here the second subrequest counts the first one's
    device, which is in use, and the claim does not fit although device-1 would do. Checked
    against k8s.io/dynamic-resource-allocation v0.34.10."""
    model_a = {"cel": {"expression": 'device.attributes["driver-a"].model == "a"'}}
    classes = {
        CLASS_A: device_class(CLASS_A, DRIVER_A),
        CLASS_B: {
            "metadata": {"name": CLASS_B},
            "spec": {
                "selectors": [{"cel": {"expression": 'device.attributes["driver-a"].model == "b"'}}]
            },
        },
    }
    sub_a = all_sub_request(SUB_REQ_0, CLASS_A)
    sub_a["selectors"] = [model_a]
    claims = [
        claim_with_requests(
            CLAIM_0, None, first_available(REQ_0, sub_a, all_sub_request(SUB_REQ_1, CLASS_B))
        )
    ]
    selectors = SelectorCache()
    allocator = Allocator(
        classes=classes,
        allocated=frozenset({DeviceID(DRIVER_A, POOL_1, "device-0")}),
        selectors=selectors,
        inventory=Inventory(_two_models(), selectors),
    )
    assert allocator.allocate(node(NODE_1, REGION_1), claims) is None
