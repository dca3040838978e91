"""RFC 3339 timestamps as Kubernetes writes them, converted to POSIX seconds."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache

from kopf_scheduler.model.errors import InvalidObjectError


def parse_timestamp(value: object, field: str) -> float | None:
    """Seconds since the epoch for an RFC 3339 string, ``None`` for a missing value."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidObjectError(field, f"expected an RFC 3339 timestamp, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidObjectError(field, f"not an RFC 3339 timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def format_timestamp(seconds: float) -> str:
    """An RFC 3339 string with second precision, as the API server writes ``metav1.Time``."""
    return _format_whole_seconds(int(seconds))


@lru_cache(maxsize=256)
def _format_whole_seconds(seconds: int) -> str:
    # Objects are stamped in bursts within the same second (a whole cluster loaded at once).
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
