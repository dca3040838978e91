"""PodTopologySpread over node columns: its domain counts, its Filter and its Score.

When the scheduler offers its node columns, the plugin's PreFilter and PreScore ask
:meth:`SpreadColumns.domain_totals` (a
:class:`~kopf_scheduler.plugins.pod_topology_spread.counting.DomainCounter`) for the matching
pods per domain. The answer is built from a per-node count column of
the constraint's selector (:mod:`.pod_counts`), masked by the nodes that count (topology keys
present, inclusion policies) and summed per label value; domains come out in the order of
their first eligible node, as the plugin's own walk lists them, so the critical paths built
from them are the same.

Filter and Score read the state the plugin wrote and evaluate it for every node at once:
Filter with the same per-constraint order of checks (a missing topology key is reported before
a skew violation of a later constraint), Score with the same float64 operations in the same
order, Go's rounding, and the plugin's normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import HONOR
from kopf_scheduler.model.node import HOSTNAME_LABEL

if TYPE_CHECKING:
    from kopf_scheduler.model.affinity import TopologySpreadConstraint
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.model.selectors import LabelSelector
    from kopf_scheduler.plugins.pod_topology_spread.filtering import PreFilterState
    from kopf_scheduler.plugins.pod_topology_spread.scoring import PreScoreState

MISSING_KEY = 0
"""Filter rejection detail: the node lacks a constraint's topology key."""
TOO_SKEWED = 1
"""Filter rejection detail: a constraint's skew would exceed maxSkew."""

_FEW_DOMAINS = 16
"""Up to this many domains, finding each one's first node beats sorting all nodes' codes."""
_EXACT_LIMIT = 2**52
"""Largest magnitude whose float64 arithmetic below stays exact where Python's int is used."""


def go_round_array(values: api.FloatArray) -> api.IntArray:
    """:func:`~kopf_scheduler.plugins.pod_topology_spread.common.go_round`, elementwise."""
    whole = np.trunc(values)
    away_from_zero = np.where(values > 0, 1.0, -1.0)
    rounded = whole + np.where(np.abs(values - whole) >= 0.5, away_from_zero, 0.0)
    result: api.IntArray = rounded.astype(np.int64)
    return result


