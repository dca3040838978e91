"""InterPodAffinity PreFilter and Filter: required pod affinity and anti-affinity.

PreFilter counts, per topology pair (``topologyKey``, node label value), three things once per
cycle so that Filter answers in time proportional to the node's labels:

* how many existing pods have a required anti-affinity term that the incoming pod matches
  (only nodes that host such pods are visited);
* how many existing pods match the incoming pod's required affinity terms, counted only for
  pods that match *all* of them, once per term;
* how many existing pods match each of the incoming pod's required anti-affinity terms.

The incoming pod's terms have their ``namespaceSelector`` resolved once, against the namespaces
the snapshot knows, into their namespace list (an empty selector ``{}`` keeps matching every
namespace). Existing pods' terms are matched against the incoming pod's namespace labels.

The counts are kept up to date by the PreFilter extensions (``add_pod``/``remove_pod``), which
preemption and the nominated-pods pass of Filter use on cloned states.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import AffinityTerm
from kopf_scheduler.model.selectors import LabelSelector

if TYPE_CHECKING:
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.pod import Pod

REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]
"""``(topologyKey, node label value)``."""

TopologyCounts = dict[TopologyPair, int]

_NO_NAMESPACE_LABELS: Mapping[str, str] = {}


def resolve_incoming_term(
    term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]
) -> AffinityTerm:
    """The incoming pod's ``term`` with its namespace selector folded into its namespaces.

    A selector that is present and non-empty is replaced by the names of the known namespaces it
    selects (the term then matches nothing through its selector); ``{}`` is kept, as it selects
    every namespace; an absent selector already selects nothing.
    """
    selector = term.namespace_selector
    if selector.is_empty() or selector.matches_nothing:
        return term
    selected = {name for name, labels in namespace_labels.items() if selector.matches(labels)}
    return AffinityTerm(
        term.selector, term.topology_key, term.namespaces | selected, LabelSelector.nothing()
    )


def matches_all_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """Whether ``pod`` matches every one of the (resolved) ``terms``; ``False`` for no terms."""
    if not terms:
        return False
    return all(t.matches(pod.namespace, pod.labels, _NO_NAMESPACE_LABELS) for t in terms)


def _bump(counts: TopologyCounts, node: Node, topology_key: str, delta: int) -> None:
    value = node.labels.get(topology_key)
    if value is None:
        return
    pair = (topology_key, value)
    updated = counts.get(pair, 0) + delta
    if updated == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = updated


def _add_anti_affinity_matches(
    counts: TopologyCounts,
    terms: Iterable[AffinityTerm],
    pod: Pod,
    *,
    namespace_labels: Mapping[str, str],
    node: Node,
    delta: int,
) -> None:
    for term in terms:
        if term.matches(pod.namespace, pod.labels, namespace_labels):
            _bump(counts, node, term.topology_key, delta)


def _add_affinity_matches(
    counts: TopologyCounts, terms: Sequence[AffinityTerm], pod: Pod, node: Node, delta: int
) -> None:
    if matches_all_terms(terms, pod):
        for term in terms:
            _bump(counts, node, term.topology_key, delta)


@dataclasses.dataclass(slots=True, eq=False)
class PreFilterState:
    """Topology-pair counts for one incoming pod. Cloned for every preemption dry run."""

    pod: Pod
    _: dataclasses.KW_ONLY
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    namespace_labels: Mapping[str, str]
    existing_anti_affinity_counts: TopologyCounts
    affinity_counts: TopologyCounts
    anti_affinity_counts: TopologyCounts

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            affinity_terms=self.affinity_terms,
            anti_affinity_terms=self.anti_affinity_terms,
            namespace_labels=self.namespace_labels,
            existing_anti_affinity_counts=dict(self.existing_anti_affinity_counts),
            affinity_counts=dict(self.affinity_counts),
            anti_affinity_counts=dict(self.anti_affinity_counts),
        )

    def update_with_pod(self, other: Pod, node: Node, delta: int) -> None:
        """Count ``other`` on ``node`` in (``delta`` = 1) or out (``delta`` = -1)."""
        _add_anti_affinity_matches(
            self.existing_anti_affinity_counts,
            other.anti_affinity_required,
            self.pod,
            namespace_labels=self.namespace_labels,
            node=node,
            delta=delta,
        )
        _add_affinity_matches(self.affinity_counts, self.affinity_terms, other, node, delta)
        _add_anti_affinity_matches(
            self.anti_affinity_counts,
            self.anti_affinity_terms,
            other,
            namespace_labels=_NO_NAMESPACE_LABELS,
            node=node,
            delta=delta,
        )

    def __repr__(self) -> str:
        return (
            f"PreFilterState(existing={self.existing_anti_affinity_counts}, "
            f"affinity={self.affinity_counts}, anti={self.anti_affinity_counts})"
        )


PRE_FILTER_KEY: api.StateKey[PreFilterState] = api.StateKey("PreFilterInterPodAffinity")


def existing_anti_affinity_counts(
    pod: Pod, namespace_labels: Mapping[str, str], nodes: Iterable[api.NodeInfo]
) -> TopologyCounts:
    """Pairs where an existing pod's required anti-affinity term matches ``pod``."""
    counts: TopologyCounts = {}
    for node_info in nodes:
        node = node_info.node
        if node is None:
            continue
        for existing in node_info.pods_with_required_anti_affinity:
            _add_anti_affinity_matches(
                counts,
                existing.anti_affinity_required,
                pod,
                namespace_labels=namespace_labels,
                node=node,
                delta=1,
            )
    return counts


def incoming_affinity_counts(
    affinity_terms: Sequence[AffinityTerm],
    anti_affinity_terms: Sequence[AffinityTerm],
    nodes: Iterable[api.NodeInfo],
) -> tuple[TopologyCounts, TopologyCounts]:
    """Pairs where existing pods match the incoming pod's (resolved) required terms."""
    affinity: TopologyCounts = {}
    anti_affinity: TopologyCounts = {}
    if not affinity_terms and not anti_affinity_terms:
        return affinity, anti_affinity
    for node_info in nodes:
        node = node_info.node
        if node is None:
            continue
        for existing in node_info.pods:
            _add_affinity_matches(affinity, affinity_terms, existing, node, 1)
            _add_anti_affinity_matches(
                anti_affinity,
                anti_affinity_terms,
                existing,
                namespace_labels=_NO_NAMESPACE_LABELS,
                node=node,
                delta=1,
            )
    return affinity, anti_affinity


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node: Node) -> bool:
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    return not any(counts.get(pair, 0) > 0 for pair in node.labels.items())


def satisfies_pod_anti_affinity(state: PreFilterState, node: Node) -> bool:
    counts = state.anti_affinity_counts
    if not counts:
        return True
    for term in state.anti_affinity_terms:
        value = node.labels.get(term.topology_key)
        if value is not None and counts.get((term.topology_key, value), 0) > 0:
            return False
    return True


def satisfies_pod_affinity(state: PreFilterState, node: Node) -> bool:
    pods_exist = True
    for term in state.affinity_terms:
        value = node.labels.get(term.topology_key)
        if value is None:
            # Every topology key of the pod's affinity must be present on the node.
            return False
        if state.affinity_counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group whose members attract each other: no pod anywhere matches the
    # terms yet, but the pod matches its own terms, so it may start the group on this node.
    return not state.affinity_counts and matches_all_terms(state.affinity_terms, state.pod)
