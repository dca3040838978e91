"""NodeResourcesFit: keep pods off nodes without room for their requests, and score the rest.

The filter compares the pod's effective request (containers, sidecars, the largest init step,
pod overhead) with what is left on the node: allocatable minus the requests of the pods already
there, plus one slot of the node's pod capacity. Every shortfall is reported, in a fixed order,
so the user sees all of them. Since v1.34 a request larger than the node's whole allocatable
amount is UnschedulableAndUnresolvable: evicting pods cannot help, so preemption skips the node.

Scoring uses one of three strategies over a weighted list of resources (see
:mod:`kopf_scheduler.plugins.resource_allocation`). :func:`fits_request` is exported for
preemption and for the queueing hints, which ask the same question about a hypothetical node.

The batch Filter compares the request with every node's free capacity column at once (scalar
resources too, through the mirror's per-resource columns) and numbers its rejections by which
resources fall short (and whether any request exceeds the node's whole allocatable amount), which
is all the per-node status depends on. The batch Score
reproduces LeastAllocated and MostAllocated over cpu and memory with the same integer
divisions; other strategies and resources have none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resource
from kopf_scheduler.plugins.resource_allocation import (
    PodRequestsState,
    ResourceAllocationScorer,
    ResourceSpec,
    Scorer,
    ShapePoint,
    batch_resources_supported,
    is_extended_resource_name,
    is_qualified_name,
    is_scalar_resource_name,
    least_allocated_scorer,
    most_allocated_scorer,
    parse_resource_specs,
    parse_shape,
    requested_to_capacity_ratio_scorer,
    resource_at_nodes,
    validate_weights,
)

NAME = "NodeResourcesFit"

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

REASON_TOO_MANY_PODS = "Too many pods"


def insufficient_reason(resource_name: str) -> str:
    """The filter reason for one short resource, e.g. ``Insufficient cpu``."""
    return f"Insufficient {resource_name}"


# --------------------------------------------------------------------------------------------
# The fit check.


@dataclass(frozen=True)
class InsufficientResource:
    """One resource the node cannot provide. ``unresolvable`` means the request alone exceeds
    the node's allocatable amount, so removing pods from the node would not help."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def _is_ignored(name: str, ignored: frozenset[str], ignored_groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    if name in ignored:
        return True
    return bool(ignored_groups) and name.split("/", 1)[0] in ignored_groups


def checked_scalars(
    pod_request: Resource,
    ignored_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
) -> tuple[tuple[str, int], ...]:
    """The scalar resources of ``pod_request`` the fit check compares, with the amounts, in the
    order it reports them (by name): those requested, tracked as scalar resources at all, and
    not ignored. They depend on the pod alone, so a cycle works them out once for every node."""
    return tuple(
        (name, wanted)
        for name, wanted in sorted(pod_request.scalar.items())
        if wanted != 0
        and is_scalar_resource_name(name)
        and not _is_ignored(name, ignored_resources, ignored_resource_groups)
    )


def fits_request(
    pod_request: Resource,
    node_info: api.NodeInfo,
    ignored_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
    scalars: tuple[tuple[str, int], ...] | None = None,
) -> list[InsufficientResource]:
    """Everything ``node_info`` lacks to host a pod requesting ``pod_request``.

    Order: pod count, cpu, memory, ephemeral-storage, then scalar resources by name. A resource
    the pod requests none of is never reported, even on an overcommitted node. Extended
    resources listed in ``ignored_resources``, or whose domain is in ``ignored_resource_groups``,
    are not checked. ``scalars`` is :func:`checked_scalars` of the same arguments, when the
    caller has it already. An empty list means the pod fits.
    """
    result: list[InsufficientResource] = []
    allocatable = node_info.allocatable
    requested = node_info.requested

    pod_count = len(node_info.pods)
    allowed = allocatable.allowed_pod_number
    if pod_count + 1 > allowed:
        result.append(InsufficientResource(PODS, REASON_TOO_MANY_PODS, 1, pod_count, allowed))

    for name, wanted, used, capacity in (
        (CPU, pod_request.milli_cpu, requested.milli_cpu, allocatable.milli_cpu),
        (MEMORY, pod_request.memory, requested.memory, allocatable.memory),
        (
            EPHEMERAL_STORAGE,
            pod_request.ephemeral_storage,
            requested.ephemeral_storage,
            allocatable.ephemeral_storage,
        ),
    ):
        if wanted > 0 and wanted > capacity - used:
            result.append(
                InsufficientResource(
                    name, insufficient_reason(name), wanted, used, capacity, wanted > capacity
                )
            )

    if scalars is None:
        scalars = checked_scalars(pod_request, ignored_resources, ignored_resource_groups)
    for name, wanted in scalars:
        used = requested.scalar.get(name, 0)
        capacity = allocatable.scalar.get(name, 0)
        if wanted > capacity - used:
            result.append(
                InsufficientResource(
                    name, insufficient_reason(name), wanted, used, capacity, wanted > capacity
                )
            )
    return result


