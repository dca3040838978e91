"""Plugin arguments: the error a bad ``pluginConfig`` entry raises, and parsing helpers.

Arguments arrive as the raw ``args`` mapping of a KubeSchedulerConfiguration ``pluginConfig``
entry. Each plugin parses them into its own frozen dataclass; any problem raises
:class:`InvalidArgsError` naming the field, which the config loader reports with the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kopf_scheduler.spelling import did_you_mean


class InvalidArgsError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def ensure_mapping(raw: Any, field: str = "args") -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidArgsError(field, f"must be an object, got {raw!r}")
    return raw


def reject_unknown(raw: Mapping[str, Any], known: set[str], field: str = "args") -> None:
    """Unknown fields are errors, as in a strict decoding of the upstream config; the message
    names the known field likely meant."""
    for key in raw:
        if key not in known and key not in ("apiVersion", "kind"):
            raise InvalidArgsError(f"{field}.{key}", f"unknown field{did_you_mean(key, known)}")


def int_arg(
    raw: Mapping[str, Any],
    key: str,
    default: int,
    field: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgsError(f"{field}.{key}", f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidArgsError(f"{field}.{key}", f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidArgsError(f"{field}.{key}", f"must be at most {maximum}, got {value}")
    return value
