"""PodTopologySpread and InterPodAffinity count through a counter the scheduler offers in the
cycle state, and walk the pods themselves when none is offered or the counter declines.

The counters here are stand-ins that record what they were asked; that the fast path's real
counters answer exactly what the walks compute is shown in ``tests/scheduler``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Code
from kopf_scheduler.model.affinity import AffinityTerm, TopologySpreadConstraint
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import inter_pod_affinity, pod_topology_spread
from kopf_scheduler.plugins.inter_pod_affinity import filtering as affinity_filtering
from kopf_scheduler.plugins.inter_pod_affinity import scoring as affinity_scoring
from kopf_scheduler.plugins.inter_pod_affinity.counting import AFFINITY_COUNTER_KEY
from kopf_scheduler.plugins.inter_pod_affinity.filtering import TopologyCounts
from kopf_scheduler.plugins.inter_pod_affinity.scoring import TopologyScorer, TopologyScores
from kopf_scheduler.plugins.pod_topology_spread import filtering as spread_filtering
from kopf_scheduler.plugins.pod_topology_spread import scoring as spread_scoring
from kopf_scheduler.plugins.pod_topology_spread.counting import DOMAIN_COUNTER_KEY
from tests.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
GREEN = {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": HOSTNAME}


def _snapshot() -> Snapshot:
    infos = []
    for index, zone in enumerate("aab"):
        node = make_node(f"n{index}").zone(zone).node()
        pods = [
            make_pod(f"green{index}").node(node.name).labels(color="green").pod(),
            make_pod(f"guard{index}")
            .node(node.name)
            .affinity(
                {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [GREEN]}}
            )
            .pod(),
        ]
        infos.append(NodeInfo(node, tuple(pods[: index + 1])))
    return Snapshot.from_node_infos(infos)


class DomainCounter:
    def __init__(self, answer: dict[int, dict[str, int]] | None) -> None:
        self.answer = answer
        self.asked: list[tuple[bool, list[int]]] = []

    def domain_totals(
        self,
        pod: Pod,
        constraints: Sequence[TopologySpreadConstraint],
        nodes: Sequence[NodeInfo],
        *,
        require_all_keys: bool,
        indices: Sequence[int],
    ) -> dict[int, dict[str, int]] | None:
        self.asked.append((require_all_keys, list(indices)))
        return self.answer


class AffinityCounter:
    def __init__(self, answers: bool) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def existing_anti_affinity_counts(
        self, pod: Pod, namespace_labels: Mapping[str, str], nodes: Sequence[NodeInfo]
    ) -> TopologyCounts | None:
        self.asked.append("existing")
        return {(HOSTNAME, "n9"): 4} if self.answers else None

    def incoming_affinity_counts(
        self,
        affinity_terms: Sequence[AffinityTerm],
        anti_affinity_terms: Sequence[AffinityTerm],
        nodes: Sequence[NodeInfo],
    ) -> tuple[TopologyCounts, TopologyCounts] | None:
        self.asked.append("incoming")
        return ({}, {(HOSTNAME, "n8"): 2}) if self.answers else None

    def topology_scores(
        self, scorer: TopologyScorer, nodes: Sequence[NodeInfo]
    ) -> TopologyScores | None:
        self.asked.append("scores")
        return {HOSTNAME: {"n7": -3}} if self.answers else None


def _spreading_pod() -> Pod:
    builder = make_pod("p").labels(color="green")
    for when in ("DoNotSchedule", "ScheduleAnyway"):
        builder.spread(1, ZONE, when, {"color": "green"})
    builder.spread(1, HOSTNAME, "ScheduleAnyway", {"color": "green"})
    return builder.pod()


def _spread_states(counter: Any) -> tuple[Any, Any]:
    snapshot = _snapshot()
    plugin = pod_topology_spread.new(None, Handle(snapshot=snapshot))
    state = CycleState()
    if counter is not None:
        state.write(DOMAIN_COUNTER_KEY, counter)
    pod = _spreading_pod()
    nodes = snapshot.node_info_list
    assert plugin.pre_filter(state, pod, nodes)[1].is_success()
    assert plugin.pre_score(state, pod, nodes).is_success()
    filtered = state.read(spread_filtering.PRE_FILTER_KEY)
    scored = state.read(spread_scoring.PRE_SCORE_KEY)
    return (
        (filtered.match_num, [paths.paths for paths in filtered.critical_paths]),
        (scored.pod_counts, scored.weights),
    )


def test_spreading_walks_the_pods_when_the_counter_declines() -> None:
    counter = DomainCounter(None)
    assert _spread_states(counter) == _spread_states(None)
    assert _spread_states(None)[0][0] == [{"a": 2, "b": 1}]
    # PreFilter asks for its one constraint; PreScore for the zone constraint only (hostname
    # counts are the node's own).
    assert counter.asked == [(True, [0]), (True, [0])]


def test_spreading_counts_come_from_the_counter_when_it_answers() -> None:
    counter = DomainCounter({0: {"b": 7, "a": 5}})
    (match_num, paths), (pod_counts, _) = _spread_states(counter)
    assert match_num == [{"b": 7, "a": 5}]
    assert paths == [[("a", 5), ("b", 7)]]
    assert pod_counts[0] == {"a": 5, "b": 7}
    assert pod_counts[1] == {}


def _affinity_run(counter: Any) -> tuple[Any, ...]:
    snapshot = _snapshot()
    plugin = inter_pod_affinity.new(None, Handle(snapshot=snapshot))
    state = CycleState()
    if counter is not None:
        state.write(AFFINITY_COUNTER_KEY, counter)
    pod = (
        make_pod("p")
        .labels(color="green")
        .affinity({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [GREEN]}})
        .pod()
    )
    nodes = snapshot.node_info_list
    assert plugin.pre_filter(state, pod, nodes)[1].is_success()
    pre_score = plugin.pre_score(state, pod, nodes)
    filtered = state.read(affinity_filtering.PRE_FILTER_KEY)
    scored = state.get(affinity_scoring.PRE_SCORE_KEY)
    return (
        filtered.existing_anti_affinity_counts,
        filtered.anti_affinity_counts,
        pre_score.code,
        None if scored is None else scored.topology_scores,
    )


def test_affinity_walks_the_pods_when_the_counter_declines() -> None:
    counter = AffinityCounter(answers=False)
    walked = _affinity_run(None)
    assert _affinity_run(counter) == walked
    assert walked == (
        {(HOSTNAME, "n1"): 1, (HOSTNAME, "n2"): 1},
        {(HOSTNAME, "n0"): 1, (HOSTNAME, "n1"): 1, (HOSTNAME, "n2"): 1},
        Code.SKIP,
        None,
    )
    assert counter.asked == ["existing", "incoming", "scores"]


def test_affinity_counts_come_from_the_counter_when_it_answers() -> None:
    assert _affinity_run(AffinityCounter(answers=True)) == (
        {(HOSTNAME, "n9"): 4},
        {(HOSTNAME, "n8"): 2},
        Code.SUCCESS,
        {HOSTNAME: {"n7": -3}},
    )
