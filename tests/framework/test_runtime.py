import pytest

from kopf_scheduler.framework.cycle_state import CycleState, StateKey, StateNotFoundError
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import Diagnosis, FitError, NodeToStatus
from tests.builders import make_node, make_pod, node_info
from tests.framework.fakes import FilterByName, MaxPods, PreFilterFixed, ScoreByTable, framework


class FakeNominator:
    def __init__(self, pods) -> None:
        self.pods = pods

    def nominated_pods_for_node(self, node_name: str):
        return [p for p in self.pods if p.nominated_node_name == node_name]

    def add_nominated_pod(self, pod, info) -> None:
        raise AssertionError("not used")

    def delete_nominated_pod_if_exists(self, pod) -> None:
        raise AssertionError("not used")


def test_first_rejecting_filter_stops_and_names_plugin() -> None:
    first = FilterByName("First", {"n1": (Code.UNSCHEDULABLE, "first says no")})
    second = FilterByName("Second", {"n1": (Code.UNSCHEDULABLE, "second says no")})
    fwk = framework(filters=[first, second])
    status = fwk.run_filter_plugins(CycleState(), make_pod("p").pod(), node_info(make_node("n1")))
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == "First"
    assert status.reasons == ("first says no",)
    assert second.calls == []


def test_filter_error_becomes_error_with_plugin_name() -> None:
    broken = FilterByName("Broken", {"n1": (Code.ERROR, "boom")})
    fwk = framework(filters=[broken])
    status = fwk.run_filter_plugins(CycleState(), make_pod("p").pod(), node_info(make_node("n1")))
    assert status.code == Code.ERROR
    assert status.message() == 'running "Broken" filter plugin: boom'


def test_skipped_filter_is_not_run() -> None:
    skipped = FilterByName("Skipped", {"n1": (Code.UNSCHEDULABLE, "no")})
    fwk = framework(filters=[skipped])
    state = CycleState()
    state.skip_filter_plugins.add("Skipped")
    assert fwk.run_filter_plugins(
        state, make_pod("p").pod(), node_info(make_node("n1"))
    ).is_success()


@pytest.mark.parametrize(
    ("nominated_priority", "limit", "expected"),
    [
        pytest.param(10, 1, Code.UNSCHEDULABLE, id="equal-priority-nominee-blocks"),
        pytest.param(11, 1, Code.UNSCHEDULABLE, id="higher-priority-nominee-blocks"),
        pytest.param(9, 1, Code.SUCCESS, id="lower-priority-nominee-ignored"),
        pytest.param(10, 2, Code.SUCCESS, id="room-for-both"),
    ],
)
def test_nominated_pods_are_counted(nominated_priority: int, limit: int, expected: Code) -> None:
    nominee = make_pod("nominee").priority(nominated_priority).nominated("n1").pod()
    handle = Handle(nominator=FakeNominator([nominee]))
    fwk = framework(filters=[MaxPods(limit)], handle=handle)
    pod = make_pod("p").priority(10).pod()
    status = fwk.run_filter_plugins_with_nominated_pods(
        CycleState(), pod, node_info(make_node("n1"))
    )
    assert status.code == expected


def test_pod_is_not_counted_against_its_own_nomination() -> None:
    pod = make_pod("p").priority(10).nominated("n1").pod()
    handle = Handle(nominator=FakeNominator([pod]))
    fwk = framework(filters=[MaxPods(1)], handle=handle)
    assert fwk.run_filter_plugins_with_nominated_pods(
        CycleState(), pod, node_info(make_node("n1"))
    ).is_success()


def test_second_pass_runs_without_nominated_pods() -> None:
    """A filter that only passes *with* the nominated pod present must still fail the node."""

    class NeedsCompany:
        name = "NeedsCompany"

        def filter(self, state, pod, info):
            return SUCCESS if info.pods else Status(Code.UNSCHEDULABLE, "lonely")

    nominee = make_pod("nominee").priority(20).nominated("n1").pod()
    fwk = framework(filters=[NeedsCompany()], handle=Handle(nominator=FakeNominator([nominee])))
    status = fwk.run_filter_plugins_with_nominated_pods(
        CycleState(), make_pod("p").priority(10).pod(), node_info(make_node("n1"))
    )
    assert status.reasons == ("lonely",)


