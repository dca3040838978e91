"""A read-only, parsed view of a raw Node dict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.parts import object_parts
from kopf_scheduler.model.resources import Resource
from kopf_scheduler.model.selectors import parse_string_map
from kopf_scheduler.model.taints import Taint

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"
"""The beta forms of the zone and region labels, still read on nodes and volumes."""
HOSTNAME_LABEL = "kubernetes.io/hostname"


class NodeImage:
    __slots__ = ("names", "size_bytes")

    def __init__(self, names: tuple[str, ...], size_bytes: int) -> None:
        self.names = names
        self.size_bytes = size_bytes


class Node:
    __slots__ = (
        "allocatable",
        "images",
        "labels",
        "name",
        "raw",
        "resource_version",
        "taints",
        "uid",
        "unschedulable",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        metadata, spec, status, name = object_parts(raw, "node")
        self.raw = raw
        self.name: str = name
        self.uid: str = metadata.get("uid") or name
        self.resource_version: str = metadata.get("resourceVersion") or ""
        self.labels = parse_string_map(metadata.get("labels"), "metadata.labels")
        self.unschedulable = bool(spec.get("unschedulable"))
        taints = spec.get("taints") or []
        if not isinstance(taints, list):
            raise InvalidObjectError("spec.taints", "must be a list")
        self.taints = tuple(Taint.parse(t, f"spec.taints[{i}]") for i, t in enumerate(taints))
        self.allocatable = Resource.from_list(status.get("allocatable"), "status.allocatable")
        images = []
        for index, image in enumerate(status.get("images") or []):
            if not isinstance(image, Mapping):
                raise InvalidObjectError(f"status.images[{index}]", "must be an object")
            names = tuple(n for n in image.get("names") or [] if isinstance(n, str))
            size = image.get("sizeBytes") or 0
            if not isinstance(size, int):
                raise InvalidObjectError(f"status.images[{index}].sizeBytes", "must be an integer")
            images.append(NodeImage(names, size))
        self.images = tuple(images)

    def __repr__(self) -> str:
        return f"Node({self.name})"
