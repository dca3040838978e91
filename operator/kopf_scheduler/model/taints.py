"""Node taints and pod tolerations, with upstream's toleration matching rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError, expect_object

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
_EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})


@dataclass(slots=True, eq=False)
class Taint:
    key: str
    value: str
    effect: str

    @classmethod
    def parse(cls, raw: Any, field: str) -> Taint:
        raw = expect_object(raw, field, "a taint object")
        key = raw.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidObjectError(f"{field}.key", "must be a non-empty string")
        effect = raw.get("effect")
        if effect not in _EFFECTS:
            raise InvalidObjectError(f"{field}.effect", f"unsupported taint effect {effect!r}")
        value = raw.get("value") or ""
        if not isinstance(value, str):
            raise InvalidObjectError(f"{field}.value", "must be a string")
        return cls(key, value, effect)

    def __repr__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(slots=True, eq=False)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    @classmethod
    def parse(cls, raw: Any, field: str) -> Toleration:
        raw = expect_object(raw, field, "a toleration object")
        key = raw.get("key") or ""
        operator = raw.get("operator") or "Equal"
        value = raw.get("value") or ""
        effect = raw.get("effect") or ""
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidObjectError(field, "key and value must be strings")
        if operator not in ("Equal", "Exists"):
            raise InvalidObjectError(f"{field}.operator", f"unsupported operator {operator!r}")
        if operator == "Exists" and value:
            raise InvalidObjectError(f"{field}.value", "must be empty when `operator` is 'Exists'")
        if not key and operator != "Exists":
            raise InvalidObjectError(f"{field}.operator", "must be Exists when `key` is empty")
        if effect and effect not in _EFFECTS:
            raise InvalidObjectError(f"{field}.effect", f"unsupported effect {effect!r}")
        seconds = raw.get("tolerationSeconds")
        if seconds is not None and (not isinstance(seconds, int) or isinstance(seconds, bool)):
            raise InvalidObjectError(f"{field}.tolerationSeconds", "must be an integer")
        return cls(key, operator, value, effect, seconds)

    def tolerates(self, taint: Taint) -> bool:
        """Whether this toleration covers ``taint`` (empty effect covers every effect)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def tolerations_tolerate(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def find_untolerated_taint(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration covers."""
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate(tolerations, taint):
            return taint
    return None
