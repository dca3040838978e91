"""Keeping PodGroup status current: coalesced writes, by the leader only, an Event per phase.

Pod events come in bursts: a gang of eight is bound, then started, within seconds, and 500 gangs
bring thousands of pod events a second. Writing on each would cost as many requests. Instead an
event only marks its group changed, and every ``interval`` seconds the marked groups are settled
(:func:`~kopf_scheduler.pod_group_controller.lifecycle.settle`) and only those whose status differs
are patched, at most ``concurrency`` requests at once. A group thus costs at most one write per
interval whatever its pods do, and none while its status stays the same.

Only the replica holding the Lease writes; the others keep counting, so that one taking over
has the counts at hand, and checks every known group once when it does. A write that fails is
tried again at the next interval; a group that is gone is forgotten.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.pod_group_controller.census import DELETED, GroupCounts, PodGroupCensus
from kopf_scheduler.pod_group_controller.lifecycle import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    SCHEDULING,
    TIMEOUT_NOTE,
    TIMEOUT_REASON,
    GroupStatus,
    settle,
    status_patch,
)
from kopf_scheduler.ports import ApiError, Clock, Event, EventRecorder, NotFoundError, ObjectRef

logger = structlog.get_logger("kopf_scheduler.gangs")
"""A stable name, part of every line it logs (log queries select on it), not the module path."""

API_VERSION = "scheduling.x-k8s.io/v1alpha1"
KIND = "PodGroup"
DEFAULT_INTERVAL = 1.0
"""Seconds between passes: the longest a status lags behind its pods, and the shortest time
between two writes of one group."""
DEFAULT_CONCURRENCY = 16
EVENT_ACTION = "UpdatePhase"
NORMAL = "Normal"
WARNING = "Warning"


class PodGroupStatusWriter(Protocol):
    async def patch_status(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        """Merge-patch the group's ``status`` subresource and return the group as stored;
        :class:`~kopf_scheduler.ports.NotFoundError` when it is gone."""


class PodGroupStatusKeeper:
    """PodGroups and their member counts, from the watches; the status writes, from :meth:`run`.

    Feed it every pod event (``census.observe``) and every PodGroup event (:meth:`observe_group`).
    """

    def __init__(
        self,
        writer: PodGroupStatusWriter,
        events: EventRecorder,
        clock: Clock,
        *,
        is_leader: Callable[[], bool],
        reporting_controller: str,
        interval: float = DEFAULT_INTERVAL,
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        self._writer = writer
        self._events = events
        self._clock = clock
        self._is_leader = is_leader
        self._reporting_controller = reporting_controller
        self._interval = interval
        self._requests = asyncio.Semaphore(concurrency)
        self.census = PodGroupCensus(self._changed_group)
        self._groups: dict[str, PodGroup] = {}
        self._changed: set[str] = set()
        self._leading = False
        self._timed_out: set[str] = set()
        """UIDs of the groups whose Timeout warning was recorded: one warning per group."""

    def _changed_group(self, key: str) -> None:
        self._changed.add(key)

    def observe_group(self, event_type: str, raw: Mapping[str, Any]) -> None:
        """Take in one PodGroup watch event (ADDED, MODIFIED or DELETED)."""
        metadata = raw.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"
        if event_type == DELETED:
            gone = self._groups.pop(key, None)
            if gone is not None:
                self._timed_out.discard(gone.uid)
            self._changed.discard(key)
            return
        try:
            group = PodGroup(raw)
        except InvalidObjectError as error:
            logger.warning("pod_group_ignored", group=key, reason=str(error))
            self._groups.pop(key, None)
            return
        self._groups[key] = group
        self._changed.add(key)

    async def run(self, stop: asyncio.Event) -> None:
        """A pass every ``interval`` seconds until ``stop`` is set."""
        while not stop.is_set():
            await self._clock.sleep(self._interval)
            if stop.is_set():
                return
            try:
                await self.tick()
            except Exception:
                # A bug in one pass must not stop the status of every later one.
                logger.exception("pod_group_status_failed")

    async def tick(self) -> None:
        """One pass: the changed groups (every group, on taking over), if this replica leads."""
        leading = self._is_leader()
        if leading and not self._leading:
            self._changed.update(self._groups)
        self._leading = leading
        if not leading or not self._changed:
            return
        keys, self._changed = self._changed, set()
        await asyncio.gather(*(self._reconcile(key) for key in sorted(keys)))

    async def _reconcile(self, key: str) -> None:
        group = self._groups.get(key)
        if group is None:  # pods naming a group that does not exist (yet)
            return
        counts = self.census.counts(key)
        settled = settle(group, counts)
        if settled.gave_up:
            if group.uid not in self._timed_out:
                self._timed_out.add(group.uid)
                self._record(group, WARNING, TIMEOUT_REASON, TIMEOUT_NOTE)
            return
        old = GroupStatus.of(group)
        patch = status_patch(old, settled.status)
        if not patch:
            return
        async with self._requests:
            try:
                stored = await self._writer.patch_status(group.namespace, group.name, patch)
            except NotFoundError:
                if self._groups.get(key) is group:
                    del self._groups[key]
                return
            except ApiError as error:
                logger.warning("pod_group_status_not_written", group=key, reason=str(error))
                self._changed.add(key)
                return
        if key in self._groups:  # not deleted meanwhile
            try:
                self._groups[key] = PodGroup(stored)
            except InvalidObjectError as error:
                logger.warning("pod_group_ignored", group=key, reason=str(error))
        new = settled.status
        if new.phase != old.phase:
            event_type = WARNING if new.phase == FAILED else NORMAL
            self._record(group, event_type, new.phase, phase_note(new.phase, group, counts))

    def _record(self, group: PodGroup, event_type: str, reason: str, note: str) -> None:
        self._events.record(
            Event(
                regarding=ObjectRef(group.namespace, group.name, group.uid, API_VERSION, KIND),
                type=event_type,
                reason=reason,
                action=EVENT_ACTION,
                note=note,
                reporting_controller=self._reporting_controller,
            )
        )


def phase_note(phase: str, group: PodGroup, counts: GroupCounts) -> str:
    """What the event about entering ``phase`` (one :func:`settle` ends at) says."""
    need = group.min_member
    if phase == PENDING:
        return f"{counts.pods} of minMember {need} pods exist"
    if phase == SCHEDULING:
        return (
            f"{counts.pods} pods exist, {counts.scheduled} bound, "
            f"{counts.running + counts.succeeded} of minMember {need} running or succeeded"
        )
    if phase == RUNNING:
        return f"{counts.running + counts.succeeded} of minMember {need} pods running or succeeded"
    if phase == FINISHED:
        return f"{counts.succeeded} of minMember {need} pods succeeded"
    return f"{counts.failed} pods failed, {counts.running + counts.succeeded} running or succeeded"