def test_scores_are_normalized_then_weighted() -> None:
    def halve(scores):
        for s in scores:
            s.score //= 2

    a = ScoreByTable("A", {"n1": 100, "n2": 40}, halve)
    b = ScoreByTable("B", {"n1": 0, "n2": 100})
    fwk = framework(scores=[(a, 2), (b, 1)])
    nodes = [node_info(make_node("n1")), node_info(make_node("n2"))]
    totals, status = fwk.run_score(CycleState(), make_pod("p").pod(), nodes)
    assert status.is_success()
    assert [(t.name, t.scores, t.total) for t in totals] == [
        ("n1", {"A": 100, "B": 0}, 100),
        ("n2", {"A": 40, "B": 100}, 140),
    ]


def test_out_of_range_score_is_an_error() -> None:
    fwk = framework(scores=[(ScoreByTable("Wild", {"n1": 101}), 1)])
    _, status = fwk.run_score(CycleState(), make_pod("p").pod(), [node_info(make_node("n1"))])
    assert status.code == Code.ERROR
    assert "invalid score 101" in status.message()


@pytest.mark.parametrize(
    ("plugins", "code", "message"),
    [
        pytest.param(
            [
                PreFilterFixed("A", nodes=frozenset({"n1"})),
                PreFilterFixed("B", nodes=frozenset({"n2"})),
            ],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin(s) [A B] simultaneously",
            id="disjoint-results",
        ),
        pytest.param(
            [PreFilterFixed("A", nodes=frozenset())],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin A",
            id="empty-result",
        ),
        pytest.param(
            [
                PreFilterFixed("A", Status(Code.UNSCHEDULABLE, "a")),
                PreFilterFixed("B", Status(Code.UNSCHEDULABLE, "b")),
            ],
            Code.UNSCHEDULABLE,
            "b",
            id="last-unschedulable-wins",
        ),
        pytest.param(
            [
                PreFilterFixed("A", Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "a")),
                PreFilterFixed("B", Status(Code.UNSCHEDULABLE, "b")),
            ],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "a",
            id="unresolvable-stops",
        ),
    ],
)
def test_pre_filter(plugins, code: Code, message: str) -> None:
    fwk = framework(pre_filters=plugins)
    _, status, _ = fwk.run_pre_filter(CycleState(), make_pod("p").pod(), [])
    assert status.code == code
    assert status.message() == message


def test_cycle_state_clone_clones_clonable_values() -> None:
    class Counter:
        def __init__(self, n: int) -> None:
            self.n = n

        def clone(self) -> "Counter":
            return Counter(self.n)

    key: StateKey[Counter] = StateKey("counter")
    state = CycleState()
    state.write(key, Counter(1))
    clone = state.clone()
    clone.read(key).n = 5
    assert state.read(key).n == 1
    with pytest.raises(StateNotFoundError):
        state.read(StateKey[int]("missing"))


@pytest.mark.parametrize(
    ("statuses", "absent", "pre_filter_msg", "post_filter_msg", "expected"),
    [
        pytest.param(
            {
                "n1": Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"
                ),
                "n2": Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
                "n3": Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
            },
            None,
            "",
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
            "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
            id="upstream-example",
        ),
        pytest.param(
            {f"n{i}": Status(Code.UNSCHEDULABLE, "Insufficient memory") for i in range(10)}
            | {
                "m1": Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory"),
                "m2": Status(Code.UNSCHEDULABLE, "Insufficient cpu"),
            },
            None,
            "",
            "",
            "0/12 nodes are available: 11 Insufficient memory, 2 Insufficient cpu.",
            id="string-sorted-histogram",
        ),
        pytest.param(
            {},
            Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "node(s) didn't match Pod's node affinity/selector",
            ),
            "",
            "",
            "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
            id="absent-nodes-counted",
        ),
        pytest.param(
            {},
            Status(Code.UNSCHEDULABLE, "x"),
            "waiting for gates",
            "",
            "0/2 nodes are available: waiting for gates.",
            id="pre-filter-message",
        ),
    ],
)
def test_fit_error_message(statuses, absent, pre_filter_msg, post_filter_msg, expected) -> None:
    diagnosis = Diagnosis(
        NodeToStatus(dict(statuses), absent),
        pre_filter_msg=pre_filter_msg,
        post_filter_msg=post_filter_msg,
    )
    num = int(expected.split("/")[1].split()[0])
    assert str(FitError(make_pod("p").pod(), num, diagnosis)) == expected


