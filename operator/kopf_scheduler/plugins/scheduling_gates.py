"""SchedulingGates: a pod with ``spec.schedulingGates`` waits, unattempted, until they go."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugin_api import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    EventResource,
    Handle,
    QueueingHint,
    Status,
    ensure_mapping,
    reject_unknown,
)

NAME = "SchedulingGates"


def _gates_removed(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if isinstance(new, Pod) and new.uid == pod.uid and not new.scheduling_gates:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


class SchedulingGates:
    name: ClassVar[str] = NAME

    def pre_enqueue(self, pod: Pod) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        return Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.UNSCHEDULED_POD,
                    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                ),
                _gates_removed,
            )
        ]


def new(args: Mapping[str, Any] | None, handle: Handle) -> SchedulingGates:
    reject_unknown(ensure_mapping(args), set())
    return SchedulingGates()
