"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly.

For each configured resource (cpu and memory by default) the plugin takes the fraction of the
node's allocatable amount that would be requested with the pod placed there, using actual
requests (no 100m / 200Mi defaults), capped at 1. The score is ``(1 - std) * 100`` truncated,
where std is half the difference of the two fractions for two resources, the population
standard deviation for more, and 0 for one. Pods that request none of the configured resources
are skipped at PreScore, so the plugin does not pile such pods onto one node.

The batch Score does the same float64 operations on the cpu and memory columns of many nodes
at once; other resources have none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.resource_allocation import (
    DEFAULT_RESOURCES,
    PodRequestsState,
    ResourceAllocationScorer,
    ResourceSpec,
    batch_resources_supported,
    parse_resource_specs,
    resource_at_nodes,
)

NAME = "NodeResourcesBalancedAllocation"


def balanced_resource_scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``int((1 - std) * 100)`` over the resources with non-zero allocatable, in float64 with
    the same operation order as upstream so truncation lands on the same integer."""
    fractions: list[float] = []
    total = 0.0
    for index, capacity in enumerate(allocatable):
        if capacity == 0:
            continue
        fraction = float(requested[index]) / float(capacity)
        fraction = min(fraction, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    return int((1 - std) * float(api.MAX_NODE_SCORE))


@dataclass(frozen=True)
class Args:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES

    @classmethod
    def parse(cls, raw: Any) -> Args:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"resources"})
        field = "args.resources"
        resources = parse_resource_specs(args.get("resources"), field)
        seen: set[str] = set()
        for index, spec in enumerate(resources):
            if spec.name in seen:
                raise api.InvalidArgsError(
                    f"{field}[{index}].name", f"duplicate value {spec.name!r}"
                )
            seen.add(spec.name)
            if spec.weight != 1:
                raise api.InvalidArgsError(
                    f"{field}[{index}].weight", f"must be 1, got {spec.weight}"
                )
        return cls(resources)


PRE_SCORE_KEY: api.StateKey[PodRequestsState] = api.StateKey("PreScore" + NAME)


class NodeResourcesBalancedAllocation:
    name: ClassVar[str] = NAME

    def __init__(self, args: Args) -> None:
        self.args = args
        self.scorer = ResourceAllocationScorer(
            NAME, balanced_resource_scorer, args.resources, use_requested=True
        )

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        pod_requests = self.scorer.pod_request_list(pod)
        if self.scorer.is_best_effort(pod_requests):
            return api.SKIP
        state.write(PRE_SCORE_KEY, PodRequestsState(pod_requests))
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is not None:
            pod_requests = pre_score.pod_requests
        else:
            pod_requests = self.scorer.pod_request_list(pod)
            if self.scorer.is_best_effort(pod_requests):
                return 0, api.SUCCESS
        return self.scorer.score(node_info, pod_requests)

    def score_extensions(self) -> api.ScoreExtensions | None:
        return None

    def batch_score(self) -> NodeResourcesBalancedAllocation | None:
        return self if batch_resources_supported(self.args.resources) else None

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score = state.get(PRE_SCORE_KEY)
        scorer = self.scorer
        if pre_score is not None:
            pod_requests: Sequence[int] = pre_score.pod_requests
        else:
            pod_requests = scorer.pod_request_list(pod)
            if scorer.is_best_effort(pod_requests):
                return np.zeros(len(positions), dtype=np.int64)
        fractions = []
        for spec, request in zip(scorer.resources, pod_requests, strict=True):
            at = resource_at_nodes(nodes.mirror, spec.name, request, positions, use_requested=True)
            # Integer arrays divide in float64, like float(requested) / float(allocatable).
            fraction = np.true_divide(at.requested, at.safe_allocatable())
            fractions.append((at.everywhere, at.present, np.minimum(fraction, 1.0)))
        count = len(positions)
        if len(fractions) != 2:
            if len(fractions) > 2:
                raise api.Fallback
            return np.full(count, api.MAX_NODE_SCORE, dtype=np.int64)
        (all_a, present_a, first), (all_b, present_b, second) = fractions
        std = np.abs((first - second) / 2)
        if not (all_a and all_b):
            std = np.where(present_a & present_b, std, 0.0)
        result: api.IntArray = np.trunc((1 - std) * float(api.MAX_NODE_SCORE)).astype(np.int64)
        return result


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeResourcesBalancedAllocation:
    return NodeResourcesBalancedAllocation(Args.parse(args))


__all__ = [
    "NAME",
    "PRE_SCORE_KEY",
    "Args",
    "NodeResourcesBalancedAllocation",
    "balanced_resource_scorer",
    "new",
]
