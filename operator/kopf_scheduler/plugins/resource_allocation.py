"""The resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Both plugins score a node from two vectors over a configured list of resources: what would be
requested on the node with the pod placed there, and what the node can allocate. This module
builds those vectors exactly as kube-scheduler does and holds the three NodeResourcesFit
strategies (LeastAllocated, MostAllocated, RequestedToCapacityRatio), so that the integer
rounding, the resources that are skipped and the order of operations match upstream score for
score. It also holds the resource-name classification (extended, hugepages, prefixed native)
that decides which names count as scalar resources at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.resources import CPU, EPHEMERAL_STORAGE, MEMORY, Resource

MAX_CUSTOM_PRIORITY_SCORE = 10
"""Top of the score scale users write RequestedToCapacityRatio shapes in."""
MAX_UTILIZATION = 100
MAX_RESOURCE_WEIGHT = 100

# --------------------------------------------------------------------------------------------
# Resource-name classification.

_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."
_HUGEPAGES_PREFIX = "hugepages-"
_ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"

_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def is_qualified_name(value: str) -> bool:
    """Whether ``value`` is a Kubernetes qualified name: ``[dns-subdomain/]name``."""
    prefix, slash, name = value.rpartition("/")
    if slash:
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    else:
        name = value
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME_PART.match(name))


def is_prefixed_native_resource(name: str) -> bool:
    """A native resource in the ``kubernetes.io`` namespace (or a subdomain of it)."""
    return _DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    return "/" not in name or is_prefixed_native_resource(name)


def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource outside ``kubernetes.io``, such as ``nvidia.com/gpu``.

    Only these can be ignored through ``ignoredResources`` / ``ignoredResourceGroups``.
    """
    if is_native_resource(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return is_qualified_name(_REQUESTS_PREFIX + name)


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """Whether the scheduler tracks ``name`` as a scalar resource (anything beyond cpu,
    memory, ephemeral-storage and pods that it accounts for at all).

    Asked for every scalar a node or a pod holds, in cycles over every node, of a handful of
    names a cluster uses: so the answer is kept per name."""
    return (
        is_extended_resource_name(name)
        or name.startswith(_HUGEPAGES_PREFIX)
        or is_prefixed_native_resource(name)
        or name.startswith(_ATTACHABLE_VOLUMES_PREFIX)
    )


_COMPUTE_RESOURCES = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE))


def resource_amount(resources: Resource, name: str) -> int:
    """One resource of a request or allocatable vector, in the unit the scheduler compares
    (millicores for cpu). Names that are neither core nor scalar resources count as 0, and so
    does ``pods``."""
    if name in _COMPUTE_RESOURCES or is_scalar_resource_name(name):
        return resources.get(name)
    return 0


@dataclass(frozen=True, slots=True, eq=False)
class PodRequestsState(api.SharedState):
    """PreScore state of the resource scorers: the pod's request per configured resource.

    Immutable once written, so clones of the cycle state share it.
    """

    pod_requests: list[int]


# --------------------------------------------------------------------------------------------
# Arguments shared by the two plugins.


@dataclass(frozen=True)
class ResourceSpec:
    """A resource that takes part in scoring, with its weight."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


@dataclass(frozen=True)
class ShapePoint:
    """One point of a RequestedToCapacityRatio shape: utilization (0-100) → score (0-10)."""

    utilization: int
    score: int


def _int_field(raw: Mapping[str, Any], key: str, field: str, default: int) -> int:
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise api.InvalidArgsError(f"{field}.{key}", f"must be an integer, got {value!r}")
    return value


def _entries(
    raw: list[Any], field: str, known: tuple[str, ...]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The entries of the list at ``field`` with their paths, each checked to be an object with
    no fields but ``known``."""
    for index, entry in enumerate(raw):
        entry_field = f"{field}[{index}]"
        if not isinstance(entry, Mapping):
            raise api.InvalidArgsError(entry_field, f"must be an object, got {entry!r}")
        for key in entry:
            if key not in known:
                raise api.InvalidArgsError(f"{entry_field}.{key}", "unknown field")
        yield entry_field, entry


