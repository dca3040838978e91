"""Coscheduling's ``pluginConfig`` args, with scheduler-plugins' names and defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler import plugin_api as api

DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_GANG_PREEMPTION = True


@dataclass(frozen=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = DEFAULT_PERMIT_WAITING_TIME_SECONDS
    """How long a member waits at Permit for the rest of its group, unless the PodGroup sets
    ``scheduleTimeoutSeconds``."""
    pod_group_backoff_seconds: int = DEFAULT_POD_GROUP_BACKOFF_SECONDS
    """How long a group's pods are turned away at PreFilter after the group failed to be placed;
    0 turns the back-off off."""
    gang_preemption: bool = DEFAULT_GANG_PREEMPTION
    """Our addition: when a member finds no node, make room for the whole group at once (or
    for none of it) instead of leaving each member to per-pod preemption."""

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> CoschedulingArgs:
        """The args of a ``pluginConfig`` entry; InvalidArgsError names a bad field."""
        args = api.ensure_mapping(raw)
        api.reject_unknown(
            args, {"permitWaitingTimeSeconds", "podGroupBackoffSeconds", "gangPreemption"}
        )
        gang_preemption = args.get("gangPreemption", DEFAULT_GANG_PREEMPTION)
        if not isinstance(gang_preemption, bool):
            raise api.InvalidArgsError(
                "args.gangPreemption", f"must be true or false, got {gang_preemption!r}"
            )
        return cls(
            permit_waiting_time_seconds=api.int_arg(
                args,
                "permitWaitingTimeSeconds",
                DEFAULT_PERMIT_WAITING_TIME_SECONDS,
                "args",
                minimum=0,
            ),
            pod_group_backoff_seconds=api.int_arg(
                args,
                "podGroupBackoffSeconds",
                DEFAULT_POD_GROUP_BACKOFF_SECONDS,
                "args",
                minimum=0,
            ),
            gang_preemption=gang_preemption,
        )
