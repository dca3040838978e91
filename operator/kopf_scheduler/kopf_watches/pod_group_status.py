"""The PodGroup watch and the status keeper, as the operator runs them.

kopf watches ``podgroups.v1alpha1.scheduling.x-k8s.io`` with an ``@kopf.on.event`` handler only:
change handlers and timers would make kopf put finalizers and its progress annotations on the
users' PodGroups, and a scheduler that is uninstalled must not leave objects that cannot be
deleted. The handler hands each event to the keeper (``gangs/status_keeper.py``), which writes
the status itself, through the status subresource, coalesced, and only while leading. When the
CRD is not installed, kopf finds no such resource and watches nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf
import structlog

from kopf_scheduler.gangs.census import DELETED
from kopf_scheduler.gangs.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.pod_group_status import ApiPodGroupStatusWriter
from kopf_scheduler.ports import Clock, EventRecorder

logger = structlog.get_logger("kopf_scheduler.kopf_watches")

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"


def pod_group_status_keeper(
    api: Api,
    events: EventRecorder,
    clock: Clock,
    *,
    is_leader: Callable[[], bool],
    reporting_controller: str,
) -> PodGroupStatusKeeper:
    """A keeper writing through ``api``; run it with ``keeper.run(stop)`` beside the loop."""
    return PodGroupStatusKeeper(
        ApiPodGroupStatusWriter(api),
        events,
        clock,
        is_leader=is_leader,
        reporting_controller=reporting_controller,
    )


def register_pod_group_status(
    registry: kopf.OperatorRegistry, keeper: PodGroupStatusKeeper
) -> None:
    """Watch PodGroups and hand every event to ``keeper``."""

    async def on_pod_group(event: Any, **_: Any) -> None:
        raw = event.get("object")
        if not isinstance(raw, dict):
            return
        # kopf reports the objects of its initial listing with no type: they are current state.
        event_type = DELETED if event.get("type") == DELETED else "MODIFIED"
        try:
            keeper.observe_group(event_type, raw)
        except Exception:
            # A bug in one event must not stop the watch of every other group.
            logger.exception("event_handling_failed", kind="PodGroup")

    kopf.on.event(
        group=GROUP, version=VERSION, plural=PLURAL, registry=registry, id="pod-group-status"
    )(on_pod_group)
