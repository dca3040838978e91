"""Potential nodes, candidate counts and offsets, the dry run and SelectCandidate.

The dry-run cases re-express upstream's TestDryRunPreemption (default_preemption_test.go),
including its filter-call counts, which pin down where the dry run stops.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.candidates import (
    PRIORITY_OFFSET,
    Candidate,
    calculate_num_candidates,
    dry_run_preemption,
    get_offset_and_num_candidates,
    potential_nodes,
    select_candidate,
)
from kopf_scheduler.preemption.record import (
    CRITERION_DRY_RUN_ORDER,
    CRITERION_FEWEST_PDB_VIOLATIONS,
    CRITERION_FEWEST_VICTIMS,
    CRITERION_LATEST_START_TIME,
    CRITERION_LOWEST_HIGHEST_PRIORITY,
    CRITERION_ONLY_CANDIDATE,
    CRITERION_SMALLEST_PRIORITY_SUM,
)
from tests.builders import make_node, make_pdb, make_pod, node_info
from tests.preemption.support import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    CountingFilter,
    ScriptedRandom,
    make_env,
    seconds,
)

NOW = 1_800_000_000.0
NODES4 = ["node1", "node2", "node3", "node4"]


def _snapshot(names: list[str]) -> Snapshot:
    return Snapshot.from_node_infos([NodeInfo(make_node(n).node()) for n in names])


UNSCHED = Status(Code.UNSCHEDULABLE, "Insufficient cpu")
UAU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match Pod's node affinity")


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        pytest.param(
            NodeToStatus({n: UAU for n in NODES4}),
            [],
            id="all-unresolvable",
        ),
        pytest.param(NodeToStatus(), [], id="absent-means-unresolvable"),
        pytest.param(
            NodeToStatus({"node3": UNSCHED, "node1": UNSCHED, "node2": UAU}),
            ["node1", "node3"],
            id="only-unschedulable-in-snapshot-order",
        ),
        pytest.param(
            NodeToStatus({"node2": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}, UNSCHED),
            ["node1", "node3", "node4"],
            id="prefilter-unschedulable-absent-includes-the-rest",
        ),
        pytest.param(
            NodeToStatus({}, Status(Code.UNSCHEDULABLE, "PreFilter said no")),
            NODES4,
            id="prefilter-unschedulable-all-nodes",
        ),
        pytest.param(
            NodeToStatus({"node1": Status(Code.ERROR, "boom"), "node2": UNSCHED}),
            ["node2"],
            id="error-status-not-tried",
        ),
    ],
)
def test_potential_nodes(statuses: NodeToStatus, expected: list[str]) -> None:
    nodes = potential_nodes(_snapshot(NODES4), statuses)
    assert [n.name for n in nodes] == expected


@pytest.mark.parametrize(
    ("num_nodes", "percentage", "absolute", "expected"),
    [
        pytest.param(10, 10, 100, 10, id="few-nodes-all"),
        pytest.param(1000, 10, 100, 100, id="absolute-floor"),
        pytest.param(5000, 10, 100, 500, id="percentage-wins"),
        pytest.param(5, 40, 1, 2, id="upstream-40-percent-of-5"),
        pytest.param(7, 50, 0, 3, id="integer-division"),
        pytest.param(3, 0, 1, 1, id="zero-percentage"),
        pytest.param(1, 100, 100, 1, id="capped-at-node-count"),
    ],
)
def test_calculate_num_candidates(
    num_nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(num_nodes, percentage, absolute) == expected


def test_offset_is_drawn_from_the_handle_rng_over_all_potential_nodes() -> None:
    rng = ScriptedRandom(3)
    assert get_offset_and_num_candidates(rng, 5, 10, 100) == (3, 5)
    assert rng.calls == [5]


# Dry run ------------------------------------------------------------------------------------


def _res(name: str, prio: int, res: dict[str, str], node: str = "", **kw: Any) -> Any:
    builder = make_pod(name).uid(name).priority(prio).req(**res)
    if node:
        builder = builder.node(node)
    if "start" in kw:
        builder = builder.start_time(seconds(kw["start"]))
    if "labels" in kw:
        builder = builder.labels(**kw["labels"])
    return builder


@dataclass
class DryRunCase:
    nodes: list[str]
    preemptor: Any
    pods: list[Any]
    expected: dict[str, tuple[list[str], int]]
    """node → (victim names sorted, PDB violations)."""
    filter_calls: int
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    args: dict[str, int] | None = None
    offset: int = 0
    filter_code: Code = Code.SUCCESS
    always_false: bool = False


class _FalseFilter:
    name: ClassVar[str] = "FalseFilter"

    def filter(self, state: Any, pod: Pod, node_info: NodeInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, "false")


FOO = {"app": "foo"}

DRY_RUN_CASES = [
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, {}),
            [_res("p1", MID, {}, "node1"), _res("p2", MID, {}, "node2")],
            {},
            filter_calls=2,
            always_false=True,
        ),
        id="does-not-fit-on-any-node",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, {}),
            [_res("p1", MID, {}, "node1"), _res("p2", MID, {}, "node2")],
            {},
            filter_calls=2,
            filter_code=Code.UNSCHEDULABLE,
        ),
        id="filter-rejects-after-removal",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, LARGE),
            [_res("p1", MID, LARGE, "node1"), _res("p2", MID, LARGE, "node2")],
            {"node1": (["p1"], 0), "node2": (["p2"], 0)},
            filter_calls=4,
        ),
        id="fits-on-both-nodes-after-preemption",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", LOW, LARGE),
            [_res("p1", MID, LARGE, "node1"), _res("p2", MID, LARGE, "node2")],
            {},
            filter_calls=0,
        ),
        id="others-have-higher-priority",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, LARGE),
            [
                _res("p1.1", LOW, SMALL, "node1"),
                _res("p1.2", MID, LARGE, "node1"),
                _res("p2", MID, LARGE, "node2"),
            ],
            {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
            filter_calls=5,
        ),
        id="medium-preempted-small-low-stays",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, LARGE),
            [
                _res("p1.1", MID, SMALL, "node1"),
                _res("p1.2", LOW, SMALL, "node1"),
                _res("p1.3", MID, MEDIUM, "node1"),
                _res("p1.4", HIGH, SMALL, "node1"),
                _res("p2", HIGH, LARGE, "node2"),
            ],
            {"node1": (["p1.2", "p1.3"], 0)},
            filter_calls=4,
        ),
        id="mixed-priorities",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2"],
            _res("p", HIGH, LARGE),
            [
                _res("p1.1", LOW, SMALL, "node1", start=5),
                _res("p1.2", LOW, SMALL, "node1", start=4),
                _res("p1.3", MID, MEDIUM, "node1", start=3),
                _res("p1.4", HIGH, SMALL, "node1", start=2),
                _res("p2", HIGH, LARGE, "node2", start=1),
            ],
            {"node1": (["p1.1", "p1.3"], 0)},
            filter_calls=4,
        ),
        id="equal-priority-later-start-preempted",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            _res("p", HIGH, VERY_LARGE),
            [
                _res("p1.1", MID, MEDIUM, "node1", labels=FOO),
                _res("p1.2", MID, MEDIUM, "node1", labels=FOO),
            ],
            {"node1": (["p1.1", "p1.2"], 1)},
            filter_calls=3,
            pdbs=[make_pdb("pdb", FOO, 1)],
        ),
        id="violation-of-same-pdb",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            _res("p", HIGH, VERY_LARGE),
            [
                _res("p1.1", MID, MEDIUM, "node1", labels=FOO),
                _res("p1.2", MID, MEDIUM, "node1", labels=FOO),
            ],
            {"node1": (["p1.1", "p1.2"], 1)},
            filter_calls=3,
            pdbs=[make_pdb("pdb", FOO, 1, disrupted_pods=["p2"])],
        ),
        id="pdb-disrupted-pod-not-a-victim",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            _res("p", HIGH, VERY_LARGE),
            [
                _res("p1.1", MID, MEDIUM, "node1", labels=FOO),
                _res("p1.2", MID, MEDIUM, "node1", labels=FOO),
            ],
            {"node1": (["p1.1", "p1.2"], 0)},
            filter_calls=3,
            pdbs=[make_pdb("pdb", FOO, 1, disrupted_pods=["p1.2"])],
        ),
        id="pdb-disrupted-victim-does-not-violate",
    ),
    pytest.param(
        DryRunCase(
            ["node1"],
            _res("p", HIGH, VERY_LARGE),
            [
                _res("p1.1", MID, MEDIUM, "node1", labels=FOO),
                _res("p1.2", MID, MEDIUM, "node1", labels=FOO),
                _res("p1.3", MID, MEDIUM, "node1", labels=FOO),
            ],
            {"node1": (["p1.1", "p1.2", "p1.3"], 1)},
            filter_calls=4,
            pdbs=[make_pdb("pdb", FOO, 1, disrupted_pods=["p1.3"])],
        ),
        id="pdb-disrupted-victim-treated-as-non-violating",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2", "node3", "node4", "node5"],
            _res("p", HIGH, LARGE),
            [_res(f"p{i}", MID, LARGE, f"node{i}") for i in range(1, 6)],
            {"node5": (["p5"], 0), "node1": (["p1"], 0)},
            filter_calls=4,
            args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
            offset=4,
        ),
        id="args-limit-to-two-candidates",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2", "node3", "node4", "node5"],
            _res("p", HIGH, LARGE),
            [
                _res("p1", MID, LARGE, "node1"),
                _res("p2", VERY_HIGH, LARGE, "node2"),
                _res("p3", MID, LARGE, "node3"),
                _res("p4", MID, LARGE, "node4"),
                _res("p5", VERY_HIGH, LARGE, "node5"),
            ],
            {"node1": (["p1"], 0), "node3": (["p3"], 0)},
            filter_calls=4,
            args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
            offset=4,
        ),
        id="some-nodes-not-candidates-limit-two",
    ),
    pytest.param(
        DryRunCase(
            ["node1", "node2", "node3", "node4", "node5"],
            _res("p", HIGH, LARGE),
            [
                _res("p1", MID, LARGE, "node1", labels=FOO),
                _res("p2", MID, LARGE, "node2", labels=FOO),
                _res("p3", MID, LARGE, "node3"),
                _res("p4", MID, LARGE, "node4"),
                _res("p5", MID, LARGE, "node5", labels=FOO),
            ],
            # node5, node1 violate; node2 violates too but the violating list is full
            # (dropped); node3 is the first non-violating candidate, then the run stops.
            {"node5": (["p5"], 1), "node1": (["p1"], 1), "node3": (["p3"], 0)},
            filter_calls=8,
            pdbs=[make_pdb("pdb", FOO, 0)],
            args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
            offset=4,
        ),
        id="looks-past-num-candidates-for-a-non-violating-node",
    ),
]


def _nodes(names: list[str]) -> list[Any]:
    return [make_node(n).capacity(cpu="500m", memory="500", pods=32) for n in names]


@pytest.mark.parametrize("case", DRY_RUN_CASES)
def test_dry_run_preemption(case: DryRunCase) -> None:
    builders = _nodes(case.nodes)
    infos = []
    for builder in builders:
        name = builder.raw["metadata"]["name"]
        on_node = [p for p in case.pods if p.spec.get("nodeName") == name]
        infos.append(node_info(builder, *on_node))
    counting = CountingFilter(case.filter_code)
    filters: list[Any] = [counting]
    if case.always_false:
        filters.append(_FalseFilter())
    preemptor = case.preemptor.pod()
    env = make_env(
        infos, pods=[preemptor], args=case.args, filters=filters, with_fit=not case.always_false
    )
    state = env.new_state(preemptor)
    settings = env.plugin.evaluator.settings
    num = calculate_num_candidates(
        len(infos), settings.min_candidate_nodes_percentage, settings.min_candidate_nodes_absolute
    )
    result = dry_run_preemption(
        env.framework,
        state,
        preemptor,
        infos,
        case.pdbs,
        offset=case.offset,
        num_candidates=num,
        now=NOW,
    )
    got = {
        c.node: (sorted(p.name for p in c.victims), c.num_pdb_violations) for c in result.candidates
    }
    assert got == case.expected
    assert counting.calls == case.filter_calls
    # Non-violating candidates come first.
    violations = [c.num_pdb_violations > 0 for c in result.candidates]
    assert violations == sorted(violations)
    # The original NodeInfos are untouched (the dry run works on clones).
    for info, builder in zip(infos, builders, strict=True):
        name = builder.raw["metadata"]["name"]
        assert [p.name for p in info.pods] == [
            p.raw["metadata"]["name"] for p in case.pods if p.spec.get("nodeName") == name
        ]


def test_dry_run_candidate_order_and_dropped_overflow() -> None:
    infos = [
        node_info(
            make_node(f"node{i}").capacity(cpu="500m", memory="500", pods=32),
            _res(f"p{i}", MID, LARGE, labels=FOO),
        )
        for i in range(1, 6)
    ]
    infos[3] = node_info(
        make_node("node4").capacity(cpu="500m", memory="500", pods=32), _res("p4", MID, LARGE)
    )
    preemptor = _res("p", HIGH, LARGE).pod()
    env = make_env(infos, pods=[preemptor])
    state = env.new_state(preemptor)
    result = dry_run_preemption(
        env.framework,
        state,
        preemptor,
        infos,
        [make_pdb("pdb", FOO, 0)],
        offset=0,
        num_candidates=2,
        now=NOW,
    )
    # node1, node2 fill the violating list, node3 is dropped, node4 is the first
    # non-violating candidate and ends the run; node5 is never tried.
    assert result.evaluated == ["node1", "node2", "node3", "node4"]
    assert [c.node for c in result.candidates] == ["node4", "node1", "node2"]
    assert [c.node for c in result.dropped] == ["node3"]


def test_dry_run_zero_victims_is_an_error() -> None:
    # The cycle said "Unschedulable" but the node fits as it is: upstream reports an error.
    info = node_info(
        make_node("node1").capacity(cpu="1", memory="1Gi", pods=32), _res("low", LOW, SMALL)
    )
    preemptor = _res("p", HIGH, SMALL).pod()
    env = make_env([info], pods=[preemptor])
    state = env.new_state(preemptor)
    result = dry_run_preemption(
        env.framework, state, preemptor, [info], [], offset=0, num_candidates=1, now=NOW
    )
    assert result.candidates == []
    status = result.node_to_status.get("node1")
    assert status.code == Code.ERROR
    assert status.reasons == ('expected at least one victim pod on node "node1"',)
    assert result.errors == [status]


# SelectCandidate ------------------------------------------------------------------------------


def _victim(name: str, priority: int, start: int | None = None) -> Pod:
    builder = make_pod(name).priority(priority)
    if start is not None:
        builder = builder.start_time(seconds(start))
    return builder.pod()


def _cand(node: str, *victims: Pod, pdb: int = 0) -> Candidate:
    return Candidate(node, victims, pdb)


SELECT_CASES = [
    pytest.param(
        [_cand("n1", _victim("a", LOW), pdb=1), _cand("n2", _victim("b", HIGH))],
        "n2",
        CRITERION_FEWEST_PDB_VIOLATIONS,
        id="fewest-pdb-violations",
    ),
    pytest.param(
        [_cand("n1", _victim("a", MID)), _cand("n2", _victim("b", LOW), _victim("c", LOW))],
        "n2",
        CRITERION_LOWEST_HIGHEST_PRIORITY,
        id="lowest-highest-priority",
    ),
    pytest.param(
        [
            _cand("n1", _victim("a", MID), _victim("b", NEG), _victim("c", NEG)),
            _cand("n2", _victim("d", MID), _victim("e", LOW)),
        ],
        "n2",
        CRITERION_SMALLEST_PRIORITY_SUM,
        id="priority-sum-with-offset",
    ),
    pytest.param(
        [
            _cand("n1", _victim("a", MID), _victim("b", -(2**31))),
            _cand("n2", _victim("c", MID)),
        ],
        "n2",
        CRITERION_FEWEST_VICTIMS,
        id="fewest-victims-when-sums-tie",
    ),
    pytest.param(
        [
            _cand("n1", _victim("a", MID, start=1), _victim("b", MID, start=1)),
            _cand("n2", _victim("c", MID, start=3), _victim("d", MID, start=3)),
            _cand("n3", _victim("e", MID, start=2), _victim("f", MID, start=2)),
        ],
        "n2",
        CRITERION_LATEST_START_TIME,
        id="latest-start-time",
    ),
    pytest.param(
        [
            _cand("n1", _victim("a", MID, start=5), _victim("b", LOW, start=1)),
            _cand("n2", _victim("c", MID, start=3), _victim("d", LOW, start=10)),
        ],
        "n1",
        CRITERION_LATEST_START_TIME,
        id="start-time-only-of-highest-priority-victims",
    ),
    pytest.param(
        [
            _cand("n1", _victim("a", MID, start=5)),
            _cand("n2", _victim("b", MID)),
        ],
        "n2",
        CRITERION_LATEST_START_TIME,
        id="unstarted-victim-counts-as-now",
    ),
    pytest.param(
        [_cand("n2", _victim("a", MID, start=5)), _cand("n1", _victim("b", MID, start=5))],
        "n2",
        CRITERION_DRY_RUN_ORDER,
        id="full-tie-first-in-dry-run-order",
    ),
    pytest.param(
        [_cand("only", _victim("a", HIGH), pdb=3)],
        "only",
        CRITERION_ONLY_CANDIDATE,
        id="single-candidate",
    ),
]


@pytest.mark.parametrize(("candidates", "winner", "criterion"), SELECT_CASES)
def test_select_candidate(candidates: list[Candidate], winner: str, criterion: str) -> None:
    selection = select_candidate(candidates, NOW)
    assert selection is not None
    assert selection.candidate.node == winner
    assert selection.deciding_criterion == criterion
    eliminated = {r.node: r.eliminated_by for r in selection.records}
    assert eliminated[winner] == ""
    if len(candidates) > 1:
        assert criterion in eliminated.values()


def test_select_candidate_records_criteria_values() -> None:
    candidates = [
        _cand("n1", _victim("a", MID, start=7), _victim("b", NEG, start=2), pdb=1),
        _cand("n2", _victim("c", LOW)),
    ]
    selection = select_candidate(candidates, NOW)
    assert selection is not None
    first, second = selection.records
    assert first.victims == ("default/a", "default/b")
    assert first.criteria.num_pdb_violations == 1
    assert first.criteria.highest_victim_priority == MID
    assert first.criteria.priority_sum == MID + NEG + 2 * PRIORITY_OFFSET
    assert first.criteria.num_victims == 2
    assert first.criteria.dry_run_index == 0
    assert first.eliminated_by == CRITERION_FEWEST_PDB_VIOLATIONS
    assert second.criteria.earliest_start_time == NOW
    assert second.criteria.dry_run_index == 1
    assert second.eliminated_by == ""


def test_select_candidate_empty() -> None:
    assert select_candidate([], NOW) is None


SELECT_BEST_CASES = [
    pytest.param(
        ["node1", "node2", "node3"],
        [
            ("p1.1", MID, MEDIUM, "node1"),
            ("p1.2", MID, LARGE, "node1"),
            ("p2.1", MID, MEDIUM, "node2"),
            ("p2.2", LOW, MEDIUM, "node2"),
            ("p3.1", LOW, MEDIUM, "node3"),
            ("p3.2", LOW, MEDIUM, "node3"),
        ],
        "node3",
        id="node-with-min-highest-priority",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [
            ("p1.1", MID, MEDIUM, "node1"),
            ("p1.2", MID, LARGE, "node1"),
            ("p2.1", MID, LARGE, "node2"),
            ("p2.2", LOW, MEDIUM, "node2"),
            ("p3.1", MID, MEDIUM, "node3"),
            ("p3.2", MID, MEDIUM, "node3"),
        ],
        "node2",
        id="min-sum-when-highest-ties",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        [
            ("p1.1", MID, SMALL, "node1"),
            ("p1.2", NEG, SMALL, "node1"),
            ("p1.3", NEG, SMALL, "node1"),
            ("p2.1", MID, LARGE, "node2"),
            ("p2.2", NEG, MEDIUM, "node2"),
            ("p3.1", MID, MEDIUM, "node3"),
            ("p3.2", NEG, SMALL, "node3"),
            ("p3.3", LOW, SMALL, "node3"),
        ],
        "node2",
        id="sum-of-adjusted-priorities",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"],
        [
            ("p1.1", MID, SMALL, "node1"),
            ("p1.2", LOW, SMALL, "node1"),
            ("p1.3", LOW, SMALL, "node1"),
            ("p2.1", HIGH, LARGE, "node2"),
            ("p3.1", MID, MEDIUM, "node3"),
            ("p3.2", LOW, SMALL, "node3"),
            ("p3.3", LOW, SMALL, "node3"),
            ("p3.4", LOW, MEDIUM, "node3"),
            ("p4.1", MID, MEDIUM, "node4"),
            ("p4.2", MID, SMALL, "node4"),
            ("p4.3", MID, SMALL, "node4"),
            ("p4.4", NEG, SMALL, "node4"),
        ],
        "node1",
        id="non-overlapping-criteria",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "expected"), SELECT_BEST_CASES)
def test_select_best_candidate_end_to_end(
    nodes: list[str], pods: list[tuple[str, int, dict[str, str], str]], expected: str
) -> None:
    """Upstream's TestSelectBestCandidate: dry run on all nodes, then select."""
    preemptor = _res("p", VERY_HIGH if len(nodes) == 4 else HIGH, VERY_LARGE).pod()
    infos = [
        node_info(
            make_node(n).capacity(cpu="500m", memory="500", pods=32),
            *[_res(name, prio, res, start=0) for name, prio, res, node in pods if node == n],
        )
        for n in nodes
    ]
    env = make_env(infos, pods=[preemptor])
    state = env.new_state(preemptor)
    result = dry_run_preemption(
        env.framework, state, preemptor, infos, [], offset=0, num_candidates=len(nodes), now=NOW
    )
    selection = select_candidate(result.candidates, NOW)
    assert selection is not None
    assert selection.candidate.node == expected


class _NamesNotToWalk:
    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the node list was walked")


def test_potential_nodes_leaves_the_node_list_alone_when_no_listed_node_can_match() -> None:
    """A pod too large for every node: no node is Unschedulable, and the snapshot's thousands of
    names are not walked to find that out."""
    statuses = NodeToStatus({n: UAU for n in NODES4})
    assert statuses.nodes_with_code(_NamesNotToWalk(), Code.UNSCHEDULABLE) == []
    assert statuses.nodes_with_code(iter(NODES4), Code.UNSCHEDULABLE_AND_UNRESOLVABLE) == NODES4
