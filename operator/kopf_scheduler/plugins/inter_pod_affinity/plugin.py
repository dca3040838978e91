"""The InterPodAffinity plugin object: arguments, extension points and queueing hints.

Filtering lives in :mod:`.filtering`, scoring in :mod:`.scoring`, both over whole node columns in
:mod:`.batch`; this module wires them to the framework, with the counting delegated to an
:class:`~.counting.AffinityCounter` when one is offered or the scheduler offers its columns.
Filter codes follow upstream: a node that breaks the pod's required affinity is
UnschedulableAndUnresolvable (evicting pods cannot create a matching pod), while anti-affinity
violations, either way round, are Unschedulable because preemption can remove the offending pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import AffinityTerm
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.inter_pod_affinity import filtering, scoring
from kopf_scheduler.plugins.inter_pod_affinity.batch import AffinityColumns
from kopf_scheduler.plugins.inter_pod_affinity.counting import (
    AFFINITY_COUNTER_KEY,
    AffinityCounter,
)

NAME = "InterPodAffinity"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
_NO_NAMESPACE_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True)
class Args:
    """``InterPodAffinityArgs``.

    ``hard_pod_affinity_weight`` (0-100) is the score an existing pod's *required* affinity term
    contributes when the incoming pod matches it; with ``ignore_preferred_terms_of_existing_pods``
    existing pods' terms are not scored for an incoming pod that has no preferred terms itself.
    """

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False

    @classmethod
    def parse(cls, raw: Any) -> Args:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"})
        weight = api.int_arg(
            args,
            "hardPodAffinityWeight",
            DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            "args",
            minimum=0,
            maximum=100,
        )
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise api.InvalidArgsError(
                "args.ignorePreferredTermsOfExistingPods", f"must be a boolean, got {ignore!r}"
            )
        return cls(weight, ignore)


def _not_found(key: api.StateKey[Any]) -> api.Status:
    return api.Status.from_error(
        RuntimeError(f'error reading "{key.name}" from cycleState: not found')
    )


def _matches_all(terms: tuple[AffinityTerm, ...], pod: Pod) -> bool:
    if not terms:
        return False
    return all(t.matches(pod.namespace, pod.labels, _NO_NAMESPACE_LABELS) for t in terms)


def is_schedulable_after_pod_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when an assigned pod starts matching the pod's affinity, or stops (or, deleted,
    stopped) matching its anti-affinity; unassigned pods never help."""
    if (old is not None and not isinstance(old, Pod)) or (
        new is not None and not isinstance(new, Pod)
    ):
        return api.QueueingHint.QUEUE
    if (new is not None and not new.node_name) or (old is not None and not old.node_name):
        return api.QueueingHint.QUEUE_SKIP
    terms = pod.pod_affinity_required
    anti_terms = pod.anti_affinity_required
    if old is not None and new is not None:
        if not _matches_all(terms, old) and _matches_all(terms, new):
            return api.QueueingHint.QUEUE
        if _matches_all(anti_terms, old) and not _matches_all(anti_terms, new):
            return api.QueueingHint.QUEUE
        return api.QueueingHint.QUEUE_SKIP
    if new is not None:
        return api.QueueingHint.QUEUE if _matches_all(terms, new) else api.QueueingHint.QUEUE_SKIP
    if old is None or not _matches_all(anti_terms, old):
        return api.QueueingHint.QUEUE_SKIP
    return api.QueueingHint.QUEUE


def is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when a node gains (or changes) an affinity topology key, loses or changes an
    anti-affinity topology key, or is added while the pod has anti-affinity."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return api.QueueingHint.QUEUE
    for term in pod.pod_affinity_required:
        key = term.topology_key
        if old is None:
            if key in new.labels:
                return api.QueueingHint.QUEUE
            continue
        old_value = old.labels.get(key)
        new_value = new.labels.get(key)
        if new_value is not None and old_value != new_value:
            return api.QueueingHint.QUEUE
    for term in pod.anti_affinity_required:
        if old is None:
            # A new node either lacks the key (always acceptable) or may join a domain free of
            # the pods this one repels; both are worth a retry.
            return api.QueueingHint.QUEUE
        key = term.topology_key
        old_value = old.labels.get(key)
        new_value = new.labels.get(key)
        if old_value is not None and old_value != new_value:
            return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _affinity_counter(state: api.CycleState) -> AffinityCounter | None:
    """The counter offered for the attempt: one of its own, else the scheduler's columns."""
    counter = state.get(AFFINITY_COUNTER_KEY)
    if counter is not None:
        return counter
    nodes = state.get(api.NODE_COLUMNS_KEY)
    return AffinityColumns(nodes) if nodes is not None else None


