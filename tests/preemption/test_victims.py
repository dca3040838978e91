"""SelectVictimsOnNode, the PodDisruptionBudget split and pod importance."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.status import Code
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.preemption.victims import (
    NO_VICTIMS_REASON,
    VictimSelection,
    filter_pods_with_pdb_violation,
    more_important_pod,
    select_victims_on_node,
    sort_by_importance,
)
from tests.builders import make_node, make_pdb, make_pod, node_info
from tests.preemption.support import HIGH, LOW, MID, make_env, seconds

NOW = 1_800_000_000.0


def _pdb(selector: dict[str, Any] | None, allowed: int, **extra: Any) -> PodDisruptionBudget:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["selector"] = selector
    return PodDisruptionBudget(
        {
            "metadata": {"name": extra.get("name", "pdb"), "namespace": extra.get("ns", "default")},
            "spec": spec,
            "status": {"disruptionsAllowed": allowed},
        }
    )


def _names(pods: list[Pod]) -> list[str]:
    return [pod.name for pod in pods]


def _labelled(name: str, **labels: str) -> Pod:
    return make_pod(name).labels(**labels).pod()


@pytest.mark.parametrize(
    ("pods", "pdbs", "violating", "non_violating"),
    [
        pytest.param(
            [_labelled("a", app="foo"), _labelled("b", app="foo")],
            [],
            [],
            ["a", "b"],
            id="no-pdbs",
        ),
        pytest.param(
            [_labelled("a", app="foo"), _labelled("b", app="foo"), _labelled("c", app="foo")],
            [make_pdb("pdb", {"app": "foo"}, 1)],
            ["b", "c"],
            ["a"],
            id="budget-spent-across-pods-in-order",
        ),
        pytest.param(
            [_labelled("a", app="foo")],
            [make_pdb("pdb", {"app": "foo"}, 0)],
            ["a"],
            [],
            id="zero-budget-violates",
        ),
        pytest.param(
            [_labelled("a", app="foo"), _labelled("b", app="foo"), _labelled("c", app="foo")],
            [make_pdb("pdb", {"app": "foo"}, 1, disrupted_pods=["a"])],
            ["c"],
            ["a", "b"],
            id="disrupted-pod-neither-spends-nor-violates",
        ),
        pytest.param(
            [_labelled("a", app="foo"), _labelled("b", app="foo")],
            [make_pdb("pdb", {"app": "foo"}, 0, disrupted_pods=["a", "b"])],
            [],
            ["a", "b"],
            id="all-disrupted",
        ),
        pytest.param(
            [_labelled("a", app="foo")],
            [make_pdb("pdb", {}, 0)],
            [],
            ["a"],
            id="empty-selector-matches-nothing",
        ),
        pytest.param(
            [_labelled("a", app="foo")],
            [make_pdb("pdb", None, 0)],
            [],
            ["a"],
            id="missing-selector-matches-nothing",
        ),
        pytest.param(
            [make_pod("bare").pod(), _labelled("x", other="y")],
            [_pdb({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, 0)],
            ["x"],
            ["bare"],
            id="pod-without-labels-matches-nothing",
        ),
        pytest.param(
            [_labelled("a", app="foo")],
            [make_pdb("pdb", {"app": "foo"}, 0, namespace="other")],
            [],
            ["a"],
            id="other-namespace",
        ),
        pytest.param(
            [_labelled("a", app="foo", tier="web")],
            [make_pdb("roomy", {"app": "foo"}, 5), make_pdb("tight", {"tier": "web"}, 0)],
            ["a"],
            [],
            id="any-violated-pdb-makes-it-violating",
        ),
        pytest.param(
            [_labelled("a", app="bar"), _labelled("b", app="foo"), _labelled("c", app="bar")],
            [make_pdb("pdb", {"app": "bar"}, 1)],
            ["c"],
            ["a", "b"],
            id="order-kept-in-both-groups",
        ),
    ],
)
def test_filter_pods_with_pdb_violation(
    pods: list[Pod],
    pdbs: list[PodDisruptionBudget],
    violating: list[str],
    non_violating: list[str],
) -> None:
    got_violating, got_non_violating = filter_pods_with_pdb_violation(pods, pdbs)
    assert _names(got_violating) == violating
    assert _names(got_non_violating) == non_violating


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(
            [make_pod("low").priority(LOW).pod(), make_pod("high").priority(HIGH).pod()],
            ["high", "low"],
            id="priority-first",
        ),
        pytest.param(
            [
                make_pod("late").priority(MID).start_time(seconds(20)).pod(),
                make_pod("early").priority(MID).start_time(seconds(10)).pod(),
            ],
            ["early", "late"],
            id="equal-priority-earlier-start-first",
        ),
        pytest.param(
            [
                make_pod("unstarted").priority(MID).pod(),
                make_pod("started").priority(MID).start_time(seconds(10)).pod(),
            ],
            ["started", "unstarted"],
            id="unset-start-counts-as-now",
        ),
        pytest.param(
            [make_pod("x").priority(MID).pod(), make_pod("y").priority(MID).pod()],
            ["x", "y"],
            id="full-tie-keeps-order",
        ),
    ],
)
def test_sort_by_importance(pods: list[Pod], expected: list[str]) -> None:
    assert _names(sort_by_importance(pods, NOW)) == expected
    first, second = sort_by_importance(pods, NOW)
    assert not more_important_pod(second, first, NOW)


def _select(
    pods: list[Any], preemptor: Pod, pdbs: list[PodDisruptionBudget], cpu: str = "1"
) -> VictimSelection:
    info = node_info(make_node("n1").capacity(cpu=cpu, memory="1Gi", pods=32), *pods)
    env = make_env([info], pods=[preemptor])
    state = env.new_state(preemptor)
    return select_victims_on_node(env.framework, state, preemptor, info, pdbs, now=NOW)


def test_violating_pods_are_reprieved_first() -> None:
    # "b" is more important, but "a" would violate its PDB: it is tried (and kept) first.
    preemptor = make_pod("p").priority(HIGH).req(cpu="600m").pod()
    pods = [
        make_pod("a").priority(5).req(cpu="400m").labels(app="protected"),
        make_pod("b").priority(10).req(cpu="400m"),
    ]
    pdbs = [make_pdb("pdb", {"app": "protected"}, 0)]
    selection = _select(pods, preemptor, pdbs)
    assert selection.status.is_success()
    assert _names(selection.victims) == ["b"]
    assert selection.num_violating == 0


def test_without_pdb_the_more_important_pod_is_reprieved() -> None:
    preemptor = make_pod("p").priority(HIGH).req(cpu="600m").pod()
    pods = [
        make_pod("a").priority(5).req(cpu="400m").labels(app="protected"),
        make_pod("b").priority(10).req(cpu="400m"),
    ]
    selection = _select(pods, preemptor, [])
    assert _names(selection.victims) == ["a"]


def test_victims_from_both_groups_are_resorted_by_importance() -> None:
    preemptor = make_pod("p").priority(HIGH).req(cpu="1").pod()
    pods = [
        make_pod("a").priority(5).req(cpu="400m").labels(app="protected"),
        make_pod("b").priority(10).req(cpu="400m"),
    ]
    pdbs = [make_pdb("pdb", {"app": "protected"}, 0)]
    selection = _select(pods, preemptor, pdbs)
    assert _names(selection.victims) == ["b", "a"]
    assert selection.num_violating == 1


@pytest.mark.parametrize(
    ("pods", "preemptor", "code", "reason"),
    [
        pytest.param(
            [make_pod("same").priority(MID).req(cpu="1")],
            make_pod("p").priority(MID).req(cpu="500m").pod(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            NO_VICTIMS_REASON,
            id="equal-priority-is-no-victim",
        ),
        pytest.param(
            [make_pod("low").priority(LOW).req(cpu="100m")],
            make_pod("p").priority(HIGH).req(cpu="2").pod(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "Insufficient cpu",
            id="still-too-big-after-removing-all",
        ),
        pytest.param(
            [
                make_pod("high").priority(HIGH).req(cpu="800m"),
                make_pod("low").priority(LOW).req(cpu="100m"),
            ],
            make_pod("p").priority(MID).req(cpu="500m").pod(),
            Code.UNSCHEDULABLE,
            "Insufficient cpu",
            id="higher-priority-pods-stay",
        ),
    ],
)
def test_node_rejected(pods: list[Any], preemptor: Pod, code: Code, reason: str) -> None:
    selection = _select(pods, preemptor, [])
    assert selection.status.code == code
    assert selection.status.reasons == (reason,)
    assert selection.victims == []


def test_the_node_and_state_given_are_left_as_they_were() -> None:
    preemptor = make_pod("p").priority(HIGH).req(cpu="600m").pod()
    info = node_info(
        make_node("n1").capacity(cpu="1", memory="1Gi", pods=32),
        make_pod("a").priority(5).req(cpu="400m"),
        make_pod("b").priority(10).req(cpu="400m"),
    )
    env = make_env([info], pods=[preemptor])
    state = env.new_state(preemptor)
    pods_before, requested_before = list(info.pods), info.requested.milli_cpu
    selection = select_victims_on_node(env.framework, state, preemptor, info, [], now=NOW)
    assert _names(selection.victims) == ["a"]
    assert info.pods == pods_before
    assert info.requested.milli_cpu == requested_before
