"""Builders of raw resource.k8s.io/v1 objects for the allocator tests.

The names and shapes follow the vocabulary of upstream's shared allocator test table (a node per
region, a class per driver selecting it by ``device.driver``, slices on one node with one pool of
generation 1, ...), so a case reads the same in both.
"""

from __future__ import annotations

from typing import Any

REGION_1, REGION_2 = "region-1", "region-2"
NODE_1, NODE_2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL_1, POOL_2, POOL_3, POOL_4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ_0, REQ_1, REQ_2, REQ_3 = "req-0", "req-1", "req-2", "req-3"
SUB_REQ_0, SUB_REQ_1 = "subReq-0", "subReq-1"
REQ_0_SUB_REQ_0, REQ_0_SUB_REQ_1 = "req-0/subReq-0", "req-0/subReq-1"
REQ_1_SUB_REQ_0, REQ_1_SUB_REQ_1 = "req-1/subReq-0", "req-1/subReq-1"
CLAIM_0, CLAIM_1 = "claim-0", "claim-1"
SLICE_1, SLICE_2 = "slice-1", "slice-2"
DEVICE_0, DEVICE_1, DEVICE_2, DEVICE_3, DEVICE_4 = (f"device-{i}" for i in range(5))

ALL_NODES = object()
"""Node selection of a slice available on every node (``allNodes: true``)."""
PER_DEVICE = object()
"""Node selection per device (``perDeviceNodeSelection``, partitionable devices)."""

Obj = dict[str, Any]


def node(name: str, region: str) -> Obj:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def cel(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


def device_class(name: str, driver: str) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [cel(f'device.driver == "{driver}"')]},
    }


def device_configuration(driver: str, attribute: str) -> Obj:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def class_with_config(name: str, driver: str, attribute: str) -> Obj:
    result = device_class(name, driver)
    result["spec"]["config"] = [device_configuration(driver, attribute)]
    return result


def request(name: str, class_name: str, count: int, *selectors: Obj) -> Obj:
    exactly: Obj = {
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        exactly["selectors"] = list(selectors)
    return {"name": name, "exactly": exactly}


def all_request(name: str, class_name: str) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": class_name, "allocationMode": "All"}}


def admin(raw_request: Obj, value: bool = True) -> Obj:
    raw_request["exactly"]["adminAccess"] = value
    return raw_request


def sub_request(name: str, class_name: str, count: int, *selectors: Obj) -> Obj:
    sub: Obj = {
        "name": name,
        "deviceClassName": class_name,
        "allocationMode": "ExactCount",
        "count": count,
    }
    if selectors:
        sub["selectors"] = list(selectors)
    return sub


def all_sub_request(name: str, class_name: str) -> Obj:
    return {"name": name, "deviceClassName": class_name, "allocationMode": "All"}


def first_available(name: str, *subs: Obj) -> Obj:
    return {"name": name, "firstAvailable": list(subs)}


def claim_with_requests(
    name: str, constraints: list[Obj] | None, *requests: Obj, config: list[Obj] | None = None
) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def claim(name: str, request_name: str, class_name: str, *constraints: Obj) -> Obj:
    return claim_with_requests(name, list(constraints), request(request_name, class_name, 1))


def claim_with_device_config(
    name: str, request_name: str, class_name: str, driver: str, attribute: str
) -> Obj:
    result = claim(name, request_name, class_name)
    result["spec"]["devices"]["config"] = [device_configuration(driver, attribute)]
    return result


def claim_config(requests: list[str], configuration: Obj) -> Obj:
    return {"requests": requests, **configuration}


def match_attribute(attribute: str, *requests: str) -> Obj:
    constraint: Obj = {"matchAttribute": attribute}
    if requests:
        constraint["requests"] = list(requests)
    return constraint


def device(
    name: str, capacity: dict[str, str] | None = None, attributes: dict[str, Obj] | None = None
) -> Obj:
    result: Obj = {"name": name}
    if attributes:
        result["attributes"] = attributes
    if capacity:
        result["capacity"] = {key: {"value": value} for key, value in capacity.items()}
    return result


def string_attr(value: str) -> Obj:
    return {"string": value}


def int_attr(value: int) -> Obj:
    return {"int": value}


def bool_attr(value: bool) -> Obj:
    return {"bool": value}


def version_attr(value: str) -> Obj:
    return {"version": value}


def resource_slice(
    name: str, node_selection: Any, pool: str, driver: str, *devices: Obj, generation: int = 1
) -> Obj:
    spec: Obj = {
        "driver": driver,
        "pool": {"name": pool, "resourceSliceCount": 1, "generation": generation},
    }
    if devices:
        spec["devices"] = list(devices)
    if node_selection is ALL_NODES:
        spec["allNodes"] = True
    elif node_selection is PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    else:
        spec["nodeName"] = node_selection
    return {"metadata": {"name": name}, "spec": spec}


def slice_with_one_device(name: str, node_selection: Any, pool: str, driver: str) -> Obj:
    return resource_slice(name, node_selection, pool, driver, device(DEVICE_1))


def slice_with_devices(name: str, node_selection: Any, pool: str, driver: str, count: int) -> Obj:
    return resource_slice(
        name, node_selection, pool, driver, *(device(f"device-{i}") for i in range(count))
    )


def node_label_selector(key: str, *values: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        ]
    }


def local_node_selector(name: str) -> Obj:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        ]
    }


def result(request_name: str, driver: str, pool: str, device_name: str, admin: bool = False) -> Obj:
    entry: Obj = {"request": request_name, "driver": driver, "pool": pool, "device": device_name}
    if admin:
        entry["adminAccess"] = True
    return entry


def results(request_name: str, driver: str, pool: str, count: int, start: int = 0) -> list[Obj]:
    return [result(request_name, driver, pool, f"device-{i}") for i in range(start, start + count)]


def allocation(selector: Obj | None, *device_results: Obj, config: list[Obj] | None = None) -> Obj:
    devices: Obj = {}
    if device_results:
        devices["results"] = list(device_results)
    if config:
        devices["config"] = config
    out: Obj = {"devices": devices}
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def config_entry(source: str, requests: list[str] | None, configuration: Obj) -> Obj:
    entry: Obj = {"source": source}
    if requests:
        entry["requests"] = requests
    entry.update(configuration)
    return entry
