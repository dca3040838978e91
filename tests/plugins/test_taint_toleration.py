"""TaintToleration: Filter on NoSchedule/NoExecute taints, reverse-normalised PreferNoSchedule
scoring, and the queueing hints; cases follow upstream's taint_toleration_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import MAX_NODE_SCORE, NodeScore
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.model.node import Node
from kopf_scheduler.plugins import taint_toleration
from kopf_scheduler.plugins.taint_toleration import REASON_UNTOLERATED, TaintToleration
from tests.builders import PodBuilder, make_node, make_pod, node_info

Taints = list[tuple[str, str, str]]
Tols = list[dict[str, str]]


def _node(name: str, taints: Taints) -> Node:
    builder = make_node(name)
    for key, value, effect in taints:
        builder.taint(key, value, effect)
    return builder.node()


def _pod(tolerations: Tols, name: str = "p") -> PodBuilder:
    builder = make_pod(name)
    for toleration in tolerations:
        builder.toleration(**toleration)
    return builder


def _plugin() -> TaintToleration:
    return taint_toleration.new(None, Handle())


PNS = "PreferNoSchedule"
NS = "NoSchedule"
NE = "NoExecute"


@pytest.mark.parametrize(
    ("tolerations", "taints", "expected"),
    [
        pytest.param(
            [], [("dedicated", "user1", NS)], REASON_UNTOLERATED, id="no-tolerations-tainted-node"
        ),
        pytest.param(
            [{"key": "dedicated", "value": "user1", "effect": NS}],
            [("dedicated", "user1", NS)],
            None,
            id="tolerated-dedicated-node",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "user2", "effect": NS}],
            [("dedicated", "user1", NS)],
            REASON_UNTOLERATED,
            id="value-mismatch",
        ),
        pytest.param(
            [{"key": "foo", "operator": "Exists", "effect": NS}],
            [("foo", "bar", NS)],
            None,
            id="exists-operator",
        ),
        pytest.param(
            [
                {"key": "dedicated", "value": "user2", "effect": NS},
                {"key": "foo", "operator": "Exists", "effect": NS},
            ],
            [("dedicated", "user2", NS), ("foo", "bar", NS)],
            None,
            id="all-taints-tolerated",
        ),
        pytest.param(
            [{"key": "foo", "value": "bar", "effect": PNS}],
            [("foo", "bar", NS)],
            REASON_UNTOLERATED,
            id="effect-mismatch",
        ),
        pytest.param(
            [{"key": "foo", "value": "bar"}],
            [("foo", "bar", NS)],
            None,
            id="empty-effect-tolerates-all-effects",
        ),
        pytest.param(
            [{"key": "dedicated", "value": "user2", "effect": NS}],
            [("dedicated", "user1", PNS)],
            None,
            id="prefer-no-schedule-is-not-filtered",
        ),
        pytest.param([], [("dedicated", "user1", PNS)], None, id="no-tolerations-prefer-taint"),
        pytest.param([], [("evict", "", NE)], REASON_UNTOLERATED, id="no-execute-is-filtered"),
        pytest.param(
            [{"operator": "Exists"}],
            [("a", "1", NS), ("b", "", NE)],
            None,
            id="wildcard-toleration",
        ),
        pytest.param(
            [{"key": "a", "value": "1", "effect": NS}],
            [("a", "1", NS), ("b", "2", NS)],
            REASON_UNTOLERATED,
            id="second-taint-untolerated",
        ),
    ],
)
def test_filter(tolerations: Tols, taints: Taints, expected: str | None) -> None:
    status = _plugin().filter(
        CycleState(), _pod(tolerations).pod(), node_info(_node("nodeA", taints))
    )
    if expected is None:
        assert status.is_success()
    else:
        assert status == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, expected)
        assert status.message() == "node(s) had untolerated taint(s)"


@pytest.mark.parametrize(
    ("tolerations", "nodes", "expected"),
    [
        pytest.param(
            [{"key": "foo", "value": "bar", "effect": PNS}],
            {"nodeA": [("foo", "bar", PNS)], "nodeB": [("foo", "blah", PNS)]},
            {"nodeA": MAX_NODE_SCORE, "nodeB": 0},
            id="tolerated-node-scores-higher",
        ),
        pytest.param(
            [
                {"key": "cpu-type", "value": "arm64", "effect": PNS},
                {"key": "disk-type", "value": "ssd", "effect": PNS},
            ],
            {
                "nodeA": [],
                "nodeB": [("cpu-type", "arm64", PNS)],
                "nodeC": [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)],
            },
            {"nodeA": MAX_NODE_SCORE, "nodeB": MAX_NODE_SCORE, "nodeC": MAX_NODE_SCORE},
            id="tolerated-taint-count-does-not-matter",
        ),
        pytest.param(
            [{"key": "foo", "value": "bar", "effect": PNS}],
            {
                "nodeA": [],
                "nodeB": [("cpu-type", "arm64", PNS)],
                "nodeC": [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)],
            },
            {"nodeA": MAX_NODE_SCORE, "nodeB": 50, "nodeC": 0},
            id="more-intolerable-taints-lower-score",
        ),
        pytest.param(
            [
                {"key": "cpu-type", "value": "arm64", "effect": NS},
                {"key": "disk-type", "value": "ssd", "effect": NS},
            ],
            {
                "nodeA": [],
                "nodeB": [("cpu-type", "arm64", NS)],
                "nodeC": [("cpu-type", "arm64", PNS), ("disk-type", "ssd", PNS)],
            },
            {"nodeA": MAX_NODE_SCORE, "nodeB": MAX_NODE_SCORE, "nodeC": 0},
            id="only-prefer-no-schedule-counts",
        ),
        pytest.param(
            [],
            {"nodeA": [], "nodeB": [("cpu-type", "arm64", PNS)]},
            {"nodeA": MAX_NODE_SCORE, "nodeB": 0},
            id="no-tolerations-prefers-untainted",
        ),
        pytest.param(
            [{"key": "cpu-type", "operator": "Exists"}],
            {"nodeA": [("cpu-type", "arm64", PNS)], "nodeB": [("gpu", "", PNS)]},
            {"nodeA": MAX_NODE_SCORE, "nodeB": 0},
            id="effectless-toleration-counts-for-prefer",
        ),
        pytest.param(
            [],
            {"nodeA": [("a", "", PNS)], "nodeB": [("a", "", PNS), ("b", "", PNS), ("c", "", PNS)]},
            {"nodeA": 67, "nodeB": 0},
            id="reverse-normalise-truncates",
        ),
    ],
)
def test_score(tolerations: Tols, nodes: dict[str, Taints], expected: dict[str, int]) -> None:
    plugin = _plugin()
    pod = _pod(tolerations).pod()
    infos = [node_info(_node(name, taints)) for name, taints in nodes.items()]
    state = CycleState()
    assert plugin.pre_score(state, pod, infos).is_success()
    scores = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status.is_success()
        scores.append(NodeScore(info.name, score))
    assert plugin.score_extensions().normalize_score(state, pod, scores).is_success()
    assert {s.name: s.score for s in scores} == expected


def test_score_without_pre_score_is_an_error() -> None:
    _, status = _plugin().score(CycleState(), _pod([]).pod(), node_info(_node("n", [])))
    assert status.code == Code.ERROR


def test_pre_score_state_survives_cycle_state_clone() -> None:
    plugin = _plugin()
    pod = _pod([{"key": "a", "effect": PNS, "operator": "Exists"}]).pod()
    info = node_info(_node("n", [("a", "", PNS), ("b", "", PNS)]))
    state = CycleState()
    plugin.pre_score(state, pod, [info])
    assert plugin.score(state.clone(), pod, info)[0] == 1


NODE_UNTOLERATED = [("dedicated", "user1", NS)]
NODE_TOLERATED = [("dedicated", "user2", NS)]
TOLERATE_USER2 = [{"key": "dedicated", "value": "user2", "effect": NS}]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, "not-a-node", QueueingHint.QUEUE, id="wrong-new-object"),
        pytest.param(
            "not-a-node", _node("nodeA", NODE_UNTOLERATED), QueueingHint.QUEUE, id="wrong-old"
        ),
        pytest.param(
            None, _node("nodeA", NODE_UNTOLERATED), QueueingHint.QUEUE_SKIP, id="add-untolerated"
        ),
        pytest.param(None, _node("nodeA", NODE_TOLERATED), QueueingHint.QUEUE, id="add-tolerated"),
        pytest.param(
            _node("nodeA", NODE_UNTOLERATED),
            _node("nodeA", [*NODE_UNTOLERATED, ("dedicated", "user3", NS)]),
            QueueingHint.QUEUE_SKIP,
            id="unrelated-change",
        ),
        pytest.param(
            _node("nodeA", NODE_UNTOLERATED),
            _node("nodeA", NODE_TOLERATED),
            QueueingHint.QUEUE,
            id="taint-change-makes-tolerated",
        ),
        pytest.param(
            _node("nodeA", NODE_TOLERATED),
            _node("nodeA", []),
            QueueingHint.QUEUE_SKIP,
            id="already-tolerated",
        ),
    ],
)
def test_hint_node_change(old: Any, new: Any, expected: QueueingHint) -> None:
    pod = _pod(TOLERATE_USER2).pod()
    hint = _event_hint(EventResource.NODE)
    assert hint(pod, old, new) is expected


def _event_hint(resource: EventResource) -> Any:
    for registration in _plugin().events_to_register():
        if registration.event.resource is resource:
            assert registration.hint is not None
            return registration.hint
    raise AssertionError(f"no {resource} event")


def test_hint_pod_toleration_change() -> None:
    hint = _event_hint(EventResource.POD)
    pod = make_pod("p").uid("uid0").pod()
    other = make_pod("q").uid("uid1").pod()
    same = make_pod("p").uid("uid0").toleration("a", operator="Exists").pod()
    assert hint(pod, other, other) is QueueingHint.QUEUE_SKIP
    assert hint(pod, pod, same) is QueueingHint.QUEUE
    assert hint(pod, None, "not-a-pod") is QueueingHint.QUEUE


def test_events_to_register() -> None:
    events = {r.event.resource: r.event.action for r in _plugin().events_to_register()}
    assert events == {
        EventResource.NODE: ActionType.ADD | ActionType.UPDATE_NODE_TAINT,
        EventResource.POD: ActionType.UPDATE_POD_TOLERATIONS,
    }


def test_new_rejects_args() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        taint_toleration.new({"foo": 1}, Handle())
