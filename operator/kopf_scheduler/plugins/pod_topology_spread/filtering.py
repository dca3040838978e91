"""PodTopologySpread PreFilter and Filter: the ``DoNotSchedule`` constraints.

PreFilter counts, per constraint and topology domain (node label value), the pods matching the
constraint's selector in the incoming pod's namespace, leaving out terminating pods. Only nodes
that carry every constraint's topology key count, and for each constraint only nodes that pass
its inclusion policies: with ``nodeAffinityPolicy: Honor`` (the default) nodes outside the pod's
``nodeSelector`` / required node affinity are left out, with ``nodeTaintsPolicy: Honor`` (default
Ignore) so are nodes with a ``NoSchedule``/``NoExecute`` taint the pod does not tolerate.

Filter then requires, for every constraint,
``matching pods in the node's domain + (1 if the pod matches itself) - global minimum <= maxSkew``,
where the global minimum is taken as 0 while fewer domains than ``minDomains`` exist. A node
without one of the topology keys is UnschedulableAndUnresolvable; a skew violation is
Unschedulable, since evicting pods can lower it.

The global minimum is tracked the way v1.34 does it, with two "critical paths" per constraint:
the smallest count and a second one that is at least as large. This is exact for what preemption
and the nominated-pods pass do (changes on a single node of a cloned state).

The counting may be delegated to a :class:`~.counting.DomainCounter` the scheduler offers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import TopologySpreadConstraint
from kopf_scheduler.plugins.pod_topology_spread.common import (
    count_pods_match_selector,
    matches_node_inclusion_policies,
    node_labels_match,
)

if TYPE_CHECKING:
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.plugins.pod_topology_spread.counting import DomainCounter

REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
REASON_NODE_LABEL_NOT_MATCH = REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods (``paths[0]`` holds the minimum)."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[tuple[str, int]] | None = None) -> None:
        self.paths: list[tuple[str, int]] = (
            list(paths) if paths is not None else [("", MAX_INT32), ("", MAX_INT32)]
        )

    def copy(self) -> CriticalPaths:
        return CriticalPaths(self.paths)

    @property
    def min_match_num(self) -> int:
        return self.paths[0][1]

    def update(self, value: str, num: int) -> None:
        paths = self.paths
        if value == paths[0][0]:
            index = 0
        elif value == paths[1][0]:
            index = 1
        else:
            index = -1
        if index >= 0:
            paths[index] = (value, num)
            if paths[0][1] > paths[1][1]:
                paths[0], paths[1] = paths[1], paths[0]
        elif num < paths[0][1]:
            paths[1] = paths[0]
            paths[0] = (value, num)
        elif num < paths[1][1]:
            paths[1] = (value, num)

    def __repr__(self) -> str:
        return f"CriticalPaths({self.paths})"


class PreFilterState:
    """Per-constraint domain counts for one incoming pod. Cloned for preemption dry runs."""

    __slots__ = ("constraints", "critical_paths", "match_num")

    def __init__(
        self,
        constraints: Sequence[TopologySpreadConstraint],
        critical_paths: list[CriticalPaths],
        match_num: list[dict[str, int]],
    ) -> None:
        self.constraints = tuple(constraints)
        self.critical_paths = critical_paths
        self.match_num = match_num
        """``match_num[i][value]``: matching pods in domain ``value`` of constraint ``i``."""

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [paths.copy() for paths in self.critical_paths],
            [dict(counts) for counts in self.match_num],
        )

    def min_match_num(self, index: int) -> int:
        """The global minimum of constraint ``index``, 0 while there are too few domains."""
        if len(self.match_num[index]) < self.constraints[index].min_domains:
            return 0
        return self.critical_paths[index].min_match_num

    def update_with_pod(self, other: Pod, preemptor: Pod, node: Node, delta: int) -> None:
        """Count ``other`` on ``node`` in (``delta`` = 1) or out (``delta`` = -1)."""
        if other.namespace != preemptor.namespace:
            return
        if not node_labels_match(node.labels, self.constraints):
            return
        for index, constraint in enumerate(self.constraints):
            if not constraint.selector.matches(other.labels):
                continue
            if not matches_node_inclusion_policies(constraint, preemptor, node):
                continue
            value = node.labels[constraint.topology_key]
            counts = self.match_num[index]
            counts[value] = counts.get(value, 0) + delta
            self.critical_paths[index].update(value, counts[value])

    def __repr__(self) -> str:
        return f"PreFilterState({self.match_num}, {self.critical_paths})"


PRE_FILTER_KEY: api.StateKey[PreFilterState] = api.StateKey("PreFilterPodTopologySpread")


def build_pre_filter_state(
    pod: Pod,
    constraints: Sequence[TopologySpreadConstraint],
    nodes: Sequence[api.NodeInfo],
    counter: DomainCounter | None = None,
) -> PreFilterState:
    totals = (
        counter.domain_totals(
            pod, constraints, nodes, require_all_keys=True, indices=range(len(constraints))
        )
        if counter is not None
        else None
    )
    match_num = (
        [totals[index] for index in range(len(constraints))]
        if totals is not None
        else _count_matches(pod, constraints, nodes)
    )
    critical_paths = []
    for counts in match_num:
        paths = CriticalPaths()
        for value, num in counts.items():
            paths.update(value, num)
        critical_paths.append(paths)
    return PreFilterState(constraints, critical_paths, match_num)


def _count_matches(
    pod: Pod, constraints: Sequence[TopologySpreadConstraint], nodes: Iterable[api.NodeInfo]
) -> list[dict[str, int]]:
    match_num: list[dict[str, int]] = [{} for _ in constraints]
    for node_info in nodes:
        node = node_info.node
        if node is None or not node_labels_match(node.labels, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not matches_node_inclusion_policies(constraint, pod, node):
                continue
            value = node.labels[constraint.topology_key]
            count = count_pods_match_selector(node_info.pods, constraint.selector, pod.namespace)
            counts = match_num[index]
            counts[value] = counts.get(value, 0) + count
    return match_num


def check_node(state: PreFilterState, pod: Pod, node: Node) -> str | None:
    """``None`` if the node passes, else the rejection reason."""
    for index, constraint in enumerate(state.constraints):
        value = node.labels.get(constraint.topology_key)
        if value is None:
            return REASON_NODE_LABEL_NOT_MATCH
        self_match = 1 if constraint.selector.matches(pod.labels) else 0
        skew = state.match_num[index].get(value, 0) + self_match - state.min_match_num(index)
        if skew > constraint.max_skew:
            return REASON_CONSTRAINTS_NOT_MATCH
    return None
