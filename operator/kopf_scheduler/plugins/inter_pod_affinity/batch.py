"""InterPodAffinity over node columns: its topology counts and weights, its Filter and its Score.

When the scheduler offers its node columns, the plugin's PreFilter and PreScore ask
:class:`AffinityColumns` (an
:class:`~kopf_scheduler.plugins.inter_pod_affinity.counting.AffinityCounter`) for their
per-topology-pair numbers:

* the incoming pod's own terms select existing pods: a per-node count column per term (or, for
  required affinity, per set of terms that must all match) from the columns' pod counts;
* existing pods' terms select the incoming pod: each distinct term of the columns' term census
  is matched once, and its occurrences per node are added up where it matches.

Node positions are then summed per value of the term's topology key; a pair is listed when the
plugin's walk would have created it (a positive count for PreFilter, any contribution, even one
summing to zero, for PreScore).

Filter and Score read the state the plugin wrote and evaluate it for every node at once, with
the plugin's order of checks (affinity, then anti-affinity, then existing pods' anti-affinity)
and its normalisation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.plugins.inter_pod_affinity.filtering import matches_all_terms

if TYPE_CHECKING:
    from kopf_scheduler.model.affinity import AffinityTerm
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.plugins.inter_pod_affinity.filtering import (
        PreFilterState,
        TopologyCounts,
    )
    from kopf_scheduler.plugins.inter_pod_affinity.scoring import (
        PreScoreState,
        TopologyScorer,
        TopologyScores,
    )

UNSATISFIED_AFFINITY = 0
"""Filter rejection detail: the pod's required affinity is not met."""
BROKEN_ANTI_AFFINITY = 1
"""Filter rejection detail: the pod's required anti-affinity would be broken."""
EXISTING_ANTI_AFFINITY = 2
"""Filter rejection detail: an existing pod's required anti-affinity rejects the pod."""

_NO_NAMESPACE_LABELS: Mapping[str, str] = {}
_SCORING_ROLES = (
    api.Role.REQUIRED_AFFINITY,
    api.Role.PREFERRED_AFFINITY,
    api.Role.PREFERRED_ANTI_AFFINITY,
)
_EXACT_LIMIT = 2**52
"""Largest raw score whose float64 normalisation equals Python's int division."""


class _PairSums:
    """Weighted sums per (topology key, label code), and which pairs received anything."""

    __slots__ = ("_nodes", "_sums")

    def __init__(self, nodes: api.NodeColumns) -> None:
        self._nodes = nodes
        self._sums: dict[str, tuple[api.IntArray, api.IntArray]] = {}
        """Topology key -> (sums, contributions) by the key's label code."""

    def add(
        self, topology_key: str, positions: api.IntArray, amounts: api.IntArray, weight: int = 1
    ) -> None:
        """Count ``amounts`` pods at node ``positions`` (``weight`` each) in their domains."""
        column = self._nodes.mirror.labels(topology_key)
        codes = column.codes[positions]
        present = codes >= 0
        codes = codes[present]
        amounts = amounts[present]
        if not len(codes):
            return
        size = len(column.names)
        entry = self._sums.get(topology_key)
        if entry is None or len(entry[0]) < size:
            sums = np.zeros(size, dtype=np.int64)
            contributions = np.zeros(size, dtype=np.int64)
            if entry is not None:
                sums[: len(entry[0])] = entry[0]
                contributions[: len(entry[1])] = entry[1]
            entry = self._sums[topology_key] = (sums, contributions)
        sums, contributions = entry
        np.add.at(sums, codes, amounts * weight)
        np.add.at(contributions, codes, amounts)

    def counts(self) -> TopologyCounts:
        """Pairs with a positive sum (PreFilter's counts)."""
        result: TopologyCounts = {}
        for topology_key, (sums, _) in self._sums.items():
            pairs, _ = self._nodes.mirror.labels(topology_key).pairs()
            positive = np.flatnonzero(sums > 0)
            found = map(pairs.__getitem__, positive.tolist())
            result.update(zip(found, sums[positive].tolist(), strict=True))
        return result

    def scores(self) -> TopologyScores:
        """Pairs that received any contribution, with their sums (PreScore's weights)."""
        result: TopologyScores = {}
        for topology_key, (sums, contributions) in self._sums.items():
            touched = np.flatnonzero(contributions > 0)
            if not len(touched):
                continue
            names = self._nodes.mirror.labels(topology_key).names
            values = map(names.__getitem__, touched.tolist())
            result[topology_key] = dict(zip(values, sums[touched].tolist(), strict=True))
        return result


