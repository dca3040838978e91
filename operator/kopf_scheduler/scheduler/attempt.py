"""One pod's scheduling attempt, and the same attempt once it has failed.

An attempt starts in the scheduling cycle and may end in the binding cycle, long after the loop
has moved on to other pods; everything said about it later (metrics, log lines, the explanation
record) must name its own cycle and start time, not the loop's current ones. Both values are
frozen: a stage that learns more (that the attempt failed, and why) makes a new value rather
than changing the one it was handed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodeToStatus,
    NominatingInfo,
    QueuedPodInfo,
)

CLEAR_NOMINATION = NominatingInfo.clear()


@dataclass(frozen=True)
class Attempt:
    """A popped pod in the profile that schedules it, from its scheduling cycle on."""

    framework: Framework
    qpi: QueuedPodInfo
    state: CycleState
    start: float
    """Clock time the cycle began, for the attempt-duration metrics."""
    cycle: int

    def failed(
        self,
        status: Status,
        fit: FitError | None = None,
        nominating: NominatingInfo | None = CLEAR_NOMINATION,
    ) -> FailedAttempt:
        return FailedAttempt(
            self.framework, self.qpi, self.state, status, fit, nominating, self.start, self.cycle
        )

    def failed_on(self, host: str, status: Status) -> FailedAttempt:
        """A Reserve, Permit or binding failure on the chosen node.

        A rejection reads as a FitError over that one node, so the pod waits in the queue for
        the plugin that rejected it, as after a failed filter pass.
        """
        if not status.is_rejected():
            return self.failed(status)
        diagnosis = Diagnosis(NodeToStatus())
        diagnosis.node_to_status.set(host, status)
        if status.plugin:
            if status.code == Code.PENDING:
                diagnosis.pending_plugins.add(status.plugin)
            else:
                diagnosis.unschedulable_plugins.add(status.plugin)
        fit = FitError(self.qpi.pod, 1, diagnosis)
        return self.failed(Status(Code.UNSCHEDULABLE, str(fit)), fit)


@dataclass(frozen=True)
class FailedAttempt:
    """What the failure handler needs to requeue the pod and say why it is not scheduled."""

    framework: Framework
    qpi: QueuedPodInfo
    state: CycleState
    status: Status
    """The failure; for a FitError its text, built once."""
    fit: FitError | None
    nominating: NominatingInfo | None
    """How the pod's nominated node changes; ``None`` leaves it as it is."""
    start: float
    cycle: int

    @property
    def rejected(self) -> bool:
        """Unschedulable (a plugin said no) rather than an error."""
        return self.status.is_rejected()
