"""The pure scheduling decision for one pod: which nodes fit, how they score, which one wins.

This mirrors upstream's ``schedulePod``: PreFilter, the nominated-node fast path, Filter over a
round-robin window of nodes sized by ``numFeasibleNodesToFind``, PreScore and Score, and a
uniformly random choice among the top-scored nodes from the profile's seeded RNG.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import (
    Diagnosis,
    FitError,
    NodePluginScores,
    NodeToStatus,
)
from kopf_scheduler.model.pod import Pod

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


@dataclass
class Decision:
    """What one scheduling attempt found; also the raw material of explanations."""

    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: list[str]
    diagnosis: Diagnosis
    scores: list[NodePluginScores] = field(default_factory=list)


class Algorithm:
    """Holds the round-robin start index across cycles; one per scheduler."""

    def __init__(self, rng: random.Random, global_percentage: int | None = None) -> None:
        self.rng = rng
        self.global_percentage = global_percentage
        self.next_start_node_index = 0

    def schedule_pod(
        self, framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> Decision:
        """Choose a node or raise FitError / NoNodesAvailableError / SchedulingError."""
        all_nodes = snapshot.node_info_list
        if not all_nodes:
            raise NoNodesAvailableError()
        feasible, diagnosis = self.find_nodes_that_fit_pod(framework, state, pod, snapshot)
        if not feasible:
            raise FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        names = [n.name for n in feasible]
        if len(feasible) == 1:
            return Decision(feasible[0].name, evaluated, names, diagnosis)
        scores = self.prioritize_nodes(framework, state, pod, feasible)
        host = self.select_host(scores)
        return Decision(host, evaluated, names, diagnosis, scores)

    def find_nodes_that_fit_pod(
        self, framework: Framework, state: CycleState, pod: Pod, snapshot: Snapshot
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis(NodeToStatus())
        all_nodes = snapshot.node_info_list
        pre_result, status, plugins = framework.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins |= plugins
        if not status.is_success():
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.node_to_status.absent = status
            diagnosis.pre_filter_msg = status.message()
            _add_plugin_status(diagnosis, status)
            return [], diagnosis

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
                    return [nominated], diagnosis
                if not node_status.is_rejected():
                    raise SchedulingError(node_status)

        nodes = all_nodes
        if pre_result is not None and pre_result.node_names is not None:
            nodes = [n for n in all_nodes if n.name in pre_result.node_names]
            diagnosis.node_to_status.absent = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]",
            )
        feasible = self._find_nodes_that_pass_filters(framework, state, pod, diagnosis, nodes)
        self.next_start_node_index = (
            self.next_start_node_index + len(feasible) + len(diagnosis.node_to_status)
        ) % len(all_nodes)
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(
        self,
        framework: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
    ) -> list[NodeInfo]:
        count = len(nodes)
        if count == 0:
            return []
        to_find = num_feasible_nodes_to_find(
            framework.percentage_of_nodes_to_score
            if framework.percentage_of_nodes_to_score is not None
            else self.global_percentage,
            count,
        )
        if not framework.has_score_plugins():
            to_find = 1
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
