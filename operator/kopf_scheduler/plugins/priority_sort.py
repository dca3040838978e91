"""PrioritySort: the active queue pops higher priority first, then earlier arrival."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.plugin_api import (
    Handle,
    QueuedPodInfo,
    ensure_mapping,
    reject_unknown,
)

NAME = "PrioritySort"


class PrioritySort:
    name: ClassVar[str] = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa = a.pod.priority
        pb = b.pod.priority
        if pa != pb:
            return pa > pb
        if a.timestamp != b.timestamp:
            return a.timestamp < b.timestamp
        return a.sequence < b.sequence


def new(args: Mapping[str, Any] | None, handle: Handle) -> PrioritySort:
    reject_unknown(ensure_mapping(args), set())
    return PrioritySort()
