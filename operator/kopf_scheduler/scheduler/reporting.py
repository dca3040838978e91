"""What the scheduler tells the outside world about a pod: events, status patches and the
explanation record of each attempt.

The scheduling cycle, the binding cycle and the failure handler all report through one
:class:`Reporter`, so an event names the profile that handled the pod the same way from every
stage, and the writer behind status patches can be swapped in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import structlog

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.types import Diagnosis
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import (
    ApiError,
    Clock,
    Event,
    EventRecorder,
    NotFoundError,
    PodRef,
    PodStatusPatch,
    PodStatusWriter,
)
from kopf_scheduler.preemption.record import PREEMPTION_RECORD, preemption_as_dict
from kopf_scheduler.scheduler.algorithm import Decision
from kopf_scheduler.scheduler.attempt import Attempt, FailedAttempt
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict, plugin_states, verdicts

logger = structlog.get_logger("kopf_scheduler.scheduler")


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class Reporter:
    clock: Clock
    snapshot: Snapshot
    status_writer: PodStatusWriter
    event_recorder: EventRecorder
    on_attempt: Callable[[AttemptRecord], None] | None

    def event(
        self, framework: Framework, pod: Pod, type_: str, reason: str, action: str, note: str
    ) -> None:
        self.event_recorder.record(
            Event(
                pod,
                type_,
                reason,
                action,
                note,
                framework.scheduler_name,
                regarding_revision=pod.revision,
            )
        )

    async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
        """Patch the pod's status; a pod gone meanwhile needs none, other failures are logged."""
        try:
            await self.status_writer.patch_status(pod, patch)
        except NotFoundError:
            return
        except ApiError as error:
            logger.warning("pod_status_update_failed", pod=pod.key, reason=str(error))

    def scheduled(self, attempt: Attempt, host: str, decision: Decision) -> None:
        """The explanation record of an attempt that bound the pod to ``host``."""
        self._record(attempt, "scheduled", host, "", decision.diagnosis, decision)

    def failed(
        self,
        failure: FailedAttempt,
        result: str,
        message: str,
        status_patch: PodStatusPatch | None,
    ) -> None:
        """The explanation record of a failed attempt (``result``: unschedulable or error), given
        the status patch about to be sent for it (the record may join it)."""
        diagnosis = failure.fit.diagnosis if failure.fit is not None else None
        self._record(failure, result, "", message, diagnosis, None, status_patch)

    def _record(
        self,
        attempt: Attempt | FailedAttempt,
        result: str,
        node: str,
        message: str,
        diagnosis: Diagnosis | None,
        decision: Decision | None,
        status_patch: PodStatusPatch | None = None,
    ) -> None:
        if self.on_attempt is None:
            return

        def node_verdicts() -> Sequence[NodeVerdict]:
            feasible = decision.feasible_nodes if decision is not None else []
            scores = decision.scores if decision is not None else []
            return verdicts(diagnosis, feasible, scores)

        record = AttemptRecord(
            pod=attempt.qpi.pod.key,
            profile=attempt.framework.scheduler_name,
            cycle=attempt.cycle,
            attempt=attempt.qpi.attempts,
            time=self.clock.now(),
            result=result,
            node=node,
            message=message,
            num_all_nodes=self.snapshot.num_nodes(),
            nodes=node_verdicts,
            status_patch=status_patch,
        )
        if diagnosis is not None and diagnosis.node_to_status.absent.reasons:
            record.unlisted_status = diagnosis.node_to_status.absent.message()
        preemption = attempt.state.get(PREEMPTION_RECORD)
        if preemption is not None:
            record.preemption = lambda: preemption_as_dict(preemption)
        plugins, pod = attempt.framework.plugins.explaining, attempt.qpi.pod
        record.plugin_states = lambda: plugin_states(
            plugins, pod.assigned_to(node) if node else pod
        )
        self.on_attempt(record)
