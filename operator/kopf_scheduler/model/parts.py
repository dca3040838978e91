"""The first step of every view: check the object's shape and take its sections apart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from kopf_scheduler.model.errors import InvalidObjectError


class ObjectParts(NamedTuple):
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    name: str


def object_parts(raw: Any, kind: str) -> ObjectParts:
    """``metadata``, ``spec`` and ``status`` (empty when absent) and the required name."""
    if not isinstance(raw, Mapping):
        raise InvalidObjectError("", f"a {kind} must be an object, got {raw!r}")
    sections = []
    for section in ("metadata", "spec", "status"):
        value = raw.get(section) or {}
        if not isinstance(value, Mapping):
            raise InvalidObjectError(section, "must be an object")
        sections.append(value)
    name = sections[0].get("name")
    if not isinstance(name, str) or not name:
        raise InvalidObjectError("metadata.name", "must be a non-empty string")
    return ObjectParts(sections[0], sections[1], sections[2], name)