def parse_resource_specs(raw: Any, field: str) -> tuple[ResourceSpec, ...]:
    """Parse a ``resources`` list with the v1 config defaulting: an empty or missing list means
    cpu and memory with weight 1, and a missing or zero weight becomes 1. Weights are not range
    checked here; each plugin validates them its own way."""
    if raw is None:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        raise api.InvalidArgsError(field, f"must be a list, got {raw!r}")
    if not raw:
        return DEFAULT_RESOURCES
    specs = []
    for entry_field, entry in _entries(raw, field, ("name", "weight")):
        name = entry.get("name", "")
        if not isinstance(name, str):
            raise api.InvalidArgsError(f"{entry_field}.name", f"must be a string, got {name!r}")
        weight = _int_field(entry, "weight", entry_field, 0)
        specs.append(ResourceSpec(name, weight or 1))
    return tuple(specs)


def validate_weights(resources: Sequence[ResourceSpec], field: str) -> None:
    """NodeResourcesFit's rule: every weight in (0, 100]."""
    for index, spec in enumerate(resources):
        if spec.weight <= 0 or spec.weight > MAX_RESOURCE_WEIGHT:
            raise api.InvalidArgsError(
                f"{field}[{index}].weight",
                f"resource weight of {spec.name} not in valid range (0, 100], got {spec.weight}",
            )


def parse_shape(raw: Any, field: str) -> tuple[ShapePoint, ...]:
    """Parse and validate a RequestedToCapacityRatio shape as upstream does: at least one
    point, utilization strictly increasing and within [0, 100], score within [0, 10]."""
    if raw is None or (isinstance(raw, list) and not raw):
        raise api.InvalidArgsError(field, "at least one point must be specified")
    if not isinstance(raw, list):
        raise api.InvalidArgsError(field, f"must be a list, got {raw!r}")
    points = []
    for entry_field, entry in _entries(raw, field, ("utilization", "score")):
        points.append(
            ShapePoint(
                _int_field(entry, "utilization", entry_field, 0),
                _int_field(entry, "score", entry_field, 0),
            )
        )
    for index in range(1, len(points)):
        if points[index - 1].utilization >= points[index].utilization:
            raise api.InvalidArgsError(
                f"{field}[{index}].utilization", "values must be sorted in increasing order"
            )
    for index, point in enumerate(points):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            raise api.InvalidArgsError(
                f"{field}[{index}].utilization",
                f"not in valid range [0, {MAX_UTILIZATION}], got {point.utilization}",
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise api.InvalidArgsError(
                f"{field}[{index}].score",
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}], got {point.score}",
            )
    return tuple(points)


# --------------------------------------------------------------------------------------------
# Strategy arithmetic. All integer division below is on non-negative operands except inside the
# broken linear function, which truncates toward zero like Go.


def _trunc_div(numerator: int, denominator: int) -> int:
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator >= 0) else -quotient


def _round_half_away(numerator: int, denominator: int) -> int:
    """``math.Round(n / d)`` for non-negative integers, computed exactly."""
    return (2 * numerator + denominator) // (2 * denominator)


