"""A fake Dynamic Resource Allocation driver for kwok nodes, and the claims that ask it for devices.

Scheduling with DRA needs only what a driver publishes, never the driver itself: a node's devices
are a ResourceSlice (``resource.k8s.io/v1``) naming the node, its driver and a pool, and a
DeviceClass selects the driver's devices by CEL. Preparing a device is the kubelet plugin's part
after binding, and kwok's fake nodes run pods without asking any plugin, so publishing slices is
all a driver has to do here; this is what scheduler_perf's ``createResourceDriver`` op does.

Two device shapes, both taken from public sources:

- :func:`example_gpu_slice`: kubernetes-sigs/dra-example-driver's node, ``gpu.example.com`` with
  eight GPUs ``gpu-0`` … ``gpu-7`` carrying ``index``, ``uuid``, ``model`` and ``driverVersion``
  attributes and an 80Gi ``memory`` capacity;
- :func:`perf_slice`: scheduler_perf's ``createResourceDriver`` (v1.34.10,
  ``test/integration/scheduler_perf/dra.go``): one slice named after the node, a pool of that
  name, ``instance-0`` … ``instance-<n-1>`` with ``model``, ``family``, ``driverVersion`` and
  ``dra.example.com/numa`` attributes and a 1Gi ``memory`` capacity.

The builders return plain manifests, so that the e2e suite, the differential scenarios and the
benchmarks publish the same objects through their own clients.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .objects import ISOLATION_KEY

if TYPE_CHECKING:
    from .env import TestEnv

RESOURCE_API = "resource.k8s.io/v1"

EXAMPLE_DRIVER = "gpu.example.com"
"""dra-example-driver's driver name (and the domain of its attributes)."""
EXAMPLE_GPUS_PER_NODE = 8
EXAMPLE_MODEL = "LATEST-GPU-MODEL"
EXAMPLE_DRIVER_VERSION = "1.0.0"
EXAMPLE_MEMORY = "80Gi"

PERF_DRIVER = "test-driver.cdi.k8s.io"
"""The driver name of scheduler_perf's DRA workloads."""
PERF_DEVICE_CLASS = "test-class"
PERF_CLAIM_TEMPLATE = "test-claim-template"

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
"""The finalizer the scheduler puts on a claim it allocates; the resource-claim controller
removes it once the claim is deallocated."""
CLAIM_ENTRY = "gpu"
"""The e2e pods' entry in ``spec.resourceClaims``."""
REQUEST = "gpu"
"""The name of the e2e claims' one request."""

_UUID_NAMESPACE = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")  # RFC 4122's URL namespace


def _labelled(name: str, labels: Mapping[str, str] | None) -> dict[str, Any]:
    return {"name": name, "labels": dict(labels)} if labels else {"name": name}


