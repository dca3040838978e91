"""The scheduling cycle: pop a pod, find it a node, assume it there, reserve and permit it.

It is plain synchronous code, run by the loop's one task, so nothing here takes a lock: snapshot,
filter, score and the preemption dry runs (PostFilter) in the algorithm, then assume the pod in
the cache, Reserve and Permit. A pod that passes is handed to the binding cycle, which binds it in
the background while the next pod is scheduled. A failed cycle goes to the failure handler, and
its status patch is kept in :attr:`SchedulingCycle.status_patch` for the loop to wait for, as
kube-scheduler's failure handler patches the pod before the loop takes the next one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Mapping

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.cache.cache import Cache, CacheError
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import FitError, NominatingInfo
from kopf_scheduler.ports import Clock, Metrics
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.algorithm import Algorithm, NoNodesAvailableError, SchedulingError
from kopf_scheduler.scheduler.attempt import Attempt, FailedAttempt
from kopf_scheduler.scheduler.binding_cycle import BindingCycles
from kopf_scheduler.scheduler.failure_handler import FailureHandler
from kopf_scheduler.scheduler.gang_notice import GangNotice
from kopf_scheduler.scheduler.reporting import Reporter

logger = structlog.get_logger("kopf_scheduler.scheduler")


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class SchedulingCycle:
    profiles: Mapping[str, Framework]
    cache: Cache
    queue: SchedulingQueue
    snapshot: Snapshot
    algorithm: Algorithm
    clock: Clock
    metrics: Metrics
    reporter: Reporter
    failures: FailureHandler
    bindings: BindingCycles
    cycle: int = dataclasses.field(default=0, init=False)
    """The number of the last cycle that ran the algorithm."""
    status_patch: asyncio.Task[None] | None = dataclasses.field(default=None, init=False)
    """The status patch of the last cycle's failure, which the loop waits for."""
    gang_notice: GangNotice = dataclasses.field(default_factory=GangNotice, init=False)
    _plugin_metrics_sampler: random.Random = dataclasses.field(
        default_factory=lambda: random.Random(0), init=False
    )
    """Picks the cycles whose plugin calls are timed; apart from the RNG of decisions."""

    def schedule_one(self) -> bool:
        """Schedule the next pod if there is one; ``False`` when the queue had nothing to pop."""
        self.status_patch = None
        qpi = self.queue.pop()
        if qpi is None:
            return False
        pod = qpi.pod
        framework = self.profiles.get(pod.scheduler_name)
        if framework is None:
            self.queue.done(pod.uid)
            return True
        self.gang_notice.check(framework, pod)
        if pod.deletion_timestamp is not None:
            self.reporter.event(
                framework,
                pod,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                f"skip schedule deleting pod: {pod.key}",
            )
            self.queue.done(pod.uid)
            return True
        if self.cache.is_assumed(pod):
            self.queue.done(pod.uid)
            return True

        self.cycle += 1
        state = CycleState()
        attempt = Attempt(framework, qpi, state, self.clock.now(), self.cycle)
        state.record_plugin_metrics = (
            self._plugin_metrics_sampler.randrange(100) < m.PLUGIN_METRICS_SAMPLE_PERCENT
        )
        try:
            self.cache.update_snapshot(self.snapshot)
            decision = self.algorithm.schedule_pod(framework, state, pod, self.snapshot)
        except FitError as fit:
            return self._failed(self._after_post_filter(attempt, fit))
        except NoNodesAvailableError as error:
            return self._failed(
                attempt.failed(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(error)))
            )
        except SchedulingError as error:
            return self._failed(attempt.failed(error.status.with_code(Code.ERROR)))

        self.metrics.observe(m.SCHEDULING_ALGORITHM_DURATION, self.clock.now() - attempt.start)
        host = decision.suggested_host
        assumed = pod.assigned_to(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as error:
            return self._failed(attempt.failed(Status(Code.ERROR, str(error))))
        self.queue.nominator.delete_nominated_pod_if_exists(pod)

        status = framework.run_reserve(state, assumed, host)
        if status.is_success():
            status = framework.run_permit(state, assumed, host)
        if not status.is_success() and not status.is_wait():
            # Reserve failed or Permit refused: every Reserve plugin undoes its part (upstream
            # runs Unreserve on all of them either way), and the pod leaves the cache.
            framework.run_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            return self._failed(attempt.failed_on(host, status))

        self.bindings.start(attempt, assumed, host, decision)
        return True

    def _after_post_filter(self, attempt: Attempt, fit: FitError) -> FailedAttempt:
        """No node fits: let PostFilter (preemption) try, and fail with the nomination it chose."""
        framework, pod = attempt.framework, attempt.qpi.pod
        nominating: NominatingInfo | None = NominatingInfo.clear()
        if framework.has_post_filter_plugins():
            result, post_status = framework.run_post_filter(
                attempt.state, pod, fit.diagnosis.node_to_status
            )
            fit.diagnosis.post_filter_msg = post_status.message()
            if post_status.code == Code.ERROR:
                logger.error(
                    "post_filter_failed",
                    pod=pod.key,
                    extension_point="PostFilter",
                    plugin=post_status.plugin,
                    reason=post_status.message(),
                    cycle=attempt.cycle,
                )
            nominating = result.nominating_info if result is not None else None
        return attempt.failed(Status(Code.UNSCHEDULABLE, str(fit)), fit, nominating)

    def _failed(self, failure: FailedAttempt) -> bool:
        self.status_patch = self.failures.handle(failure)
        return True