class ObservedMetrics:
    def __init__(self) -> None:
        self.observed: list[tuple[str, float, dict[str, str]]] = []

    def inc(self, name: str, labels=None, value: float = 1) -> None:
        return None

    def set(self, name: str, value: float, labels=None) -> None:
        return None

    def observe(self, name: str, value: float, labels=None) -> None:
        self.observed.append((name, value, dict(labels or {})))


def test_extension_points_record_their_duration_with_status_and_profile() -> None:
    metrics = ObservedMetrics()
    ticks = iter([10.0, 10.25, 20.0, 20.5])
    handle = Handle(scheduler_name="prof", metrics=metrics, now=lambda: next(ticks))
    fwk = framework(
        pre_filters=[PreFilterFixed("PF", Status(Code.UNSCHEDULABLE, "no"))],
        scores=[(ScoreByTable("A", {"n1": 10}), 1)],
        handle=handle,
        name="prof",
    )
    nodes = [node_info(make_node("n1"))]
    fwk.run_pre_filter(CycleState(), make_pod("p").pod(), nodes)
    fwk.run_score(CycleState(), make_pod("p").pod(), nodes)
    name = "scheduler_framework_extension_point_duration_seconds"
    assert metrics.observed == [
        (
            name,
            0.25,
            {"extension_point": "PreFilter", "status": "Unschedulable", "profile": "prof"},
        ),
        (name, 0.5, {"extension_point": "Score", "status": "Success", "profile": "prof"}),
    ]


PLUGIN_METRIC = "scheduler_plugin_execution_duration_seconds"


def sampled_state(sampled: bool) -> CycleState:
    state = CycleState()
    state.record_plugin_metrics = sampled
    return state


def test_in_a_sampled_cycle_every_plugin_call_is_timed_with_its_status() -> None:
    metrics = ObservedMetrics()
    clock = iter(float(t) for t in range(100))
    handle = Handle(scheduler_name="prof", metrics=metrics, now=lambda: next(clock))
    fwk = framework(
        filters=[
            FilterByName("First", {}),
            FilterByName("Second", {"n2": (Code.UNSCHEDULABLE, "no")}),
        ],
        scores=[(ScoreByTable("A", {"n1": 10}), 1)],
        handle=handle,
        name="prof",
    )
    state, pod = sampled_state(True), make_pod("p").pod()

    fwk.run_filter_plugins(state, pod, node_info(make_node("n1")))
    fwk.run_filter_plugins(state, pod, node_info(make_node("n2")))
    fwk.run_score(state, pod, [node_info(make_node("n1"))])

    timed = [(labels, value) for name, value, labels in metrics.observed if name == PLUGIN_METRIC]
    assert timed == [
        ({"plugin": "First", "extension_point": "Filter", "status": "Success"}, 1.0),
        ({"plugin": "Second", "extension_point": "Filter", "status": "Success"}, 1.0),
        ({"plugin": "First", "extension_point": "Filter", "status": "Success"}, 1.0),
        ({"plugin": "Second", "extension_point": "Filter", "status": "Unschedulable"}, 1.0),
        ({"plugin": "A", "extension_point": "Score", "status": "Success"}, 1.0),
    ]


def test_outside_sampled_cycles_plugin_calls_are_not_timed() -> None:
    metrics = ObservedMetrics()
    handle = Handle(scheduler_name="prof", metrics=metrics, now=lambda: 0.0)
    fwk = framework(
        pre_filters=[PreFilterFixed("PF", SUCCESS)],
        filters=[FilterByName("First", {})],
        scores=[(ScoreByTable("A", {"n1": 10}), 1)],
        handle=handle,
        name="prof",
    )
    state, pod, nodes = sampled_state(False), make_pod("p").pod(), [node_info(make_node("n1"))]

    fwk.run_pre_filter(state, pod, nodes)
    fwk.run_filter_plugins(state, pod, nodes[0])
    fwk.run_score(state, pod, nodes)

    assert [name for name, _, _ in metrics.observed if name == PLUGIN_METRIC] == []
    assert len(metrics.observed) == 2  # the extension points are still timed
