"""The binding cycle: wait on Permit, then PreBind, Bind and PostBind, in the background.

Each pod that the scheduling cycle assumed and reserved binds in a task of its own while the loop
schedules the next pod, as upstream binds in a goroutine. The loop runs ahead of the bindings by
at most :attr:`BindingCycles.limit`: with that many binding cycles unfinished it pops no pod
until one ends. kube-scheduler starts a goroutine per binding without a limit and lets each wait
for the client's rate limiter; when the API server throttles (429) or is slow for long, those
goroutines and their assumed pods pile up with the queue. Here the loop waits instead, so the
tasks, the assumed pods and the requests queued at the rate limiter stay bounded while nothing
is dropped: the pods wait in the scheduling queue, and a binding that fails after its retries
goes back there, as upstream's does. A binding cycle that fails holds its place until the pod's
status is patched, as upstream's goroutine runs the failure handler before it ends.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.framework.events import ASSIGNED_POD_DELETE
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import Clock, Metrics
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.algorithm import Decision
from kopf_scheduler.scheduler.attempt import Attempt
from kopf_scheduler.scheduler.failure_handler import FailureHandler
from kopf_scheduler.scheduler.reporting import Reporter
from kopf_scheduler.scheduler.tasks import BackgroundTasks

logger = structlog.get_logger("kopf_scheduler.scheduler")

DEFAULT_MAX_BINDING_CYCLES = 256
"""Binding cycles (from Permit to the end of the binding) unfinished at once before the loop waits.
At the default client rate limit of 50 requests per second that is about five seconds of binding
requests queued ahead of anything else the scheduler sends."""


@dataclasses.dataclass(kw_only=True, eq=False, repr=False)
class BindingCycles:
    queue: SchedulingQueue
    cache: Cache
    clock: Clock
    metrics: Metrics
    reporter: Reporter
    failures: FailureHandler
    tasks: BackgroundTasks
    on_room: Callable[[], None]
    """Called when a binding cycle ends and so frees the place the loop may wait for."""
    limit: int = DEFAULT_MAX_BINDING_CYCLES
    _unfinished: int = dataclasses.field(default=0, init=False)

    def __post_init__(self) -> None:
        self.limit = max(1, self.limit)

    @property
    def unfinished(self) -> int:
        """Binding cycles started and not yet finished (the goroutines gauge of ``binding``)."""
        return self._unfinished

    def has_room(self) -> bool:
        return self._unfinished < self.limit

    def start(self, attempt: Attempt, assumed: Pod, host: str, decision: Decision) -> None:
        """Bind ``assumed`` (the popped pod, assumed on ``host``) in the background.

        Called as the scheduling cycle ends: the binding request's delay is measured from here.
        """
        self._unfinished += 1
        self.metrics.set(m.GOROUTINES, self._unfinished, {"operation": "binding"})
        self.tasks.spawn(self._run(attempt, assumed, host, decision, self.clock.now()))

    async def _run(
        self, attempt: Attempt, assumed: Pod, host: str, decision: Decision, cycle_end: float
    ) -> None:
        try:
            patch = await self._bind(attempt, assumed, host, decision, cycle_end)
            if patch is not None:
                await asyncio.wait([patch])
        finally:
            self._unfinished -= 1
            self.metrics.set(m.GOROUTINES, self._unfinished, {"operation": "binding"})
            if self._unfinished == self.limit - 1:
                self.on_room()  # the loop may be waiting for this place

    async def _bind(
        self, attempt: Attempt, assumed: Pod, host: str, decision: Decision, cycle_end: float
    ) -> asyncio.Task[None] | None:
        """Wait on Permit, PreBind, Bind, PostBind; a failure's status patch, if one was started."""
        framework, state, qpi = attempt.framework, attempt.state, attempt.qpi
        try:
            status = await framework.wait_on_permit(assumed, self.clock.sleep)
            if not status.is_success():
                return self._failed(attempt, assumed, host, status)
            self.queue.done(assumed.uid)
            status = await framework.run_pre_bind(state, assumed, host)
            if not status.is_success():
                return self._failed(attempt, assumed, host, status)
            self.metrics.observe(m.BINDING_REQUEST_DELAY, self.clock.now() - cycle_end)
            status = await framework.run_bind(state, assumed, host)
            if status.is_skip():
                status = Status(Code.ERROR, "no bind plugin bound the pod")
            if not status.is_success():
                if not self.cache.is_confirmed_on(assumed, host):
                    return self._failed(attempt, assumed, host, status)
                # The binding went through but its reply was lost (a connection cut): the watch
                # already shows the pod on the chosen node, so it is scheduled like any other.
                logger.info(
                    "binding_reply_lost",
                    pod=assumed.key,
                    node=host,
                    reason=status.message(),
                    cycle=attempt.cycle,
                )
            self.cache.finish_binding(assumed)
            now = self.clock.now()
            profile = framework.scheduler_name
            self.metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": "scheduled", "profile": profile})
            self.metrics.observe(
                m.SCHEDULING_ATTEMPT_DURATION,
                now - attempt.start,
                {"result": "scheduled", "profile": profile},
            )
            self.metrics.observe(m.POD_SCHEDULING_ATTEMPTS, qpi.attempts)
            if qpi.initial_attempt_timestamp is not None:
                label = "15+" if qpi.attempts >= 15 else str(qpi.attempts)
                self.metrics.observe(
                    m.POD_SCHEDULING_SLI_DURATION,
                    now - qpi.initial_attempt_timestamp,
                    {"attempts": label},
                )
            self.reporter.event(
                framework,
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {assumed.key} to {host}",
            )
            logger.info("pod_bound", pod=assumed.key, node=host, cycle=attempt.cycle)
            self.reporter.scheduled(attempt, host, decision)
            framework.run_post_bind(state, assumed, host)
        except asyncio.CancelledError:
            self.cache.forget_pod(assumed)
            raise
        except Exception as error:
            logger.exception(
                "binding_cycle_failed", pod=assumed.key, node=host, cycle=attempt.cycle
            )
            return self._failed(attempt, assumed, host, Status.from_error(error))
        return None

    def _failed(
        self, attempt: Attempt, assumed: Pod, host: str, status: Status
    ) -> asyncio.Task[None] | None:
        """Undo the reservation, give other pods a chance at the room it held, requeue the pod."""
        attempt.framework.run_unreserve(attempt.state, assumed, host)
        self.cache.forget_pod(assumed)
        uid = assumed.uid
        if status.is_rejected():
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, assumed, None, lambda pod: pod.uid != uid
            )
        else:
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, assumed, None)
        return self.failures.handle(attempt.failed_on(host, status))
