"""A read-only view of a policy/v1 PodDisruptionBudget, as preemption and simulation need it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.parts import object_parts
from kopf_scheduler.model.selectors import LabelSelector


class PodDisruptionBudget:
    __slots__ = (
        "disrupted_pods",
        "disruptions_allowed",
        "max_unavailable",
        "min_available",
        "name",
        "namespace",
        "raw",
        "selector",
        "selector_is_empty",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        metadata, spec, status, name = object_parts(raw, "PodDisruptionBudget")
        self.raw = raw
        self.name = name
        self.namespace: str = metadata.get("namespace") or "default"
        self.selector = LabelSelector.parse(spec.get("selector"), "spec.selector")
        # Preemption treats both a missing and an empty selector as selecting nothing.
        self.selector_is_empty = self.selector.matches_nothing or self.selector.is_empty()
        self.min_available: int | str | None = _int_or_percent(
            spec.get("minAvailable"), "spec.minAvailable"
        )
        self.max_unavailable: int | str | None = _int_or_percent(
            spec.get("maxUnavailable"), "spec.maxUnavailable"
        )
        if self.min_available is not None and self.max_unavailable is not None:
            raise InvalidObjectError("spec", "minAvailable and maxUnavailable cannot be both set")
        allowed = status.get("disruptionsAllowed", 0)
        if not isinstance(allowed, int) or isinstance(allowed, bool):
            raise InvalidObjectError("status.disruptionsAllowed", "must be an integer")
        self.disruptions_allowed: int = allowed
        disrupted = status.get("disruptedPods") or {}
        if not isinstance(disrupted, Mapping):
            raise InvalidObjectError("status.disruptedPods", "must be a map")
        self.disrupted_pods: frozenset[str] = frozenset(disrupted)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod is covered, with preemption's rules (empty selector, no labels: no)."""
        if namespace != self.namespace or self.selector_is_empty or not labels:
            return False
        return self.selector.matches(labels)


def _int_or_percent(value: Any, field: str) -> int | str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidObjectError(field, f"must be an integer or a percentage, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise InvalidObjectError(field, f"must be greater than or equal to 0, got {value}")
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise InvalidObjectError(field, f"not a valid percentage: {value!r}") from None
        if not 0 <= percent <= 100:
            raise InvalidObjectError(field, f"must be between 0% and 100%, got {value!r}")
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise InvalidObjectError(field, f"must be an integer or a percentage, got {value!r}")