class AffinityColumns:
    """InterPodAffinity over one scheduler's :class:`NodeColumns`."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: api.NodeColumns) -> None:
        self._nodes = nodes

    def _pair_tables(
        self, counts: TopologyCounts, topology_keys: Iterable[str]
    ) -> dict[str, api.IntArray]:
        """``counts`` of each of ``topology_keys`` by label code, with a last slot (0) that
        code -1 indexes."""
        amounts = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
        tables: dict[str, api.IntArray] = {}
        for topology_key in topology_keys:
            if topology_key in tables:
                continue
            pairs, pair_codes = self._nodes.mirror.labels(topology_key).pairs()
            codes = np.fromiter(
                map(pair_codes.get, counts, repeat(-1)), dtype=np.int64, count=len(counts)
            )
            known = codes >= 0
            table = np.zeros(len(pairs) + 1, dtype=np.int64)
            table[codes[known]] = amounts[known]
            tables[topology_key] = table
        return tables

    def _term_counts(self, term: AffinityTerm) -> api.IntArray:
        """Per node: the pods ``term`` (an incoming pod's resolved term) selects."""

        def matches(pod: Pod) -> bool:
            return term.matches(pod.namespace, pod.labels, _NO_NAMESPACE_LABELS)

        return self._nodes.pod_counts.column(("term", api.term_key(term)), matches)

    # AffinityCounter -----------------------------------------------------------------------------

    def existing_anti_affinity_counts(
        self, pod: Pod, namespace_labels: Mapping[str, str], nodes: Sequence[api.NodeInfo]
    ) -> TopologyCounts | None:
        node_columns = self._nodes
        if not node_columns.serves(nodes):
            return None
        sums = _PairSums(node_columns)
        for entry in node_columns.census.entries((api.Role.REQUIRED_ANTI_AFFINITY,)):
            term = entry.term
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                positions, occurrences = entry.arrays()
                sums.add(term.topology_key, positions, occurrences)
        return sums.counts()

    def incoming_affinity_counts(
        self,
        affinity_terms: Sequence[AffinityTerm],
        anti_affinity_terms: Sequence[AffinityTerm],
        nodes: Sequence[api.NodeInfo],
    ) -> tuple[TopologyCounts, TopologyCounts] | None:
        node_columns = self._nodes
        if not node_columns.serves(nodes):
            return None
        affinity = _PairSums(node_columns)
        if affinity_terms:
            terms = tuple(affinity_terms)

            def matches_all(pod: Pod) -> bool:
                return matches_all_terms(terms, pod)

            matching = node_columns.pod_counts.column(
                ("all terms", tuple(api.term_key(term) for term in terms)), matches_all
            )
            positions = np.flatnonzero(matching)
            for term in terms:
                affinity.add(term.topology_key, positions, matching[positions])
        anti_affinity = _PairSums(node_columns)
        for term in anti_affinity_terms:
            matching = self._term_counts(term)
            positions = np.flatnonzero(matching)
            anti_affinity.add(term.topology_key, positions, matching[positions])
        return affinity.counts(), anti_affinity.counts()

    def topology_scores(
        self, scorer: TopologyScorer, nodes: Sequence[api.NodeInfo]
    ) -> TopologyScores | None:
        node_columns = self._nodes
        if not node_columns.serves(nodes):
            return None
        sums = _PairSums(node_columns)
        for sign, terms in ((1, scorer.preferred_affinity), (-1, scorer.preferred_anti_affinity)):
            for weight, term in terms:
                matching = self._term_counts(term)
                positions = np.flatnonzero(matching)
                sums.add(term.topology_key, positions, matching[positions], sign * weight)
        incoming = scorer.incoming
        hard_weight = scorer.hard_pod_affinity_weight
        for entry in node_columns.census.entries(_SCORING_ROLES):
            if entry.role is api.Role.REQUIRED_AFFINITY:
                if hard_weight <= 0:
                    continue
                weight = hard_weight
            elif entry.role is api.Role.PREFERRED_AFFINITY:
                weight = entry.weight
            else:
                weight = -entry.weight
            term = entry.term
            if term.matches(incoming.namespace, incoming.labels, scorer.namespace_labels):
                positions, occurrences = entry.arrays()
                sums.add(term.topology_key, positions, occurrences, weight)
        return sums.scores()

    # Filter --------------------------------------------------------------------------------------

    def filter_failures(self, state: PreFilterState) -> api.NodeRejections | None:
        """The nodes the plugin's Filter rejects and why (:data:`UNSATISFIED_AFFINITY`,
        :data:`BROKEN_ANTI_AFFINITY` or :data:`EXISTING_ANTI_AFFINITY`), or ``None``."""
        mirror = self._nodes.mirror
        size = mirror.size
        unsatisfied = np.zeros(size, dtype=np.bool_)
        if state.affinity_terms:
            tables = self._pair_tables(
                state.affinity_counts, (term.topology_key for term in state.affinity_terms)
            )
            missing = np.zeros(size, dtype=np.bool_)
            all_found = np.ones(size, dtype=np.bool_)
            for term in state.affinity_terms:
                codes = mirror.labels(term.topology_key).codes
                missing |= codes < 0
                all_found &= tables[term.topology_key][codes] > 0
            first_of_group = not state.affinity_counts and matches_all_terms(
                state.affinity_terms, state.pod
            )
            unsatisfied = missing | (~all_found & (not first_of_group))
        broken = np.zeros(size, dtype=np.bool_)
        if state.anti_affinity_counts:
            tables = self._pair_tables(
                state.anti_affinity_counts,
                (term.topology_key for term in state.anti_affinity_terms),
            )
            for term in state.anti_affinity_terms:
                broken |= tables[term.topology_key][mirror.labels(term.topology_key).codes] > 0
        existing = np.zeros(size, dtype=np.bool_)
        counts = state.existing_anti_affinity_counts
        if counts:
            tables = self._pair_tables(counts, {topology_key for topology_key, _ in counts})
            for topology_key, table in tables.items():
                existing |= table[mirror.labels(topology_key).codes] > 0
        fails = unsatisfied | broken | existing
        if not fails.any():
            return None
        detail: api.IntArray = np.where(
            unsatisfied,
            UNSATISFIED_AFFINITY,
            np.where(broken, BROKEN_ANTI_AFFINITY, EXISTING_ANTI_AFFINITY),
        )

        return api.NodeRejections.by_detail(fails, detail)

    # Score ---------------------------------------------------------------------------------------

    def scores(self, state: PreScoreState, positions: api.IntArray) -> api.IntArray:
        """``scoring.node_score`` then ``scoring.normalize`` for the nodes at ``positions``."""
        mirror = self._nodes.mirror
        raw = np.zeros(len(positions), dtype=np.int64)
        topology_scores = state.topology_scores
        for topology_key, by_value in topology_scores.items():
            column = mirror.labels(topology_key)
            raw += column.table(by_value)[column.codes[positions]]
        if not topology_scores or not len(raw):
            return raw
        lowest = int(raw.min())
        highest = int(raw.max())
        if max(abs(lowest), abs(highest)) >= _EXACT_LIMIT:
            raise api.Fallback
        spread = highest - lowest
        if spread <= 0:
            return np.zeros(len(raw), dtype=np.int64)
        normalized: api.IntArray = (float(api.MAX_NODE_SCORE) * ((raw - lowest) / spread)).astype(
            np.int64
        )
        return normalized