class InterPodAffinity(api.CountingPreFilterExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Args, handle: api.Handle) -> None:
        self.args = args
        self._handle = handle

    # PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        snapshot = self._handle.snapshot
        all_namespaces = snapshot.namespace_labels
        affinity_terms = tuple(
            filtering.resolve_incoming_term(t, all_namespaces) for t in pod.pod_affinity_required
        )
        anti_affinity_terms = tuple(
            filtering.resolve_incoming_term(t, all_namespaces) for t in pod.anti_affinity_required
        )
        namespace_labels = dict(snapshot.labels_of_namespace(pod.namespace))
        counter = _affinity_counter(state)
        existing = (
            counter.existing_anti_affinity_counts(pod, namespace_labels, snapshot.node_info_list)
            if counter is not None
            else None
        )
        if existing is None:
            existing = filtering.existing_anti_affinity_counts(
                pod, namespace_labels, snapshot.have_pods_with_required_anti_affinity
            )
        incoming = (
            counter.incoming_affinity_counts(affinity_terms, anti_affinity_terms, nodes)
            if counter is not None
            else None
        )
        affinity, anti_affinity = (
            incoming
            if incoming is not None
            else filtering.incoming_affinity_counts(affinity_terms, anti_affinity_terms, nodes)
        )
        if not existing and not affinity_terms and not anti_affinity_terms:
            return None, api.SKIP
        state.write(
            filtering.PRE_FILTER_KEY,
            filtering.PreFilterState(
                pod,
                affinity_terms=affinity_terms,
                anti_affinity_terms=anti_affinity_terms,
                namespace_labels=namespace_labels,
                existing_anti_affinity_counts=existing,
                affinity_counts=affinity,
                anti_affinity_counts=anti_affinity,
            ),
        )
        return None, api.SUCCESS

    def count_pod(
        self, state: api.CycleState, pod: Pod, other: Pod, node_info: api.NodeInfo, delta: int
    ) -> api.Status:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            return _not_found(filtering.PRE_FILTER_KEY)
        if node_info.node is not None:
            pre_filter_state.update_with_pod(other, node_info.node, delta)
        return api.SUCCESS

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            return _not_found(filtering.PRE_FILTER_KEY)
        node = node_info.node
        if node is None:
            return api.Status.from_error(RuntimeError("node not found"))
        if not filtering.satisfies_pod_affinity(pre_filter_state, node):
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, filtering.REASON_AFFINITY)
        if not filtering.satisfies_pod_anti_affinity(pre_filter_state, node):
            return api.Status(api.Code.UNSCHEDULABLE, filtering.REASON_ANTI_AFFINITY)
        if not filtering.satisfies_existing_pods_anti_affinity(pre_filter_state, node):
            return api.Status(api.Code.UNSCHEDULABLE, filtering.REASON_EXISTING_ANTI_AFFINITY)
        return api.SUCCESS

    # PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        has_preferred = bool(pod.affinity_preferred or pod.anti_affinity_preferred)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_preferred:
            return api.SKIP
        snapshot = self._handle.snapshot
        scorer = scoring.TopologyScorer(
            pod,
            snapshot.labels_of_namespace(pod.namespace),
            snapshot.namespace_labels,
            self.args.hard_pod_affinity_weight,
        )
        counter = _affinity_counter(state)
        scores = (
            counter.topology_scores(scorer, snapshot.node_info_list)
            if counter is not None
            else None
        )
        if scores is None:
            if has_preferred:
                scorer.process_nodes(snapshot.node_info_list, all_pods=True)
            else:
                scorer.process_nodes(snapshot.have_pods_with_affinity, all_pods=False)
            scores = scorer.scores
        if not scores:
            return api.SKIP
        state.write(scoring.PRE_SCORE_KEY, scoring.PreScoreState(scores))
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            return 0, _not_found(scoring.PRE_SCORE_KEY)
        node = node_info.node
        if node is None:
            return 0, api.Status.from_error(RuntimeError("node not found"))
        return scoring.node_score(pre_score_state, node), api.SUCCESS

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(
        self, state: api.CycleState, pod: Pod, scores: list[api.NodeScore]
    ) -> api.Status:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            return _not_found(scoring.PRE_SCORE_KEY)
        return scoring.normalize(pre_score_state, scores)

    # Batch Filter and Score --------------------------------------------------------------------

    def batch_filter(self) -> InterPodAffinity:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            raise api.Fallback
        return AffinityColumns(nodes).filter_failures(pre_filter_state)

    def batch_score(self) -> InterPodAffinity:
        return self

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            raise api.Fallback
        return AffinityColumns(nodes).scores(pre_score_state, positions)

    # Queueing ------------------------------------------------------------------------------

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        # Queueing hints are always on in v1.34, so upstream registers no NodeTaint update
        # (that was only needed to make up for the pre-check of the hint-less queue).
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.POD,
                    api.ActionType.ADD | api.ActionType.UPDATE_POD_LABEL | api.ActionType.DELETE,
                ),
                is_schedulable_after_pod_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_LABEL
                ),
                is_schedulable_after_node_change,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> InterPodAffinity:
    return InterPodAffinity(Args.parse(args), handle)
