"""The PodTopologySpread plugin object: arguments, extension points and queueing hints.

Filtering lives in :mod:`.filtering`, scoring in :mod:`.scoring`, the constraint lookup and the
counting rules they share in :mod:`.common`, and both over whole node columns in :mod:`.batch`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.affinity import (
    DO_NOT_SCHEDULE,
    HONOR,
    SCHEDULE_ANYWAY,
    TopologySpreadConstraint,
)
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.pod_topology_spread import filtering, scoring
from kopf_scheduler.plugins.pod_topology_spread.batch import SpreadColumns
from kopf_scheduler.plugins.pod_topology_spread.common import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    ConstraintSource,
    node_labels_match,
)
from kopf_scheduler.plugins.pod_topology_spread.counting import DOMAIN_COUNTER_KEY, DomainCounter

NAME = "PodTopologySpread"


def _parse_default_constraints(raw: Any) -> tuple[TopologySpreadConstraint, ...]:
    field = "args.defaultConstraints"
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise api.InvalidArgsError(field, "must be a list")
    constraints: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(raw):
        entry_field = f"{field}[{index}]"
        if isinstance(entry, Mapping) and entry.get("labelSelector") is not None:
            raise api.InvalidArgsError(
                f"{entry_field}.labelSelector",
                "constraint must not define a selector, as they deduced for each pod",
            )
        try:
            constraint = TopologySpreadConstraint.parse(entry, entry_field, {})
        except InvalidObjectError as error:
            raise api.InvalidArgsError(error.field, error.reason) from None
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise api.InvalidArgsError(
                entry_field,
                f"Duplicate value: {{{constraint.topology_key}, {constraint.when_unsatisfiable}}}",
            )
        seen.add(pair)
        constraints.append(constraint)
    return tuple(constraints)


@dataclass(frozen=True)
class Args:
    """``PodTopologySpreadArgs``.

    ``defaulting_type`` ``System`` (the default) gives pods without constraints of their own the
    built-in defaults (hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway); ``List``
    gives them ``default_constraints`` (possibly none). Default constraints select, per pod, the
    pods of the workloads that select or own it; see :mod:`.common`.
    """

    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @classmethod
    def parse(cls, raw: Any) -> Args:
        args = api.ensure_mapping(raw)
        api.reject_unknown(args, {"defaultConstraints", "defaultingType"})
        defaulting_type = args.get("defaultingType") or SYSTEM_DEFAULTING
        if defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise api.InvalidArgsError(
                "args.defaultingType",
                f'supported values: "{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"; '
                f"got {defaulting_type!r}",
            )
        constraints = _parse_default_constraints(args.get("defaultConstraints"))
        if defaulting_type == SYSTEM_DEFAULTING and constraints:
            raise api.InvalidArgsError(
                "args.defaultingType",
                f'Invalid value: "{SYSTEM_DEFAULTING}": when .defaultConstraints are not empty',
            )
        return cls(constraints, defaulting_type)


def _not_found(key: api.StateKey[Any]) -> api.Status:
    return api.Status.from_error(RuntimeError(f'reading "{key.name}" from cycleState: not found'))


def _involved_in_spreading(incoming: Pod, pod_with_spreading: Pod) -> bool:
    return incoming.uid == pod_with_spreading.uid or bool(
        incoming.node_name and incoming.namespace == pod_with_spreading.namespace
    )


def _tolerations_key(pod: Pod) -> tuple[tuple[str, str, str, str, int | None], ...]:
    return tuple(
        (t.key, t.operator, t.value, t.effect, t.toleration_seconds) for t in pod.tolerations
    )


def _taints_key(node: Node) -> tuple[tuple[str, str, str], ...]:
    return tuple((t.key, t.value, t.effect) for t in node.taints)


def _domain_counter(state: api.CycleState) -> DomainCounter | None:
    """The counter offered for the attempt: one of its own, else the scheduler's columns."""
    counter = state.get(DOMAIN_COUNTER_KEY)
    if counter is not None:
        return counter
    nodes = state.get(api.NODE_COLUMNS_KEY)
    return SpreadColumns(nodes) if nodes is not None else None