def least_requested_score(requested: int, capacity: int) -> int:
    """Free share of ``capacity`` on 0-100; 0 when nothing is allocatable or it is overfull."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * api.MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    """Used share of ``capacity`` on 0-100; an overfull resource counts as full (pods without
    requests get the 100m / 200Mi defaults, which can exceed a small node)."""
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return requested * api.MAX_NODE_SCORE // capacity


def build_broken_linear_function(shape: Sequence[ShapePoint]) -> Callable[[int], int]:
    """Piecewise-linear interpolation through ``shape`` with integer (truncating) arithmetic,
    flat before the first point and after the last."""
    points = tuple(shape)

    def function(p: int) -> int:
        for index, point in enumerate(points):
            if p <= point.utilization:
                if index == 0:
                    return points[0].score
                before = points[index - 1]
                return before.score + _trunc_div(
                    (point.score - before.score) * (p - before.utilization),
                    point.utilization - before.utilization,
                )
        return points[-1].score

    return function


Scorer = Callable[[Sequence[int], Sequence[int]], int]
"""``scorer(requested, allocatable)`` over the configured resources; allocatable 0 = skipped."""


def _weighted_scorer(
    resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]
) -> Scorer:
    weights = tuple(spec.weight for spec in resources)

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = 0
        weight_sum = 0
        for index, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            node_score += per_resource(requested[index], capacity) * weights[index]
            weight_sum += weights[index]
        if weight_sum == 0:
            return 0
        return node_score // weight_sum

    return scorer


def least_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """LeastAllocated: weighted integer mean of :func:`least_requested_score`."""
    return _weighted_scorer(resources, least_requested_score)


def most_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """MostAllocated: weighted integer mean of :func:`most_requested_score`."""
    return _weighted_scorer(resources, most_requested_score)


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[ShapePoint]
) -> Scorer:
    """RequestedToCapacityRatio: the shape (scores rescaled from 0-10 to 0-100) applied to each
    resource's integer utilization; resources scoring 0 are left out of the weighted mean,
    which is rounded half away from zero."""
    scale = api.MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw_function = build_broken_linear_function(
        [ShapePoint(p.utilization, p.score * scale) for p in shape]
    )
    weights = tuple(spec.weight for spec in resources)

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw_function(MAX_UTILIZATION)
        return raw_function(requested * MAX_UTILIZATION // capacity)

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = 0
        weight_sum = 0
        for index, capacity in enumerate(allocatable):
            if capacity == 0:
                continue
            score = resource_score(requested[index], capacity)
            if score > 0:
                node_score += score * weights[index]
                weight_sum += weights[index]
        if weight_sum == 0:
            return 0
        return _round_half_away(node_score, weight_sum)

    return scorer


# --------------------------------------------------------------------------------------------
# The scorer both plugins run.


class ResourceAllocationScorer:
    """Builds the requested/allocatable vectors for one node and hands them to a strategy.

    With ``use_requested`` false (NodeResourcesFit), cpu and memory use the node's non-zero
    requested amounts and the pod's non-zero request (missing container requests count as
    100m / 200Mi); with it true (BalancedAllocation) both use actual requests. Other resources
    always use actual requests. A scalar resource the pod does not request, or that the node
    does not offer, is left out (its allocatable entry stays 0).
    """

    __slots__ = ("name", "resources", "scorer", "use_requested")

    def __init__(
        self,
        name: str,
        scorer: Scorer,
        resources: Sequence[ResourceSpec],
        *,
        use_requested: bool,
    ) -> None:
        self.name = name
        self.scorer = scorer
        self.resources = tuple(resources)
        self.use_requested = use_requested

    def pod_request_list(self, pod: Pod) -> list[int]:
        """The pod's request for each configured resource, in configuration order."""
        requests = pod.requests if self.use_requested else pod.non_zero_requests
        return [resource_amount(requests, spec.name) for spec in self.resources]

    @staticmethod
    def is_best_effort(pod_requests: Sequence[int]) -> bool:
        return not any(pod_requests)

    def allocatable_and_requested(
        self, node_info: api.NodeInfo, name: str, pod_request: int
    ) -> tuple[int, int]:
        """``(allocatable, requested including the pod)`` for one resource; ``(0, 0)`` when
        the resource is left out of scoring."""
        if pod_request == 0 and is_scalar_resource_name(name):
            return 0, 0
        allocatable = node_info.allocatable
        requested = node_info.requested if self.use_requested else node_info.non_zero_requested
        if name == CPU:
            return allocatable.milli_cpu, requested.milli_cpu + pod_request
        if name == MEMORY:
            return allocatable.memory, requested.memory + pod_request
        if name == EPHEMERAL_STORAGE:
            return (
                allocatable.ephemeral_storage,
                node_info.requested.ephemeral_storage + pod_request,
            )
        if is_scalar_resource_name(name) and name in allocatable.scalar:
            return (
                allocatable.scalar[name],
                node_info.requested.scalar.get(name, 0) + pod_request,
            )
        return 0, 0

    def score(self, node_info: api.NodeInfo, pod_requests: Sequence[int]) -> tuple[int, api.Status]:
        if not self.resources:
            return 0, api.Status(api.Code.ERROR, "resources not found")
        count = len(self.resources)
        requested = [0] * count
        allocatable = [0] * count
        for index, spec in enumerate(self.resources):
            alloc, req = self.allocatable_and_requested(node_info, spec.name, pod_requests[index])
            if alloc == 0:
                continue
            allocatable[index] = alloc
            requested[index] = req
        return self.scorer(requested, allocatable), api.SUCCESS


