"""SchedulingGates: a pod with ``spec.schedulingGates`` waits, unattempted, until they go."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod

NAME = "SchedulingGates"


def _gates_removed(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if isinstance(new, Pod) and new.uid == pod.uid and not new.scheduling_gates:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


class SchedulingGates:
    name: ClassVar[str] = NAME

    def pre_enqueue(self, pod: Pod) -> api.Status:
        if not pod.scheduling_gates:
            return api.SUCCESS
        return api.Status(
            api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]",
        )

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.UNSCHEDULED_POD,
                    api.ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
                ),
                _gates_removed,
            )
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> SchedulingGates:
    api.reject_unknown(api.ensure_mapping(args), set())
    return SchedulingGates()
