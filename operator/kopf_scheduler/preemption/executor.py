"""Carrying out a preemption through the API ports: condition, delete, event, nominations.

For each victim (upstream ``PreemptPod``):

* a pod waiting at Permit is rejected in memory ("preempted"), no API call;
* otherwise its status gets the ``DisruptionTarget`` condition (status True, reason
  ``PreemptionByScheduler``, message ``"<preemptor's schedulerName>: preempting to accommodate a
  higher priority pod"``), unless an identical condition is already there; NotFound means the pod
  is gone and the victim is done;
* then it is deleted with its own grace period (the PodDeleter adapter sets a UID precondition);
  NotFound again means done;
* finally a ``Normal`` / ``Preempted`` / ``Preempting`` event is recorded on the victim, with the
  preemptor as related object: ``Preempted by pod <preemptor UID> on node <node>``.

Lower-priority pods nominated to the same node lose their ``nominatedNodeName`` (they may no
longer fit), so they look for another node sooner.

Two ways to run it, as upstream (gate SchedulerAsyncPreemption, on by default since v1.33):

asynchronous (default)
    PostFilter marks the preemptor as *preempting* and hands a coroutine to ``handle.spawn``.
    The coroutine first lets the preemptor's own status patch (the failure handler's, with the
    nomination) go out, as kube-scheduler's scheduling goroutine sends that patch while the
    preemption goroutine is starting; then it clears the nominations, preempts all victims but
    the last concurrently, unmarks the preemptor and only then preempts the last victim, so
    that the last victim's deletion (and anything after it) finds the preemptor ungated and
    can requeue it together with the other pods waiting for room. Any failure re-activates the
    preemptor so it cannot stay parked in the unschedulable pool. While the preemptor is
    marked, DefaultPreemption's PreEnqueue keeps it out of the active queue. Victims that are
    already terminating are preempted again like the others (a second DELETE and a second
    ``Preempted`` event), as kube-scheduler v1.34 does.

synchronous
    The same API calls happen inside PostFilter, before it returns; a failure makes PostFilter
    return Error and no nomination. PostFilter is a plain function, so this mode drives the
    coroutines to completion without an event loop: it works with ports that never suspend (the
    in-memory simulator, tests) and reports an Error otherwise. The operator uses the
    asynchronous mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import SUCCESS, Status
from kopf_scheduler.model.pod import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER, Pod
from kopf_scheduler.model.timeutil import format_timestamp
from kopf_scheduler.ports import Event, NotFoundError, PodStatusPatch
from kopf_scheduler.preemption.candidates import Candidate

T = TypeVar("T")

METRIC_PREEMPTION_VICTIMS = "scheduler_preemption_victims"
METRIC_GOROUTINES_EXECUTION = "scheduler_preemption_goroutines_execution_total"
METRIC_GOROUTINES_DURATION = "scheduler_preemption_goroutines_duration_seconds"
RESULT_SUCCESS = "success"
RESULT_ERROR = "error"

EVENT_REASON_PREEMPTED = "Preempted"
EVENT_ACTION_PREEMPTING = "Preempting"
WAITING_POD_REJECT_MESSAGE = "preempted"


class SuspendedError(RuntimeError):
    """A port suspended while preemption ran synchronously (it needs an event loop)."""


def run_to_completion(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends and return its result, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    coroutine.close()
    raise SuspendedError(
        "an API port suspended during synchronous preemption; use the asynchronous mode"
    )


def disruption_target_message(preemptor: Pod) -> str:
    return f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"


def preempted_event_note(preemptor: Pod, node: str) -> str:
    return f"Preempted by pod {preemptor.uid} on node {node}"


class Executor:
    """API side of preemption, plus the bookkeeping of preemptions still running."""

    def __init__(self, handle: Handle, plugin_name: str) -> None:
        self.handle = handle
        self.plugin_name = plugin_name
        self.preempting: set[str] = set()
        """UIDs of preemptors whose background preemption has not reached its last victim."""

    # PreEnqueue ------------------------------------------------------------------------------

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the pod must still wait for its own preemption to take effect."""
        return uid in self.preempting

    # One victim ------------------------------------------------------------------------------

    def disruption_condition(self, preemptor: Pod, victim: Pod) -> dict[str, Any] | None:
        """The DisruptionTarget condition to write, or ``None`` if the victim already has it."""
        message = disruption_target_message(preemptor)
        existing = victim.condition(DISRUPTION_TARGET)
        transition = format_timestamp(self.handle.now())
        if existing is not None and existing.get("status") == "True":
            if (
                existing.get("reason") == PREEMPTION_BY_SCHEDULER
                and existing.get("message", "") == message
                and not existing.get("lastProbeTime")
            ):
                return None
            transition = existing.get("lastTransitionTime") or transition
        condition: dict[str, Any] = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": message,
            "lastTransitionTime": transition,
        }
        if victim.generation:
            # v1.34 records the generation it saw (PodObservedGenerationTracking, on by default).
            condition["observedGeneration"] = victim.generation
        return condition

    async def preempt_pod(self, node: str, preemptor: Pod, victim: Pod) -> None:
        """Preempt one victim; raises on an API failure other than NotFound."""
        handle = self.handle
        framework = handle.framework
        waiting = framework.get_waiting_pod(victim.uid) if framework is not None else None
        if waiting is not None:
            waiting.reject(self.plugin_name, WAITING_POD_REJECT_MESSAGE)
        else:
            condition = self.disruption_condition(preemptor, victim)
            if condition is not None:
                writer = handle.status_writer
                if writer is None:
                    raise RuntimeError("no pod status writer is attached to the handle")
                try:
                    await writer.patch_status(victim, PodStatusPatch(conditions=[condition]))
                except NotFoundError:
                    return
            deleter = handle.pod_deleter
            if deleter is None:
                raise RuntimeError("no pod deleter is attached to the handle")
            try:
                await deleter.delete_pod(victim)
            except NotFoundError:
                return
        recorder = handle.event_recorder
        if recorder is not None:
            recorder.record(
                Event(
                    regarding=victim,
                    type="Normal",
                    reason=EVENT_REASON_PREEMPTED,
                    action=EVENT_ACTION_PREEMPTING,
                    note=preempted_event_note(preemptor, node),
                    reporting_controller=handle.scheduler_name,
                    related=preemptor,
                    regarding_revision=victim.revision,
                    related_revision=preemptor.revision,
                )
            )

    # Nominations -----------------------------------------------------------------------------

    def lower_priority_nominated_pods(self, preemptor: Pod, node: str) -> list[Pod]:
        return [
            pod
            for pod in self.handle.nominator.nominated_pods_for_node(node)
            if pod.priority < preemptor.priority
        ]

    async def clear_nominated_node_name(self, pods: Sequence[Pod]) -> list[Exception]:
        """Clear ``status.nominatedNodeName`` of ``pods``; returns the errors met."""
        errors: list[Exception] = []
        writer = self.handle.status_writer
        for pod in pods:
            if not pod.nominated_node_name:
                continue
            if writer is None:
                errors.append(RuntimeError("no pod status writer is attached to the handle"))
                continue
            try:
                await writer.patch_status(
                    pod, PodStatusPatch(set_nominated_node_name=True, nominated_node_name="")
                )
            except Exception as error:
                errors.append(error)
        return errors

    # Synchronous -----------------------------------------------------------------------------

    async def prepare_candidate(self, candidate: Candidate, preemptor: Pod) -> Status:
        """Preempt every victim, then clear lower-priority nominations (errors ignored)."""
        for victim in candidate.victims:
            try:
                await self.preempt_pod(candidate.node, preemptor, victim)
            except Exception as error:
                return Status.from_error(error)
        self.handle.metrics.observe(METRIC_PREEMPTION_VICTIMS, len(candidate.victims))
        nominated = self.lower_priority_nominated_pods(preemptor, candidate.node)
        await self.clear_nominated_node_name(nominated)
        return SUCCESS

    def prepare_candidate_sync(self, candidate: Candidate, preemptor: Pod) -> Status:
        try:
            return run_to_completion(self.prepare_candidate(candidate, preemptor))
        except SuspendedError as error:
            return Status.from_error(error)

    # Asynchronous ----------------------------------------------------------------------------

    def prepare_candidate_async(self, candidate: Candidate, preemptor: Pod) -> None:
        """Mark the preemptor as preempting and start the preemption in the background."""
        self.handle.metrics.observe(METRIC_PREEMPTION_VICTIMS, len(candidate.victims))
        self.preempting.add(preemptor.uid)
        try:
            self.handle.spawn(
                self._preempt_in_background(candidate.node, preemptor, list(candidate.victims))
            )
        except Exception:
            self.preempting.discard(preemptor.uid)
            raise

    async def _preempt_in_background(self, node: str, preemptor: Pod, victims: list[Pod]) -> None:
        handle = self.handle
        uid = preemptor.uid
        started = handle.now()
        result = RESULT_SUCCESS
        try:
            # Let the failure handler's status patch (started after PostFilter returned) go out
            # first: kube-scheduler sends it from the scheduling goroutine while this work's
            # goroutine is still starting, so the nomination lands before the victims' writes.
            await asyncio.sleep(0)
            nominated = self.lower_priority_nominated_pods(preemptor, node)
            if await self.clear_nominated_node_name(nominated):
                result = RESULT_ERROR
            if not victims:
                return
            preempt_last = True
            if len(victims) > 1:
                outcomes = await asyncio.gather(
                    *(self.preempt_pod(node, preemptor, victim) for victim in victims[:-1]),
                    return_exceptions=True,
                )
                if any(isinstance(outcome, BaseException) for outcome in outcomes):
                    result = RESULT_ERROR
                    preempt_last = False
            # Ungate before the last victim's API call: its deletion is the event that may
            # requeue the preemptor, and it must not find the preemptor still gated.
            self.preempting.discard(uid)
            if preempt_last:
                try:
                    await self.preempt_pod(node, preemptor, victims[-1])
                except Exception:
                    result = RESULT_ERROR
        except asyncio.CancelledError:
            result = RESULT_ERROR
            raise
        except Exception:
            result = RESULT_ERROR
        finally:
            self.preempting.discard(uid)
            if result == RESULT_ERROR:
                handle.activate([preemptor])
            labels = {"result": result}
            handle.metrics.inc(METRIC_GOROUTINES_EXECUTION, labels)
            handle.metrics.observe(METRIC_GOROUTINES_DURATION, handle.now() - started, labels)
