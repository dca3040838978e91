"""TaintToleration: keep pods off nodes whose taints they do not tolerate, and prefer nodes with
fewer untolerated ``PreferNoSchedule`` taints.

Filter rejects a node that has a ``NoSchedule`` or ``NoExecute`` taint that none of the pod's
tolerations covers. The rejection is UnschedulableAndUnresolvable: preempting pods never removes
a taint. The reason is the generic ``node(s) had untolerated taint(s)``: v1.34 patch releases
from the cherry-pick of kubernetes/kubernetes#134740 (release-1.34, #135023) on stopped naming the
taint key and value in pod statuses, since taints may be sensitive; earlier v1.34 releases said
``node(s) had untolerated taint {key: value}``.

Scoring counts, per node, the ``PreferNoSchedule`` taints that the pod's ``PreferNoSchedule`` (or
effect-less) tolerations do not cover, then normalises in reverse, so the node with the most such
taints gets 0 and a node with none gets 100. The registry gives the plugin weight 3.

The batch Filter and Score evaluate each distinct set of node taints once per toleration list
(the node columns number the sets) and look the answer up for every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
    tolerations_tolerate,
)

NAME = "TaintToleration"
REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
"""The Filter reason (v1.34 patch releases carrying kubernetes/kubernetes#135023)."""

DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


@dataclass(frozen=True, slots=True, eq=False)
class _PreScoreState(api.SharedState):
    """The pod's tolerations that can cover a ``PreferNoSchedule`` taint. Never modified."""

    tolerations: tuple[Toleration, ...]


PRE_SCORE_KEY: api.StateKey[_PreScoreState] = api.StateKey("PreScore" + NAME)


def prefer_no_schedule_tolerations(tolerations: tuple[Toleration, ...]) -> tuple[Toleration, ...]:
    """Tolerations with effect ``PreferNoSchedule`` or no effect (which covers every effect)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]
) -> int:
    """How many ``PreferNoSchedule`` taints none of ``tolerations`` covers."""
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate(tolerations, taint)
    )


def _untolerated(node: Node, pod: Pod) -> bool:
    return find_untolerated_taint(node.taints, pod.tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None


def _is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue only when the change turns a node with an untolerated taint into one without."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        return api.QueueingHint.QUEUE
    was_untolerated = True if old is None else _untolerated(old, pod)
    if was_untolerated and not _untolerated(new, pod):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _is_schedulable_after_pod_toleration_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Only a toleration change of the rejected pod itself can help it."""
    if not isinstance(new, Pod):
        return api.QueueingHint.QUEUE
    if new.uid == pod.uid:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


class TaintToleration:
    name: ClassVar[str] = NAME

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        node = node_info.node
        if node is None:
            return api.Status(api.Code.ERROR, "node not found")
        if not _untolerated(node, pod):
            return api.SUCCESS
        return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNTOLERATED)

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        state.write(PRE_SCORE_KEY, _PreScoreState(prefer_no_schedule_tolerations(pod.tolerations)))
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        node = node_info.node
        if node is None:
            return 0, api.Status(api.Code.ERROR, "node not found")
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            return 0, api.Status(
                api.Code.ERROR, f"{PRE_SCORE_KEY.name!r} not found in the cycle state"
            )
        return count_intolerable_prefer_no_schedule(node.taints, pre_score.tolerations), api.SUCCESS

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_score(
        self, state: api.CycleState, pod: Pod, scores: list[api.NodeScore]
    ) -> api.Status:
        return api.default_normalize_score(api.MAX_NODE_SCORE, True, scores)

    # Batch Filter and Score --------------------------------------------------------------------

    def batch_filter(self) -> TaintToleration:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        fails = nodes.untolerated_mask(pod)
        return api.NodeRejections(fails) if fails is not None else None

    def batch_score(self) -> TaintToleration:
        return self

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score = state.get(PRE_SCORE_KEY)
        if pre_score is None:
            raise api.Fallback
        table = nodes.per_taint_set(
            PREFER_NO_SCHEDULE,
            pre_score.tolerations,
            count_intolerable_prefer_no_schedule,
            np.int64,
        )
        counts: api.IntArray = table[nodes.mirror.taint_id[positions]]
        highest = int(counts.max()) if len(counts) else 0
        if highest <= 0:
            return np.full(len(positions), api.MAX_NODE_SCORE, dtype=np.int64)
        return api.MAX_NODE_SCORE - api.go_div_array(api.MAX_NODE_SCORE * counts, highest)

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_TAINT
                ),
                _is_schedulable_after_node_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, api.ActionType.UPDATE_POD_TOLERATIONS),
                _is_schedulable_after_pod_toleration_change,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> TaintToleration:
    api.reject_unknown(api.ensure_mapping(args), set())
    return TaintToleration()
