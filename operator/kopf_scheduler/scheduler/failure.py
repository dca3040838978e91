"""What a failed attempt looks like from outside: the PodScheduled condition and the event text.

Reasons, truncation and the "only patch when something changed" rule follow upstream, so that
``kubectl describe pod`` reads the same as with kube-scheduler. The condition carries the pod's
``metadata.generation`` as ``observedGeneration``, as v1.34 does with PodObservedGenerationTracking
on by default; a changed generation alone is no reason to patch, as upstream compares status,
reason, message and times only.
"""

from __future__ import annotations

from typing import Any

from kopf_scheduler.framework.types import NominatingInfo, NominatingMode
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.ports import PodStatusPatch

POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
NOTE_LENGTH_LIMIT = 1024
_TRUNCATION_SUFFIX = " ..."


def invalid_pod_message(error: InvalidObjectError) -> str:
    """The PodScheduled message and event note for a pod that cannot be parsed."""
    return f"invalid pod: {error}"


def truncate_note(message: str) -> str:
    """Event notes are limited to 1024 characters; longer ones end in ' ...'."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - len(_TRUNCATION_SUFFIX)] + _TRUNCATION_SUFFIX


def not_scheduled_condition(
    reason: str, message: str, transition: Any, generation: int = 0
) -> dict[str, Any]:
    """``PodScheduled=False`` with ``reason`` and ``message``; ``generation``, when the pod has
    one, as ``observedGeneration``. ``transition`` is a new timestamp, or the one the pod's
    condition holds, kept as it is."""
    condition: dict[str, Any] = {
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    if generation:
        condition["observedGeneration"] = generation
    return condition


def failure_status_patch(
    pod: Pod, reason: str, message: str, nominating: NominatingInfo | None, now: float
) -> PodStatusPatch | None:
    """The status patch for a failed attempt, or ``None`` when nothing would change."""
    nominate = (
        nominating is not None
        and nominating.mode is NominatingMode.OVERRIDE
        and pod.nominated_node_name != nominating.nominated_node_name
    )
    old = pod.condition(POD_SCHEDULED)
    unchanged = (
        old is not None
        and old.get("status") == "False"
        and old.get("reason") == reason
        and old.get("message") == message
    )
    if unchanged and not nominate:
        return None
    transition = (
        old.get("lastTransitionTime")
        if old is not None and old.get("status") == "False" and old.get("lastTransitionTime")
        else format_timestamp(now)
    )
    patch = PodStatusPatch(
        conditions=[not_scheduled_condition(reason, message, transition, pod.generation)]
    )
    if nominate:
        assert nominating is not None
        patch.set_nominated_node_name = True
        patch.nominated_node_name = nominating.nominated_node_name
    return patch
