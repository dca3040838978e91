"""The gang preemption planner, on kube-scheduler's default profile."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.config.types import Profile
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.evaluator import PDB_POLICY_STRICT, PreemptionSettings
from kopf_scheduler.preemption.gang_planner import (
    GangPlan,
    GangRequest,
    GroupInfo,
    plan_gang_preemption,
)
from tests.builders import PodBuilder, make_node, make_pdb, make_pod, node_info
from tests.preemption.support import HIGH, LOW, MID, NEG, VERY_HIGH, FakeNominator, seconds

NOW = 1_800_000_000.0
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def _node(name: str, *pods: PodBuilder, cpu: str = "4") -> NodeInfo:
    return node_info(make_node(name).capacity(cpu=cpu, memory="32Gi", pods=110), *pods)


def _pod(name: str, cpu: str, priority: int = LOW) -> PodBuilder:
    return make_pod(name).req(cpu=cpu, memory="1Gi").priority(priority)


def _grouped(name: str, cpu: str, group: str, priority: int = LOW) -> PodBuilder:
    return _pod(name, cpu, priority).label(GROUP_LABEL, group)


def _members(count: int, cpu: str = "2", priority: int = HIGH) -> list[Pod]:
    return [_grouped(f"m{index}", cpu, "gang", priority).pod() for index in range(1, count + 1)]


def _plan(
    nodes: Sequence[NodeInfo],
    members: Sequence[Pod],
    *,
    needed: int | None = None,
    pdbs: Sequence[PodDisruptionBudget] = (),
    groups: Sequence[GroupInfo] = (),
    settings: PreemptionSettings | None = None,
    nominator: FakeNominator | None = None,
) -> GangPlan | None:
    snapshot = Snapshot.from_node_infos(list(nodes))
    handle = Handle(snapshot=snapshot, nominator=nominator, scheduler_name="default-scheduler")
    framework = Framework("default-scheduler", build_profile_plugins(Profile(), handle), handle)
    by_key = {info.key: info for info in (GroupInfo("default/gang", len(members), 0), *groups)}

    def group_of(pod: Pod) -> GroupInfo | None:
        name = pod.labels.get(GROUP_LABEL)
        return by_key.get(f"{pod.namespace}/{name}") if name else None

    request = GangRequest(
        members=members,
        needed=len(members) if needed is None else needed,
        framework=framework,
        snapshot=snapshot,
        pdbs=pdbs,
        group_of=group_of,
        now=NOW,
        settings=settings if settings is not None else PreemptionSettings(),
    )
    return plan_gang_preemption(request)


def _placed(plan: GangPlan, members: Sequence[Pod]) -> dict[str, str]:
    """Member name -> node."""
    return {pod.name: plan.placements[pod.uid] for pod in members if pod.uid in plan.placements}


def _victims(plan: GangPlan) -> dict[str, list[str]]:
    """Node -> the names of its victims, sorted."""
    return {node: sorted(pod.name for pod in pods) for node, pods in plan.victims_by_node.items()}


# The whole group or nothing ------------------------------------------------------------------


def test_no_plan_when_one_member_cannot_be_placed_even_with_every_victim_gone() -> None:
    nodes = [
        _node("a", _pod("a1", "2"), _pod("a2", "2")),
        _node("b", _pod("b1", "4")),
        _node("c", _pod("c1", "4", priority=VERY_HIGH)),
    ]
    members = _members(3, cpu="4")
    assert _plan(nodes, members) is None
    # Two of them can be placed, and then the plan evicts the low-priority pods it needs,
    # the single one first.
    plan = _plan(nodes, members, needed=2)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "b", "m2": "a"}
    assert _victims(plan) == {"a": ["a1", "a2"], "b": ["b1"]}


def test_members_share_a_node_within_its_resources() -> None:
    nodes = [
        _node("a", _pod("a1", "2")),
        _node("b", _pod("b1", "2", priority=NEG), _pod("b2", "2", priority=NEG)),
    ]
    members = _members(3)
    plan = _plan(nodes, members)
    assert plan is not None
    # m1 takes a's free half; a is then full, so m2 and m3 share b, one NEG victim each.
    assert _placed(plan, members) == {"m1": "a", "m2": "b", "m3": "b"}
    assert _victims(plan) == {"b": ["b1", "b2"]}
    assert plan.pdb_violations == 0


def test_members_placed_earlier_count_for_the_filters_of_the_next() -> None:
    # Required anti-affinity between the members: one per node, so the second member needs a
    # victim although the first node has room left.
    anti_affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {GROUP_LABEL: "gang"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    members = [
        _grouped(f"m{index}", "1", "gang", HIGH).affinity(anti_affinity).pod() for index in (1, 2)
    ]
    nodes = [_node("a", cpu="8"), _node("b", _pod("b1", "4"))]
    plan = _plan(nodes, members)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "a", "m2": "b"}
    assert _victims(plan) == {"b": ["b1"]}


def test_members_that_fit_without_victims_evict_nothing() -> None:
    nodes = [_node("a", _pod("a1", "4")), _node("b"), _node("c", _pod("c1", "2"))]
    members = _members(3)
    plan = _plan(nodes, members)
    assert plan == GangPlan(
        placements={members[0].uid: "b", members[1].uid: "b", members[2].uid: "c"},
        victims_by_node={},
        pdb_violations=0,
    )


def test_victims_are_the_fewest_and_least_important_for_the_group() -> None:
    # Removing every lower-priority pod of a would evict four; the group needs two gone, and
    # the most important are reprieved first, so the two that started last go. c's pod alone
    # would make room for one member, but its priority is higher.
    nodes = [
        _node(
            "a",
            _pod("a1", "2").start_time(seconds(10)),
            _pod("a2", "2").start_time(seconds(40)),
            _pod("a3", "2").start_time(seconds(20)),
            _pod("a4", "2").start_time(seconds(30)),
            cpu="8",
        ),
        _node("c", _pod("c1", "4", priority=MID)),
    ]
    members = _members(2)
    plan = _plan(nodes, members)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "a", "m2": "a"}
    assert plan.victims_by_node == {"a": (nodes[0].pods[3], nodes[0].pods[1])}


def test_a_placement_takes_room_from_the_next_members() -> None:
    # m1's victim on b leaves room that m2 then needs: b's remaining NEG pod is a cheaper
    # victim than any LOW pod of a, so both members end up on b.
    nodes = [
        _node("a", _pod("a1", "2"), _pod("a2", "2")),
        _node("b", _pod("b1", "1", priority=NEG), _pod("b2", "3", priority=NEG)),
    ]
    members = _members(2)
    plan = _plan(nodes, members)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "b", "m2": "b"}
    assert _victims(plan) == {"b": ["b1", "b2"]}


def test_terminating_pods_make_room_without_being_victims() -> None:
    # A second plan while the first plan's victims are going evicts no one more.
    nodes = [
        _node("a", _pod("a1", "2").terminating(), _pod("a2", "2").terminating()),
        _node("b", _pod("b1", "4", priority=NEG)),
    ]
    members = _members(2)
    plan = _plan(nodes, members)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "a", "m2": "a"}
    assert _victims(plan) == {}


def test_the_groups_own_nominations_are_not_counted_twice() -> None:
    members = _members(2)
    nominator = FakeNominator()
    for member in members:
        nominator.nominate(member, "a")
    nodes = [_node("a"), _node("b", _pod("b1", "4", priority=NEG))]
    plan = _plan(nodes, members, nominator=nominator)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "a", "m2": "a"}
    assert _victims(plan) == {}


def test_other_pods_nominated_with_equal_priority_keep_their_room() -> None:
    nominator = FakeNominator()
    nominator.nominate(_pod("other", "4", priority=HIGH).pod(), "a")
    nodes = [_node("a"), _node("b", _pod("b1", "4", priority=NEG))]
    members = _members(1, cpu="4")
    plan = _plan(nodes, members, nominator=nominator)
    assert plan is not None
    assert _placed(plan, members) == {"m1": "b"}
    assert _victims(plan) == {"b": ["b1"]}


# Who may be a victim ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("needed", "expected_victims"),
    [
        pytest.param(1, {"c": ["c1"]}, id="one-member-takes-the-lower-pod"),
        pytest.param(2, None, id="equal-and-higher-pods-are-never-victims"),
    ],
)
def test_only_lower_priority_pods_are_victims(
    needed: int, expected_victims: dict[str, list[str]] | None
) -> None:
    nodes = [
        _node("a", _pod("a1", "4", priority=HIGH)),
        _node("b", _pod("b1", "2", priority=VERY_HIGH), _pod("b2", "2", priority=HIGH)),
        _node("c", _pod("c1", "4", priority=MID)),
    ]
    plan = _plan(nodes, _members(2, cpu="4"), needed=needed)
    if expected_victims is None:
        assert plan is None
    else:
        assert plan is not None
        assert _victims(plan) == expected_victims


OTHER_GROUP = [
    _node("a", _grouped("o1", "4", "other").start_time(seconds(10))),
    _node("b", _grouped("o2", "4", "other").start_time(seconds(20))),
    _node("c", _grouped("o3", "4", "other").start_time(seconds(30))),
    _node("d", _pod("d1", "4", priority=MID)),
]


@pytest.mark.parametrize(
    ("min_member", "needed", "expected_victims"),
    [
        pytest.param(2, 1, {"d": ["d1"]}, id="a-plan-without-other-groups-is-preferred"),
        pytest.param(
            2, 2, {"c": ["o3"], "d": ["d1"]}, id="one-member-beyond-min-member-can-be-taken"
        ),
        pytest.param(2, 3, None, id="never-below-min-member"),
        pytest.param(3, 2, None, id="a-group-at-min-member-is-untouchable"),
    ],
)
def test_other_groups_keep_min_member(
    min_member: int, needed: int, expected_victims: dict[str, list[str]] | None
) -> None:
    plan = _plan(
        OTHER_GROUP,
        _members(3, cpu="4"),
        needed=needed,
        groups=[GroupInfo("default/other", min_member, 3)],
    )
    if expected_victims is None:
        assert plan is None
    else:
        assert plan is not None
        assert _victims(plan) == expected_victims


def test_a_group_below_min_member_is_untouchable() -> None:
    nodes = [_node("a", _grouped("o1", "4", "other"), _grouped("o2", "4", "other"), cpu="8")]
    groups = [GroupInfo("default/other", 3, 2)]
    assert _plan(nodes, _members(1, cpu="4"), groups=groups) is None


def test_the_groups_own_placed_pods_are_never_victims() -> None:
    # Even beyond its minMember, and with a lower priority than the members.
    nodes = [_node("a", _grouped("placed", "4", "gang", priority=LOW))]
    own = GroupInfo("default/gang", 1, 2)
    assert _plan(nodes, _members(1, cpu="4"), groups=[own]) is None


def test_another_groups_spare_pod_before_a_budget_violation() -> None:
    nodes = [
        _node("a", _grouped("o1", "4", "other")),
        _node("b", _pod("b1", "4", priority=NEG).label("app", "web")),
    ]
    plan = _plan(
        nodes,
        _members(1, cpu="4"),
        pdbs=[make_pdb("web", {"app": "web"}, 0)],
        groups=[GroupInfo("default/other", 1, 2)],
    )
    assert plan is not None
    assert _victims(plan) == {"a": ["o1"]}
    assert plan.pdb_violations == 0


# PodDisruptionBudgets --------------------------------------------------------------------------

PROTECTED = [
    _node("a", _pod("a1", "4").label("app", "web")),
    _node("b", _pod("b1", "4").label("app", "web")),
    _node("c", _pod("c1", "4", priority=MID)),
]


def test_one_budget_is_shared_by_the_whole_plan() -> None:
    # Each of a1 and b1 alone is within the budget; both together are not, so the second
    # member goes to c although c's pod has a higher priority.
    members = _members(2, cpu="4")
    plan = _plan(PROTECTED, members, pdbs=[make_pdb("web", {"app": "web"}, 1)])
    assert plan is not None
    assert _placed(plan, members) == {"m1": "a", "m2": "c"}
    assert _victims(plan) == {"a": ["a1"], "c": ["c1"]}
    assert plan.pdb_violations == 0


@pytest.mark.parametrize(
    ("policy", "violations"),
    [
        pytest.param("BestEffort", 1, id="best-effort-violates-when-it-must"),
        pytest.param(PDB_POLICY_STRICT, None, id="strict-never-violates"),
    ],
)
def test_violations_only_when_no_plan_without(policy: str, violations: int | None) -> None:
    plan = _plan(
        PROTECTED,
        _members(3, cpu="4"),
        pdbs=[make_pdb("web", {"app": "web"}, 1)],
        settings=PreemptionSettings(pdb_policy=policy),
    )
    if violations is None:
        assert plan is None
    else:
        assert plan is not None
        assert _victims(plan) == {"a": ["a1"], "b": ["b1"], "c": ["c1"]}
        assert plan.pdb_violations == violations


# The request ------------------------------------------------------------------------------------


def test_same_input_same_plan() -> None:
    nodes = [
        _node(name, _pod(f"{name}1", "2"), _pod(f"{name}2", "2", priority=NEG))
        for name in ("a", "b", "c", "d")
    ]
    members = _members(4, cpu="3")
    first = _plan(nodes, members)
    assert first is not None
    assert _plan(nodes, members) == first
    assert sum(len(pods) for pods in first.victims_by_node.values()) == 8


def test_nothing_needed_is_an_empty_plan() -> None:
    assert _plan([_node("a", _pod("a1", "4"))], _members(2), needed=0) == GangPlan({}, {}, 0)


def test_more_needed_than_members_is_no_plan() -> None:
    assert _plan([_node("a"), _node("b")], _members(2), needed=3) is None


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^needed must be 0 or more, got -1$"):
        _plan([_node("a")], _members(1), needed=-1)