class PodTopologySpread(api.CountingPreFilterExtensions):
    name: ClassVar[str] = NAME

    def __init__(self, args: Args, handle: api.Handle) -> None:
        self.args = args
        self._handle = handle
        system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        defaults = SYSTEM_DEFAULT_CONSTRAINTS if system_defaulted else args.default_constraints
        self.constraint_source = ConstraintSource(defaults, system_defaulted, handle)

    # PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        constraints = self.constraint_source.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, api.SKIP
        state.write(
            filtering.PRE_FILTER_KEY,
            filtering.build_pre_filter_state(pod, constraints, nodes, _domain_counter(state)),
        )
        return None, api.SUCCESS

    def count_pod(
        self, state: api.CycleState, pod: Pod, other: Pod, node_info: api.NodeInfo, delta: int
    ) -> api.Status:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            return _not_found(filtering.PRE_FILTER_KEY)
        if node_info.node is not None:
            pre_filter_state.update_with_pod(other, pod, node_info.node, delta)
        return api.SUCCESS

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            return _not_found(filtering.PRE_FILTER_KEY)
        node = node_info.node
        if node is None:
            return api.Status.from_error(RuntimeError("node not found"))
        reason = filtering.check_node(pre_filter_state, pod, node)
        if reason is None:
            return api.SUCCESS
        if reason == filtering.REASON_NODE_LABEL_NOT_MATCH:
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)
        return api.Status(api.Code.UNSCHEDULABLE, reason)

    # PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]) -> api.Status:
        all_nodes = self._handle.snapshot.node_info_list
        if not all_nodes:
            return api.SKIP
        constraints = self.constraint_source.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return api.SKIP
        # Nodes without a zone still spread by hostname under the system defaults.
        require_all = bool(pod.topology_spread_constraints) or not (
            self.constraint_source.system_defaulted
        )
        state.write(
            scoring.PRE_SCORE_KEY,
            scoring.build_pre_score_state(
                pod, constraints, nodes, all_nodes, require_all, _domain_counter(state)
            ),
        )
        return api.SUCCESS

    def score(
        self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo
    ) -> tuple[int, api.Status]:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            return 0, _not_found(scoring.PRE_SCORE_KEY)
        return scoring.node_score(pre_score_state, pod, node_info), api.SUCCESS

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(
        self, state: api.CycleState, pod: Pod, scores: list[api.NodeScore]
    ) -> api.Status:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            return _not_found(scoring.PRE_SCORE_KEY)
        return scoring.normalize(pre_score_state, scores)

    # Batch Filter and Score --------------------------------------------------------------------

    def batch_filter(self) -> PodTopologySpread:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        pre_filter_state = state.get(filtering.PRE_FILTER_KEY)
        if pre_filter_state is None:
            raise api.Fallback
        return SpreadColumns(nodes).filter_failures(pre_filter_state, pod)

    def batch_score(self) -> PodTopologySpread:
        return self

    def score_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, positions: api.IntArray
    ) -> api.IntArray:
        pre_score_state = state.get(scoring.PRE_SCORE_KEY)
        if pre_score_state is None:
            raise api.Fallback
        return SpreadColumns(nodes).scores(pre_score_state, pod, positions)

    # Queueing ------------------------------------------------------------------------------

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> api.QueueingHint:
        """Queue when an assigned pod in the namespace that a ``DoNotSchedule`` selector
        matches appears or disappears, when a label change flips such a match, or when the pod
        itself gets new tolerations while a constraint honours taints."""
        if (old is not None and not isinstance(old, Pod)) or (
            new is not None and not isinstance(new, Pod)
        ):
            return api.QueueingHint.QUEUE
        if (new is not None and not _involved_in_spreading(new, pod)) or (
            old is not None and not _involved_in_spreading(old, pod)
        ):
            return api.QueueingHint.QUEUE_SKIP
        constraints = self.constraint_source.constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            if (
                pod.uid == new.uid
                and _tolerations_key(new) != _tolerations_key(old)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return api.QueueingHint.QUEUE
            if new.labels == old.labels:
                return api.QueueingHint.QUEUE_SKIP
            for c in constraints:
                if c.selector.matches(old.labels) != c.selector.matches(new.labels):
                    return api.QueueingHint.QUEUE
            return api.QueueingHint.QUEUE_SKIP
        changed = new if new is not None else old
        if changed is None:
            return api.QueueingHint.QUEUE_SKIP
        if any(c.selector.matches(changed.labels) for c in constraints):
            return api.QueueingHint.QUEUE
        return api.QueueingHint.QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> api.QueueingHint:
        """Queue when a node starts or stops carrying every topology key, changes the value
        of one, changes its taints while it carries them all, or is added or deleted with them."""
        if (old is not None and not isinstance(old, Node)) or (
            new is not None and not isinstance(new, Node)
        ):
            return api.QueueingHint.QUEUE
        constraints = self.constraint_source.constraints(pod, DO_NOT_SCHEDULE)
        old_matching = old is not None and node_labels_match(old.labels, constraints)
        new_matching = new is not None and node_labels_match(new.labels, constraints)
        if old is not None and new is not None:
            if old_matching != new_matching:
                return api.QueueingHint.QUEUE
            if new_matching and (
                any(
                    old.labels.get(c.topology_key, "") != new.labels.get(c.topology_key, "")
                    for c in constraints
                )
                or _taints_key(old) != _taints_key(new)
            ):
                return api.QueueingHint.QUEUE
            return api.QueueingHint.QUEUE_SKIP
        if new is not None:
            return api.QueueingHint.QUEUE if new_matching else api.QueueingHint.QUEUE_SKIP
        return api.QueueingHint.QUEUE if old_matching else api.QueueingHint.QUEUE_SKIP

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        # With queueing hints (always on in v1.34) a pod rejected because of taint-honouring
        # constraints is retried when it gains tolerations.
        pod_actions = (
            api.ActionType.ADD
            | api.ActionType.UPDATE_POD_LABEL
            | api.ActionType.UPDATE_POD_TOLERATIONS
            | api.ActionType.DELETE
        )
        node_actions = (
            api.ActionType.ADD
            | api.ActionType.DELETE
            | api.ActionType.UPDATE_NODE_LABEL
            | api.ActionType.UPDATE_NODE_TAINT
        )
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, pod_actions),
                self.is_schedulable_after_pod_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.NODE, node_actions),
                self.is_schedulable_after_node_change,
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> PodTopologySpread:
    return PodTopologySpread(Args.parse(args), handle)
