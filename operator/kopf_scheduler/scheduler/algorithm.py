"""The pure scheduling decision for one pod: which nodes fit, how they score, which one wins.

This mirrors upstream's ``schedulePod``: PreFilter, the nominated-node fast path, Filter over a
round-robin window of nodes sized by ``numFeasibleNodesToFind``, PreScore and Score, and a
uniformly random choice among the top-scored nodes from the profile's seeded RNG.

Filter and Score run either plugin by plugin, node by node (the reference path), or, when the
profile and the pod allow it, vectorised over all nodes at once
(:mod:`kopf_scheduler.scheduler.fast_path`); both make identical decisions, consume the RNG
identically and leave the same round-robin start index. With the fast path, the plugins that
count pods across the cluster (PodTopologySpread, InterPodAffinity) also get their counts from
its node columns. ``Algorithm(..., fast_path=False)`` keeps every attempt on the reference path.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.node_columns.mirror import IntArray
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodePluginScores,
    NodeToStatus,
)
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.scheduler.fast_path import FastPath
from kopf_scheduler.scheduler.fast_path.engine import feasible_infos

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class NoNodesAvailableError(Exception):
    def __str__(self) -> str:
        return NO_NODES_AVAILABLE


class SchedulingError(Exception):
    """A plugin failed with an Error status (not a rejection)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (upstream's adaptive percentage)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = 50 - num_all_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    count = num_all_nodes * percentage // 100
    return max(count, MIN_FEASIBLE_NODES_TO_FIND)


class Decision:
    """What one scheduling attempt found; also the raw material of explanations.

    ``feasible_nodes`` and ``scores`` may be given as functions that build the lists: the
    vectorised path builds these per-node lists only when someone reads them.
    """

    __slots__ = ("_feasible", "_scores", "diagnosis", "evaluated_nodes", "suggested_host")

    def __init__(
        self,
        suggested_host: str,
        evaluated_nodes: int,
        feasible_nodes: list[str] | Callable[[], list[str]],
        diagnosis: Diagnosis,
        scores: list[NodePluginScores] | Callable[[], list[NodePluginScores]] | None = None,
    ) -> None:
        self.suggested_host = suggested_host
        self.evaluated_nodes = evaluated_nodes
        self.diagnosis = diagnosis
        self._feasible = feasible_nodes
        self._scores = scores if scores is not None else []

    @property
    def feasible_nodes(self) -> list[str]:
        if callable(self._feasible):
            self._feasible = self._feasible()
        return self._feasible

    @property
    def scores(self) -> list[NodePluginScores]:
        if callable(self._scores):
            self._scores = self._scores()
        return self._scores

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (
            self.suggested_host == other.suggested_host
            and self.evaluated_nodes == other.evaluated_nodes
            and self.feasible_nodes == other.feasible_nodes
            and self.diagnosis == other.diagnosis
            and self.scores == other.scores
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Decision(suggested_host={self.suggested_host!r}, "
            f"evaluated_nodes={self.evaluated_nodes}, feasible_nodes={self.feasible_nodes!r})"
        )


class Algorithm:
    """Holds the round-robin start index across cycles; one per scheduler."""

    def __init__(
        self,
        rng: random.Random,
        global_percentage: int | None = None,
        *,
        fast_path: bool = True,
    ) -> None:
        self.rng = rng
        self.global_percentage = global_percentage
        self.next_start_node_index = 0
        self.fast_path: FastPath | None = FastPath() if fast_path else None

    def schedule_pod(
        self, framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> Decision:
        """Choose a node or raise FitError / NoNodesAvailableError / SchedulingError."""
        all_nodes = snapshot.node_info_list
        if not all_nodes:
            raise NoNodesAvailableError()
        feasible, diagnosis, positions = self._find(framework, state, pod, snapshot)
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return Decision(feasible[0].name, evaluated, [feasible[0].name], diagnosis)
        fast = self.fast_path
        if fast is not None and positions is not None and framework.has_score_plugins():
            status = framework.run_pre_score(state, pod, feasible)
            if not status.is_success():
                raise SchedulingError(status)
            started = framework.handle.now()
            result = fast.score(framework, state, pod, positions)
            if result is not None:
                framework.observe_extension_point("Score", started, SUCCESS)
                index = FastPath.select_host(result.totals, self.rng)
                return Decision(
                    result.name(index),
                    evaluated,
                    result.names,
                    diagnosis,
                    result.node_plugin_scores,
                )
            scores, status = framework.run_score(state, pod, feasible)
            if not status.is_success():
                raise SchedulingError(status)
        else:
            scores = self.prioritize_nodes(framework, state, pod, feasible)
        host = self.select_host(scores)
        return Decision(host, evaluated, [n.name for n in feasible], diagnosis, scores)

    def feasible_everywhere(
        self, framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> list[NodeInfo]:
        """Every node that passes PreFilter and Filter for ``pod``, without stopping at the number
        of nodes to score; the round-robin start of the next cycle is left as it was.

        A question about the whole cluster (how many copies fit) asks this; scheduling does not.
        """
        start = self.next_start_node_index
        try:
            feasible, _, _ = self._find(
                framework, state, pod, snapshot, to_find=len(snapshot.node_info_list)
            )
        finally:
            self.next_start_node_index = start
        return feasible

    def _find(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        snapshot: Snapshot,
        *,
        to_find: int | None = None,
    ) -> tuple[list[NodeInfo], Diagnosis, IntArray | None]:
        """Feasible nodes, the diagnosis, and (vectorised path only) the feasible positions;
        up to ``to_find`` feasible nodes (default: the number of nodes to score)."""
        diagnosis = Diagnosis(NodeToStatus())
        all_nodes = snapshot.node_info_list
        if self.fast_path is not None:
            self.fast_path.offer_counters(state, snapshot)
        pre_result, status, plugins = framework.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins |= plugins
        if not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status.absent = status
            diagnosis.pre_filter_msg = status.message()
            _add_plugin_status(diagnosis, status)
            return [], diagnosis, None

        if pod.nominated_node_name:
            nominated = snapshot.get(pod.nominated_node_name)
            if nominated is not None and (
                pre_result is None
                or pre_result.node_names is None
                or nominated.name in pre_result.node_names
            ):
                node_status = framework.run_filter_plugins_with_nominated_pods(
                    state, pod, nominated
                )
                if node_status.is_success():
                    return [nominated], diagnosis, None
                if not node_status.is_rejected():
                    raise SchedulingError(node_status)

        nodes = all_nodes
        positions: IntArray | None = None
        feasible: list[NodeInfo] | None = None
        if pre_result is not None and pre_result.node_names is not None:
            nodes = snapshot.in_list_order(pre_result.node_names)
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",
            )
        elif self.fast_path is not None and framework.has_filter_plugins():
            result = self.fast_path.find_feasible(
                framework,
                state,
                pod,
                snapshot,
                diagnosis.node_to_status,
                lambda status: _add_plugin_status(diagnosis, status),
                self.next_start_node_index,
                to_find or self._num_to_find(framework, len(nodes)),
            )
            if result is not None:
                positions = result.feasible
                feasible = feasible_infos(self.fast_path.mirror, positions)
        if feasible is None:
            feasible = self._find_nodes_that_pass_filters(
                framework, state, pod, diagnosis, nodes, to_find
            )
        self.next_start_node_index = (
            self.next_start_node_index + len(feasible) + len(diagnosis.node_to_status)
        ) % len(all_nodes)
        return feasible, diagnosis, positions

    def _num_to_find(self, framework: Framework, count: int) -> int:
        if not framework.has_score_plugins():
            return 1
        return num_feasible_nodes_to_find(
            framework.percentage_of_nodes_to_score
            if framework.percentage_of_nodes_to_score is not None
            else self.global_percentage,
            count,
        )

    def _find_nodes_that_pass_filters(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
        to_find: int | None = None,
    ) -> list[NodeInfo]:
        count = len(nodes)
        if count == 0:
            return []
        to_find = to_find or self._num_to_find(framework, count)
        start = self.next_start_node_index % count
        if not framework.has_filter_plugins():
            return [nodes[(start + i) % count] for i in range(min(to_find, count))]
        feasible: list[NodeInfo] = []
        statuses = diagnosis.node_to_status
        run = framework.run_filter_plugins_with_nominated_pods
        for offset in range(count):
            node = nodes[(start + offset) % count]
            status = run(state, pod, node)
            if status.code == Code.SUCCESS:
                feasible.append(node)
                if len(feasible) >= to_find:
                    break
            elif status.is_rejected():
                statuses.set(node.name, status)
                _add_plugin_status(diagnosis, status)
            else:
                raise SchedulingError(status)
        return feasible

    def prioritize_nodes(
        self, framework: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> list[NodePluginScores]:
        if not framework.has_score_plugins():
            return [NodePluginScores(n.name, {}, 1) for n in nodes]
        status = framework.run_pre_score(state, pod, nodes)
        if not status.is_success():
            raise SchedulingError(status)
        scores, status = framework.run_score(state, pod, nodes)
        if not status.is_success():
            raise SchedulingError(status)
        return scores

    def select_host(self, scores: list[NodePluginScores]) -> str:
        """The top-scored node; ties broken uniformly at random (reservoir sampling)."""
        if not scores:
            raise ValueError("empty priority list")
        best = scores[0]
        ties = 1
        for candidate in scores[1:]:
            if candidate.total > best.total:
                best = candidate
                ties = 1
            elif candidate.total == best.total:
                ties += 1
                if self.rng.randrange(ties) == 0:
                    best = candidate
        return best.name


def _add_plugin_status(diagnosis: Diagnosis, status: Status) -> None:
    if not status.plugin:
        return
    if status.code == Code.PENDING:
        diagnosis.pending_plugins.add(status.plugin)
    else:
        diagnosis.unschedulable_plugins.add(status.plugin)
