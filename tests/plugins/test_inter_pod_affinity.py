"""InterPodAffinity: filtering, PreFilter extensions, scoring, arguments and queueing hints.

The tables re-express the cases of upstream's interpodaffinity ``filtering_test.go``,
``scoring_test.go`` and ``plugin_test.go``. Upstream's default namespace ``""`` is ``default``
here; nodes carry only the labels a case gives them.
"""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import NodeScore
from kopf_scheduler.framework.status import SKIP, SUCCESS, Code, Status
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins import inter_pod_affinity
from kopf_scheduler.plugins.inter_pod_affinity import filtering, scoring
from kopf_scheduler.plugins.inter_pod_affinity.filtering import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)
from tests.builders import make_pod

NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}

AFFINITY_FAIL = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_AFFINITY)
ANTI_FAIL = Status(Code.UNSCHEDULABLE, REASON_ANTI_AFFINITY)
EXISTING_FAIL = Status(Code.UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)


# Object builders --------------------------------------------------------------------------


def sel_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def sel_not_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "NotIn", "values": list(values)}]}


def sel_exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def sel_exprs(*exprs: tuple[str, str, list[str]]) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": k, "operator": op, **({"values": v} if v else {})} for k, op, v in exprs
        ]
    }


def term(
    selector: dict[str, Any],
    topology_key: str,
    namespaces: list[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {"labelSelector": selector, "topologyKey": topology_key}
    if namespaces is not None:
        result["namespaces"] = namespaces
    if namespace_selector is not None:
        result["namespaceSelector"] = namespace_selector
    return result


def weighted(weight: int, pod_term: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": pod_term}


def affinity(
    required: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    anti_preferred: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if required is not None or preferred is not None:
        result["podAffinity"] = {}
        if required is not None:
            result["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = required
        if preferred is not None:
            result["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if anti is not None or anti_preferred is not None:
        result["podAntiAffinity"] = {}
        if anti is not None:
            result["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = anti
        if anti_preferred is not None:
            result["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = (
                anti_preferred
            )
    return result


def pod(
    name: str = "p",
    *,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    node: str = "",
    aff: dict[str, Any] | None = None,
) -> Pod:
    builder = make_pod(name, ns).labels(**(labels or {}))
    if node:
        builder.node(node)
    if aff:
        builder.affinity(aff)
    return builder.pod()


def node(name: str, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": dict(labels)}, "status": {}})


def snapshot_of(pods: list[Pod], nodes: list[Node]) -> Snapshot:
    infos = [NodeInfo(n, tuple(p for p in pods if p.node_name == n.name)) for n in nodes]
    return Snapshot.from_node_infos(infos, NAMESPACES)


def plugin_for(
    snapshot: Snapshot, args: dict[str, Any] | None = None
) -> inter_pod_affinity.InterPodAffinity:
    return inter_pod_affinity.new(args, Handle(snapshot=snapshot))


def run_filter(
    incoming: Pod, pods: list[Pod], nodes: list[Node]
) -> tuple[Status, list[Status] | None]:
    snapshot = snapshot_of(pods, nodes)
    plugin = plugin_for(snapshot)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.node_info_list)
    if not status.is_success():
        return status, None
    return status, [plugin.filter(state, incoming, info) for info in snapshot.node_info_list]


# Filter: one node ------------------------------------------------------------------------

SECURITY_S1 = {"security": "S1"}
SERVICE_SCAN = {"service": "securityscan"}
NODE1 = node("node1", region="r1", zone="z11")


def _scan_pod(**kwargs: Any) -> Pod:
    return pod("existing", labels=SERVICE_SCAN, node="node1", **kwargs)


SINGLE_NODE_CASES = [
    pytest.param(pod(), [], SKIP, None, id="no-rules-prefilter-skips"),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity([term(sel_in("service", "securityscan", "value2"), "region")]),
        ),
        [_scan_pod()],
        SUCCESS,
        SUCCESS,
        id="affinity-in-matches-existing-pod",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity([term(sel_not_in("service", "securityscan3", "value3"), "region")]),
        ),
        [_scan_pod()],
        SUCCESS,
        SUCCESS,
        id="affinity-not-in-matches-existing-pod",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [term(sel_in("service", "securityscan", "value2"), "region", ["DiffNameSpace"])]
            ),
        ),
        [pod("existing", ns="ns", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        AFFINITY_FAIL,
        id="affinity-other-namespace",
    ),
    pytest.param(
        pod(
            labels=SERVICE_SCAN,
            aff=affinity([term(sel_in("service", "antivirusscan", "value2"), "region")]),
        ),
        [_scan_pod()],
        SUCCESS,
        AFFINITY_FAIL,
        id="affinity-selector-does-not-match",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [
                    term(
                        sel_exprs(("service", "Exists", []), ("wrongkey", "DoesNotExist", [])),
                        "region",
                    ),
                    term(
                        sel_exprs(
                            ("service", "In", ["securityscan"]),
                            ("service", "NotIn", ["WrongValue"]),
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        [_scan_pod()],
        SUCCESS,
        SUCCESS,
        id="affinity-several-terms-and-operators",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [
                    term(
                        sel_exprs(("service", "Exists", []), ("wrongkey", "DoesNotExist", [])),
                        "region",
                    ),
                    term(
                        sel_exprs(
                            ("service", "In", ["securityscan2"]),
                            ("service", "NotIn", ["WrongValue"]),
                        ),
                        "region",
                    ),
                ]
            ),
        ),
        [_scan_pod()],
        SUCCESS,
        AFFINITY_FAIL,
        id="affinity-expressions-are-anded",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [term(sel_in("service", "securityscan", "value2"), "region")],
                [term(sel_in("service", "antivirusscan", "value2"), "node")],
            ),
        ),
        [_scan_pod()],
        SUCCESS,
        SUCCESS,
        id="affinity-and-anti-affinity-satisfied",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [term(sel_in("service", "securityscan", "value2"), "region")],
                [term(sel_in("service", "antivirusscan", "value2"), "node")],
            ),
        ),
        [
            _scan_pod(
                aff=affinity(anti=[term(sel_in("service", "antivirusscan", "value2"), "node")])
            )
        ],
        SUCCESS,
        SUCCESS,
        id="affinity-anti-affinity-and-symmetry-satisfied",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [term(sel_in("service", "securityscan", "value2"), "region")],
                [term(sel_in("service", "securityscan", "value2"), "zone")],
            ),
        ),
        [_scan_pod()],
        SUCCESS,
        ANTI_FAIL,
        id="affinity-met-anti-affinity-broken",
    ),
    pytest.param(
        pod(
            labels=SERVICE_SCAN,
            aff=affinity(
                [term(sel_in("service", "securityscan", "value2"), "region")],
                [term(sel_in("service", "antivirusscan", "value2"), "node")],
            ),
        ),
        [_scan_pod(aff=affinity(anti=[term(sel_in("service", "securityscan", "value2"), "zone")]))],
        SUCCESS,
        EXISTING_FAIL,
        id="existing-pod-anti-affinity-broken",
    ),
    pytest.param(
        pod(
            labels=SERVICE_SCAN,
            aff=affinity([term(sel_not_in("service", "securityscan", "value2"), "region")]),
        ),
        [],
        SUCCESS,
        AFFINITY_FAIL,
        id="pod-not-matching-its-own-affinity-is-not-first-of-group",
    ),
    pytest.param(
        pod(labels=SERVICE_SCAN),
        [_scan_pod(aff=affinity(anti=[term(sel_in("service", "securityscan", "value2"), "zone")]))],
        SUCCESS,
        EXISTING_FAIL,
        id="existing-anti-affinity-without-incoming-rules",
    ),
    pytest.param(
        pod(labels=SERVICE_SCAN),
        [
            _scan_pod(
                aff=affinity(anti=[term(sel_not_in("service", "securityscan", "value2"), "zone")])
            )
        ],
        SKIP,
        None,
        id="existing-anti-affinity-not-matching-skips",
    ),
    pytest.param(
        pod(
            labels=SERVICE_SCAN,
            aff=affinity(
                anti=[term(sel_exists("service"), "region"), term(sel_exists("security"), "region")]
            ),
        ),
        [
            pod(
                "existing",
                labels=SECURITY_S1,
                node="node1",
                aff=affinity(anti=[term(sel_exists("security"), "zone")]),
            )
        ],
        SUCCESS,
        ANTI_FAIL,
        id="incoming-anti-affinity-matches-existing-pod",
    ),
    pytest.param(
        pod(
            labels=SERVICE_SCAN,
            aff=affinity(
                anti=[term(sel_exists("service"), "zone"), term(sel_exists("security"), "zone")]
            ),
        ),
        [
            pod(
                "existing",
                labels=SECURITY_S1,
                node="node1",
                aff=affinity(anti=[term(sel_exists("security"), "zone")]),
            )
        ],
        SUCCESS,
        ANTI_FAIL,
        id="symmetry-a1-partial-match",
    ),
    pytest.param(
        pod(labels=SECURITY_S1, aff=affinity(anti=[term(sel_exists("security"), "zone")])),
        [
            pod(
                "existing",
                labels=SERVICE_SCAN,
                node="node1",
                aff=affinity(
                    anti=[term(sel_exists("service"), "zone"), term(sel_exists("security"), "zone")]
                ),
            )
        ],
        SUCCESS,
        EXISTING_FAIL,
        id="symmetry-a2-partial-match",
    ),
    pytest.param(
        pod(
            labels={"abc": "", "xyz": ""},
            aff=affinity(anti=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]),
        ),
        [
            pod(
                "existing",
                labels={"def": "", "xyz": ""},
                node="node1",
                aff=affinity(
                    anti=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]
                ),
            )
        ],
        SUCCESS,
        ANTI_FAIL,
        id="symmetry-b1-partial-match",
    ),
    pytest.param(
        pod(
            labels={"def": "", "xyz": ""},
            aff=affinity(anti=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]),
        ),
        [
            pod(
                "existing",
                labels={"abc": "", "xyz": ""},
                node="node1",
                aff=affinity(
                    anti=[term(sel_exists("abc"), "zone"), term(sel_exists("def"), "zone")]
                ),
            )
        ],
        SUCCESS,
        ANTI_FAIL,
        id="symmetry-b2-partial-match",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [
                    term(
                        sel_in("service", "securityscan", "value2"),
                        "region",
                        namespace_selector=sel_in("team", "team1"),
                    )
                ]
            ),
        ),
        [pod("existing", ns="subteam1.team1", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        SUCCESS,
        id="affinity-namespace-selector-matches",
    ),
    pytest.param(
        pod(
            labels=SECURITY_S1,
            aff=affinity(
                [
                    term(
                        sel_in("service", "securityscan", "value2"),
                        "region",
                        namespace_selector=sel_in("team", "team1"),
                    )
                ]
            ),
        ),
        [pod("existing", ns="subteam1.team2", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        AFFINITY_FAIL,
        id="affinity-namespace-selector-does-not-match",
    ),
    pytest.param(
        pod(
            ns="subteam1.team1",
            labels=SECURITY_S1,
            aff=affinity(
                anti=[
                    term(
                        sel_in("service", "securityscan", "value2"),
                        "zone",
                        namespace_selector=sel_in("team", "team1"),
                    )
                ]
            ),
        ),
        [pod("existing", ns="subteam2.team1", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        ANTI_FAIL,
        id="anti-affinity-namespace-selector-matches",
    ),
    pytest.param(
        pod(
            ns="subteam1.team1",
            labels=SECURITY_S1,
            aff=affinity(
                anti=[
                    term(sel_in("service", "securityscan", "value2"), "zone", namespace_selector={})
                ]
            ),
        ),
        [pod("existing", ns="subteam2.team1", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        ANTI_FAIL,
        id="anti-affinity-empty-namespace-selector-matches-all",
    ),
    pytest.param(
        pod(
            ns="subteam1.team1",
            labels=SECURITY_S1,
            aff=affinity(
                anti=[
                    term(
                        sel_in("service", "securityscan", "value2"),
                        "zone",
                        namespace_selector=sel_in("team", "team1"),
                    )
                ]
            ),
        ),
        [pod("existing", ns="subteam1.team2", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        SUCCESS,
        id="anti-affinity-namespace-selector-does-not-match",
    ),
    pytest.param(
        pod(
            ns="subteam1.team1",
            labels=SECURITY_S1,
            aff=affinity(
                anti=[
                    term(
                        sel_in("service", "securityscan"),
                        "zone",
                        namespace_selector=sel_exprs(("team", "DoesNotExist", [])),
                    )
                ]
            ),
        ),
        [pod("existing", ns="unlisted", labels=SERVICE_SCAN, node="node1")],
        SUCCESS,
        SUCCESS,
        id="namespace-selector-only-selects-known-namespaces",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=SECURITY_S1),
        [
            _scan_pod(
                aff=affinity(
                    anti=[
                        term(
                            sel_in("security", "S1"),
                            "zone",
                            namespace_selector=sel_in("team", "team1"),
                        )
                    ]
                )
            )
        ],
        SUCCESS,
        EXISTING_FAIL,
        id="existing-term-namespace-selector-uses-incoming-namespace-labels",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "want_pre_filter", "want_filter"), SINGLE_NODE_CASES)
def test_required_affinity_single_node(
    incoming: Pod, pods: list[Pod], want_pre_filter: Status, want_filter: Status | None
) -> None:
    pre_filter_status, statuses = run_filter(incoming, pods, [NODE1])
    assert pre_filter_status == want_pre_filter
    if want_filter is not None:
        assert statuses == [want_filter]
    else:
        assert statuses is None


# Filter: several nodes ------------------------------------------------------------------

CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}
NODES_R1_Z1_Z2 = [
    node("nodeA", region="r1", zone="z1", hostname="nodeA"),
    node("nodeB", region="r1", zone="z2", hostname="nodeB"),
]
NODES_R1_Z1_Z1 = [
    node("nodeA", region="r1", zone="z1", hostname="nodeA"),
    node("nodeB", region="r1", zone="z1", hostname="nodeB"),
]

MULTIPLE_NODE_CASES = [
    pytest.param(
        pod(aff=affinity([term(sel_in("foo", "bar"), "region")])),
        [pod("p1", labels={"foo": "bar"}, node="node1")],
        [node("node1", **CHINA), node("node2", **CHINA_AZ1), node("node3", **INDIA)],
        [SUCCESS, SUCCESS, AFFINITY_FAIL],
        id="affinity-whole-topology-domain-fits",
    ),
    pytest.param(
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=affinity(
                [
                    term(sel_in("foo", "bar"), "zone"),
                    term(sel_in("service", "securityscan"), "zone"),
                ]
            ),
        ),
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        [node("nodeA", zone="az1", hostname="h1"), node("nodeB", zone="az2", hostname="h2")],
        [SUCCESS, SUCCESS],
        id="first-pod-of-group-is-not-blocked",
    ),
    pytest.param(
        pod(
            labels={"foo": "bar", "service": "securityscan"},
            aff=affinity(
                [
                    term(sel_in("foo", "bar"), "zone"),
                    term(sel_in("service", "securityscan"), "zone"),
                ]
            ),
        ),
        [pod("p1", labels={"foo": "bar"}, node="nodeA")],
        [
            node("nodeA", zoneLabel="az1", hostname="h1"),
            node("nodeB", zoneLabel="az2", hostname="h2"),
        ],
        [AFFINITY_FAIL, AFFINITY_FAIL],
        id="first-pod-of-group-needs-topology-keys",
    ),
    pytest.param(
        pod(aff=affinity(anti=[term(sel_in("foo", "abc"), "region")])),
        [pod("e", labels={"foo": "abc"}, node="nodeA")],
        [
            node("nodeA", region="r1", hostname="nodeA"),
            node("nodeB", region="r1", hostname="nodeB"),
        ],
        [ANTI_FAIL, ANTI_FAIL],
        id="anti-affinity-whole-topology-domain-blocked",
    ),
    pytest.param(
        pod(
            aff=affinity(
                anti=[
                    term(sel_in("foo", "abc"), "region"),
                    term(sel_in("service", "securityscan"), "zone"),
                ]
            )
        ),
        [pod("e", labels={"foo": "abc", "service": "securityscan"}, node="nodeA")],
        NODES_R1_Z1_Z2,
        [ANTI_FAIL, ANTI_FAIL],
        id="anti-affinity-any-term-blocks",
    ),
    pytest.param(
        pod(aff=affinity(anti=[term(sel_in("foo", "abc"), "region")])),
        [pod("e", labels={"foo": "abc"}, node="nodeA")],
        [node("nodeA", **CHINA), node("nodeB", **CHINA_AZ1), node("nodeC", **INDIA)],
        [ANTI_FAIL, ANTI_FAIL, SUCCESS],
        id="anti-affinity-other-domain-fits",
    ),
    pytest.param(
        pod(
            ns="NS1",
            labels={"foo": "123"},
            aff=affinity(anti=[term(sel_in("foo", "bar"), "region")]),
        ),
        [
            pod("e1", ns="NS1", labels={"foo": "bar"}, node="nodeA"),
            pod(
                "e2",
                ns="NS2",
                node="nodeC",
                aff=affinity(anti=[term(sel_in("foo", "123"), "region")]),
            ),
        ],
        [node("nodeA", **CHINA), node("nodeB", **CHINA_AZ1), node("nodeC", **INDIA)],
        [ANTI_FAIL, ANTI_FAIL, SUCCESS],
        id="existing-anti-affinity-in-other-namespace-ignored",
    ),
    pytest.param(
        pod(
            ns="default",
            labels={"foo": ""},
            node="nodeA",
            aff=affinity(anti=[term(sel_exists("foo"), "invalid-node-label")]),
        ),
        [pod("e", labels={"foo": ""}, node="nodeA")],
        NODES_R1_Z1_Z1,
        [SUCCESS, SUCCESS],
        id="incoming-anti-affinity-needs-topology-key",
    ),
    pytest.param(
        pod(labels={"foo": "", "bar": ""}),
        [
            pod("e1", node="nodeA", aff=affinity(anti=[term(sel_exists("foo"), "zone")])),
            pod("e2", node="nodeA", aff=affinity(anti=[term(sel_exists("bar"), "region")])),
        ],
        NODES_R1_Z1_Z2,
        [EXISTING_FAIL, EXISTING_FAIL],
        id="existing-anti-affinity-on-every-node",
    ),
    pytest.param(
        pod(
            aff=affinity(anti=[term(sel_exists("foo"), "zone"), term(sel_exists("bar"), "region")])
        ),
        [pod("e1", labels={"foo": ""}, node="nodeA"), pod("e2", labels={"bar": ""}, node="nodeB")],
        NODES_R1_Z1_Z2,
        [ANTI_FAIL, ANTI_FAIL],
        id="incoming-anti-affinity-on-every-node",
    ),
    pytest.param(
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "e",
                node="nodeA",
                aff=affinity(
                    anti=[
                        term(sel_exists("foo"), "invalid-node-label"),
                        term(sel_exists("bar"), "zone"),
                    ]
                ),
            )
        ],
        NODES_R1_Z1_Z2,
        [EXISTING_FAIL, SUCCESS],
        id="existing-anti-affinity-term-without-topology-key",
    ),
    pytest.param(
        pod(
            aff=affinity(
                anti=[
                    term(sel_exists("foo"), "invalid-node-label"),
                    term(sel_exists("bar"), "zone"),
                ]
            )
        ),
        [pod("podA", labels={"foo": "", "bar": ""}, node="nodeA")],
        NODES_R1_Z1_Z2,
        [ANTI_FAIL, SUCCESS],
        id="incoming-anti-affinity-term-without-topology-key",
    ),
    pytest.param(
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "e",
                node="nodeA",
                aff=affinity(
                    anti=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")]
                ),
            )
        ],
        NODES_R1_Z1_Z2,
        [EXISTING_FAIL, EXISTING_FAIL],
        id="existing-anti-affinity-all-terms-with-topology-keys",
    ),
    pytest.param(
        pod(
            aff=affinity(anti=[term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")])
        ),
        [pod("e", labels={"foo": "", "bar": ""}, node="nodeA")],
        NODES_R1_Z1_Z2,
        [ANTI_FAIL, ANTI_FAIL],
        id="incoming-anti-affinity-all-terms-with-topology-keys",
    ),
    pytest.param(
        pod(labels={"foo": "", "bar": ""}),
        [
            pod(
                "e1",
                node="nodeA",
                aff=affinity(
                    anti=[term(sel_exists("foo"), "zone"), term(sel_exists("labelA"), "zone")]
                ),
            ),
            pod(
                "e2",
                node="nodeB",
                aff=affinity(
                    anti=[term(sel_exists("bar"), "zone"), term(sel_exists("labelB"), "zone")]
                ),
            ),
        ],
        [*NODES_R1_Z1_Z2, node("nodeC", region="r1", zone="z3", hostname="nodeC")],
        [EXISTING_FAIL, EXISTING_FAIL, SUCCESS],
        id="existing-anti-affinity-leaves-third-zone",
    ),
    pytest.param(
        pod(aff=affinity([term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")])),
        [pod("pod1", labels={"foo": "", "bar": ""}, node="nodeA")],
        NODES_R1_Z1_Z1,
        [SUCCESS, SUCCESS],
        id="affinity-all-terms-match-one-pod",
    ),
    pytest.param(
        pod(aff=affinity([term(sel_exists("foo"), "region"), term(sel_exists("bar"), "zone")])),
        [
            pod("pod1", labels={"foo": ""}, node="nodeA"),
            pod("pod2", labels={"bar": ""}, node="nodeB"),
        ],
        NODES_R1_Z1_Z2,
        [AFFINITY_FAIL, AFFINITY_FAIL],
        id="affinity-terms-must-match-the-same-pod",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), MULTIPLE_NODE_CASES)
def test_required_affinity_multiple_nodes(
    incoming: Pod, pods: list[Pod], nodes: list[Node], want: list[Status]
) -> None:
    pre_filter_status, statuses = run_filter(incoming, pods, nodes)
    assert pre_filter_status == SUCCESS
    assert statuses == want


def test_existing_anti_affinity_without_topology_key_skips_pre_filter() -> None:
    incoming = pod(labels={"foo": ""})
    existing = pod(
        "e", node="nodeA", aff=affinity(anti=[term(sel_exists("foo"), "invalid-node-label")])
    )
    pre_filter_status, statuses = run_filter(incoming, [existing], NODES_R1_Z1_Z1)
    assert pre_filter_status == SKIP
    assert statuses is None


def test_filter_without_pre_filter_state_is_an_error() -> None:
    snapshot = snapshot_of([], [NODE1])
    status = plugin_for(snapshot).filter(CycleState(), pod(), snapshot.node_info_list[0])
    assert status.code == Code.ERROR
    assert "PreFilterInterPodAffinity" in status.message()


def test_filter_reason_codes() -> None:
    assert AFFINITY_FAIL.reasons == ("node(s) didn't match pod affinity rules",)
    assert ANTI_FAIL.reasons == ("node(s) didn't match pod anti-affinity rules",)
    assert EXISTING_FAIL.reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)


# PreFilter extensions and state cloning -------------------------------------------------

ANTI_FOO_BAR = [term(sel_in("foo", "bar"), "region")]
COMPLEX_TERMS = [
    term(sel_in("foo", "bar", "buzz"), "region"),
    term(sel_not_in("service", "bar", "security", "test"), "zone"),
]
ADD_REMOVE_NODES = [
    node("nodeA", region="r1", zone="z11"),
    node("nodeB", region="r1", zone="z12"),
    node("nodeC", region="r2", zone="z21"),
]
FOO_BAR = {"foo": "bar"}


def _state_for(incoming: Pod, pods: list[Pod]) -> tuple[Any, CycleState, Snapshot]:
    snapshot = snapshot_of(pods, ADD_REMOVE_NODES)
    plugin = plugin_for(snapshot)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.node_info_list)
    assert status.is_success()
    return plugin, state, snapshot


def _counts(state: CycleState) -> tuple[dict[Any, int], dict[Any, int], dict[Any, int]]:
    s = state.read(filtering.PRE_FILTER_KEY)
    return (
        dict(s.existing_anti_affinity_counts),
        dict(s.affinity_counts),
        dict(s.anti_affinity_counts),
    )


ADD_REMOVE_CASES = [
    pytest.param(
        pod("pending", labels=FOO_BAR, aff=affinity(anti=ANTI_FOO_BAR)),
        [
            pod("p1", labels=FOO_BAR, node="nodeA"),
            pod("p2", node="nodeC", aff=affinity(anti=ANTI_FOO_BAR)),
        ],
        pod("added", labels=FOO_BAR, node="nodeB", aff=affinity(anti=ANTI_FOO_BAR)),
        {("region", "r1"): 2},
        {},
        id="anti-affinity-counts",
    ),
    pytest.param(
        pod("pending", labels=FOO_BAR, aff=affinity(anti=COMPLEX_TERMS)),
        [
            pod("p1", labels=FOO_BAR, node="nodeA"),
            pod("p2", node="nodeC", aff=affinity(anti=ANTI_FOO_BAR)),
        ],
        pod("added", labels=FOO_BAR, node="nodeA", aff=affinity(anti=COMPLEX_TERMS)),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
        id="anti-affinity-counts-several-terms",
    ),
    pytest.param(
        pod("pending", labels=FOO_BAR, aff=affinity(COMPLEX_TERMS)),
        [
            pod("p1", labels=FOO_BAR, node="nodeA"),
            pod("p2", node="nodeC", aff=affinity(COMPLEX_TERMS, ANTI_FOO_BAR)),
        ],
        pod("added", labels=FOO_BAR, node="nodeA", aff=affinity(anti=COMPLEX_TERMS)),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
        id="affinity-counts",
    ),
]


@pytest.mark.parametrize(
    ("pending", "existing", "added", "want_anti", "want_affinity"), ADD_REMOVE_CASES
)
def test_pre_filter_state_add_remove_pod(
    pending: Pod,
    existing: list[Pod],
    added: Pod,
    want_anti: dict[Any, int],
    want_affinity: dict[Any, int],
) -> None:
    _, all_pods_state, _ = _state_for(pending, [*existing, added])
    plugin, state, snapshot = _state_for(pending, existing)
    original = _counts(state)
    node_info = snapshot.get(added.node_name)
    assert node_info is not None

    assert plugin.add_pod(state, pending, added, node_info) == SUCCESS
    _, affinity_counts, anti_counts = _counts(state)
    assert anti_counts == want_anti
    assert affinity_counts == want_affinity
    assert _counts(state) == _counts(all_pods_state)

    assert plugin.remove_pod(state, pending, added, node_info) == SUCCESS
    assert _counts(state) == original


def test_pre_filter_state_clone_is_independent() -> None:
    pending = pod("pending", labels=FOO_BAR, aff=affinity(COMPLEX_TERMS, ANTI_FOO_BAR))
    plugin, state, snapshot = _state_for(
        pending,
        [
            pod("p1", labels=FOO_BAR, node="nodeA"),
            pod("p2", node="nodeC", aff=affinity(anti=ANTI_FOO_BAR)),
        ],
    )
    original = _counts(state)
    clone = state.clone()
    assert clone.read(filtering.PRE_FILTER_KEY) is not state.read(filtering.PRE_FILTER_KEY)
    assert _counts(clone) == original

    node_a = snapshot.get("nodeA")
    assert node_a is not None
    added = pod("added", labels=FOO_BAR, node="nodeA", aff=affinity(anti=ANTI_FOO_BAR))
    assert plugin.add_pod(clone, pending, added, node_a) == SUCCESS
    assert _counts(clone) != original
    assert _counts(state) == original


def test_add_pod_turns_filter_result() -> None:
    """A nominated pod that the incoming pod repels makes the node fail on the cloned state."""
    incoming = pod(labels={"app": "web"}, aff=affinity(anti=[term(sel_in("app", "web"), "zone")]))
    snapshot = snapshot_of([], [NODE1])
    plugin = plugin_for(snapshot)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.node_info_list)
    assert status == SUCCESS
    info = snapshot.node_info_list[0]
    assert plugin.filter(state, incoming, info) == SUCCESS
    clone = state.clone()
    nominated = pod("nominated", labels={"app": "web"}, node="node1")
    assert plugin.add_pod(clone, incoming, nominated, info) == SUCCESS
    assert plugin.filter(clone, incoming, info) == ANTI_FAIL
    assert plugin.filter(state, incoming, info) == SUCCESS


def test_add_pod_without_pre_filter_state_is_an_error() -> None:
    snapshot = snapshot_of([], [NODE1])
    status = plugin_for(snapshot).add_pod(CycleState(), pod(), pod("x"), snapshot.node_info_list[0])
    assert status.code == Code.ERROR


# Incoming pod's counts -------------------------------------------------------------------

NODE_A_HOST = node("nodeA", hostname="nodeA")
NORMAL_A = pod("normal", labels={"aaa": ""}, node="nodeA")
NORMAL_B = pod("normal", labels={"bbb": ""}, node="nodeA")
NORMAL_AB = pod("normal", labels={"aaa": "", "bbb": ""}, node="nodeA")
HOST_A = {("hostname", "nodeA"): 1}


def _exists_terms(*keys: str) -> list[dict[str, Any]]:
    return [term(sel_exists(k), "hostname") for k in keys]


INCOMING_COUNT_CASES = [
    pytest.param([], pod("aaa-normal"), {}, {}, id="nil"),
    pytest.param([NORMAL_A], pod("aaa-normal"), {}, {}, id="incoming-without-affinity"),
    pytest.param(
        [NORMAL_B],
        pod(aff=affinity(_exists_terms("aaa"), _exists_terms("aaa"))),
        {},
        {},
        id="no-pod-matches",
    ),
    pytest.param(
        [NORMAL_A],
        pod(aff=affinity(_exists_terms("aaa"), _exists_terms("aaa"))),
        HOST_A,
        HOST_A,
        id="single-term-matches",
    ),
    pytest.param(
        [NORMAL_AB],
        pod(aff=affinity(_exists_terms("aaa", "bbb"), _exists_terms("aaa"))),
        {("hostname", "nodeA"): 2},
        HOST_A,
        id="affinity-counts-once-per-term",
    ),
    pytest.param(
        [NORMAL_A],
        pod(aff=affinity(_exists_terms("aaa", "bbb"), _exists_terms("aaa", "bbb"))),
        {},
        HOST_A,
        id="affinity-needs-all-terms-anti-affinity-any",
    ),
    pytest.param(
        [NORMAL_AB],
        pod(aff=affinity(_exists_terms("aaa", "ccc"), _exists_terms("aaa", "ccc"))),
        {},
        HOST_A,
        id="anti-affinity-partial-match-case-1",
    ),
    pytest.param(
        [NORMAL_B],
        pod(aff=affinity(_exists_terms("aaa", "bbb"), _exists_terms("aaa", "bbb"))),
        {},
        HOST_A,
        id="anti-affinity-partial-match-case-2",
    ),
]


@pytest.mark.parametrize(
    ("existing", "incoming", "want_affinity", "want_anti"), INCOMING_COUNT_CASES
)
def test_incoming_affinity_counts(
    existing: list[Pod], incoming: Pod, want_affinity: dict[Any, int], want_anti: dict[Any, int]
) -> None:
    snapshot = snapshot_of(existing, [NODE_A_HOST])
    affinity_counts, anti_counts = filtering.incoming_affinity_counts(
        incoming.pod_affinity_required, incoming.anti_affinity_required, snapshot.node_info_list
    )
    assert affinity_counts == want_affinity
    assert anti_counts == want_anti


# Scoring ---------------------------------------------------------------------------------

S1 = {"security": "S1"}
S2 = {"security": "S2"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}

STAY_WITH_S1_IN_REGION = affinity(preferred=[weighted(5, term(sel_in("security", "S1"), "region"))])
STAY_WITH_S2_IN_REGION = affinity(preferred=[weighted(6, term(sel_in("security", "S2"), "region"))])
AFFINITY3 = affinity(
    preferred=[
        weighted(
            8, term(sel_exprs(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), "region")
        ),
        weighted(
            2,
            term(sel_exprs(("security", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region"),
        ),
    ]
)
HARD_AFFINITY = affinity(
    [
        term(sel_in("security", "S1", "value2"), "region"),
        term(sel_exprs(("security", "Exists", []), ("wrongkey", "DoesNotExist", [])), "region"),
    ]
)
AWAY_FROM_S1_IN_AZ = affinity(anti_preferred=[weighted(5, term(sel_in("security", "S1"), "az"))])
AWAY_FROM_S2_IN_AZ = affinity(anti_preferred=[weighted(5, term(sel_in("security", "S2"), "az"))])
STAY_S1_REGION_AWAY_S2_AZ = affinity(
    preferred=[weighted(8, term(sel_in("security", "S1"), "region"))],
    anti_preferred=[weighted(5, term(sel_in("security", "S2"), "az"))],
)
_NS_TERM = term(
    sel_in("security", "S1"),
    "region",
    ["subteam2.team2"],
    namespace_selector=sel_in("team", "team1"),
)
AFFINITY_NS_SELECTOR = affinity(preferred=[weighted(5, _NS_TERM)])
ANTI_AFFINITY_NS_SELECTOR = affinity(anti_preferred=[weighted(5, _NS_TERM)])

THREE_NODES = [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)]
TWO_REGION_NODES = [node("node1", **CHINA), node("node2", **INDIA)]


def _scored(incoming: Pod, pods: list[Pod], nodes: list[Node], args: dict[str, Any]) -> Any:
    snapshot = snapshot_of(pods, nodes)
    plugin = plugin_for(snapshot, args)
    state = CycleState()
    status = plugin.pre_score(state, incoming, snapshot.node_info_list)
    if not status.is_success():
        return status
    scores = []
    for info in snapshot.node_info_list:
        value, score_status = plugin.score(state, incoming, info)
        assert score_status == SUCCESS
        scores.append(NodeScore(info.name, value))
    assert plugin.normalize_score(state, incoming, scores) == SUCCESS
    return [(s.name, s.score) for s in scores]


def _on(
    node_name: str, labels: dict[str, str], aff: dict[str, Any] | None = None, ns: str = "default"
) -> Pod:
    return pod(f"on-{node_name}", ns=ns, labels=labels, node=node_name, aff=aff)


PREFERRED_CASES = [
    pytest.param(pod(labels=S1), [], THREE_NODES, False, SKIP, id="no-affinity-skips"),
    pytest.param(
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [_on("node1", S1), _on("node2", S2), _on("node3", S1)],
        THREE_NODES,
        False,
        [("node1", 100), ("node2", 0), ("node3", 0)],
        id="affinity-topology-key-and-pod-match",
    ),
    pytest.param(
        pod(aff=STAY_WITH_S1_IN_REGION),
        [_on("node1", S1)],
        [node("node1", **CHINA), node("node2", **CHINA_AZ1), node("node3", **INDIA)],
        False,
        [("node1", 100), ("node2", 100), ("node3", 0)],
        id="affinity-same-domain-same-score",
    ),
    pytest.param(
        pod(labels=S1, aff=STAY_WITH_S2_IN_REGION),
        [
            _on("node1", S2),
            pod("second", labels=S2, node="node1"),
            _on("node2", S2),
            _on("node3", S2),
            _on("node4", S2),
            _on("node5", S2),
        ],
        [
            node("node1", **CHINA),
            node("node2", **INDIA),
            node("node3", **CHINA),
            node("node4", **CHINA),
            node("node5", **INDIA),
        ],
        False,
        [("node1", 100), ("node2", 0), ("node3", 100), ("node4", 100), ("node5", 0)],
        id="affinity-region-with-more-matches-wins",
    ),
    pytest.param(
        pod(labels=S1, aff=AFFINITY3),
        [_on("node1", S1), _on("node2", S2), _on("node3", S1)],
        THREE_NODES,
        False,
        [("node1", 20), ("node2", 100), ("node3", 0)],
        id="affinity-operators-and-weights",
    ),
    pytest.param(
        pod(labels=S2),
        [_on("node1", S1, STAY_WITH_S1_IN_REGION), _on("node2", S2, STAY_WITH_S2_IN_REGION)],
        THREE_NODES,
        False,
        [("node1", 0), ("node2", 100), ("node3", 0)],
        id="symmetry-preferred-affinity",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1),
        [_on("node1", S1, AFFINITY_NS_SELECTOR), _on("node2", S2, STAY_WITH_S2_IN_REGION)],
        THREE_NODES,
        False,
        [("node1", 100), ("node2", 0), ("node3", 0)],
        id="symmetry-affinity-namespace-selector",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1),
        [_on("node1", S1, ANTI_AFFINITY_NS_SELECTOR), _on("node2", S2, STAY_WITH_S2_IN_REGION)],
        THREE_NODES,
        False,
        [("node1", 0), ("node2", 100), ("node3", 100)],
        id="symmetry-anti-affinity-namespace-selector-negative-scores",
    ),
    pytest.param(
        pod(labels=S1),
        [_on("node1", S1, HARD_AFFINITY), _on("node2", S2, HARD_AFFINITY)],
        THREE_NODES,
        False,
        [("node1", 100), ("node2", 100), ("node3", 0)],
        id="symmetry-required-affinity-hard-weight",
    ),
    pytest.param(
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [_on("node1", S1), _on("node2", S2)],
        [node("node1", **AZ1), node("node2", **CHINA)],
        False,
        [("node1", 0), ("node2", 100)],
        id="anti-affinity-matching-pod-scores-low",
    ),
    pytest.param(
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [_on("node1", S1), _on("node2", S1)],
        [node("node1", **AZ1), node("node2", **CHINA)],
        False,
        [("node1", 0), ("node2", 100)],
        id="anti-affinity-without-topology-key-scores-high",
    ),
    pytest.param(
        pod(labels=S1, aff=AWAY_FROM_S1_IN_AZ),
        [_on("node1", S1), pod("second", labels=S1, node="node1"), _on("node2", S2)],
        [node("node1", **AZ1), node("node2", **INDIA)],
        False,
        [("node1", 0), ("node2", 100)],
        id="anti-affinity-more-matches-scores-lower",
    ),
    pytest.param(
        pod(labels=S2),
        [_on("node1", S1, AWAY_FROM_S2_IN_AZ), _on("node2", S2, AWAY_FROM_S1_IN_AZ)],
        [node("node1", **AZ1), node("node2", **AZ2)],
        False,
        [("node1", 0), ("node2", 100)],
        id="symmetry-preferred-anti-affinity",
    ),
    pytest.param(
        pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
        [_on("node1", S1), _on("node2", S1)],
        [node("node1", **CHINA), node("node2", **AZ1)],
        False,
        [("node1", 100), ("node2", 0)],
        id="affinity-and-anti-affinity",
    ),
    pytest.param(
        pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
        [
            _on("node1", S1),
            pod("second", labels=S1, node="node1"),
            _on("node2", S1),
            _on("node3", S1),
            pod("third", labels=S1, node="node3"),
            _on("node4", S1),
            _on("node5", S1),
        ],
        [
            node("node1", **CHINA_AZ1),
            node("node2", **INDIA),
            node("node3", **CHINA),
            node("node4", **CHINA),
            node("node5", **INDIA),
        ],
        False,
        [("node1", 100), ("node2", 0), ("node3", 100), ("node4", 100), ("node5", 0)],
        id="affinity-and-anti-affinity-same-labels",
    ),
    pytest.param(
        pod(labels=S1, aff=STAY_S1_REGION_AWAY_S2_AZ),
        [
            _on("node1", S1),
            _on("node2", S2),
            _on("node3", {}, STAY_S1_REGION_AWAY_S2_AZ),
            _on("node4", {}, AWAY_FROM_S1_IN_AZ),
        ],
        [
            node("node1", **CHINA),
            node("node2", **AZ1),
            node("node3", **INDIA),
            node("node4", **AZ2),
        ],
        False,
        [("node1", 100), ("node2", 0), ("node3", 100), ("node4", 0)],
        id="affinity-anti-affinity-and-symmetry",
    ),
    pytest.param(
        pod(labels=S1),
        [_on("node1", S1), _on("node2", {}, STAY_S1_REGION_AWAY_S2_AZ)],
        [node("node1", **CHINA), node("node2", **CHINA)],
        False,
        [("node1", 0), ("node2", 0)],
        id="equal-scores-normalize-to-zero",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
        [
            _on("node1", S1, ns="subteam1.team1"),
            pod("second", ns="subteam1.team1", labels=S1, node="node1"),
            pod("third", ns="subteam1.team2", labels=S1, node="node1"),
            _on("node2", S1, ns="subteam2.team1"),
        ],
        TWO_REGION_NODES,
        False,
        [("node1", 100), ("node2", 0)],
        id="affinity-namespace-selector",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1, aff=AFFINITY_NS_SELECTOR),
        [
            _on("node1", S1, ns="subteam1.team1"),
            pod("second", ns="subteam1.team1", labels=S1, node="node1"),
            pod("third", ns="subteam2.team2", labels=S1, node="node1"),
            _on("node2", S1, ns="subteam2.team1"),
        ],
        TWO_REGION_NODES,
        False,
        [("node1", 100), ("node2", 0)],
        id="affinity-namespace-selector-and-namespaces",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
        [
            _on("node1", S1, ns="subteam1.team1"),
            pod("second", ns="subteam1.team1", labels=S1, node="node1"),
            pod("third", ns="subteam1.team2", labels=S1, node="node1"),
            _on("node2", S1, ns="subteam2.team1"),
        ],
        TWO_REGION_NODES,
        False,
        [("node1", 0), ("node2", 100)],
        id="anti-affinity-namespace-selector",
    ),
    pytest.param(
        pod(ns="subteam1.team1", labels=S1, aff=ANTI_AFFINITY_NS_SELECTOR),
        [
            _on("node1", S1, ns="subteam1.team1"),
            pod("second", ns="subteam1.team1", labels=S1, node="node1"),
            pod("third", ns="subteam2.team2", labels=S1, node="node1"),
            _on("node2", S1, ns="subteam2.team1"),
        ],
        TWO_REGION_NODES,
        False,
        [("node1", 0), ("node2", 100)],
        id="anti-affinity-namespace-selector-and-namespaces",
    ),
    pytest.param(
        pod(labels=S2),
        [_on("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), _on("node2", S2, STAY_WITH_S2_IN_REGION)],
        TWO_REGION_NODES,
        True,
        SKIP,
        id="ignore-preferred-terms-of-existing-pods",
    ),
    pytest.param(
        pod(labels=S2),
        [_on("node1", S1, STAY_S1_REGION_AWAY_S2_AZ), _on("node2", S2, STAY_WITH_S2_IN_REGION)],
        TWO_REGION_NODES,
        False,
        [("node1", 0), ("node2", 100)],
        id="do-not-ignore-preferred-terms-of-existing-pods",
    ),
    pytest.param(
        pod(labels=S1, aff=STAY_WITH_S1_IN_REGION),
        [_on("node1", S2, STAY_WITH_S2_IN_REGION), _on("node2", S1)],
        TWO_REGION_NODES,
        True,
        [("node1", 0), ("node2", 100)],
        id="ignore-flag-does-not-apply-to-pods-with-preferences",
    ),
    pytest.param(pod(labels=S2), [], [], False, SKIP, id="no-nodes-skips"),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "ignore", "want"), PREFERRED_CASES)
def test_preferred_affinity(
    incoming: Pod, pods: list[Pod], nodes: list[Node], ignore: bool, want: Any
) -> None:
    args = {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore}
    assert _scored(incoming, pods, nodes, args) == want


HARD_POD_AFFINITY = affinity(
    [
        term(
            sel_in("service", "S1"),
            "region",
            ["default", "subteam2.team2"],
            namespace_selector=sel_in("team", "team1"),
        )
    ]
)
HARD_NODES = [node("node1", **CHINA), node("node2", **INDIA), node("node3", **AZ1)]
HARD_PODS = [_on("node1", {}, HARD_POD_AFFINITY), _on("node2", {}, HARD_POD_AFFINITY)]
HARD_WANT = [("node1", 100), ("node2", 100), ("node3", 0)]

HARD_WEIGHT_CASES = [
    pytest.param("default", 1, HARD_WANT, id="default-weight"),
    pytest.param("default", 0, SKIP, id="zero-weight"),
    pytest.param("subteam1.team2", 1, SKIP, id="no-matching-namespace"),
    pytest.param("subteam1.team1", 1, HARD_WANT, id="matching-namespace-selector"),
    pytest.param("subteam2.team2", 1, HARD_WANT, id="matching-namespaces"),
]


@pytest.mark.parametrize(("namespace", "weight", "want"), HARD_WEIGHT_CASES)
def test_hard_pod_affinity_weight(namespace: str, weight: int, want: Any) -> None:
    incoming = pod(ns=namespace, labels={"service": "S1"})
    assert _scored(incoming, HARD_PODS, HARD_NODES, {"hardPodAffinityWeight": weight}) == want


def test_raw_scores_before_normalization() -> None:
    incoming = pod(labels=S1, aff=AFFINITY3)
    snapshot = snapshot_of([_on("node1", S1), _on("node2", S2), _on("node3", S1)], THREE_NODES)
    plugin = plugin_for(snapshot)
    state = CycleState()
    assert plugin.pre_score(state, incoming, snapshot.node_info_list) == SUCCESS
    raw = [plugin.score(state, incoming, info)[0] for info in snapshot.node_info_list]
    assert raw == [2, 10, 0]
    assert state.read(scoring.PRE_SCORE_KEY).topology_scores == {
        "region": {"China": 2, "India": 10}
    }


def test_normalize_truncates_toward_zero() -> None:
    state = scoring.PreScoreState({"zone": {"a": 1}})
    scores = [NodeScore("a", -7), NodeScore("b", 0), NodeScore("c", 2)]
    assert scoring.normalize(state, scores) == SUCCESS
    # (0 + 7) / 9 * 100 = 77.7...
    assert [s.score for s in scores] == [0, 77, 100]


# Arguments -------------------------------------------------------------------------------


def test_args_defaults() -> None:
    assert inter_pod_affinity.Args.parse(None) == inter_pod_affinity.Args(1, False)
    assert inter_pod_affinity.Args.parse(
        {"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}
    ) == inter_pod_affinity.Args(100, True)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(
            {"hardPodAffinityWeight": -1}, "args.hardPodAffinityWeight", id="weight-below-range"
        ),
        pytest.param(
            {"hardPodAffinityWeight": 101}, "args.hardPodAffinityWeight", id="weight-above-range"
        ),
        pytest.param(
            {"hardPodAffinityWeight": "1"}, "args.hardPodAffinityWeight", id="weight-not-int"
        ),
        pytest.param(
            {"ignorePreferredTermsOfExistingPods": "yes"},
            "args.ignorePreferredTermsOfExistingPods",
            id="ignore-not-bool",
        ),
        pytest.param(
            {"hardPodAffinitySymmetricWeight": 1},
            "args.hardPodAffinitySymmetricWeight",
            id="unknown-field",
        ),
    ],
)
def test_args_invalid(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgsError) as error:
        inter_pod_affinity.Args.parse(raw)
    assert error.value.field == field


# Queueing hints --------------------------------------------------------------------------

AFFINITY_TARGET = pod(aff=affinity([term(sel_in("service", "securityscan", "value2"), "region")]))
ANTI_TARGET = pod(aff=affinity(anti=[term(sel_in("service", "securityscan", "value2"), "region")]))
MULTI_TARGET = pod(
    aff=affinity([term(sel_exists("aaa"), "hostname"), term(sel_exists("bbb"), "hostname")])
)


def _assigned(**labels: str) -> Pod:
    return pod("other", labels=labels, node="fake-node")


QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP

POD_HINT_CASES = [
    pytest.param(
        AFFINITY_TARGET, None, _assigned(service="securityscan"), QUEUE, id="add-matching-pod"
    ),
    pytest.param(
        AFFINITY_TARGET,
        None,
        pod("other", labels=SERVICE_SCAN),
        QUEUE_SKIP,
        id="add-unscheduled-pod",
    ),
    pytest.param(AFFINITY_TARGET, None, _assigned(aaa="a"), QUEUE_SKIP, id="add-non-matching-pod"),
    pytest.param(
        AFFINITY_TARGET,
        _assigned(aaa="a"),
        _assigned(service="securityscan"),
        QUEUE,
        id="update-to-match",
    ),
    pytest.param(
        AFFINITY_TARGET,
        _assigned(service="value2"),
        _assigned(service="securityscan"),
        QUEUE_SKIP,
        id="update-matching-both-times",
    ),
    pytest.param(
        AFFINITY_TARGET,
        pod("other", labels=SERVICE_SCAN),
        pod("other", labels=SERVICE_SCAN),
        QUEUE_SKIP,
        id="update-unscheduled-pod",
    ),
    pytest.param(
        AFFINITY_TARGET,
        _assigned(service="securityscan"),
        _assigned(aaa="a"),
        QUEUE_SKIP,
        id="update-to-not-match",
    ),
    pytest.param(
        MULTI_TARGET,
        _assigned(aaa="a"),
        _assigned(service="securityscan"),
        QUEUE_SKIP,
        id="update-multi-terms-to-not-match",
    ),
    pytest.param(
        MULTI_TARGET,
        _assigned(aaa="a"),
        _assigned(aaa="", bbb=""),
        QUEUE,
        id="update-multi-terms-to-match",
    ),
    pytest.param(
        ANTI_TARGET,
        _assigned(service="securityscan"),
        _assigned(service="aaaa"),
        QUEUE,
        id="update-leaves-anti-affinity",
    ),
    pytest.param(
        ANTI_TARGET,
        _assigned(service="bbb"),
        _assigned(service="securityscan"),
        QUEUE_SKIP,
        id="update-enters-anti-affinity",
    ),
    pytest.param(ANTI_TARGET, _assigned(aaa="a"), None, QUEUE_SKIP, id="delete-non-matching-pod"),
    pytest.param(
        ANTI_TARGET, _assigned(service="securityscan"), None, QUEUE, id="delete-matching-pod"
    ),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), POD_HINT_CASES)
def test_is_schedulable_after_pod_change(
    target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert inter_pod_affinity.is_schedulable_after_pod_change(target, old, new) == want


ZONE_AFFINITY = pod(aff=affinity([term(sel_in("service", "securityscan", "value2"), "zone")]))
REGION_AFFINITY = pod(aff=affinity([term(sel_in("service", "securityscan", "value2"), "region")]))
ZONE_ANTI = pod(aff=affinity(anti=[term({"matchLabels": {"another": "label"}}, "zone")]))

NODE_HINT_CASES = [
    pytest.param(
        ZONE_AFFINITY, None, node("node-a", zone="zone1"), QUEUE, id="add-node-with-affinity-key"
    ),
    pytest.param(
        REGION_AFFINITY,
        None,
        node("node-a", zone="zone1"),
        QUEUE_SKIP,
        id="add-node-without-affinity-key",
    ),
    pytest.param(
        ZONE_AFFINITY,
        node("node-a", aaa="a"),
        node("node-a", aaa="b"),
        QUEUE_SKIP,
        id="update-unrelated-label",
    ),
    pytest.param(
        ZONE_AFFINITY,
        node("node-a", zone="zone1"),
        node("node-a", zone="zone1", unrelated="x"),
        QUEUE_SKIP,
        id="update-label-not-related-to-affinity",
    ),
    pytest.param(
        ZONE_AFFINITY,
        node("node-a", zone="zone1"),
        node("node-a", zone="zone2"),
        QUEUE,
        id="update-affinity-key-value",
    ),
    pytest.param(
        ZONE_AFFINITY,
        node("node-a", aaa="a"),
        node("node-a", zone="zone1"),
        QUEUE,
        id="update-gains-affinity-key",
    ),
    pytest.param(
        ZONE_ANTI, None, node("node-a", zone="zone1"), QUEUE, id="add-node-with-anti-affinity-key"
    ),
    pytest.param(ZONE_ANTI, None, node("node-a"), QUEUE, id="add-node-without-anti-affinity-key"),
    pytest.param(
        ZONE_ANTI,
        node("node-a", zone="zone1"),
        node("node-a", zone="zone1", unrelated="x"),
        QUEUE_SKIP,
        id="update-label-not-related-to-anti-affinity",
    ),
    pytest.param(
        ZONE_ANTI,
        node("node-a", zone="zone1"),
        node("node-a", zone="zone2"),
        QUEUE,
        id="update-anti-affinity-key-value",
    ),
    pytest.param(
        ZONE_ANTI,
        node("node-a", aaa="a"),
        node("node-a", zone="zone1"),
        QUEUE_SKIP,
        id="update-gains-anti-affinity-key",
    ),
    pytest.param(
        ZONE_ANTI,
        node("node-a", zone="zone1"),
        node("node-a", aaa="a"),
        QUEUE,
        id="update-loses-anti-affinity-key",
    ),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), NODE_HINT_CASES)
def test_is_schedulable_after_node_change(
    target: Pod, old: Node | None, new: Node, want: QueueingHint
) -> None:
    assert inter_pod_affinity.is_schedulable_after_node_change(target, old, new) == want


def test_events_to_register() -> None:
    plugin = plugin_for(Snapshot())
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert events[0].hint is inter_pod_affinity.is_schedulable_after_pod_change
    assert events[1].hint is inter_pod_affinity.is_schedulable_after_node_change


def test_plugin_anatomy() -> None:
    plugin = plugin_for(Snapshot())
    assert inter_pod_affinity.NAME == "InterPodAffinity"
    assert plugin.name == "InterPodAffinity"
    assert plugin.pre_filter_extensions() is plugin
    assert plugin.score_extensions() is plugin
