import random

import pytest

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import FitError, NodePluginScores
from kopf_scheduler.scheduler.algorithm import (
    Algorithm,
    NoNodesAvailableError,
    num_feasible_nodes_to_find,
)
from tests.builders import make_node, make_pod, node_info
from tests.framework.fakes import FilterByName, PreFilterFixed, ScoreByTable, framework


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        pytest.param(None, 10, 10, id="small-cluster-all"),
        pytest.param(None, 99, 99, id="below-minimum"),
        pytest.param(None, 100, 100, id="at-minimum"),
        pytest.param(None, 1000, 420, id="adaptive-42-percent"),
        pytest.param(None, 5000, 500, id="adaptive-10-percent"),
        pytest.param(None, 6000, 300, id="adaptive-floor-5-percent"),
        pytest.param(None, 10000, 500, id="adaptive-floor-5-percent-large"),
        pytest.param(30, 1000, 300, id="explicit-percentage"),
        pytest.param(1, 1000, 100, id="explicit-below-minimum"),
        pytest.param(100, 5000, 5000, id="all-nodes"),
    ],
)
def test_num_feasible_nodes_to_find(percentage, nodes, expected) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def _snapshot(count: int) -> Snapshot:
    return Snapshot.from_node_infos([node_info(make_node(f"n{i}")) for i in range(count)])


def test_no_nodes() -> None:
    with pytest.raises(NoNodesAvailableError) as info:
        Algorithm(random.Random(0)).schedule_pod(
            framework(), CycleState(), make_pod("p").pod(), Snapshot()
        )
    assert str(info.value) == "no nodes available to schedule pods"


def test_fit_error_collects_statuses_and_plugins() -> None:
    taint = FilterByName(
        "TaintToleration",
        {"n0": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)")},
    )
    fit = FilterByName(
        "NodeResourcesFit",
        {
            "n1": (Code.UNSCHEDULABLE, "Insufficient cpu"),
            "n2": (Code.UNSCHEDULABLE, "Insufficient cpu"),
        },
    )
    with pytest.raises(FitError) as info:
        Algorithm(random.Random(0)).schedule_pod(
            framework(filters=[taint, fit]), CycleState(), make_pod("p").pod(), _snapshot(3)
        )
    assert (
        str(info.value)
        == "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    assert info.value.diagnosis.unschedulable_plugins == {"TaintToleration", "NodeResourcesFit"}


def test_pre_filter_rejection_marks_every_node() -> None:
    reject = PreFilterFixed("Gate", Status(Code.UNSCHEDULABLE, "no way"))
    with pytest.raises(FitError) as info:
        Algorithm(random.Random(0)).schedule_pod(
            framework(pre_filters=[reject]), CycleState(), make_pod("p").pod(), _snapshot(4)
        )
    assert str(info.value) == "0/4 nodes are available: no way."
    diagnosis = info.value.diagnosis
    assert diagnosis.node_to_status.get("n3").code == Code.UNSCHEDULABLE
    assert diagnosis.unschedulable_plugins == {"Gate"}


def test_pre_filter_result_restricts_nodes() -> None:
    only = PreFilterFixed("NodeAffinity", nodes=frozenset({"n2"}))
    filt = FilterByName("F", {})
    decision = Algorithm(random.Random(0)).schedule_pod(
        framework(pre_filters=[only], filters=[filt], scores=[(ScoreByTable("S", {}), 1)]),
        CycleState(),
        make_pod("p").pod(),
        _snapshot(3),
    )
    assert decision.suggested_host == "n2"
    assert filt.calls == ["n2"]


def test_nominated_node_fast_path_skips_other_nodes() -> None:
    filt = FilterByName("F", {})
    decision = Algorithm(random.Random(0)).schedule_pod(
        framework(filters=[filt], scores=[(ScoreByTable("S", {"n0": 100}), 1)]),
        CycleState(),
        make_pod("p").nominated("n2").pod(),
        _snapshot(3),
    )
    assert decision.suggested_host == "n2"
    assert filt.calls == ["n2"]


def test_failed_nominated_node_falls_back_to_all_nodes() -> None:
    filt = FilterByName("F", {"n2": (Code.UNSCHEDULABLE, "Insufficient cpu")})
    decision = Algorithm(random.Random(0)).schedule_pod(
        framework(filters=[filt], scores=[(ScoreByTable("S", {"n0": 100}), 1)]),
        CycleState(),
        make_pod("p").nominated("n2").pod(),
        _snapshot(3),
    )
    assert decision.suggested_host == "n0"


def test_round_robin_start_index_advances() -> None:
    filt = FilterByName("F", {})
    algorithm = Algorithm(random.Random(0))
    fwk = framework(filters=[filt])  # no score plugins: one feasible node is enough
    snapshot = _snapshot(3)
    hosts = [
        algorithm.schedule_pod(fwk, CycleState(), make_pod(f"p{i}").pod(), snapshot).suggested_host
        for i in range(4)
    ]
    assert hosts == ["n0", "n1", "n2", "n0"]


def test_search_stops_at_num_feasible_nodes() -> None:
    filt = FilterByName("F", {})
    algorithm = Algorithm(random.Random(0))
    fwk = framework(filters=[filt], scores=[(ScoreByTable("S", {}), 1)])
    decision = algorithm.schedule_pod(fwk, CycleState(), make_pod("p").pod(), _snapshot(1000))
    assert len(decision.feasible_nodes) == 420
    assert algorithm.next_start_node_index == 420


def test_select_host_is_uniform_among_ties() -> None:
    algorithm = Algorithm(random.Random(7))
    scores = [
        NodePluginScores("a", {}, 5),
        NodePluginScores("b", {}, 9),
        NodePluginScores("c", {}, 9),
        NodePluginScores("d", {}, 9),
    ]
    picks = [algorithm.select_host(scores) for _ in range(3000)]
    assert set(picks) == {"b", "c", "d"}
    for name in "bcd":
        assert 850 < picks.count(name) < 1150


def test_same_seed_same_choices() -> None:
    scores = [NodePluginScores(n, {}, 1) for n in "abcdef"]
    a, b = Algorithm(random.Random(3)), Algorithm(random.Random(3))
    assert [a.select_host(scores) for _ in range(20)] == [b.select_host(scores) for _ in range(20)]
