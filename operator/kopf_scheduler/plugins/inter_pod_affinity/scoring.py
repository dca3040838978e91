"""InterPodAffinity PreScore, Score and NormalizeScore: preferred (anti-)affinity.

PreScore sums weights per topology pair:

* the incoming pod's preferred affinity terms add their weight for every existing pod that
  matches them, and its preferred anti-affinity terms subtract it;
* every existing pod's required affinity terms that the incoming pod matches add
  ``hardPodAffinityWeight`` (when it is above 0), its preferred affinity terms add their weight
  and its preferred anti-affinity terms subtract it.

Only pods on nodes that carry at least one label count. When the incoming pod has no preferred
terms, only pods with affinity terms need visiting (and with ``ignorePreferredTermsOfExistingPods``
nothing is scored at all). If no pair received anything, scoring is skipped.

A node's raw score is the sum of the pairs its labels name. NormalizeScore maps the raw scores
linearly from ``[min, max]`` onto ``[0, 100]`` (truncating), or to 0 everywhere when they are
all equal; raw scores may be negative.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import AffinityTerm, WeightedAffinityTerm
from kopf_scheduler.plugins.inter_pod_affinity.filtering import resolve_incoming_term

if TYPE_CHECKING:
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.pod import Pod

TopologyScores = dict[str, dict[str, int]]
"""``topologyKey`` -> node label value -> summed weight."""

WeightedTerm = tuple[int, AffinityTerm]

_NO_NAMESPACE_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True, eq=False)
class PreScoreState(api.SharedState):
    """The summed weights; read-only once written, so clones share it."""

    topology_scores: TopologyScores

    def __repr__(self) -> str:
        return f"PreScoreState({self.topology_scores})"


PRE_SCORE_KEY: api.StateKey[PreScoreState] = api.StateKey("PreScoreInterPodAffinity")


def _add_term(
    scores: TopologyScores,
    term: AffinityTerm,
    weight: int,
    pod: Pod,
    *,
    namespace_labels: Mapping[str, str],
    node: Node,
) -> None:
    if not term.matches(pod.namespace, pod.labels, namespace_labels):
        return
    value = node.labels.get(term.topology_key)
    if value is None:
        return
    by_value = scores.setdefault(term.topology_key, {})
    by_value[value] = by_value.get(value, 0) + weight


def _add_weighted_terms(
    scores: TopologyScores,
    terms: Iterable[WeightedTerm],
    pod: Pod,
    *,
    namespace_labels: Mapping[str, str],
    node: Node,
    sign: int,
) -> None:
    for weight, term in terms:
        _add_term(scores, term, weight * sign, pod, namespace_labels=namespace_labels, node=node)


def _pairs(terms: Iterable[WeightedAffinityTerm]) -> Iterable[WeightedTerm]:
    return ((w.weight, w.term) for w in terms)


class TopologyScorer:
    """Accumulates the weights of one incoming pod against existing pods."""

    __slots__ = (
        "hard_pod_affinity_weight",
        "incoming",
        "namespace_labels",
        "preferred_affinity",
        "preferred_anti_affinity",
        "scores",
    )

    def __init__(
        self,
        incoming: Pod,
        namespace_labels: Mapping[str, str],
        all_namespace_labels: Mapping[str, Mapping[str, str]],
        hard_pod_affinity_weight: int,
    ) -> None:
        self.incoming = incoming
        self.namespace_labels = namespace_labels
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.preferred_affinity: Sequence[WeightedTerm] = tuple(
            (w.weight, resolve_incoming_term(w.term, all_namespace_labels))
            for w in incoming.affinity_preferred
        )
        self.preferred_anti_affinity: Sequence[WeightedTerm] = tuple(
            (w.weight, resolve_incoming_term(w.term, all_namespace_labels))
            for w in incoming.anti_affinity_preferred
        )
        self.scores: TopologyScores = {}

    def process_existing_pod(self, existing: Pod, node: Node) -> None:
        if not node.labels:
            return
        scores = self.scores
        incoming = self.incoming
        # The incoming pod's preferences towards the existing pod.
        no_labels = _NO_NAMESPACE_LABELS
        _add_weighted_terms(
            scores, self.preferred_affinity, existing, namespace_labels=no_labels, node=node, sign=1
        )
        _add_weighted_terms(
            scores,
            self.preferred_anti_affinity,
            existing,
            namespace_labels=no_labels,
            node=node,
            sign=-1,
        )
        # The existing pod's rules about pods like the incoming one.
        if self.hard_pod_affinity_weight > 0:
            for term in existing.pod_affinity_required:
                _add_term(
                    scores,
                    term,
                    self.hard_pod_affinity_weight,
                    incoming,
                    namespace_labels=self.namespace_labels,
                    node=node,
                )
        _add_weighted_terms(
            scores,
            _pairs(existing.affinity_preferred),
            incoming,
            namespace_labels=self.namespace_labels,
            node=node,
            sign=1,
        )
        _add_weighted_terms(
            scores,
            _pairs(existing.anti_affinity_preferred),
            incoming,
            namespace_labels=self.namespace_labels,
            node=node,
            sign=-1,
        )

    def process_nodes(self, nodes: Iterable[api.NodeInfo], all_pods: bool) -> None:
        for node_info in nodes:
            node = node_info.node
            if node is None:
                continue
            pods = node_info.pods if all_pods else node_info.pods_with_affinity
            for existing in pods:
                self.process_existing_pod(existing, node)


def node_score(state: PreScoreState, node: Node) -> int:
    total = 0
    labels = node.labels
    for topology_key, by_value in state.topology_scores.items():
        value = labels.get(topology_key)
        if value is not None:
            total += by_value.get(value, 0)
    return total


def normalize(state: PreScoreState, scores: list[api.NodeScore]) -> api.Status:
    if not state.topology_scores or not scores:
        return api.SUCCESS
    lowest = min(entry.score for entry in scores)
    highest = max(entry.score for entry in scores)
    spread = highest - lowest
    for entry in scores:
        if spread > 0:
            entry.score = int(float(api.MAX_NODE_SCORE) * ((entry.score - lowest) / spread))
        else:
            entry.score = 0
    return api.SUCCESS
