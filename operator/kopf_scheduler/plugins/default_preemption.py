"""DefaultPreemption: when no node fits, make room by preempting lower-priority pods.

PostFilter runs :class:`~kopf_scheduler.preemption.evaluator.Evaluator` (the algorithm lives in
``kopf_scheduler.preemption``) and prefixes its message with ``"preemption: "``, as upstream
does, so a FailedScheduling event reads e.g. ``0/3 nodes are available: 3 Insufficient cpu.
preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``

With asynchronous preemption (the default, as upstream since v1.33) the plugin is also a
PreEnqueue plugin: a preemptor waits, gated, while its background preemption runs, up to the API
call for its last victim, instead of retrying too early. It registers assigned-pod deletion with
a hint that always says QueueSkip: the plugins that rejected the pod decide when it retries.

Arguments (``DefaultPreemptionArgs``): ``minCandidateNodesPercentage`` (default 10, 0–100) and
``minCandidateNodesAbsolute`` (default 100, ≥ 0; not both 0) bound how many candidate nodes the
dry run looks for. ``pdbPolicy`` is our addition: ``BestEffort`` (default, upstream behaviour:
prefer candidates that violate no PodDisruptionBudget, but use one that does if nothing else
works) or ``Strict`` (never preempt in violation of a PodDisruptionBudget; the FailedScheduling
message then says so).

A pod whose PreFilter marked it as a member of a gang that preempts as a whole
(:data:`~kopf_scheduler.preemption.gang_planner.GANG_PREEMPTION`) is left to its gang's PostFilter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.evaluator import (
    PDB_POLICIES,
    PDB_POLICY_BEST_EFFORT,
    Evaluator,
    PreemptionSettings,
)
from kopf_scheduler.preemption.gang_planner import GANG_PREEMPTION

NAME = "DefaultPreemption"
MESSAGE_PREFIX = "preemption: "
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
METRIC_PREEMPTION_ATTEMPTS = "scheduler_preemption_attempts_total"

_FIELD = "args"
_PERCENTAGE = "minCandidateNodesPercentage"
_ABSOLUTE = "minCandidateNodesAbsolute"
_PDB_POLICY = "pdbPolicy"


def _int_field(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise api.InvalidArgsError(f"{_FIELD}.{key}", f"must be an integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Args:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    pdb_policy: str = PDB_POLICY_BEST_EFFORT

    @classmethod
    def parse(cls, raw: Any) -> Args:
        """Validate as upstream's ValidateDefaultPreemptionArgs, plus ``pdbPolicy``."""
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {_PERCENTAGE, _ABSOLUTE, _PDB_POLICY})
        percentage = _int_field(args, _PERCENTAGE, cls.min_candidate_nodes_percentage)
        absolute = _int_field(args, _ABSOLUTE, cls.min_candidate_nodes_absolute)
        if not 0 <= percentage <= 100:
            raise api.InvalidArgsError(
                f"{_FIELD}.{_PERCENTAGE}", f"{percentage}: not in valid range [0, 100]"
            )
        if absolute < 0:
            raise api.InvalidArgsError(
                f"{_FIELD}.{_ABSOLUTE}", f"{absolute}: not in valid range [0, inf)"
            )
        if percentage == 0 and absolute == 0:
            raise api.InvalidArgsError(
                f"{_FIELD}.{_PERCENTAGE}",
                f"cannot be zero at the same time as {_ABSOLUTE}",
            )
        policy = args.get(_PDB_POLICY, PDB_POLICY_BEST_EFFORT)
        if policy not in PDB_POLICIES:
            raise api.InvalidArgsError(
                f"{_FIELD}.{_PDB_POLICY}",
                f"must be one of {', '.join(repr(p) for p in PDB_POLICIES)}, got {policy!r}",
            )
        return cls(percentage, absolute, policy)


def _skip_after_assigned_pod_deletion(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    return api.QueueingHint.QUEUE_SKIP


class DefaultPreemption:
    name: ClassVar[str] = NAME

    def __init__(
        self, handle: api.Handle, args: Args | None = None, *, async_preemption: bool = True
    ) -> None:
        self.handle = handle
        self.args = args if args is not None else Args()
        self.async_preemption = async_preemption
        self.evaluator = Evaluator(
            handle,
            PreemptionSettings(
                min_candidate_nodes_percentage=self.args.min_candidate_nodes_percentage,
                min_candidate_nodes_absolute=self.args.min_candidate_nodes_absolute,
                pdb_policy=self.args.pdb_policy,
                async_preemption=async_preemption,
            ),
            plugin_name=NAME,
        )

    def post_filter(
        self, state: api.CycleState, pod: Pod, node_to_status: api.NodeToStatus
    ) -> tuple[api.PostFilterResult | None, api.Status]:
        if state.get(GANG_PREEMPTION):
            # A member of a group short of minMember: its group's PostFilter preempts for all.
            return None, api.Status(api.Code.UNSCHEDULABLE)
        try:
            result, status = self.evaluator.preempt(state, pod, node_to_status)
        finally:
            self.handle.metrics.inc(METRIC_PREEMPTION_ATTEMPTS)
        message = status.message()
        if message:
            status = api.Status(status.code, MESSAGE_PREFIX + message, error=status.error)
        return result, status

    def pre_enqueue(self, pod: Pod) -> api.Status:
        if not self.async_preemption:
            return api.SUCCESS
        if self.evaluator.is_pod_running_preemption(pod.uid):
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_PREEMPTION)
        return api.SUCCESS

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        if not self.async_preemption:
            return []
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.ASSIGNED_POD, api.ActionType.DELETE),
                _skip_after_assigned_pod_deletion,
            )
        ]


def new(
    args: Mapping[str, Any] | None, handle: api.Handle, *, async_preemption: bool = True
) -> DefaultPreemption:
    return DefaultPreemption(handle, Args.parse(args), async_preemption=async_preemption)
