"""PrioritySort: the active queue pops higher priority first, then earlier arrival."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api

NAME = "PrioritySort"


class PrioritySort:
    name: ClassVar[str] = NAME

    def less(self, a: api.QueuedPodInfo, b: api.QueuedPodInfo) -> bool:
        pa = a.pod.priority
        pb = b.pod.priority
        if pa != pb:
            return pa > pb
        if a.timestamp != b.timestamp:
            return a.timestamp < b.timestamp
        return a.sequence < b.sequence


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> PrioritySort:
    api.reject_unknown(api.ensure_mapping(args), set())
    return PrioritySort()