def device_class(name: str, driver: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A DeviceClass selecting every device of ``driver``."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": _labelled(name, labels),
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def _slice(
    name: str,
    driver: str,
    node: str,
    devices: list[dict[str, Any]],
    labels: Mapping[str, str] | None,
) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": _labelled(name, labels),
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def gpu_uuid(node: str, index: int) -> str:
    """A stable ``gpu-<uuid>`` per node and index, as the example driver's uuids look."""
    return f"gpu-{uuid.uuid5(_UUID_NAMESPACE, f'{node}/{index}')}"


def example_gpu_slice(
    node: str,
    *,
    driver: str = EXAMPLE_DRIVER,
    gpus: int = EXAMPLE_GPUS_PER_NODE,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ResourceSlice dra-example-driver publishes for ``node``: one pool named after it."""
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "index": {"int": index},
                "uuid": {"string": gpu_uuid(node, index)},
                "model": {"string": EXAMPLE_MODEL},
                "driverVersion": {"version": EXAMPLE_DRIVER_VERSION},
            },
            "capacity": {"memory": {"value": EXAMPLE_MEMORY}},
        }
        for index in range(gpus)
    ]
    return _slice(f"{node}-{driver}", driver, node, devices, labels)


def perf_slice(
    node: str,
    devices: int,
    *,
    driver: str = PERF_DRIVER,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The ResourceSlice scheduler_perf's ``createResourceDriver`` makes for ``node``."""
    listed = [
        {
            "name": f"instance-{index}",
            "attributes": {
                "model": {"string": "A100"},
                "family": {"string": "GPU"},
                "driverVersion": {"version": "1.2.3"},
                "dra.example.com/numa": {"int": index},
            },
            "capacity": {"memory": {"value": "1Gi"}},
        }
        for index in range(devices)
    ]
    return _slice(node, driver, node, listed, labels)


def exactly(
    name: str,
    device_class_name: str,
    *,
    count: int | None = None,
    all_devices: bool = False,
    selectors: Sequence[str] = (),
) -> dict[str, Any]:
    """A request for devices of one class: ``count`` of them, all of them, or one."""
    request: dict[str, Any] = {"deviceClassName": device_class_name}
    if all_devices:
        request["allocationMode"] = "All"
    elif count is not None:
        request["allocationMode"] = "ExactCount"
        request["count"] = count
    if selectors:
        request["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    return {"name": name, "exactly": request}


def claim_spec(
    requests: Sequence[Mapping[str, Any]], constraints: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": [dict(r) for r in requests]}
    if constraints:
        devices["constraints"] = [dict(c) for c in constraints]
    return {"devices": devices}


def _metadata(name: str, namespace: str | None) -> dict[str, Any]:
    """Without a namespace for the differential scenarios, whose runs each set their own."""
    return {"name": name} if namespace is None else {"name": name, "namespace": namespace}


def claim(name: str, namespace: str | None, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": _metadata(name, namespace),
        "spec": dict(spec),
    }


def claim_template(name: str, namespace: str | None, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": _metadata(name, namespace),
        "spec": {"spec": dict(spec)},
    }


def with_claims(
    pod: Mapping[str, Any],
    *,
    templates: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``pod`` with ``spec.resourceClaims`` (entry name → template or claim name), each one
    used by every container, as the example driver's demo pods use theirs."""
    entries = [
        {"name": entry, "resourceClaimTemplateName": template}
        for entry, template in (templates or {}).items()
    ] + [{"name": entry, "resourceClaimName": name} for entry, name in (claims or {}).items()]
    updated = {**pod, "spec": {**pod["spec"], "resourceClaims": entries}}
    updated["spec"]["containers"] = [
        {
            **container,
            "resources": {
                **container.get("resources", {}),
                "claims": [{"name": entry["name"]} for entry in entries],
            },
        }
        for container in pod["spec"]["containers"]
    ]
    return updated


def allocated_devices(claim_object: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(request, driver, pool, device)`` of each device in the claim's allocation."""
    allocation = (claim_object.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return [(r["request"], r["driver"], r["pool"], r["device"]) for r in results]


def reserved_for(claim_object: Mapping[str, Any]) -> list[str]:
    """The names of the consumers in the claim's ``status.reservedFor``."""
    return [entry["name"] for entry in (claim_object.get("status") or {}).get("reservedFor") or []]


def pod_claim_name(pod: Mapping[str, Any], entry: str) -> str | None:
    """The claim the resource-claim controller made for ``entry`` of a pod, once it has."""
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if status.get("name") == entry:
            name = status.get("resourceClaimName")
            return str(name) if name else None
    return None


class TestDevices:
    """An e2e test's DeviceClass (named after the test) and the ResourceSlices of its nodes,
    all labelled with the test's id and deleted at teardown."""

    __test__ = False  # not a test class, despite the name

    def __init__(self, env: TestEnv) -> None:
        self.env = env
        self.labels = {ISOLATION_KEY: env.id}
        self.class_name = f"gpu-{env.id}"
        env.kubectl.create(device_class(self.class_name, EXAMPLE_DRIVER, self.labels))

    def publish(self, nodes: Sequence[str], gpus: int = EXAMPLE_GPUS_PER_NODE) -> None:
        self.env.kubectl.create(
            *(example_gpu_slice(node, gpus=gpus, labels=self.labels) for node in nodes)
        )

    def request(self, *, count: int | None = None, selectors: Sequence[str] = ()) -> dict[str, Any]:
        return exactly(REQUEST, self.class_name, count=count, selectors=selectors)

    def template(self, name: str, **request: Any) -> dict[str, Any]:
        return claim_template(name, self.env.namespace, claim_spec([self.request(**request)]))

    def close(self) -> None:
        selector = f"{ISOLATION_KEY}={self.env.id}"
        self.env.kubectl.run("delete", "resourceslices", "-l", selector, "--ignore-not-found")
        self.env.kubectl.delete("deviceclass", self.class_name)
