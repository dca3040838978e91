"""PodTopologySpread PreScore, Score and NormalizeScore: the ``ScheduleAnyway`` constraints.

PreScore looks at the nodes that passed Filter. With the pod's own constraints, or with
``List`` defaulting, a node lacking one of the topology keys is *ignored* (it scores 0). With
``System`` defaulting nodes without a zone label are kept and form one extra, unnamed zone, so
that hostname spreading still works on clusters without zones.

Each constraint gets the weight ``log(domains + 2)``, where ``domains`` is the number of its
topology values among the scored nodes (for the hostname key: the number of scored nodes that
are not ignored). Matching pods are counted per domain over *all* nodes of the cluster that
pass the constraint's inclusion policies, but only for domains some scored node belongs to;
for the hostname key the count is the node's own. The counting may be delegated to a
:class:`~.counting.DomainCounter` the scheduler offers.

A node's raw score is ``round(Σ count × weight + (maxSkew − 1))``. NormalizeScore reverses it:
``100 × (max + min − score) / max`` (integer division) over the non-ignored nodes, 100 for all
when every raw score is 0, and 0 for ignored nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import TopologySpreadConstraint
from kopf_scheduler.model.node import HOSTNAME_LABEL
from kopf_scheduler.plugins.pod_topology_spread.common import (
    count_pods_match_selector,
    go_log,
    go_round,
    matches_node_inclusion_policies,
    node_labels_match,
)

if TYPE_CHECKING:
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.plugins.pod_topology_spread.counting import DomainCounter

_INVALID_SCORE = -1


class PreScoreState:
    """Per-constraint domain counts and weights; read-only once written, so clones share it."""

    __slots__ = ("constraints", "ignored_nodes", "pod_counts", "weights")

    def __init__(
        self,
        constraints: Sequence[TopologySpreadConstraint],
        ignored_nodes: set[str],
        pod_counts: list[dict[str, int]],
        weights: list[float],
    ) -> None:
        self.constraints = tuple(constraints)
        self.ignored_nodes = ignored_nodes
        self.pod_counts = pod_counts
        """``pod_counts[i][value]``; no entries for hostname constraints (counted in Score)."""
        self.weights = weights

    def clone(self) -> PreScoreState:
        return self

    def __repr__(self) -> str:
        return (
            f"PreScoreState(ignored={sorted(self.ignored_nodes)}, counts={self.pod_counts}, "
            f"weights={self.weights})"
        )


PRE_SCORE_KEY: api.StateKey[PreScoreState] = api.StateKey("PreScorePodTopologySpread")


def topology_normalizing_weight(size: int) -> float:
    """``log(size + 2)``: counts in topologies with fewer domains weigh less."""
    return go_log(float(size + 2))


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    return float(count) * weight + float(max_skew - 1)


def build_pre_score_state(
    pod: Pod,
    constraints: Sequence[TopologySpreadConstraint],
    filtered_nodes: Sequence[api.NodeInfo],
    all_nodes: Sequence[api.NodeInfo],
    require_all_topologies: bool,
    counter: DomainCounter | None = None,
) -> PreScoreState:
    ignored: set[str] = set()
    pod_counts: list[dict[str, int]] = [{} for _ in constraints]
    for node_info in filtered_nodes:
        node = node_info.node
        if node is None:
            continue
        if require_all_topologies and not node_labels_match(node.labels, constraints):
            ignored.add(node.name)
            continue
        for index, constraint in enumerate(constraints):
            if constraint.topology_key == HOSTNAME_LABEL:
                continue
            pod_counts[index].setdefault(node.labels.get(constraint.topology_key, ""), 0)

    weights = []
    for index, constraint in enumerate(constraints):
        size = len(pod_counts[index])
        if constraint.topology_key == HOSTNAME_LABEL:
            size = len(filtered_nodes) - len(ignored)
        weights.append(topology_normalizing_weight(size))

    counted = [index for index, counts in enumerate(pod_counts) if counts]
    totals = (
        counter.domain_totals(
            pod, constraints, all_nodes, require_all_keys=require_all_topologies, indices=counted
        )
        if counter is not None
        else None
    )
    if totals is not None:
        for index in counted:
            found = totals[index]
            pod_counts[index] = {value: found.get(value, 0) for value in pod_counts[index]}
    else:
        _count_in_domains(pod, constraints, all_nodes, require_all_topologies, pod_counts)
    return PreScoreState(constraints, ignored, pod_counts, weights)


def _count_in_domains(
    pod: Pod,
    constraints: Sequence[TopologySpreadConstraint],
    all_nodes: Iterable[api.NodeInfo],
    require_all_topologies: bool,
    pod_counts: list[dict[str, int]],
) -> None:
    for node_info in all_nodes:
        node = node_info.node
        if node is None:
            continue
        if require_all_topologies and not node_labels_match(node.labels, constraints):
            continue
        for index, constraint in enumerate(constraints):
            if not matches_node_inclusion_policies(constraint, pod, node):
                continue
            counts = pod_counts[index]
            value = node.labels.get(constraint.topology_key, "")
            if value not in counts:
                # Not a domain of any scored node (hostname domains are never listed).
                continue
            counts[value] += count_pods_match_selector(
                node_info.pods, constraint.selector, pod.namespace
            )


def node_score(state: PreScoreState, pod: Pod, node_info: api.NodeInfo) -> int:
    node = node_info.node
    if node is None or node.name in state.ignored_nodes:
        return 0
    total = 0.0
    for index, constraint in enumerate(state.constraints):
        value = node.labels.get(constraint.topology_key)
        if value is None:
            continue
        if constraint.topology_key == HOSTNAME_LABEL:
            count = count_pods_match_selector(node_info.pods, constraint.selector, pod.namespace)
        else:
            count = state.pod_counts[index].get(value, 0)
        total += score_for_count(count, constraint.max_skew, state.weights[index])
    return go_round(total)


def normalize(state: PreScoreState, scores: list[api.NodeScore]) -> api.Status:
    lowest: int | None = None
    highest = 0
    for entry in scores:
        if entry.name in state.ignored_nodes:
            entry.score = _INVALID_SCORE
            continue
        if lowest is None or entry.score < lowest:
            lowest = entry.score
        highest = max(highest, entry.score)
    for entry in scores:
        if entry.score == _INVALID_SCORE:
            entry.score = 0
        elif highest == 0:
            entry.score = api.MAX_NODE_SCORE
        else:
            assert lowest is not None
            entry.score = api.MAX_NODE_SCORE * (highest + lowest - entry.score) // highest
    return api.SUCCESS