class SpreadColumns:
    """PodTopologySpread over one scheduler's :class:`NodeColumns`."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: api.NodeColumns) -> None:
        self._nodes = nodes

    def selector_counts(self, selector: LabelSelector, namespace: str) -> api.IntArray:
        """``count_pods_match_selector`` of every node (0 everywhere for an empty selector)."""
        mirror = self._nodes.mirror
        if selector.is_empty():
            return np.zeros(mirror.size, dtype=np.int64)

        def matches(pod: Pod) -> bool:
            return (
                pod.deletion_timestamp is None
                and pod.namespace == namespace
                and selector.matches(pod.labels)
            )

        return self._nodes.pod_counts.column(
            ("spread", namespace, api.selector_key(selector)), matches
        )

    # DomainCounter -------------------------------------------------------------------------------

    def domain_totals(
        self,
        pod: Pod,
        constraints: Sequence[TopologySpreadConstraint],
        nodes: Sequence[api.NodeInfo],
        *,
        require_all_keys: bool,
        indices: Sequence[int],
    ) -> dict[int, dict[str, int]] | None:
        """The counts the plugin's walk finds, or ``None`` (the plugin then walks) for nodes
        other than the mirror's or a node affinity the node columns cannot evaluate."""
        if not self._nodes.serves(nodes):
            return None
        try:
            return self._domain_totals(pod, constraints, require_all_keys, indices)
        except api.Fallback:
            return None

    def _domain_totals(
        self,
        pod: Pod,
        constraints: Sequence[TopologySpreadConstraint],
        require_all_keys: bool,
        indices: Sequence[int],
    ) -> dict[int, dict[str, int]]:
        node_columns = self._nodes
        mirror = node_columns.mirror
        columns = [mirror.labels(constraint.topology_key) for constraint in constraints]
        counted = np.ones(mirror.size, dtype=np.bool_)
        if require_all_keys:
            for column in columns:
                counted &= column.codes >= 0
        affinity: api.BoolArray | None = None
        tolerated: api.BoolArray | None = None
        totals: dict[int, dict[str, int]] = {}
        for index in indices:
            constraint = constraints[index]
            eligible = counted
            if constraint.node_affinity_policy == HONOR:
                if affinity is None:
                    affinity = node_columns.pod_node_affinity_mask(pod)
                eligible = eligible & affinity
            if constraint.node_taints_policy == HONOR:
                if tolerated is None:
                    untolerated = node_columns.untolerated_mask(pod)
                    tolerated = (
                        ~untolerated
                        if untolerated is not None
                        else np.ones(mirror.size, dtype=np.bool_)
                    )
                eligible = eligible & tolerated
            matched = self.selector_counts(constraint.selector, pod.namespace)
            totals[index] = _sum_by_domain(
                columns[index], eligible, matched, missing_as_empty=not require_all_keys
            )
        return totals

    # Filter --------------------------------------------------------------------------------------

    def filter_failures(self, state: PreFilterState, pod: Pod) -> api.NodeRejections | None:
        """The nodes ``filtering.check_node`` rejects and why (:data:`MISSING_KEY` or
        :data:`TOO_SKEWED`), or ``None`` when it rejects none."""
        mirror = self._nodes.mirror
        size = mirror.size
        undecided = np.ones(size, dtype=np.bool_)
        fails = np.zeros(size, dtype=np.bool_)
        detail = np.zeros(size, dtype=np.int64)
        for index, constraint in enumerate(state.constraints):
            column = mirror.labels(constraint.topology_key)
            codes = column.codes
            missing = codes < 0
            self_match = 1 if constraint.selector.matches(pod.labels) else 0
            skew = column.table(state.match_num[index])[codes] + (
                self_match - state.min_match_num(index)
            )
            skewed = ~missing & (skew > constraint.max_skew)
            detail[undecided & skewed] = TOO_SKEWED
            detail[undecided & missing] = MISSING_KEY
            fails |= undecided & (missing | skewed)
            undecided &= ~(missing | skewed)
        if not fails.any():
            return None

        return api.NodeRejections.by_detail(fails, detail)

    # Score ---------------------------------------------------------------------------------------

    def scores(self, state: PreScoreState, pod: Pod, positions: api.IntArray) -> api.IntArray:
        """``scoring.node_score`` then ``scoring.normalize`` for the nodes at ``positions``."""
        mirror = self._nodes.mirror
        count = len(positions)
        ignored_names = state.ignored_nodes
        if ignored_names:
            names = mirror.names
            ignored = np.fromiter(
                (names[position] in ignored_names for position in positions.tolist()),
                dtype=np.bool_,
                count=count,
            )
        else:
            ignored = np.zeros(count, dtype=np.bool_)
        total = np.zeros(count, dtype=np.float64)
        for index, constraint in enumerate(state.constraints):
            column = mirror.labels(constraint.topology_key)
            codes = column.codes[positions]
            if constraint.topology_key == HOSTNAME_LABEL:
                matched = self.selector_counts(constraint.selector, pod.namespace)[positions]
            else:
                matched = column.table(state.pod_counts[index])[codes]
            if len(matched) and int(matched.max()) >= _EXACT_LIMIT:
                raise api.Fallback
            contribution = matched.astype(np.float64) * state.weights[index] + float(
                constraint.max_skew - 1
            )
            total = np.where(codes >= 0, total + contribution, total)
        if len(total) and float(np.abs(total).max()) >= _EXACT_LIMIT:
            raise api.Fallback
        raw = np.where(ignored, 0, go_round_array(total))
        valid = ~ignored
        if not valid.any():
            return np.zeros(count, dtype=np.int64)
        lowest = int(raw[valid].min())
        highest = max(int(raw[valid].max()), 0)
        if highest == 0:
            return np.where(valid, api.MAX_NODE_SCORE, 0)
        normalized: api.IntArray = np.where(
            valid, api.MAX_NODE_SCORE * (highest + lowest - raw) // highest, 0
        )
        return normalized


def _sum_by_domain(
    column: api.LabelColumn,
    eligible: api.BoolArray,
    matched: api.IntArray,
    *,
    missing_as_empty: bool,
) -> dict[str, int]:
    """Matching pods per domain over the ``eligible`` nodes, domains in order of first node."""
    codes = column.codes[eligible]
    if not len(codes):
        return {}
    names = column.names
    if missing_as_empty:
        # A node without the key belongs to the domain "", with any node labelled "".
        empty = column.values.get("")
        if empty is None:
            empty = len(names)
            names = [*names, ""]
        codes = np.where(codes < 0, empty, codes)
    domains = np.flatnonzero(np.bincount(codes, minlength=len(names)))
    if len(domains) <= _FEW_DOMAINS:
        first = [int(np.argmax(codes == code)) for code in domains.tolist()]
    else:
        domains, first_array = np.unique(codes, return_index=True)
        first = first_array.tolist()
    in_order = domains[np.argsort(first, kind="stable")].tolist()
    sums = np.bincount(codes, weights=matched[eligible], minlength=len(names)).tolist()
    return {names[code]: int(sums[code]) for code in in_order}
