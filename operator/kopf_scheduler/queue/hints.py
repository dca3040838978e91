"""Queueing hints: is a cluster event worth retrying a pod that was rejected?

Every plugin registers the events that can undo its rejections, each with an optional hint
function looking at the changed object (no function means "always Queue"). For a pod and an
event the queue asks only the plugins that rejected the pod in its last attempt:

- no rejecting plugin (the attempt failed with an error) → retry after backoff;
- a wildcard event (e.g. the five-minute flush, ForceActivate) → retry after backoff, unless it
  names another pod;
- Queue from a plugin that answered Pending → retry immediately; from any other rejector →
  retry after backoff; QueueSkip from all of them, or no matching registration → stay put.

A hint function that raises counts as Queue, so a broken hint cannot strand pods. As in
kube-scheduler, a plugin that registers Node/Add but not Node/UpdateNodeTaint also gets the
latter with an always-Queue hint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    HintFn,
    QueueingHint,
)
from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod

NODE_TAINT_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)

RejectorGroup = tuple[str, frozenset[str]]
"""A pod's profile and the plugins that turned down its last attempt (unschedulable or pending).
An event that none of a group's rejectors registered moves none of its pods
(:meth:`HintRegistry.may_requeue`)."""


def rejector_group(info: QueuedPodInfo) -> RejectorGroup:
    return info.pod.scheduler_name, frozenset(info.unschedulable_plugins | info.pending_plugins)


class QueueingStrategy(IntEnum):
    """Where an event sends a waiting pod; a larger value wins when several events are replayed."""

    SKIP = 0
    """Stay in unschedulablePods."""
    AFTER_BACKOFF = 1
    """To backoffQ if still backing off, else activeQ."""
    IMMEDIATELY = 2
    """Straight to activeQ."""


def always_queue(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


@dataclass(frozen=True)
class HintRegistration:
    plugin: str
    event: ClusterEvent
    hint: HintFn


def build_registrations(
    events_by_plugin: Mapping[str, Sequence[ClusterEventWithHint]],
) -> list[HintRegistration]:
    """One profile's registrations, in plugin order, with the Node/Add → taint-update addition."""
    result: list[HintRegistration] = []
    for plugin, events in events_by_plugin.items():
        if not events:
            continue
        node_added = False
        taint_updated = False
        for registered in events:
            event = registered.event
            if event.resource is EventResource.NODE:
                node_added = node_added or bool(event.action & ActionType.ADD)
                taint_updated = taint_updated or bool(event.action & ActionType.UPDATE_NODE_TAINT)
            result.append(HintRegistration(plugin, event, registered.hint or always_queue))
        if node_added and not taint_updated:
            result.append(HintRegistration(plugin, NODE_TAINT_UPDATE, always_queue))
    return result


class HintRegistry:
    """All profiles' registrations, and the requeueing decision made from them."""

    __slots__ = (
        "_gating_interest",
        "_interest",
        "_matching",
        "_plugin_events",
        "_profiles",
        "_rejector_interest",
    )

    def __init__(
        self, profiles: Mapping[str, Mapping[str, Sequence[ClusterEventWithHint]]]
    ) -> None:
        self._profiles: dict[str, list[HintRegistration]] = {
            name: build_registrations(events) for name, events in profiles.items()
        }
        self._plugin_events: dict[str, list[ClusterEvent]] = {}
        for registrations in self._profiles.values():
            for registration in registrations:
                self._plugin_events.setdefault(registration.plugin, []).append(registration.event)
        self._matching: dict[tuple[str, ClusterEvent], tuple[HintRegistration, ...]] = {}
        self._interest: dict[ClusterEvent, bool] = {}
        self._gating_interest: dict[tuple[str, ClusterEvent], bool] = {}
        self._rejector_interest: dict[tuple[RejectorGroup, ClusterEvent], bool] = {}

    def registrations(self, profile: str) -> list[HintRegistration]:
        return list(self._profiles.get(profile, ()))

    def plugin_events(self, plugin: str) -> list[ClusterEvent]:
        """Every event ``plugin`` registered, in any profile."""
        return list(self._plugin_events.get(plugin, ()))

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Whether any plugin of any profile registered ``event`` (wildcards always are)."""
        if event.is_wildcard():
            return True
        cached = self._interest.get(event)
        if cached is None:
            cached = any(
                registration.event.matches(event)
                for registrations in self._profiles.values()
                for registration in registrations
            )
            self._interest[event] = cached
        return cached

    def gating_plugin_interested(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether ``event`` is one the PreEnqueue plugin ``plugin`` registered."""
        key = (plugin, event)
        cached = self._gating_interest.get(key)
        if cached is None:
            registered = self._plugin_events.get(plugin, ())
            cached = any(registration.matches(event) for registration in registered)
            self._gating_interest[key] = cached
        return cached

    def may_requeue(self, group: RejectorGroup, event: ClusterEvent) -> bool:
        """Whether ``event`` can move a pod of ``group`` at all: ``False`` exactly where
        :meth:`worth_requeuing` says SKIP without a hint to ask, because none of the pod's
        rejectors registered the event. Decided once per group and event."""
        key = (group, event)
        cached = self._rejector_interest.get(key)
        if cached is None:
            profile, rejectors = group
            matching = self._matching_registrations(profile, event)
            cached = (
                not rejectors
                or event.is_wildcard()
                or matching is None
                or any(registration.plugin in rejectors for registration in matching)
            )
            self._rejector_interest[key] = cached
        return cached

    def _matching_registrations(
        self, profile: str, event: ClusterEvent
    ) -> tuple[HintRegistration, ...] | None:
        registrations = self._profiles.get(profile)
        if registrations is None:
            return None
        cache_key = (profile, event)
        matching = self._matching.get(cache_key)
        if matching is None:
            matching = tuple(r for r in registrations if r.event.matches(event))
            self._matching[cache_key] = matching
        return matching

    def worth_requeuing(
        self, info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingStrategy:
        unschedulable = info.unschedulable_plugins
        pending = info.pending_plugins
        if not unschedulable and not pending:
            return QueueingStrategy.AFTER_BACKOFF
        if event.is_wildcard():
            if new is not None and (not isinstance(new, Pod) or new.uid != info.pod.uid):
                return QueueingStrategy.SKIP
            return QueueingStrategy.AFTER_BACKOFF
        matching = self._matching_registrations(info.pod.scheduler_name, event)
        if matching is None:
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        pod = info.pod
        for registration in matching:
            plugin = registration.plugin
            if plugin not in unschedulable and plugin not in pending:
                continue
            try:
                hint = registration.hint(pod, old, new)
            except Exception:
                hint = QueueingHint.QUEUE
            if hint is QueueingHint.QUEUE_SKIP:
                continue
            if plugin in pending:
                return QueueingStrategy.IMMEDIATELY
            if not pending:
                return QueueingStrategy.AFTER_BACKOFF
            strategy = QueueingStrategy.AFTER_BACKOFF
        return strategy