def insufficient_resources(pod: Pod, node_info: api.NodeInfo) -> list[InsufficientResource]:
    """What ``node_info`` lacks for ``pod``'s effective request (:func:`fits_request` with
    nothing ignored); empty when the pod fits."""
    return fits_request(pod.requests, node_info)


def status_for(insufficient: Sequence[InsufficientResource]) -> api.Status:
    """The filter status for a non-empty shortfall list: every reason, UnschedulableAndUnresolvable
    as soon as one shortfall is unresolvable, Unschedulable otherwise."""
    code = api.Code.UNSCHEDULABLE
    for entry in insufficient:
        if entry.unresolvable:
            code = api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return api.Status(code, *(entry.reason for entry in insufficient))


# --------------------------------------------------------------------------------------------
# Arguments.


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))
    shape: tuple[ShapePoint, ...] = ()
    """RequestedToCapacityRatio only."""


@dataclass(frozen=True)
class Args:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    @classmethod
    def parse(cls, raw: Any) -> Args:
        base = "args"
        args = api.ensure_mapping(raw, base)
        api.reject_unknown(args, {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"})
        ignored = _string_list(args.get("ignoredResources"), f"{base}.ignoredResources")
        for index, name in enumerate(ignored):
            if not is_qualified_name(name):
                raise api.InvalidArgsError(
                    f"{base}.ignoredResources[{index}]", f"{name!r} is not a qualified name"
                )
        groups = _string_list(args.get("ignoredResourceGroups"), f"{base}.ignoredResourceGroups")
        for index, group in enumerate(groups):
            group_field = f"{base}.ignoredResourceGroups[{index}]"
            if "/" in group:
                raise api.InvalidArgsError(group_field, "resource group name can't contain '/'")
            if not is_qualified_name(group):
                raise api.InvalidArgsError(group_field, f"{group!r} is not a qualified name")
        strategy = _parse_strategy(args.get("scoringStrategy"), f"{base}.scoringStrategy")
        return cls(frozenset(ignored), frozenset(groups), strategy)


def _string_list(raw: Any, field_name: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise api.InvalidArgsError(field_name, f"must be a list of strings, got {raw!r}")
    return list(raw)


def _parse_strategy(raw: Any, base: str) -> ScoringStrategy:
    if raw is None:
        return ScoringStrategy()
    strategy = api.ensure_mapping(raw, base)
    api.reject_unknown(strategy, {"type", "resources", "requestedToCapacityRatio"}, base)
    kind = strategy.get("type", "")
    if kind not in STRATEGIES:
        raise api.InvalidArgsError(
            f"{base}.type", f"unsupported value {kind!r}; supported values: {', '.join(STRATEGIES)}"
        )
    resources = parse_resource_specs(strategy.get("resources"), f"{base}.resources")
    validate_weights(resources, f"{base}.resources")
    ratio = strategy.get("requestedToCapacityRatio")
    ratio_field = f"{base}.requestedToCapacityRatio"
    shape: tuple[ShapePoint, ...] = ()
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        if ratio is None:
            raise api.InvalidArgsError(ratio_field, "must be specified when type is " + kind)
        ratio_args = api.ensure_mapping(ratio, ratio_field)
        api.reject_unknown(ratio_args, {"shape"}, ratio_field)
        shape = parse_shape(ratio_args.get("shape"), f"{ratio_field}.shape")
    elif ratio is not None:
        raise api.InvalidArgsError(
            ratio_field, "must be nil when type is not RequestedToCapacityRatio"
        )
    return ScoringStrategy(kind, resources, shape)


def build_scorer(strategy: ScoringStrategy) -> Scorer:
    if strategy.type == MOST_ALLOCATED:
        return most_allocated_scorer(strategy.resources)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        return requested_to_capacity_ratio_scorer(strategy.resources, strategy.shape)
    return least_allocated_scorer(strategy.resources)


# --------------------------------------------------------------------------------------------
# Cycle state.


@dataclass(frozen=True, slots=True, eq=False)
class _PreFilterState(api.SharedState):
    """The pod's effective request and the scalar resources of it the filter compares, computed
    once per cycle; never modified, so clones share it."""

    request: Resource
    scalars: tuple[tuple[str, int], ...]


PRE_FILTER_KEY: api.StateKey[_PreFilterState] = api.StateKey("PreFilter" + NAME)
PRE_SCORE_KEY: api.StateKey[PodRequestsState] = api.StateKey("PreScore" + NAME)


# --------------------------------------------------------------------------------------------
# The batch Filter's rejection numbers: which resources fall short, and whether any shortfall
# exceeds the node's allocatable amount (UnschedulableAndUnresolvable).

_TOO_MANY_PODS = 1
_SHORT_CPU = 2
_SHORT_MEMORY = 4
_SHORT_EPHEMERAL = 8
_UNRESOLVABLE = 16
_SHORT_SCALAR = 32
"""The bit of the first scalar resource the pod requests; the next ones shift it left."""
_BATCH_SCALARS = 4
"""The most scalar resources a pod may request for the batch Filter to serve it (rejection
numbers stay below ``MAX_REJECTION_REASONS``)."""


def _batch_pre_filter(state: api.CycleState) -> _PreFilterState:
    """The PreFilter state, if the batch arithmetic can model the pod's request."""
    pre_filter = state.get(PRE_FILTER_KEY)
    if pre_filter is None:
        raise api.Fallback
    request = pre_filter.request
    wanted = (request.milli_cpu, request.memory, request.ephemeral_storage)
    if not all(0 <= value < api.SAFE_LIMIT for value in wanted):
        raise api.Fallback
    scalars = pre_filter.scalars
    if len(scalars) > _BATCH_SCALARS or not all(0 < value < api.SAFE_LIMIT for _, value in scalars):
        raise api.Fallback
    return pre_filter


ScalarCheck = tuple[int, api.IntArray, api.IntArray]
"""One scalar resource the pod requests: the amount, and each node's free and allocatable
amounts (the free ones less what the counted nominated pods request)."""


def _scalar_checks(
    nodes: api.NodeColumns, pre_filter: _PreFilterState, free: api.FreeColumns
) -> list[ScalarCheck]:
    """The scalar resources the pod requests, in its order, as the batch Filter compares them."""
    checks: list[ScalarCheck] = []
    for name, wanted in pre_filter.scalars:
        column = nodes.mirror.scalar(name)
        if column.unsafe:
            raise api.Fallback
        available = column.free
        nominated = free.nominated_scalars.get(name)
        if nominated:
            if not all(0 <= amount < api.SAFE_LIMIT for amount in nominated.values()):
                raise api.Fallback
            available = available.copy()
            available[list(nominated)] -= np.fromiter(
                nominated.values(), dtype=np.int64, count=len(nominated)
            )
        checks.append((wanted, available, column.allocatable))
    return checks


ResourceCheck = tuple[int, api.IntArray, api.IntArray, int]
"""One resource the pod requests: the amount, each node's free and allocatable amounts, and the
bit its shortfall sets in a rejection number."""


def _resource_checks(
    nodes: api.NodeColumns,
    request: Resource,
    scalar_checks: list[ScalarCheck],
    free: api.FreeColumns,
) -> list[ResourceCheck]:
    """Every resource the pod requests a positive amount of, in the order reasons are given."""
    mirror = nodes.mirror
    checks = [
        (request.milli_cpu, free.cpu, mirror.alloc_cpu, _SHORT_CPU),
        (request.memory, free.memory, mirror.alloc_mem, _SHORT_MEMORY),
        (request.ephemeral_storage, free.ephemeral, mirror.alloc_eph, _SHORT_EPHEMERAL),
    ]
    for order, (wanted, available, allocatable) in enumerate(scalar_checks):
        checks.append((wanted, available, allocatable, _SHORT_SCALAR << order))
    return [check for check in checks if check[0] > 0]


def _shortfall_numbers(
    checks: list[ResourceCheck], positions: api.IntArray, free: api.FreeColumns
) -> api.IntArray:
    """The rejection number of each node at ``positions``."""
    numbers: api.IntArray = np.where(free.pods[positions] < 1, _TOO_MANY_PODS, 0)
    unresolvable = np.zeros(len(positions), dtype=np.bool_)
    for value, column, allocatable, bit in checks:
        short = column[positions] < value
        numbers |= np.where(short, bit, 0)
        unresolvable |= short & (allocatable[positions] < value)
    result: api.IntArray = numbers | np.where(unresolvable, _UNRESOLVABLE, 0)
    return result


# --------------------------------------------------------------------------------------------
# Queueing hints.


def _scaled_down(target: Pod, original: Pod, modified: Pod) -> bool:
    """Whether an update to ``modified`` may free something ``target`` asks for."""
    if modified.uid == target.uid:
        return True
    if not modified.node_name:
        return False
    before = original.requests
    after = modified.requests
    wanted = target.requests
    for name, value in (
        (CPU, wanted.milli_cpu),
        (MEMORY, wanted.memory),
        (EPHEMERAL_STORAGE, wanted.ephemeral_storage),
    ):
        if value and before.get(name) > after.get(name):
            return True
    for name, value in wanted.scalar.items():
        if (
            value
            and is_scalar_resource_name(name)
            and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        ):
            return True
    return False


def is_schedulable_after_pod_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """A pod was deleted or scaled down: worth a retry if it was (to be) on a node and, for a
    scale-down, released something the pending pod requests."""
    if not isinstance(old, Pod) or (new is not None and not isinstance(new, Pod)):
        return api.QueueingHint.QUEUE
    if new is None:
        if not old.node_name and not old.nominated_node_name:
            return api.QueueingHint.QUEUE_SKIP
        return api.QueueingHint.QUEUE
    if _scaled_down(pod, old, new):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _any_requested_resource_increased(pod: Pod, old: Node, new: Node) -> bool:
    before = old.allocatable
    after = new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    wanted = pod.requests
    for value, old_amount, new_amount in (
        (wanted.milli_cpu, before.milli_cpu, after.milli_cpu),
        (wanted.memory, before.memory, after.memory),
        (wanted.ephemeral_storage, before.ephemeral_storage, after.ephemeral_storage),
    ):
        if value > 0 and new_amount > old_amount:
            return True
    for name, value in wanted.scalar.items():
        if not value or not is_scalar_resource_name(name):
            continue
        if after.scalar.get(name, 0) > before.scalar.get(name, 0):
            return True
    return False


def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """A node was added or its allocatable changed: worth a retry if an empty node of that shape
    would fit the pod and (for an update) something the pod requests grew."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return api.QueueingHint.QUEUE
    if insufficient_resources(pod, api.NodeInfo(new)):
        return api.QueueingHint.QUEUE_SKIP
    if old is None or _any_requested_resource_increased(pod, old, new):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


# --------------------------------------------------------------------------------------------
# The plugin.


class NodeResourcesFit:
    name: ClassVar[str] = NAME

    def __init__(self, args: Args) -> None:
        self.args = args
        strategy = args.scoring_strategy
        self.scorer = ResourceAllocationScorer(
            strategy.type, build_scorer(strategy), strategy.resources, use_requested=False
        )

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        args = self.args
        scalars = checked_scalars(
            pod.requests, args.ignored_resources, args.ignored_resource_groups
        )
        state.write(PRE_FILTER_KEY, _PreFilterState(pod.requests, scalars))
        return None, api.SUCCESS

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        try:
            pre_filter = state.read(PRE_FILTER_KEY)
        except api.StateNotFoundError as error:
            return api.Status.from_error(error)
        insufficient = fits_request(
            pre_filter.request,
            node_info,
            self.args.ignored_resources,
            self.args.ignored_resource_groups,
            pre_filter.scalars,
        )
        if not insufficient:
            return api.SUCCESS
        return status_for(insufficient)

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        state.write(PRE_SCORE_KEY, PodRequestsState(self.scorer.pod_request_list(pod)))
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        pre_score = state.get(PRE_SCORE_KEY)
        pod_requests = (
            pre_score.pod_requests if pre_score is not None else self.scorer.pod_request_list(pod)
        )
        return self.scorer.score(node_info, pod_requests)

    def score_extensions(self) -> api.ScoreExtensions | None:
        return None

    # Batch Filter and Score --------------------------------------------------------------------

    def batch_filter(self) -> NodeResourcesFit:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        pre_filter = _batch_pre_filter(state)
        scalar_checks = _scalar_checks(nodes, pre_filter, free)
        checks = _resource_checks(nodes, pre_filter.request, scalar_checks, free)
        fails: api.BoolArray = free.pods < 1
        for wanted, available, _, _ in checks:
            fails |= available < wanted
        if not fails.any():
            return None

        def reasons(positions: api.IntArray) -> api.IntArray:
            return _shortfall_numbers(checks, positions, free)

        return api.NodeRejections(fails, reasons)

    def shortfall_check(
        self, state: api.CycleState, free: api.FreeColumns
    ) -> Callable[[api.NodeInfo, int, int, int, int], int]:
        pre_filter = _batch_pre_filter(state)
        if pre_filter.scalars:
            # The check is given the pods' cpu, memory, ephemeral storage and count only.
            raise api.Fallback
        request = pre_filter.request
        wanted_cpu = request.milli_cpu
        wanted_memory = request.memory
        wanted_ephemeral = request.ephemeral_storage

        def shortfall(
            node_info: api.NodeInfo, cpu: int, memory: int, ephemeral: int, count: int
        ) -> int:
            allocatable = node_info.allocatable
            number = 0
            if count + 1 > allocatable.allowed_pod_number:
                number = _TOO_MANY_PODS
            if wanted_cpu > 0 and wanted_cpu > allocatable.milli_cpu - cpu:
                number |= _SHORT_CPU
                if wanted_cpu > allocatable.milli_cpu:
                    number |= _UNRESOLVABLE
            if wanted_memory > 0 and wanted_memory > allocatable.memory - memory:
                number |= _SHORT_MEMORY
                if wanted_memory > allocatable.memory:
                    number |= _UNRESOLVABLE
            if (
                wanted_ephemeral > 0
                and wanted_ephemeral > allocatable.ephemeral_storage - ephemeral
            ):
                number |= _SHORT_EPHEMERAL
                if wanted_ephemeral > allocatable.ephemeral_storage:
                    number |= _UNRESOLVABLE
            return number

        return shortfall

    def batch_score(self) -> NodeResourcesFit | None:
        strategy = self.args.scoring_strategy
        if strategy.type not in (LEAST_ALLOCATED, MOST_ALLOCATED):
            return None
        return self if batch_resources_supported(strategy.resources) else None

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score = state.get(PRE_SCORE_KEY)
        scorer = self.scorer
        pod_requests: Sequence[int] = (
            pre_score.pod_requests if pre_score is not None else scorer.pod_request_list(pod)
        )
        least = self.args.scoring_strategy.type == LEAST_ALLOCATED
        count = len(positions)
        total = np.zeros(count, dtype=np.int64)
        weight_sum: api.IntArray | int = 0
        for spec, request in zip(scorer.resources, pod_requests, strict=True):
            at = resource_at_nodes(nodes.mirror, spec.name, request, positions, use_requested=False)
            divisor = at.safe_allocatable()
            if least:
                # Overfull (requested > allocatable) gives a negative quotient: clamp to 0.
                value = np.maximum(
                    (at.allocatable - at.requested) * api.MAX_NODE_SCORE // divisor, 0
                )
            else:
                value = np.minimum(at.requested, at.allocatable) * api.MAX_NODE_SCORE // divisor
            if at.everywhere:
                total += value * spec.weight
                weight_sum = weight_sum + spec.weight
            else:
                total += np.where(at.present, value * spec.weight, 0)
                weight_sum = weight_sum + np.where(at.present, spec.weight, 0)
        if isinstance(weight_sum, int):
            if weight_sum == 0:
                return np.zeros(count, dtype=np.int64)
            return total // weight_sum
        return np.where(weight_sum == 0, 0, total // np.where(weight_sum == 0, 1, weight_sum))

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        # In-place pod resize is on by default from v1.33, so a scale-down may free room; with
        # queueing hints always on (v1.34) node taint/label updates need not be registered.
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.POD,
                    api.ActionType.DELETE | api.ActionType.UPDATE_POD_SCALE_DOWN,
                ),
                is_schedulable_after_pod_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE,
                    api.ActionType.ADD | api.ActionType.UPDATE_NODE_ALLOCATABLE,
                ),
                is_schedulable_after_node_change,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeResourcesFit:
    return NodeResourcesFit(Args.parse(args))


__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "NAME",
    "PRE_FILTER_KEY",
    "PRE_SCORE_KEY",
    "REASON_TOO_MANY_PODS",
    "REQUESTED_TO_CAPACITY_RATIO",
    "Args",
    "InsufficientResource",
    "NodeResourcesFit",
    "ScoringStrategy",
    "fits_request",
    "insufficient_reason",
    "insufficient_resources",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_change",
    "new",
    "status_for",
]
