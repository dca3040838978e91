"""The failure handler: what happens to a pod whose attempt failed, wherever it failed.

A filter pass that found no node, an error in the algorithm, a Reserve or Permit rejection and a
failed binding all end here, as upstream's ``handleSchedulingFailure``: count the attempt, put
the pod back in the queue (unless it was deleted or bound meanwhile), keep or change its
nomination, log it, record a FailedScheduling event and patch the PodScheduled condition. The
attempt's explanation record is made before the patch is sent, so that a record due to be stored
on the pod travels in that patch. The patch is returned so that the stage that failed can wait
for it, as upstream does before the loop (or the binding goroutine) goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.ports import Clock, Event, Metrics, ObjectRef, PodStatusPatch
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.attempt import FailedAttempt
from kopf_scheduler.scheduler.failure import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    failure_status_patch,
    invalid_pod_message,
    not_scheduled_condition,
    truncate_note,
)
from kopf_scheduler.scheduler.nominations import NominationHygiene
from kopf_scheduler.scheduler.reporting import Reporter
from kopf_scheduler.scheduler.tasks import BackgroundTasks

logger = structlog.get_logger("kopf_scheduler.scheduler")


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class FailureHandler:
    queue: SchedulingQueue
    clock: Clock
    metrics: Metrics
    get_pod: Callable[[str], Pod | None]
    nominations: NominationHygiene
    reporter: Reporter
    tasks: BackgroundTasks

    def handle(self, failure: FailedAttempt) -> asyncio.Task[None] | None:
        """Requeue the pod and report the failure; returns the status patch started, if any."""
        qpi = failure.qpi
        pod = qpi.pod
        result = "unschedulable" if failure.rejected else "error"
        reason = REASON_UNSCHEDULABLE if failure.rejected else REASON_SCHEDULER_ERROR
        profile = failure.framework.scheduler_name
        now = self.clock.now()
        self.metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": result, "profile": profile})
        self.metrics.observe(
            m.SCHEDULING_ATTEMPT_DURATION,
            now - failure.start,
            {"result": result, "profile": profile},
        )
        fit = failure.fit
        if fit is not None:
            qpi.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(fit.diagnosis.pending_plugins)

        nominating = self.nominations.after_failure(pod, fit, failure.nominating)
        cached = self.get_pod(pod.key)
        if cached is None or cached.uid != pod.uid or cached.node_name:
            self.queue.done(pod.uid)
        else:
            qpi.pod = cached
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle)
        self.queue.nominator.add_nominated_pod(qpi.pod, nominating)

        message = failure.status.message()
        logger.info(
            "pod_unschedulable" if failure.rejected else "pod_scheduling_error",
            pod=pod.key,
            reason=message,
            plugin=failure.status.plugin,
            cycle=failure.cycle,
        )
        self.reporter.event(
            failure.framework,
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            truncate_note(message),
        )
        current = cached if cached is not None and cached.uid == pod.uid else pod
        patch = failure_status_patch(current, reason, message, nominating, now)
        self.reporter.failed(failure, result, message, patch)
        if patch is None:
            return None
        return self.tasks.start(self.reporter.patch_status(current, patch))

    def report_invalid_pod(
        self, raw: Mapping[str, Any], scheduler_name: str, error: InvalidObjectError
    ) -> None:
        """A pending pod too malformed to parse: say why on the pod (event and condition)."""
        metadata = raw.get("metadata") or {}
        ref = ObjectRef(
            metadata.get("namespace") or "default",
            metadata.get("name", ""),
            metadata.get("uid", ""),
        )
        message = invalid_pod_message(error)
        logger.warning("pod_invalid", pod=ref.key, reason=str(error))
        self.reporter.event_recorder.record(
            Event(
                ref,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                message,
                scheduler_name,
                regarding_revision=metadata.get("resourceVersion") or "",
            )
        )
        condition = not_scheduled_condition(
            REASON_UNSCHEDULABLE, message, format_timestamp(self.clock.now())
        )
        self.tasks.spawn(self.reporter.patch_status(ref, PodStatusPatch(conditions=[condition])))