# --------------------------------------------------------------------------------------------
# Node columns for the batch scores.

BATCH_RESOURCES = frozenset({CPU, MEMORY})
"""Resources the batch scores of both plugins handle (the default configuration's)."""


def batch_resources_supported(resources: Sequence[ResourceSpec]) -> bool:
    """Whether the batch scores handle every one of ``resources``."""
    return {spec.name for spec in resources} <= BATCH_RESOURCES


@dataclass(frozen=True, slots=True)
class ResourceAtNodes:
    """One resource at some nodes, the pod's request added: what both batch scores start from.

    ``present`` marks the nodes with a nonzero allocatable amount (the per-node scorers skip the
    others); ``everywhere`` says all are, so the arithmetic can skip the masking.
    """

    allocatable: api.IntArray
    requested: api.IntArray
    present: api.BoolArray
    everywhere: bool

    def safe_allocatable(self) -> api.IntArray:
        """The allocatable amounts with 1 where there are none, for dividing by."""
        if self.everywhere:
            return self.allocatable
        return np.where(self.present, self.allocatable, 1)


def resource_at_nodes(
    mirror: api.NodeMirror, name: str, request: int, positions: api.IntArray, use_requested: bool
) -> ResourceAtNodes:
    """cpu or memory at the nodes at ``positions`` as
    :meth:`ResourceAllocationScorer.allocatable_and_requested` reads them, plus ``request``.

    Raises :class:`Fallback` for a request the int64 columns cannot hold safely.
    """
    if not 0 <= request < api.SAFE_LIMIT:
        raise api.Fallback
    if name == CPU:
        allocatable_column = mirror.alloc_cpu
        requested_column = mirror.req_cpu if use_requested else mirror.nz_cpu
    else:
        allocatable_column = mirror.alloc_mem
        requested_column = mirror.req_mem if use_requested else mirror.nz_mem
    allocatable = allocatable_column[positions]
    present = allocatable != 0
    return ResourceAtNodes(
        allocatable=allocatable,
        requested=requested_column[positions] + request,
        present=present,
        everywhere=bool(present.all()),
    )


__all__ = [
    "BATCH_RESOURCES",
    "DEFAULT_RESOURCES",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "ResourceAllocationScorer",
    "ResourceAtNodes",
    "ResourceSpec",
    "Scorer",
    "ShapePoint",
    "batch_resources_supported",
    "build_broken_linear_function",
    "is_extended_resource_name",
    "is_native_resource",
    "is_prefixed_native_resource",
    "is_qualified_name",
    "is_scalar_resource_name",
    "least_allocated_scorer",
    "least_requested_score",
    "most_allocated_scorer",
    "most_requested_score",
    "parse_resource_specs",
    "parse_shape",
    "requested_to_capacity_ratio_scorer",
    "resource_amount",
    "resource_at_nodes",
    "validate_weights",
]
