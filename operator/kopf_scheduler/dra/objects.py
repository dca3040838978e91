"""Typed read-only views over the raw ``resource.k8s.io/v1`` objects the allocator reads.

DeviceClasses, ResourceSlices and ResourceClaims arrive as the API server's JSON; the allocator
reads them many times per scheduling attempt, so each is parsed once into small slotted objects
with the v1 field names' meaning. Only what allocation with kube-scheduler v1.34's default gates
uses is kept: the alpha fields (shared counters and ``consumesCounters`` of partitionable
devices, device taints and tolerations, binding conditions, consumable capacity) are read only as
far as needed to leave such devices and slices out as upstream does with those gates off.

A field of the wrong shape raises :class:`~kopf_scheduler.model.errors.InvalidObjectError`
naming it; the API server's validation makes that rare, but simulation input is not validated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.selectors import NodeSelector


class DeviceID(NamedTuple):
    """One device of one pool of one driver."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


EXACT_COUNT = "ExactCount"
ALL = "All"


def _mapping(raw: Any, field: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidObjectError(field, f"expected an object, got {raw!r}")
    return raw


def _list(raw: Any, field: str) -> Sequence[Any]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidObjectError(field, f"expected a list, got {raw!r}")
    return raw


def _name(raw: Mapping[str, Any]) -> str:
    return str(_mapping(raw.get("metadata"), "metadata").get("name") or "")


def object_version(raw: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(uid, resourceVersion)``: what names one state of an object read from the API server.

    ``None`` for objects without them (built in memory), which are never cached.
    """
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    if not uid or not version:
        return None
    return str(uid), str(version)


def selector_expressions(raw: Any, field: str) -> tuple[str | None, ...]:
    """The CEL expressions of a ``selectors`` list; ``None`` for a selector without ``cel``."""
    expressions: list[str | None] = []
    for index, selector in enumerate(_list(raw, field)):
        cel = _mapping(selector, f"{field}[{index}]").get("cel")
        if cel is None:
            expressions.append(None)
            continue
        expression = _mapping(cel, f"{field}[{index}].cel").get("expression")
        if not isinstance(expression, str):
            raise InvalidObjectError(f"{field}[{index}].cel.expression", "must be a string")
        expressions.append(expression)
    return tuple(expressions)


class DeviceClass:
    """A DeviceClass: its selectors and the configuration it hands to allocated devices."""

    __slots__ = ("config", "name", "selectors")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        spec = _mapping(raw.get("spec"), "spec")
        self.name = _name(raw)
        self.selectors = selector_expressions(spec.get("selectors"), "spec.selectors")
        self.config: tuple[Mapping[str, Any], ...] = tuple(
            _mapping(entry, f"spec.config[{i}]")
            for i, entry in enumerate(_list(spec.get("config"), "spec.config"))
        )


class Device:
    """One device of a slice, with what selectors and constraints read."""

    __slots__ = (
        "attributes",
        "binding_conditions",
        "binds_to_node",
        "capacity",
        "consumes_counters",
        "name",
    )

    def __init__(self, raw: Any, field: str) -> None:
        raw = _mapping(raw, field)
        self.name = str(raw.get("name") or "")
        self.attributes: Mapping[str, Any] = _mapping(raw.get("attributes"), f"{field}.attributes")
        self.capacity: Mapping[str, Any] = _mapping(raw.get("capacity"), f"{field}.capacity")
        self.consumes_counters = bool(raw.get("consumesCounters"))
        conditions = raw.get("bindingConditions")
        self.binding_conditions: tuple[str, ...] | None = (
            None if conditions is None else tuple(_list(conditions, f"{field}.bindingConditions"))
        )
        self.binds_to_node = bool(raw.get("bindsToNode"))


class ResourceSlice:
    """A ResourceSlice: one part of a driver's pool, with where its devices can be used."""

    __slots__ = (
        "all_nodes",
        "devices",
        "driver",
        "generation",
        "has_binding_conditions",
        "name",
        "node_name",
        "node_selector",
        "node_selector_raw",
        "per_device_node_selection",
        "pool",
        "slice_count",
        "version",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        spec = _mapping(raw.get("spec"), "spec")
        pool = _mapping(spec.get("pool"), "spec.pool")
        self.name = _name(raw)
        self.version = object_version(raw)
        self.driver = str(spec.get("driver") or "")
        self.pool = str(pool.get("name") or "")
        self.generation = int(pool.get("generation") or 0)
        self.slice_count = int(pool.get("resourceSliceCount") or 0)
        self.node_name = str(spec.get("nodeName") or "")
        self.all_nodes = bool(spec.get("allNodes"))
        self.per_device_node_selection = bool(spec.get("perDeviceNodeSelection"))
        self.node_selector_raw: Mapping[str, Any] | None = None
        self.node_selector: NodeSelector | None = None
        if spec.get("nodeSelector") is not None:
            self.node_selector_raw = _mapping(spec["nodeSelector"], "spec.nodeSelector")
            self.node_selector = NodeSelector.parse(self.node_selector_raw, "spec.nodeSelector")
        self.devices = tuple(
            Device(device, f"spec.devices[{i}]")
            for i, device in enumerate(_list(spec.get("devices"), "spec.devices"))
        )
        self.has_binding_conditions = any(
            device.binding_conditions is not None for device in self.devices
        )


class Request:
    """A request or one of its ``firstAvailable`` subrequests, as the allocator asks them.

    ``admin_access`` is ``None`` when the field is unset (subrequests never have it).
    """

    __slots__ = (
        "admin_access",
        "class_name",
        "count",
        "has_capacity_requests",
        "mode",
        "name",
        "selectors",
    )

    def __init__(self, raw: Mapping[str, Any], field: str, *, subrequest: bool) -> None:
        self.name = str(raw.get("name") or "")
        self.class_name = str(raw.get("deviceClassName") or "")
        self.mode = str(raw.get("allocationMode") or EXACT_COUNT)
        count = raw.get("count")
        self.count = 1 if count is None and self.mode == EXACT_COUNT else int(count or 0)
        self.selectors = selector_expressions(raw.get("selectors"), f"{field}.selectors")
        self.has_capacity_requests = raw.get("capacity") is not None
        admin_access = None if subrequest else raw.get("adminAccess")
        self.admin_access: bool | None = None if admin_access is None else bool(admin_access)


class ClaimRequest:
    """One entry of ``spec.devices.requests``: either ``exactly`` or ``firstAvailable``."""

    __slots__ = ("exactly", "first_available", "name")

    def __init__(self, raw: Any, field: str) -> None:
        raw = _mapping(raw, field)
        self.name = str(raw.get("name") or "")
        exactly = raw.get("exactly")
        self.exactly: Request | None = None
        if exactly is not None:
            exact = dict(_mapping(exactly, f"{field}.exactly"))
            exact["name"] = self.name
            self.exactly = Request(exact, f"{field}.exactly", subrequest=False)
        self.first_available = tuple(
            Request(
                _mapping(sub, f"{field}.firstAvailable[{i}]"),
                f"{field}.firstAvailable[{i}]",
                subrequest=True,
            )
            for i, sub in enumerate(_list(raw.get("firstAvailable"), f"{field}.firstAvailable"))
        )


class Constraint:
    """One ``spec.devices.constraints`` entry: ``matchAttribute`` or ``distinctAttribute``.

    Both are ``None`` for a kind this version does not know.
    """

    __slots__ = ("distinct_attribute", "match_attribute", "requests")

    def __init__(self, raw: Any, field: str) -> None:
        raw = _mapping(raw, field)
        self.requests = frozenset(str(r) for r in _list(raw.get("requests"), f"{field}.requests"))
        attribute = raw.get("matchAttribute")
        self.match_attribute: str | None = None if attribute is None else str(attribute)
        distinct = raw.get("distinctAttribute")
        self.distinct_attribute: str | None = None if distinct is None else str(distinct)


class ResourceClaim:
    """A ResourceClaim's ``spec.devices``: requests, constraints and configuration."""

    __slots__ = ("config", "constraints", "display_name", "name", "requests")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        metadata = _mapping(raw.get("metadata"), "metadata")
        self.name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or "")
        self.display_name = f"{namespace}/{self.name}" if namespace else self.name
        devices = _mapping(_mapping(raw.get("spec"), "spec").get("devices"), "spec.devices")
        self.requests = tuple(
            ClaimRequest(r, f"spec.devices.requests[{i}]")
            for i, r in enumerate(_list(devices.get("requests"), "spec.devices.requests"))
        )
        self.constraints = tuple(
            Constraint(c, f"spec.devices.constraints[{i}]")
            for i, c in enumerate(_list(devices.get("constraints"), "spec.devices.constraints"))
        )
        self.config: tuple[Mapping[str, Any], ...] = tuple(
            _mapping(c, f"spec.devices.config[{i}]")
            for i, c in enumerate(_list(devices.get("config"), "spec.devices.config"))
        )
