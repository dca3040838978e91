"""``VolumeBindingArgs``: how long PreBind waits for the PV controller, and the scoring shape.

``bindTimeoutSeconds`` (default 600) bounds the wait in PreBind for the claims to become bound;
a negative value is rejected. ``shape`` configures capacity scoring, which exists only behind
the alpha ``StorageCapacityScoring`` gate; with the gate off (as in v1.34 by default, and always
here) upstream's validation rejects any ``shape`` so that a configuration written today cannot
silently change behaviour once the gate turns on. We keep that rejection and its text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kopf_scheduler import plugin_api as api

DEFAULT_BIND_TIMEOUT_SECONDS = 600

_SHAPE_WITHOUT_GATE = (
    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
)


@dataclass(frozen=True)
class Args:
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS

    @classmethod
    def parse(cls, raw: Any) -> Args:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"bindTimeoutSeconds", "shape"})
        timeout = args.get("bindTimeoutSeconds")
        if timeout is None:
            timeout = DEFAULT_BIND_TIMEOUT_SECONDS
        if not isinstance(timeout, int) or isinstance(timeout, bool):
            raise api.InvalidArgsError(
                "args.bindTimeoutSeconds", f"must be an integer, got {timeout!r}"
            )
        if timeout < 0:
            raise api.InvalidArgsError(
                "args.bindTimeoutSeconds",
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        if args.get("shape") is not None:
            raise api.InvalidArgsError("args.shape", _SHAPE_WITHOUT_GATE)
        return cls(timeout)
