"""The error raised when a Kubernetes object cannot be understood.

A scheduler meets objects that the API server accepted but that we still cannot use (for example
in simulation input, or a field our parser is stricter about). Such an object must never crash the
loop: callers catch :class:`InvalidObjectError` and report its message, which always names the
field path, to the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class InvalidObjectError(ValueError):
    """A field of a Kubernetes object is malformed.

    ``field`` is the dotted path inside the object (``spec.containers[0].resources.requests.cpu``)
    and ``reason`` says what is wrong with it.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def prefixed(self, prefix: str) -> InvalidObjectError:
        """The same error with its field path placed under ``prefix``."""
        return InvalidObjectError(f"{prefix}.{self.field}" if prefix else self.field, self.reason)


def expect_object(raw: Any, field: str, what: str) -> Mapping[str, Any]:
    """``raw`` when it is an object (a mapping); otherwise the error at ``field`` saying that
    ``what`` (``"a taint object"``) was expected."""
    if not isinstance(raw, Mapping):
        raise InvalidObjectError(field, f"expected {what}, got {raw!r}")
    return raw
