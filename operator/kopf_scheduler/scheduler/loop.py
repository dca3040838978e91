"""The scheduler: pop a pod, run the scheduling cycle synchronously, bind in the background.

One asyncio task owns the queue and the cache, so nothing here takes a lock. The scheduling cycle
(snapshot, filter, score, preemption dry runs, assume, reserve, permit) is plain synchronous
code; only API calls (binding, status patches, victim deletion) run as background tasks, and the
next pod is scheduled while the previous one binds, as upstream does with goroutines.

The loop runs ahead of the bindings by at most ``max_binding_cycles``: when that many binding
cycles are unfinished, it waits for one to end before it pops the next pod. kube-scheduler starts a
goroutine per binding without a limit and lets each wait for the client's rate limiter; when the
API server throttles (429) or is slow for long, those goroutines and their assumed pods pile up
with the queue. Here the loop waits instead, so the tasks, the assumed pods and the requests
queued at the rate limiter stay bounded while nothing is dropped: the pods wait in the scheduling
queue, and a binding that fails after its retries goes back there, as upstream's does. A binding
cycle that fails holds its place until the pod's status is patched, as upstream's goroutine runs
the failure handler before it ends.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.cache.cache import Cache, CacheError
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ASSIGNED_POD_DELETE
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodeToStatus,
    NominatingInfo,
    QueuedPodInfo,
)
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.ports import (
    ApiError,
    Clock,
    Event,
    EventRecorder,
    Metrics,
    NotFoundError,
    NullMetrics,
    ObjectRef,
    PodRef,
    PodStatusPatch,
    PodStatusWriter,
)
from kopf_scheduler.preemption.record import PREEMPTION_RECORD, preemption_as_dict
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.algorithm import (
    Algorithm,
    Decision,
    NoNodesAvailableError,
    SchedulingError,
)
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict, verdicts
from kopf_scheduler.scheduler.failure import (
    POD_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    failure_status_patch,
    invalid_pod_message,
    truncate_note,
)
from kopf_scheduler.scheduler.nominations import NominationHygiene

logger = structlog.get_logger("kopf_scheduler.scheduler")

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
ASSUMED_CLEANUP_PERIOD = 1.0
DEFAULT_MAX_BINDING_CYCLES = 256
"""Binding cycles (from Permit to the end of the binding) unfinished at once before the loop waits.
At the default client rate limit of 50 requests per second that is about five seconds of binding
requests queued ahead of anything else the scheduler sends."""


class Scheduler:
    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        cache: Cache,
        queue: SchedulingQueue,
        snapshot: Snapshot,
        algorithm: Algorithm,
        clock: Clock,
        status_writer: PodStatusWriter,
        event_recorder: EventRecorder,
        get_pod: Callable[[str], Pod | None],
        metrics: Metrics | None = None,
        on_attempt: Callable[[AttemptRecord], None] | None = None,
        max_binding_cycles: int = DEFAULT_MAX_BINDING_CYCLES,
    ) -> None:
        self.profiles = profiles
        self.cache = cache
        self.queue = queue
        self.snapshot = snapshot
        self.algorithm = algorithm
        self.clock = clock
        self.status_writer = status_writer
        self.event_recorder = event_recorder
        self.get_pod = get_pod
        self.metrics: Metrics = metrics if metrics is not None else NullMetrics()
        self.on_attempt = on_attempt
        self.cycle = 0
        self.active = True
        """Only an active scheduler (the leader) pops pods; followers keep their caches warm."""
        self._plugin_metrics_sampler = random.Random(0)
        """Picks the cycles whose plugin calls are timed; apart from the RNG of decisions."""
        self.last_advanced: float | None = None
        """When :meth:`run` last took a step (a cycle, and the wait for its status patch);
        ``None`` while it waits for work. A value that grows old means the loop is stuck."""
        self._wakeup = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_scheduling_cycle = False
        self._cycle_status_patch: asyncio.Task[None] | None = None
        """The status patch of the last cycle's failure, which :meth:`run` waits for."""
        self._binding_tasks = 0
        self.max_binding_cycles = max(1, max_binding_cycles)
        """:meth:`run` pops no pod while this many binding cycles are unfinished."""
        self.nominations = NominationHygiene(
            enabled=True,
            status_writer=status_writer,
            nominated_pods_for_node=queue.nominator.nominated_pods_for_node,
            forget=queue.nominator.delete_nominated_pod_if_exists,
            spawn=self.spawn,
        )

    # Background tasks ------------------------------------------------------------------------

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` in the background; failures are logged, never lost silently."""
        self._start(coroutine)

    def _start(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background_task_failed", exc_info=task.exception())

    async def drain(self) -> None:
        """Wait until every background task (bindings, patches, preemptions) has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def pending_tasks(self) -> int:
        return len(self._tasks)

    @property
    def binding_cycles(self) -> int:
        """Binding cycles started and not yet finished (the goroutines gauge of ``binding``)."""
        return self._binding_tasks

    def notify(self) -> None:
        """Wake the loop: a pod became poppable (the queue's activity callback)."""
        self._wakeup.set()

    # The scheduling cycle ------------------------------------------------------------------

    def schedule_one(self) -> bool:
        """Schedule the next pod if there is one; ``False`` when the queue had nothing to pop.

        A failed cycle leaves its status patch in ``_cycle_status_patch``; :meth:`run` waits for
        it before the next pod.
        """
        self._cycle_status_patch = None
        self._in_scheduling_cycle = True
        try:
            return self._schedule_one()
        finally:
            self._in_scheduling_cycle = False

    def _schedule_one(self) -> bool:
        qpi = self.queue.pop()
        if qpi is None:
            return False
        pod = qpi.pod
        framework = self.profiles.get(pod.scheduler_name)
        if framework is None:
            self.queue.done(pod.uid)
            return True
        if pod.deletion_timestamp is not None:
            self._record_event(
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
        start = self.clock.now()
        state = CycleState()
        state.record_plugin_metrics = (
            self._plugin_metrics_sampler.randrange(100) < m.PLUGIN_METRICS_SAMPLE_PERCENT
        )
        try:
            self.cache.update_snapshot(self.snapshot)
            decision = self.algorithm.schedule_pod(framework, state, pod, self.snapshot)
        except FitError as fit:
            nominating: NominatingInfo | None = NominatingInfo.clear()
            if framework.has_post_filter_plugins():
                result, post_status = framework.run_post_filter(
                    state, pod, fit.diagnosis.node_to_status
                )
                fit.diagnosis.post_filter_msg = post_status.message()
                if post_status.code == Code.ERROR:
                    logger.error(
                        "post_filter_failed",
                        pod=pod.key,
                        extension_point="PostFilter",
                        plugin=post_status.plugin,
                        reason=post_status.message(),
                        cycle=self.cycle,
                    )
                nominating = result.nominating_info if result is not None else None
            self._scheduling_failed(
                framework, qpi, state, Status(Code.UNSCHEDULABLE, str(fit)), fit, nominating, start
            )
            return True
        except NoNodesAvailableError as error:
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(error))
            self._scheduling_failed(
                framework, qpi, state, status, None, NominatingInfo.clear(), start
            )
            return True
        except SchedulingError as error:
            self._scheduling_failed(
                framework,
                qpi,
                state,
                error.status.with_code(Code.ERROR),
                None,
                NominatingInfo.clear(),
                start,
            )
            return True

        self.metrics.observe(m.SCHEDULING_ALGORITHM_DURATION, self.clock.now() - start)
        host = decision.suggested_host
        assumed = pod.assigned_to(host)
        try:
            self.cache.assume_pod(assumed)
        except CacheError as error:
            self._scheduling_failed(
                framework,
                qpi,
                state,
                Status(Code.ERROR, str(error)),
                None,
                NominatingInfo.clear(),
                start,
            )
            return True
        self.queue.nominator.delete_nominated_pod_if_exists(pod)

        status = framework.run_reserve(state, assumed, host)
        if not status.is_success():
            framework.run_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            self._fail_on_host(framework, qpi, state, status, host, start)
            return True
        status = framework.run_permit(state, assumed, host)
        if not status.is_success() and not status.is_wait():
            framework.run_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            self._fail_on_host(framework, qpi, state, status, host, start)
            return True

        self._binding_tasks += 1
        self.metrics.set(m.GOROUTINES, self._binding_tasks, {"operation": "binding"})
        self.spawn(
            self._binding_cycle(framework, state, qpi, assumed, host, start, decision, self.cycle)
        )
        return True

    def _fail_on_host(
        self,
        framework: Framework,
        qpi: QueuedPodInfo,
        state: CycleState,
        status: Status,
        host: str,
        start: float,
    ) -> asyncio.Task[None] | None:
        """A Reserve/Permit/binding rejection: reported as a FitError over the one chosen node.

        Returns the status patch started for the pod, if any.
        """
        if status.is_rejected():
            diagnosis = Diagnosis(NodeToStatus())
            diagnosis.node_to_status.set(host, status)
            if status.plugin:
                if status.code == Code.PENDING:
                    diagnosis.pending_plugins.add(status.plugin)
                else:
                    diagnosis.unschedulable_plugins.add(status.plugin)
            fit = FitError(qpi.pod, 1, diagnosis)
            return self._scheduling_failed(
                framework,
                qpi,
                state,
                Status(Code.UNSCHEDULABLE, str(fit)),
                fit,
                NominatingInfo.clear(),
                start,
            )
        return self._scheduling_failed(
            framework, qpi, state, status, None, NominatingInfo.clear(), start
        )

    # The binding cycle -------------------------------------------------------------------------

    async def _binding_cycle(
        self,
        framework: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Pod,
        host: str,
        start: float,
        decision: Decision,
        cycle: int,
    ) -> None:
        try:
            patch = await self._bind(framework, state, qpi, assumed, host, start, decision, cycle)
            if patch is not None:
                await asyncio.wait([patch])
        finally:
            self._binding_tasks -= 1
            self.metrics.set(m.GOROUTINES, self._binding_tasks, {"operation": "binding"})
            if self._binding_tasks == self.max_binding_cycles - 1:
                self._wakeup.set()  # the loop may be waiting for this place

    async def _bind(
        self,
        framework: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Pod,
        host: str,
        start: float,
        decision: Decision,
        cycle: int,
    ) -> asyncio.Task[None] | None:
        """Wait on Permit, PreBind, Bind, PostBind; a failure's status patch, if one was started."""
        try:
            status = await framework.wait_on_permit(assumed, self.clock.sleep)
            if not status.is_success():
                return self._binding_failed(framework, state, qpi, assumed, host, status, start)
            self.queue.done(assumed.uid)
            status = await framework.run_pre_bind(state, assumed, host)
            if not status.is_success():
                return self._binding_failed(framework, state, qpi, assumed, host, status, start)
            status = await framework.run_bind(state, assumed, host)
            if status.is_skip():
                status = Status(Code.ERROR, "no bind plugin bound the pod")
            if not status.is_success():
                if not self.cache.is_confirmed_on(assumed, host):
                    return self._binding_failed(framework, state, qpi, assumed, host, status, start)
                # The binding went through but its reply was lost (a connection cut): the watch
                # already shows the pod on the chosen node, so it is scheduled like any other.
                logger.info(
                    "binding_reply_lost",
                    pod=assumed.key,
                    node=host,
                    reason=status.message(),
                    cycle=cycle,
                )
            self.cache.finish_binding(assumed)
            now = self.clock.now()
            profile = framework.scheduler_name
            self.metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": "scheduled", "profile": profile})
            self.metrics.observe(
                m.SCHEDULING_ATTEMPT_DURATION,
                now - start,
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
            self._record_event(
                framework,
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {assumed.key} to {host}",
            )
            logger.info("pod_bound", pod=assumed.key, node=host, cycle=cycle)
            self._report_attempt(
                framework, qpi, state, "scheduled", host, "", decision=decision, cycle=cycle
            )
            framework.run_post_bind(state, assumed, host)
        except asyncio.CancelledError:
            self.cache.forget_pod(assumed)
            raise
        except Exception as error:
            logger.exception("binding_cycle_failed", pod=assumed.key, node=host, cycle=self.cycle)
            return self._binding_failed(
                framework, state, qpi, assumed, host, Status.from_error(error), start
            )
        return None

    def _binding_failed(
        self,
        framework: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: Pod,
        host: str,
        status: Status,
        start: float,
    ) -> asyncio.Task[None] | None:
        framework.run_unreserve(state, assumed, host)
        self.cache.forget_pod(assumed)
        uid = assumed.uid
        if status.is_rejected():
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, assumed, None, lambda pod: pod.uid != uid
            )
        else:
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, assumed, None)
        return self._fail_on_host(framework, qpi, state, status, host, start)

    # Failures --------------------------------------------------------------------------------

    def _scheduling_failed(
        self,
        framework: Framework,
        qpi: QueuedPodInfo,
        state: CycleState,
        status: Status,
        fit: FitError | None,
        nominating: NominatingInfo | None,
        start: float,
    ) -> asyncio.Task[None] | None:
        """Requeue the pod and report the failure; returns the status patch started, if any."""
        pod = qpi.pod
        rejected = status.is_rejected()
        result = "unschedulable" if rejected else "error"
        reason = REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR
        profile = framework.scheduler_name
        now = self.clock.now()
        self.metrics.inc(m.SCHEDULE_ATTEMPTS, {"result": result, "profile": profile})
        self.metrics.observe(
            m.SCHEDULING_ATTEMPT_DURATION, now - start, {"result": result, "profile": profile}
        )
        if fit is not None:
            qpi.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(fit.diagnosis.pending_plugins)

        nominating = self.nominations.after_failure(pod, fit, nominating)
        cached = self.get_pod(pod.key)
        if cached is None or cached.uid != pod.uid or cached.node_name:
            self.queue.done(pod.uid)
        else:
            qpi.pod = cached
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle)
        self.queue.nominator.add_nominated_pod(qpi.pod, nominating)

        message = status.message()  # for a FitError, its text (built once, by the caller)
        logger.info(
            "pod_unschedulable" if rejected else "pod_scheduling_error",
            pod=pod.key,
            reason=message,
            plugin=status.plugin,
            cycle=self.cycle,
        )
        self._record_event(
            framework, pod, "Warning", "FailedScheduling", "Scheduling", truncate_note(message)
        )
        current = cached if cached is not None and cached.uid == pod.uid else pod
        patch = failure_status_patch(current, reason, message, nominating, now)
        task: asyncio.Task[None] | None = None
        if patch is not None:
            task = self._start(self._patch_status(current, patch))
            if self._in_scheduling_cycle:
                # kube-scheduler's failure handler patches the status before the scheduling
                # loop takes the next pod (binding failures patch in their own goroutine, which
                # a binding cycle here waits for before it ends).
                self._cycle_status_patch = task
        self._report_attempt(framework, qpi, state, result, "", message, fit=fit)
        return task

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
        self.event_recorder.record(
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
        condition = {
            "type": POD_SCHEDULED,
            "status": "False",
            "reason": REASON_UNSCHEDULABLE,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": format_timestamp(self.clock.now()),
        }
        self.spawn(self._patch_status(ref, PodStatusPatch(conditions=[condition])))

    async def _patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
        try:
            await self.status_writer.patch_status(pod, patch)
        except NotFoundError:
            return
        except ApiError as error:
            logger.warning("pod_status_update_failed", pod=pod.key, reason=str(error))

    def _record_event(
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

    def _report_attempt(
        self,
        framework: Framework,
        qpi: QueuedPodInfo,
        state: CycleState,
        result: str,
        node: str,
        message: str,
        *,
        decision: Decision | None = None,
        fit: FitError | None = None,
        cycle: int | None = None,
    ) -> None:
        if self.on_attempt is None:
            return
        diagnosis = decision.diagnosis if decision is not None else (fit.diagnosis if fit else None)

        def node_verdicts() -> Sequence[NodeVerdict]:
            feasible = decision.feasible_nodes if decision is not None else []
            scores = decision.scores if decision is not None else []
            return verdicts(diagnosis, feasible, scores)

        record = AttemptRecord(
            pod=qpi.pod.key,
            profile=framework.scheduler_name,
            cycle=self.cycle if cycle is None else cycle,
            attempt=qpi.attempts,
            time=self.clock.now(),
            result=result,
            node=node,
            message=message,
            num_all_nodes=self.snapshot.num_nodes(),
            nodes=node_verdicts,
        )
        if diagnosis is not None and diagnosis.node_to_status.absent.reasons:
            record.unlisted_status = diagnosis.node_to_status.absent.message()
        preemption = state.get(PREEMPTION_RECORD)
        if preemption is not None:
            record.preemption = lambda: preemption_as_dict(preemption)
        self.on_attempt(record)

    # Driving it --------------------------------------------------------------------------------

    async def _every(self, period: float, action: Callable[[], None], align: bool = False) -> None:
        if align:
            now = self.clock.now()
            await self.clock.sleep(math.ceil(now) - now)
        while True:
            try:
                action()
            except Exception:
                logger.exception("periodic_task_failed")
            await self.clock.sleep(period)

    def _flush_backoff(self) -> None:
        self.queue.flush_backoff_completed()
        counts = self.queue.pending_counts()
        for queue_name, count in counts.items():
            self.metrics.set(m.PENDING_PODS, count, {"queue": queue_name})
        self.metrics.set(m.CACHE_SIZE, self.cache.node_count(), {"type": "nodes"})
        self.metrics.set(m.CACHE_SIZE, self.cache.pod_count(), {"type": "pods"})
        self.metrics.set(m.CACHE_SIZE, len(self.cache.assumed_pods()), {"type": "assumed_pods"})

    def _cleanup_assumed(self) -> None:
        expired = self.cache.cleanup_expired_assumed_pods()
        for pod in expired:
            logger.warning("assumed_pod_expired", pod=pod.key, node=pod.node_name)

    def start_periodic_tasks(self) -> list[asyncio.Task[None]]:
        loop = asyncio.get_running_loop()
        return [
            loop.create_task(self._every(BACKOFF_FLUSH_PERIOD, self._flush_backoff, align=True)),
            loop.create_task(
                self._every(UNSCHEDULABLE_FLUSH_PERIOD, self.queue.flush_unschedulable_leftover)
            ),
            loop.create_task(self._every(ASSUMED_CLEANUP_PERIOD, self._cleanup_assumed)),
        ]

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set; yields to the event loop between pods."""
        periodic = self.start_periodic_tasks()
        stop_waiter = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                self.last_advanced = self.clock.now()
                self._wakeup.clear()
                # Back-pressure: with every binding place taken, wait (as for work) until a
                # binding cycle ends; each is bounded by its requests' timeouts and retries.
                room = self._binding_tasks < self.max_binding_cycles
                if self.active and room and self.schedule_one():
                    patch = self._cycle_status_patch
                    if patch is not None:
                        await asyncio.wait([patch])
                    else:
                        await asyncio.sleep(0)
                    continue
                self.last_advanced = None
                wakeup = asyncio.ensure_future(self._wakeup.wait())
                await asyncio.wait({wakeup, stop_waiter}, return_when=asyncio.FIRST_COMPLETED)
                wakeup.cancel()
        finally:
            stop_waiter.cancel()
            for task in periodic:
                task.cancel()
            await asyncio.gather(*periodic, return_exceptions=True)
