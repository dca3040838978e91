"""NodeAffinity: nodeSelector and required affinity in Filter, metadata.name pinning in
PreFilter, weighted preferences in Score, addedAffinity args, and the node-change queueing hint;
cases follow upstream's node_affinity_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import MAX_NODE_SCORE, NodeScore
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import PreFilterResult
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import node_affinity, taint_toleration
from kopf_scheduler.plugins.node_affinity import (
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)
from tests.builders import make_node, make_pod, node_info

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        entry["values"] = list(values)
    return entry


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def term(
    exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if exprs is not None:
        entry["matchExpressions"] = exprs
    if fields is not None:
        entry["matchFields"] = fields
    return entry


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {PREF: [{"weight": w, "preference": t} for w, t in weighted]}}


def pod(affinity: dict[str, Any] | None = None, selector: dict[str, str] | None = None) -> Pod:
    builder = make_pod("p")
    if affinity is not None:
        builder.affinity(affinity)
    if selector:
        builder.node_selector(**selector)
    return builder.pod()


def node(name: str = "node1", **labels: str) -> Node:
    builder = make_node(name)
    for key, value in labels.items():
        builder.label(key, value)
    return builder.node()


def plugin(args: dict[str, Any] | None = None) -> NodeAffinity:
    return node_affinity.new(args, Handle())


def added_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"addedAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


POD_UAU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_POD)
ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_ENFORCED)
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_CONFLICT)
SKIP = Status(Code.SKIP)
OK = Status(Code.SUCCESS)


FILTER_CASES = [
    pytest.param(
        pod(selector={"foo": "bar"}), node(), None, OK, None, POD_UAU, id="missing-labels"
    ),
    pytest.param(pod(selector={"foo": "bar"}), node(foo="bar"), None, OK, None, OK, id="same"),
    pytest.param(
        pod(selector={"foo": "bar"}),
        node(foo="bar", baz="blah"),
        None,
        OK,
        None,
        OK,
        id="node-labels-superset",
    ),
    pytest.param(
        pod(selector={"foo": "bar", "baz": "blah"}),
        node(foo="bar"),
        None,
        OK,
        None,
        POD_UAU,
        id="node-labels-subset",
    ),
    pytest.param(
        pod(required(term([expr("foo", "In", "bar", "value2")]))),
        node(foo="bar"),
        None,
        OK,
        None,
        OK,
        id="in-matches",
    ),
    pytest.param(
        pod(required(term([expr("kernel-version", "Gt", "0204")]))),
        node(**{"kernel-version": "0206"}),
        None,
        OK,
        None,
        OK,
        id="gt-matches",
    ),
    pytest.param(
        pod(required(term([expr("kernel-version", "Gt", "four")]))),
        node(**{"kernel-version": "6"}),
        None,
        OK,
        None,
        POD_UAU,
        id="gt-with-a-value-that-is-not-an-integer-matches-no-node",
    ),
    pytest.param(
        pod(required(term([expr("kernel-version", "Lt", "1.5")]), term([expr("zone", "In", "a")]))),
        node(zone="a", **{"kernel-version": "1"}),
        None,
        OK,
        None,
        OK,
        id="lt-with-a-value-that-is-not-an-integer-leaves-the-other-terms",
    ),
    pytest.param(
        pod(required(term([expr("kernel-version", "Gt", "4")]))),
        node(**{"kernel-version": "6.1"}),
        None,
        OK,
        None,
        POD_UAU,
        id="gt-on-a-node-label-that-is-not-an-integer",
    ),
    pytest.param(
        pod(required(term([expr("mem-type", "NotIn", "DDR", "DDR2")]))),
        node(**{"mem-type": "DDR3"}),
        None,
        OK,
        None,
        OK,
        id="notin-matches",
    ),
    pytest.param(
        pod(required(term([expr("GPU", "Exists")]))),
        node(GPU="NVIDIA-GRID-K1"),
        None,
        OK,
        None,
        OK,
        id="exists-matches",
    ),
    pytest.param(
        pod(required(term([expr("foo", "In", "value1", "value2")]))),
        node(foo="bar"),
        None,
        OK,
        None,
        POD_UAU,
        id="in-does-not-match",
    ),
    pytest.param(
        pod(required(term([]))),
        node(foo="bar"),
        None,
        OK,
        None,
        POD_UAU,
        id="empty-term-matches-nothing",
    ),
    pytest.param(pod(), node(foo="bar"), None, SKIP, None, OK, id="no-affinity-skips"),
    pytest.param(
        pod({"nodeAffinity": {}}), node(foo="bar"), None, SKIP, None, OK, id="nil-required-skips"
    ),
    pytest.param(
        pod(required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]))),
        node(GPU="NVIDIA-GRID-K1"),
        None,
        OK,
        None,
        OK,
        id="anded-expressions-match",
    ),
    pytest.param(
        pod(required(term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]))),
        node(GPU="NVIDIA-GRID-K1"),
        None,
        OK,
        None,
        POD_UAU,
        id="anded-expressions-do-not-match",
    ),
    pytest.param(
        pod(
            required(
                term([expr("foo", "In", "bar", "value2")]),
                term([expr("diffkey", "In", "wrong", "value2")]),
            )
        ),
        node(foo="bar"),
        None,
        OK,
        None,
        OK,
        id="ored-terms-match",
    ),
    pytest.param(
        pod(required(term([expr("foo", "Exists")])), selector={"foo": "bar"}),
        node(foo="bar"),
        None,
        OK,
        None,
        OK,
        id="selector-and-affinity-both-satisfied",
    ),
    pytest.param(
        pod(required(term([expr("foo", "Exists")])), selector={"foo": "bar"}),
        node(foo="barrrrrr"),
        None,
        OK,
        None,
        POD_UAU,
        id="affinity-matches-selector-does-not",
    ),
    pytest.param(
        pod(required(term([expr("foo", "NotIn", "invalid value: ___@#$%^")]))),
        node(foo="bar"),
        None,
        OK,
        None,
        POD_UAU,
        id="invalid-value-term-matches-nothing",
    ),
    pytest.param(
        pod(
            required(
                term([expr("foo", "NotIn", "invalid value: ___@#$%^")]),
                term([expr("foo", "In", "bar")]),
            )
        ),
        node(foo="bar"),
        None,
        OK,
        None,
        OK,
        id="valid-term-still-counts-beside-invalid",
    ),
    pytest.param(
        pod(required(term(fields=[name_in("node1")]))),
        node("node1"),
        None,
        OK,
        {"node1"},
        OK,
        id="match-fields-in-matches",
    ),
    pytest.param(
        pod(required(term(fields=[name_in("node1")]))),
        node("node2"),
        None,
        OK,
        {"node1"},
        POD_UAU,
        id="match-fields-in-does-not-match",
    ),
    pytest.param(
        pod(
            required(
                term(fields=[name_in("node1"), name_in("node2")]),
                term([expr("foo", "In", "bar")]),
            )
        ),
        node("node2", foo="bar"),
        None,
        OK,
        None,
        OK,
        id="two-terms-expressions-match",
    ),
    pytest.param(
        pod(required(term([expr("foo", "In", "bar")], fields=[name_in("node1")]))),
        node("node2", foo="bar"),
        None,
        OK,
        {"node1"},
        POD_UAU,
        id="one-term-fields-do-not-match",
    ),
    pytest.param(
        pod(required(term([expr("foo", "In", "bar")], fields=[name_in("node1")]))),
        node("node1", foo="bar"),
        None,
        OK,
        {"node1"},
        OK,
        id="one-term-both-match",
    ),
    pytest.param(
        pod(
            required(
                term(fields=[name_in("node1")]),
                term([expr("foo", "In", "not-match-to-bar")]),
            )
        ),
        node("node2", foo="bar"),
        None,
        OK,
        None,
        POD_UAU,
        id="two-terms-neither-matches",
    ),
    pytest.param(
        pod(required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")]))),
        node("node2"),
        None,
        OK,
        {"node1", "node2"},
        OK,
        id="two-name-terms-unite",
    ),
    pytest.param(
        pod(required(term(fields=[name_in("node1"), name_in("node2")]))),
        node("node2", foo="bar"),
        None,
        CONFLICT,
        None,
        POD_UAU,
        id="conflicting-name-requirements",
    ),
    pytest.param(
        pod(required(term(fields=[expr("metadata.name", "NotIn", "node1")]))),
        node("node2"),
        None,
        OK,
        None,
        OK,
        id="not-in-name-does-not-narrow",
    ),
    pytest.param(
        pod(required(term([expr("zone", "In", "foo")]))),
        node("node2", zone="foo"),
        added_required(term(fields=[name_in("node2")])),
        OK,
        None,
        OK,
        id="matches-added-and-pod-affinity",
    ),
    pytest.param(
        pod(required(term([expr("zone", "In", "bar")]))),
        node("node2", zone="foo"),
        added_required(term(fields=[name_in("node2")])),
        OK,
        None,
        POD_UAU,
        id="matches-added-not-pod-affinity",
    ),
    pytest.param(
        pod(),
        node("node2", zone="foo"),
        added_required(term([expr("zone", "In", "bar")])),
        OK,
        None,
        ENFORCED,
        id="does-not-match-added-affinity",
    ),
    pytest.param(
        pod(selector={"zone": "foo"}),
        node("node2", zone="foo"),
        {"addedAffinity": {REQ: {"nodeSelectorTerms": []}}},
        OK,
        None,
        ENFORCED,
        id="added-affinity-without-terms-matches-nothing",
    ),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "args", "want_pre", "want_names", "want_filter"), FILTER_CASES
)
def test_pre_filter_and_filter(
    the_pod: Pod,
    the_node: Node,
    args: dict[str, Any] | None,
    want_pre: Status,
    want_names: set[str] | None,
    want_filter: Status,
) -> None:
    p = plugin(args)
    state = CycleState()
    info = node_info(the_node)
    result, status = p.pre_filter(state, the_pod, [info])
    assert status == want_pre
    expected_result = None if want_names is None else PreFilterResult(frozenset(want_names))
    assert result == expected_result
    assert p.filter(state, the_pod, info) == want_filter


@pytest.mark.parametrize(
    ("the_pod", "the_node", "want"),
    [
        pytest.param(
            pod(selector={"foo": "bar"}),
            node(foo="bar", baz="blah"),
            OK,
            id="selector-no-prefilter",
        ),
        pytest.param(
            pod(required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]))),
            node(GPU="NVIDIA-GRID-K1"),
            OK,
            id="affinity-no-prefilter",
        ),
        pytest.param(
            pod(selector={"foo": "bar"}), node(foo="baz"), POD_UAU, id="mismatch-no-prefilter"
        ),
    ],
)
def test_filter_without_pre_filter(the_pod: Pod, the_node: Node, want: Status) -> None:
    assert plugin().filter(CycleState(), the_pod, node_info(the_node)) == want


def test_pre_filter_state_survives_clone() -> None:
    p = plugin()
    the_pod = pod(selector={"foo": "bar"})
    state = CycleState()
    p.pre_filter(state, the_pod, [])
    clone = state.clone()
    assert p.filter(clone, the_pod, node_info(node(foo="bar"))).is_success()
    assert p.filter(clone, the_pod, node_info(node(foo="x"))) == POD_UAU


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}

AFFINITY1 = preferred((2, term([expr("foo", "In", "bar")])))
AFFINITY2 = preferred(
    (2, term([expr("foo", "In", "bar")])),
    (4, term([expr("key", "In", "value")])),
    (5, term([expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")])),
)


@pytest.mark.parametrize(
    ("affinity", "nodes", "args", "run_pre_score", "expected"),
    [
        pytest.param(
            None,
            {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
            None,
            False,
            {"node1": 0, "node2": 0, "node3": 0},
            id="no-affinity-all-zero",
        ),
        pytest.param(
            AFFINITY1,
            {"node1": LABEL4, "node2": LABEL2, "node3": LABEL3},
            None,
            True,
            {"node1": 0, "node2": 0, "node3": 0},
            id="no-node-matches",
        ),
        pytest.param(
            AFFINITY1,
            {"node1": LABEL1, "node2": LABEL2, "node3": LABEL3},
            None,
            True,
            {"node1": MAX_NODE_SCORE, "node2": 0, "node3": 0},
            id="only-node1-matches",
        ),
        pytest.param(
            AFFINITY2,
            {"node1": LABEL1, "node5": LABEL5, "node2": LABEL2},
            None,
            True,
            {"node1": 18, "node5": MAX_NODE_SCORE, "node2": 36},
            id="different-priorities",
        ),
        pytest.param(
            None,
            {"node1": LABEL1, "node2": LABEL2},
            {"addedAffinity": AFFINITY1["nodeAffinity"]},
            True,
            {"node1": MAX_NODE_SCORE, "node2": 0},
            id="added-affinity",
        ),
        pytest.param(
            AFFINITY1,
            {"node1": LABEL1, "node2": LABEL2, "node3": LABEL5},
            {
                "addedAffinity": {
                    PREF: [{"weight": 3, "preference": term([expr("key", "In", "value")])}]
                }
            },
            True,
            {"node1": 40, "node2": 60, "node3": MAX_NODE_SCORE},
            id="added-and-pod-affinity",
        ),
        pytest.param(
            AFFINITY2,
            {"node1": LABEL1, "node5": LABEL5, "node2": LABEL2},
            None,
            False,
            {"node1": 18, "node5": MAX_NODE_SCORE, "node2": 36},
            id="without-pre-score",
        ),
        pytest.param(
            preferred((7, term(fields=[name_in("node2")]))),
            {"node1": LABEL1, "node2": LABEL1},
            None,
            True,
            {"node1": 0, "node2": MAX_NODE_SCORE},
            id="preferred-match-fields",
        ),
    ],
)
def test_score(
    affinity: dict[str, Any] | None,
    nodes: dict[str, dict[str, str]],
    args: dict[str, Any] | None,
    run_pre_score: bool,
    expected: dict[str, int],
) -> None:
    p = plugin(args)
    the_pod = pod(affinity)
    infos = [node_info(node(name, **labels)) for name, labels in nodes.items()]
    state = CycleState()
    if run_pre_score:
        assert p.pre_score(state, the_pod, infos).is_success()
    scores = []
    for info in infos:
        score, status = p.score(state, the_pod, info)
        assert status.is_success()
        scores.append(NodeScore(info.name, score))
    assert p.score_extensions().normalize_score(state, the_pod, scores).is_success()
    assert {s.name: s.score for s in scores} == expected


def test_pre_score_skips_without_preferences() -> None:
    status = plugin().pre_score(CycleState(), pod(), [node_info(node(**LABEL1))])
    assert status.code == Code.SKIP


def test_pre_score_does_not_skip_with_added_preferences() -> None:
    args = {"addedAffinity": AFFINITY1["nodeAffinity"]}
    status = plugin(args).pre_score(CycleState(), pod(), [node_info(node(**LABEL1))])
    assert status.is_success()


def test_pre_score_errors_on_broken_preferred_term() -> None:
    broken = pod(preferred((2, term([expr("invalid key", "In", "bar")]))))
    state = CycleState()
    status = plugin().pre_score(state, broken, [node_info(node(**LABEL1))])
    assert status.code == Code.ERROR
    assert status.message().startswith('[0].matchExpressions[0].key: Invalid value: "invalid key"')
    assert "name part must consist of alphanumeric characters" in status.message()
    _, score_status = plugin().score(CycleState(), broken, node_info(node(**LABEL1)))
    assert score_status.code == Code.ERROR


# Args ------------------------------------------------------------------------------------------


def test_args_default() -> None:
    assert NodeAffinityArgs.parse(None) == NodeAffinityArgs()
    assert NodeAffinityArgs.parse({}).added_affinity is None


def test_args_parse_added_affinity() -> None:
    args = NodeAffinityArgs.parse(
        {
            "addedAffinity": {
                REQ: {"nodeSelectorTerms": [term([expr("zone", "In", "a")])]},
                PREF: [
                    {"weight": 5, "preference": term([expr("disk", "Exists")])},
                    {"weight": 0, "preference": term([expr("ignored", "Exists")])},
                    {"weight": 3, "preference": {}},
                ],
            }
        }
    )
    added = args.added_affinity
    assert added is not None
    assert added.required is not None
    assert added.required.matches("n", {"zone": "a"})
    assert not added.required.matches("n", {"zone": "b"})
    assert [t.weight for t in added.preferred] == [5]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"unknown": 1}, "args.unknown", id="unknown-top-level"),
        pytest.param({"addedAffinity": "x"}, "args.addedAffinity", id="not-an-object"),
        pytest.param(
            {"addedAffinity": {"requiredDuringSchedulingRequiredDuringExecution": {}}},
            "args.addedAffinity.requiredDuringSchedulingRequiredDuringExecution",
            id="unknown-affinity-field",
        ),
        pytest.param(
            {"addedAffinity": {REQ: {"nodeSelectorTerms": [term([expr("a", "Bogus")])]}}},
            f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator",
            id="bad-operator",
        ),
        pytest.param(
            {"addedAffinity": {REQ: {"nodeSelectorTerms": [term([expr("a", "In")])]}}},
            f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values",
            id="in-without-values",
        ),
        pytest.param(
            {"addedAffinity": {REQ: {"nodeSelectorTerms": [term([expr("bad key!", "Exists")])]}}},
            f"args.addedAffinity.{REQ}.nodeSelectorTerms[0]",
            id="invalid-label-key",
        ),
        pytest.param(
            {
                "addedAffinity": {
                    REQ: {"nodeSelectorTerms": [term(fields=[expr("spec.x", "In", "a")])]}
                }
            },
            f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchFields[0].key",
            id="invalid-field-key",
        ),
        pytest.param(
            {"addedAffinity": {PREF: [{"weight": "x", "preference": {}}]}},
            f"args.addedAffinity.{PREF}[0].weight",
            id="weight-not-int",
        ),
        pytest.param(
            {"addedAffinity": {PREF: {"weight": 1}}},
            f"args.addedAffinity.{PREF}",
            id="preferred-not-a-list",
        ),
        pytest.param(
            {"addedAffinity": {REQ: {"nodeSelectorTerms": [{"matchLabels": {}}]}}},
            f"args.addedAffinity.{REQ}.nodeSelectorTerms[0].matchLabels",
            id="unknown-term-field",
        ),
    ],
)
def test_args_invalid(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgsError) as info:
        NodeAffinityArgs.parse(raw)
    assert info.value.field == field


# Queueing hint and events ------------------------------------------------------------------


POD_FOO_BAR = pod(required(term([expr("foo", "In", "bar")])))
ENFORCE_FOO_BAR = added_required(term([expr("foo", "In", "bar")]))


@pytest.mark.parametrize(
    ("args", "old", "new", "expected"),
    [
        pytest.param(None, None, "not-a-node", QueueingHint.QUEUE, id="wrong-new-object"),
        pytest.param(None, "not-a-node", node(), QueueingHint.QUEUE, id="wrong-old-object"),
        pytest.param(None, None, node(), QueueingHint.QUEUE_SKIP, id="skip-on-add"),
        pytest.param(None, None, node(foo="bar"), QueueingHint.QUEUE, id="queue-on-add"),
        pytest.param(None, node(), node(), QueueingHint.QUEUE_SKIP, id="unrelated-change"),
        pytest.param(None, node(), node(k="v"), QueueingHint.QUEUE_SKIP, id="unrelated-labels"),
        pytest.param(
            None, node(foo="bar"), node(k="v"), QueueingHint.QUEUE_SKIP, id="suitable-to-unsuitable"
        ),
        pytest.param(
            None, node(foo="bar"), node(foo="bar", k="v"), QueueingHint.QUEUE_SKIP, id="was-match"
        ),
        pytest.param(
            None, node(), node(foo="bar"), QueueingHint.QUEUE, id="labels-make-pod-schedulable"
        ),
        pytest.param(
            ENFORCE_FOO_BAR, None, node(), QueueingHint.QUEUE_SKIP, id="enforced-skip-on-add"
        ),
        pytest.param(
            ENFORCE_FOO_BAR, None, node(foo="bar"), QueueingHint.QUEUE, id="enforced-queue-on-add"
        ),
    ],
)
def test_hint_node_change(
    args: dict[str, Any] | None, old: Any, new: Any, expected: QueueingHint
) -> None:
    p = plugin(args)
    (registration,) = p.events_to_register()
    assert registration.hint is not None
    assert registration.hint(POD_FOO_BAR, old, new) is expected


def test_hint_queues_when_an_invalid_term_hides_the_answer() -> None:
    broken = pod(required(term([expr("foo", "NotIn", "bad value!")])))
    assert plugin().is_schedulable_after_node_change(broken, None, node()) is QueueingHint.QUEUE


def test_events_to_register() -> None:
    (registration,) = plugin().events_to_register()
    assert registration.event.resource is EventResource.NODE
    assert registration.event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL


def test_runs_through_the_framework_with_taint_toleration() -> None:
    affinity = node_affinity.new(None, Handle())
    taints = taint_toleration.new(None, Handle())
    plugins = ProfilePlugins(
        pre_filter=[affinity],
        filter=[taints, affinity],
        pre_score=[taints, affinity],
        score=[(taints, 3), (affinity, 2)],
        all=[taints, affinity],
    )
    framework = Framework("default-scheduler", plugins, Handle())
    the_pod = make_pod("p").affinity(AFFINITY1).node_selector(zone="a").pod()
    infos = [
        node_info(
            make_node("n1")
            .label("zone", "a")
            .label("foo", "bar")
            .taint("t", "", "PreferNoSchedule")
        ),
        node_info(make_node("n2").label("zone", "a")),
        node_info(make_node("n3").label("zone", "b")),
        node_info(make_node("n4").label("zone", "a").taint("t", "", "NoSchedule")),
    ]
    state = CycleState()
    result, status, _ = framework.run_pre_filter(state, the_pod, infos)
    assert result is None
    assert status.is_success()
    statuses = {i.name: framework.run_filter_plugins(state, the_pod, i) for i in infos}
    assert statuses["n3"] == POD_UAU
    assert statuses["n3"].plugin == "NodeAffinity"
    assert statuses["n4"].message() == "node(s) had untolerated taint(s)"
    assert statuses["n4"].plugin == "TaintToleration"
    feasible = [i for i in infos if statuses[i.name].is_success()]
    assert framework.run_pre_score(state, the_pod, feasible).is_success()
    totals, score_status = framework.run_score(state, the_pod, feasible)
    assert score_status.is_success()
    by_node = {t.name: t.scores for t in totals}
    assert by_node == {
        "n1": {"TaintToleration": 0, "NodeAffinity": 200},
        "n2": {"TaintToleration": 300, "NodeAffinity": 0},
    }
