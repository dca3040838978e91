"""The DefaultPreemption plugin: arguments, PostFilter results and messages, eligibility, the
Strict PDB policy, the preemption record and metrics.

The PostFilter table re-expresses upstream's TestPostFilter and TestPodEligibleToPreemptOthers
(default_preemption_test.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus, NominatingInfo, PostFilterResult
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import default_preemption
from kopf_scheduler.plugins.default_preemption import Args
from kopf_scheduler.preemption.record import (
    CRITERION_LOWEST_HIGHEST_PRIORITY,
    CRITERION_PDB_POLICY_STRICT,
    OUTCOME_ERROR,
    OUTCOME_NO_CANDIDATE,
    OUTCOME_NOMINATED,
    OUTCOME_NOT_ELIGIBLE,
    PREEMPTION_RECORD,
)
from tests.builders import make_node, make_pdb, make_pod, node_info
from tests.preemption.support import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    VERY_HIGH,
    ErrorOnLabelPlugin,
    make_env,
)

ATTEMPTS = "scheduler_preemption_attempts_total"

# Arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, Args(10, 100, "BestEffort"), id="defaults"),
        pytest.param({}, Args(10, 100, "BestEffort"), id="empty"),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
            Args(0, 1, "BestEffort"),
            id="zero-percentage",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 100, "minCandidateNodesAbsolute": 0},
            Args(100, 0, "BestEffort"),
            id="zero-absolute",
        ),
        pytest.param({"pdbPolicy": "Strict"}, Args(10, 100, "Strict"), id="strict"),
        pytest.param(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DefaultPreemptionArgs"},
            Args(),
            id="type-meta-accepted",
        ),
    ],
)
def test_args_parse(raw: Any, expected: Args) -> None:
    assert Args.parse(raw) == expected


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": 101},
            "args.minCandidateNodesPercentage",
            "101: not in valid range [0, 100]",
            id="percentage-above-100",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": -1},
            "args.minCandidateNodesPercentage",
            "-1: not in valid range [0, 100]",
            id="negative-percentage",
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": -1},
            "args.minCandidateNodesAbsolute",
            "-1: not in valid range [0, inf)",
            id="negative-absolute",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "args.minCandidateNodesPercentage",
            "cannot be zero at the same time as minCandidateNodesAbsolute",
            id="both-zero",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": "10"},
            "args.minCandidateNodesPercentage",
            "must be an integer, got '10'",
            id="string-percentage",
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": True},
            "args.minCandidateNodesAbsolute",
            "must be an integer, got True",
            id="bool-absolute",
        ),
        pytest.param(
            {"pdbPolicy": "Never"},
            "args.pdbPolicy",
            "must be one of 'BestEffort', 'Strict', got 'Never'",
            id="unknown-pdb-policy",
        ),
        pytest.param({"minCandidates": 3}, "args.minCandidates", "unknown field", id="unknown"),
        pytest.param([], "args", "must be an object, got []", id="not-a-mapping"),
    ],
)
def test_args_invalid(raw: Any, field: str, reason: str) -> None:
    with pytest.raises(InvalidArgsError) as info:
        Args.parse(raw)
    assert info.value.field == field
    assert info.value.reason == reason


def test_factory_and_events() -> None:
    env = make_env([])
    plugin = default_preemption.new({"pdbPolicy": "Strict"}, env.handle)
    assert plugin.name == "DefaultPreemption"
    assert plugin.evaluator.settings.pdb_policy == "Strict"
    events = plugin.events_to_register()
    assert len(events) == 1
    assert events[0].event.resource is EventResource.ASSIGNED_POD
    assert events[0].event.action == ActionType.DELETE
    assert events[0].hint is not None
    pod = make_pod("p").pod()
    assert events[0].hint(pod, pod, None) is QueueingHint.QUEUE_SKIP
    sync = default_preemption.new(None, env.handle, async_preemption=False)
    assert sync.events_to_register() == []


# PostFilter ---------------------------------------------------------------------------------

ONE_POD = {"pods": 1}
NODE_RES = {"cpu": "200m", "memory": "400", "pods": 32}


def _node(name: str, capacity: dict[str, Any], **labels: str) -> Any:
    builder = make_node(name).capacity(**capacity)
    for key, value in labels.items():
        builder = builder.label(key, value)
    return builder


def _pod(name: str, prio: int | None = None, node: str = "", **kw: Any) -> Any:
    builder = make_pod(name).uid(name)
    if prio is not None:
        builder = builder.priority(prio)
    if node:
        builder = builder.node(node)
    if "req" in kw:
        builder = builder.req(**kw["req"])
    if "labels" in kw:
        builder = builder.labels(**kw["labels"])
    return builder


def U(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def UAU(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


@dataclass
class PostFilterCase:
    preemptor: Any
    nodes: list[Any]
    pods: list[Any]
    statuses: NodeToStatus
    result: PostFilterResult | None
    code: Code
    message: str = ""
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    error_plugin: bool = False


NOMINATE_NODE1 = PostFilterResult(NominatingInfo.override("node1"))
CLEAR = PostFilterResult(NominatingInfo.clear())

POST_FILTER_CASES = [
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH),
            [_node("node1", ONE_POD)],
            [_pod("p1", node="node1")],
            NodeToStatus({"node1": U()}),
            NOMINATE_NODE1,
            Code.SUCCESS,
        ),
        id="higher-priority-made-schedulable",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p"),
            [_node("node1", ONE_POD)],
            [_pod("p1", node="node1")],
            NodeToStatus({"node1": U()}),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        id="tied-priority-still-unschedulable",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH),
            [_node("node1", ONE_POD)],
            [_pod("p1", node="node1")],
            NodeToStatus({"node1": UAU()}),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        id="respects-unresolvable-status",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH),
            [_node("node1", ONE_POD)],
            [_pod("p1", node="node1")],
            NodeToStatus(),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        id="absent-entry-means-unresolvable",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", MID),
            [_node("node1", ONE_POD), _node("node2", ONE_POD)],
            [_pod("p1", HIGH, "node1"), _pod("p2", LOW, "node2")],
            NodeToStatus({"node1": U(), "node2": U()}),
            PostFilterResult(NominatingInfo.override("node2")),
            Code.SUCCESS,
        ),
        id="schedulable-on-one-node",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", VERY_HIGH),
            [_node("node1", ONE_POD), _node("node2", ONE_POD)],
            [
                _pod("p1", HIGH, "node1", labels={"pdb": "non-violating"}),
                _pod("p2", LOW, "node1", labels={"pdb": "violating"}),
                _pod("p3", MID, "node2", labels={"pdb": "violating"}),
            ],
            NodeToStatus({"node1": U(), "node2": U()}),
            PostFilterResult(NominatingInfo.override("node2")),
            Code.SUCCESS,
            pdbs=[
                make_pdb("violating", {"pdb": "violating"}, 0),
                make_pdb("non-violating", {"pdb": "non-violating"}, 2**31 - 1),
            ],
        ),
        id="min-highest-priority-node-with-pdbs",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH, req=LARGE),
            [_node("node1", NODE_RES), _node("node2", NODE_RES)],
            [_pod("p1", node="node1"), _pod("p2", node="node2")],
            NodeToStatus({"node1": U(), "node2": U()}),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        ),
        id="not-enough-resources-after-removing-low-priority-pods",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH, req=LARGE),
            [_node("node1", ONE_POD), _node("node2", NODE_RES), _node("node3", ONE_POD)],
            [_pod("p1", HIGH, "node1"), _pod("p2", node="node2"), _pod("p3", HIGH, "node3")],
            NodeToStatus({"node1": U(), "node2": U(), "node3": U()}),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
            "2 No preemption victims found for incoming pod.",
        ),
        id="mixed-reasons-no-victims-and-no-cpu",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH, req=LARGE),
            [_node(f"node{i}", NODE_RES) for i in range(1, 5)],
            [_pod("p1", node="node1"), _pod("p2", node="node2")],
            NodeToStatus({"node1": U(), "node2": U(), "node4": UAU()}),
            CLEAR,
            Code.UNSCHEDULABLE,
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
            "2 Preemption is not helpful for scheduling.",
        ),
        id="mixed-reasons-unresolvable-and-no-cpu",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH, req=LARGE),
            [_node("node1", {**LARGE, "pods": 32}, error="true")],
            [_pod("p1", node="node1")],
            NodeToStatus({"node1": U()}),
            None,
            Code.ERROR,
            'preemption: running RemovePod on PreFilter plugin "test-plugin": '
            "failed to remove pod: p",
            error_plugin=True,
        ),
        id="only-node-fails-in-prefilter-extension",
    ),
    pytest.param(
        PostFilterCase(
            _pod("p", HIGH, req=LARGE),
            [
                _node("node1", {**LARGE, "pods": 32}, error="true"),
                _node("node2", {**LARGE, "pods": 32}),
            ],
            [_pod("p1", node="node1"), _pod("p2", node="node2", req=MEDIUM)],
            NodeToStatus({"node1": U(), "node2": U()}),
            PostFilterResult(NominatingInfo.override("node2")),
            Code.SUCCESS,
            error_plugin=True,
        ),
        id="one-node-errors-the-other-works",
    ),
]


def _infos(nodes: list[Any], pods: list[Any]) -> list[Any]:
    return [
        node_info(
            builder, *[p for p in pods if p.spec.get("nodeName") == builder.raw["metadata"]["name"]]
        )
        for builder in nodes
    ]


@pytest.mark.parametrize("asynchronous", [True, False], ids=["async", "sync"])
@pytest.mark.parametrize("case", POST_FILTER_CASES)
def test_post_filter(case: PostFilterCase, asynchronous: bool) -> None:
    preemptor = case.preemptor.pod()
    env = make_env(
        _infos(case.nodes, case.pods),
        pods=[preemptor],
        pdbs=case.pdbs,
        async_preemption=asynchronous,
        pre_filters=[ErrorOnLabelPlugin()] if case.error_plugin else [],
    )
    result, status, state = env.post_filter(preemptor, case.statuses)
    assert result == case.result
    assert status.code == case.code
    assert status.message() == case.message
    assert env.metrics.count(ATTEMPTS) == 1
    record = state.read(PREEMPTION_RECORD)
    assert record.preemptor == "default/p"
    if case.code == Code.SUCCESS:
        assert record.outcome == OUTCOME_NOMINATED
        assert result is not None and result.nominating_info is not None
        assert record.nominated_node == result.nominating_info.nominated_node_name
    elif case.code == Code.UNSCHEDULABLE:
        assert record.outcome == OUTCOME_NO_CANDIDATE
        assert "preemption: " + record.reason == case.message
    else:
        assert record.outcome == OUTCOME_ERROR


# Eligibility --------------------------------------------------------------------------------


def _terminating(name: str, prio: int, condition: tuple[str, str, str] | None) -> Any:
    builder = _pod(name, prio, "node1").terminating()
    if condition is not None:
        builder = builder.condition(*condition)
    return builder


BY_SCHEDULER = ("DisruptionTarget", "True", "PreemptionByScheduler")


@pytest.mark.parametrize(
    ("preemptor", "pods", "nominated_status", "eligible", "reason"),
    [
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", LOW, BY_SCHEDULER)],
            UAU("node(s) had untolerated taint(s)"),
            True,
            "",
            id="nominated-node-unresolvable-preempts-again",
        ),
        pytest.param(_pod("p", HIGH), [], U(), True, "", id="no-nominated-node"),
        pytest.param(
            _pod("p", HIGH).preemption_policy("Never"),
            [],
            U(),
            False,
            "not eligible due to preemptionPolicy=Never.",
            id="preemption-policy-never",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", LOW, BY_SCHEDULER)],
            U(),
            False,
            "not eligible due to a terminating pod on the nominated node.",
            id="victim-terminating-by-preemption",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", LOW, None)],
            U(),
            True,
            "",
            id="non-victim-pod-terminating",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", HIGH, BY_SCHEDULER)],
            U(),
            True,
            "",
            id="terminating-pod-not-lower-priority",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", LOW, ("DisruptionTarget", "False", "PreemptionByScheduler"))],
            U(),
            True,
            "",
            id="condition-false",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_terminating("p1", LOW, ("DisruptionTarget", "True", "EvictionByEvictionAPI"))],
            U(),
            True,
            "",
            id="other-disruption-reason",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("node1"),
            [_pod("p1", LOW, "node1").condition(*BY_SCHEDULER)],
            U(),
            True,
            "",
            id="condition-but-not-terminating",
        ),
        pytest.param(
            _pod("p", HIGH).nominated("gone"),
            [_terminating("p1", LOW, BY_SCHEDULER)],
            U(),
            True,
            "",
            id="nominated-node-not-in-snapshot",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    preemptor: Any, pods: list[Any], nominated_status: Status, eligible: bool, reason: str
) -> None:
    env = make_env([node_info(make_node("node1"), *pods)])
    got = env.plugin.evaluator.pod_eligible_to_preempt_others(preemptor.pod(), nominated_status)
    assert got == (eligible, reason)


def test_not_eligible_post_filter_keeps_nomination() -> None:
    preemptor = _pod("p", HIGH).preemption_policy("Never").pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", LOW))], pods=[preemptor])
    result, status, state = env.post_filter(preemptor, NodeToStatus({"node1": U()}))
    assert result is None
    assert status == U("preemption: not eligible due to preemptionPolicy=Never.")
    assert env.metrics.count(ATTEMPTS) == 1
    record = state.read(PREEMPTION_RECORD)
    assert record.outcome == OUTCOME_NOT_ELIGIBLE
    assert record.reason == "not eligible due to preemptionPolicy=Never."
    assert env.spawned == []


def test_latest_preemptor_version_is_used() -> None:
    # The pod passed in has no policy; the watch cache already says Never.
    stale = _pod("p", HIGH).pod()
    fresh = _pod("p", HIGH).preemption_policy("Never").pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", LOW))], pods=[fresh])
    result, status, _ = env.post_filter(stale, NodeToStatus({"node1": U()}))
    assert result is None
    assert status.message() == "preemption: not eligible due to preemptionPolicy=Never."


def test_preemptor_gone_is_an_error() -> None:
    preemptor = _pod("p", HIGH).pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", LOW))])
    state = env.new_state(preemptor)
    result, status = env.plugin.post_filter(state, preemptor, NodeToStatus({"node1": U()}))
    assert result is None
    assert status.code == Code.ERROR
    assert status.message() == 'preemption: pod "p" not found'
    assert state.read(PREEMPTION_RECORD).outcome == OUTCOME_ERROR
    assert env.metrics.count(ATTEMPTS) == 1


def test_no_nodes_is_an_error() -> None:
    preemptor = _pod("p", HIGH).pod()
    env = make_env([], pods=[preemptor])
    result, status, _ = env.post_filter(preemptor, NodeToStatus())
    assert result is None
    assert status.code == Code.ERROR
    assert status.message() == "preemption: no nodes available"


def test_attempts_counted_on_every_call() -> None:
    preemptor = _pod("p", HIGH).pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", HIGH))], pods=[preemptor])
    for _ in range(3):
        env.post_filter(preemptor, NodeToStatus({"node1": U()}))
    assert env.metrics.count(ATTEMPTS) == 3


# Preemption record --------------------------------------------------------------------------


def test_record_of_a_successful_preemption() -> None:
    preemptor = _pod("p", HIGH, req={"cpu": "500m"}).pod()
    infos = [
        node_info(
            _node("node1", {"cpu": "1", "pods": 32}),
            _pod("a", MID, req={"cpu": "600m"}),
        ),
        node_info(
            _node("node2", {"cpu": "1", "pods": 32}),
            _pod("b", LOW, req={"cpu": "300m"}),
            _pod("c", LOW, req={"cpu": "300m"}),
        ),
    ]
    env = make_env(infos, pods=[preemptor])
    result, status, state = env.post_filter(preemptor)
    assert status.is_success()
    assert result == PostFilterResult(NominatingInfo.override("node2"))
    record = state.read(PREEMPTION_RECORD)
    assert record.outcome == OUTCOME_NOMINATED
    assert record.nominated_node == "node2"
    # b and c are equally important: b is tried first, reprieved, and c goes.
    assert record.victims == ("default/c",)
    assert record.num_pdb_violations == 0
    assert record.deciding_criterion == CRITERION_LOWEST_HIGHEST_PRIORITY
    assert record.potential_nodes == 2
    assert record.num_candidates == 2
    by_node = {c.node: c for c in record.candidates}
    assert by_node["node1"].victims == ("default/a",)
    assert by_node["node1"].criteria.highest_victim_priority == MID
    assert by_node["node1"].eliminated_by == CRITERION_LOWEST_HIGHEST_PRIORITY
    assert by_node["node2"].eliminated_by == ""
    assert by_node["node2"].criteria.num_victims == 1


def test_record_of_no_candidate_lists_node_statuses() -> None:
    preemptor = _pod("p", LOW).pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", LOW))], pods=[preemptor])
    _, _, state = env.post_filter(preemptor, NodeToStatus({"node1": U()}))
    record = state.read(PREEMPTION_RECORD)
    assert record.outcome == OUTCOME_NO_CANDIDATE
    assert record.node_statuses == (("node1", "No preemption victims found for incoming pod"),)
    assert record.candidates == ()


# Strict PDB policy --------------------------------------------------------------------------

PROTECTED = {"app": "db"}


def _strict_cluster() -> tuple[Pod, list[Any], list[PodDisruptionBudget]]:
    preemptor = _pod("p", HIGH, req={"cpu": "500m"}).pod()
    infos = [
        node_info(
            _node("node1", {"cpu": "1", "pods": 32}),
            _pod("a", LOW, req={"cpu": "600m"}, labels=PROTECTED),
        ),
        node_info(
            _node("node2", {"cpu": "1", "pods": 32}),
            _pod("b", LOW, req={"cpu": "600m"}, labels=PROTECTED),
        ),
        node_info(_node("node3", {"cpu": "400m", "pods": 32})),
    ]
    return preemptor, infos, [make_pdb("db", PROTECTED, 0)]


def test_best_effort_preempts_despite_pdb() -> None:
    preemptor, infos, pdbs = _strict_cluster()
    env = make_env(infos, pods=[preemptor], pdbs=pdbs)
    result, status, state = env.post_filter(preemptor)
    assert status.is_success()
    assert result is not None and result.nominating_info is not None
    assert result.nominating_info.nominated_node_name in {"node1", "node2"}
    assert state.read(PREEMPTION_RECORD).num_pdb_violations == 1


def test_strict_never_violates_a_pdb_and_says_so() -> None:
    preemptor, infos, pdbs = _strict_cluster()
    env = make_env(infos, pods=[preemptor], pdbs=pdbs, args={"pdbPolicy": "Strict"})
    result, status, state = env.post_filter(preemptor)
    assert result == CLEAR
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        # node3 is too small for the preemptor whatever happens: not a potential node.
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 Preemption would violate a PodDisruptionBudget (pdbPolicy=Strict)."
    )
    record = state.read(PREEMPTION_RECORD)
    assert record.outcome == OUTCOME_NO_CANDIDATE
    assert record.pdb_policy == "Strict"
    assert sorted(c.node for c in record.pdb_rejected) == ["node1", "node2"]
    assert {c.eliminated_by for c in record.pdb_rejected} == {CRITERION_PDB_POLICY_STRICT}
    assert env.spawned == []
    assert env.deleter.deleted == []


def test_strict_uses_a_non_violating_candidate() -> None:
    preemptor, infos, pdbs = _strict_cluster()
    # node3 gets a pod that no PDB protects but whose priority is higher than a and b.
    infos[2] = node_info(
        _node("node3", {"cpu": "1", "pods": 32}), _pod("c", MID, req={"cpu": "600m"})
    )
    for args, expected in (({"pdbPolicy": "Strict"}, "node3"), (None, "node3")):
        env = make_env(infos, pods=[preemptor], pdbs=pdbs, args=args)
        result, status, _ = env.post_filter(preemptor)
        assert status.is_success()
        assert result == PostFilterResult(NominatingInfo.override(expected))


def test_strict_reports_candidates_dropped_from_a_full_list() -> None:
    preemptor, infos, pdbs = _strict_cluster()
    args = {"pdbPolicy": "Strict", "minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1}
    env = make_env(infos, pods=[preemptor], pdbs=pdbs, args=args)
    _, status, state = env.post_filter(preemptor)
    assert "2 Preemption would violate a PodDisruptionBudget (pdbPolicy=Strict)" in status.message()
    assert len(state.read(PREEMPTION_RECORD).pdb_rejected) == 2


# PreEnqueue ---------------------------------------------------------------------------------


def test_pre_enqueue_only_gates_the_preempting_pod() -> None:
    preemptor = _pod("p", HIGH).pod()
    other = _pod("other", HIGH).pod()
    env = make_env([node_info(_node("node1", ONE_POD), _pod("p1", LOW))], pods=[preemptor, other])
    assert env.plugin.pre_enqueue(preemptor).is_success()
    _, status, _ = env.post_filter(preemptor, NodeToStatus({"node1": U()}))
    assert status.is_success()
    assert env.plugin.pre_enqueue(preemptor) == UAU(
        "waiting for the preemption for this pod to be finished"
    )
    assert env.plugin.pre_enqueue(other).is_success()
    assert env.framework.run_pre_enqueue(preemptor).plugin == "DefaultPreemption"


def test_pre_enqueue_never_gates_in_sync_mode() -> None:
    preemptor = _pod("p", HIGH).pod()
    env = make_env(
        [node_info(_node("node1", ONE_POD), _pod("p1", LOW))],
        pods=[preemptor],
        async_preemption=False,
    )
    env.plugin.evaluator.executor.preempting.add(preemptor.uid)
    assert env.plugin.pre_enqueue(preemptor).is_success()
