"""A read-only view of a scheduling.k8s.io/v1 PriorityClass.

The API server's Priority admission normally copies the class value into ``spec.priority``; the
scheduler resolves ``priorityClassName`` itself only when that did not happen (admission disabled,
or simulation input).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import parse_preemption_policy


class PriorityClass:
    __slots__ = ("global_default", "name", "preemption_policy", "raw", "value")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise InvalidObjectError("", f"a PriorityClass must be an object, got {raw!r}")
        self.raw = raw
        metadata = raw.get("metadata") or {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObjectError("metadata.name", "must be a non-empty string")
        self.name = name
        value = raw.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidObjectError("value", f"must be an integer, got {value!r}")
        if value > 1_000_000_000 and not name.startswith("system-"):
            raise InvalidObjectError("value", "must be no greater than 1000000000")
        self.value = value
        self.global_default = bool(raw.get("globalDefault"))
        self.preemption_policy = parse_preemption_policy(
            raw.get("preemptionPolicy"), "preemptionPolicy"
        )
