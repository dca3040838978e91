"""PodTopologySpread: PreFilter state, Filter, PreFilter extensions, scoring, arguments, hints.

The tables re-express the cases of upstream's podtopologyspread ``filtering_test.go``,
``scoring_test.go`` and ``plugin_test.go`` (node inclusion policies and matchLabelKeys enabled,
as they are in v1.34). Upstream's default namespace ``""`` is ``default`` here; nodes carry only
the labels a case gives them.
"""

from __future__ import annotations

import math
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
from kopf_scheduler.model.selectors import LabelSelector
from kopf_scheduler.plugins import pod_topology_spread
from kopf_scheduler.plugins.pod_topology_spread import common, filtering, scoring
from kopf_scheduler.plugins.pod_topology_spread.filtering import (
    MAX_INT32,
    REASON_CONSTRAINTS_NOT_MATCH,
    REASON_NODE_LABEL_NOT_MATCH,
)

DNS = "DoNotSchedule"
SA = "ScheduleAnyway"
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
FOO: dict[str, Any] = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR: dict[str, Any] = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
NULL = None
UNSCHEDULABLE_TAINT = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]

OK = Code.SUCCESS
FAIL = Code.UNSCHEDULABLE
UAU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# Object builders --------------------------------------------------------------------------


def tsc(
    max_skew: int,
    key: str,
    when: str = DNS,
    selector: dict[str, Any] | None = FOO,
    **extra: Any,
) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
    }
    if selector is not None:
        constraint["labelSelector"] = selector
    constraint.update(extra)
    return constraint


def node_affinity(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator, "values": list(values)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    }


def pod(
    name: str = "p",
    *,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    node: str = "",
    constraints: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    terminating: bool = False,
    uid: str = "",
) -> Pod:
    metadata: dict[str, Any] = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    metadata["uid"] = uid or f"{ns}/{name}/{node}"
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    return Pod({"metadata": metadata, "spec": spec})


def foo_pods(node_name: str, *names: str, **labels: str) -> list[Pod]:
    return [pod(n, labels=labels or {"foo": ""}, node=node_name) for n in names]


def node(name: str, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": dict(labels)}, "spec": {}})


def tainted(name: str, **labels: str) -> Node:
    """A node with the ``node.kubernetes.io/unschedulable:NoSchedule`` taint."""
    raw = {
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"taints": UNSCHEDULABLE_TAINT},
    }
    return Node(raw)


def zn(name: str, zone: str, **labels: str) -> Node:
    """A node with ``zone`` and ``node`` labels (upstream's test topology keys)."""
    return node(name, zone=zone, node=name, **labels)


class FakeWorkloads:
    """Services (selector maps) in the default namespace and an optional owning controller."""

    def __init__(
        self, services: list[dict[str, str]] | None = None, owner: LabelSelector | None = None
    ) -> None:
        self.services = services or []
        self.owner = owner

    def selectors_for(self, target: Pod) -> list[LabelSelector]:
        selectors = [
            LabelSelector(s)
            for s in self.services
            if all(target.labels.get(k) == v for k, v in s.items())
        ]
        if self.owner is not None:
            selectors.append(self.owner)
        return selectors


def setup(
    pods: list[Pod],
    nodes: list[Node],
    args: dict[str, Any] | None = None,
    workloads: FakeWorkloads | None = None,
) -> tuple[pod_topology_spread.PodTopologySpread, Snapshot]:
    infos = [NodeInfo(n, tuple(p for p in pods if p.node_name == n.name)) for n in nodes]
    snapshot = Snapshot.from_node_infos(infos)
    handle = Handle(snapshot=snapshot, workload_selectors=workloads)
    plugin = pod_topology_spread.new(
        args if args is not None else {"defaultingType": "List"}, handle
    )
    return plugin, snapshot


def pre_filter(
    incoming: Pod,
    pods: list[Pod],
    nodes: list[Node],
    args: dict[str, Any] | None = None,
    workloads: FakeWorkloads | None = None,
) -> tuple[Any, CycleState, Snapshot, Status]:
    plugin, snapshot = setup(pods, nodes, args, workloads)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.node_info_list)
    return plugin, state, snapshot, status


def paths_of(paths: filtering.CriticalPaths) -> list[tuple[str, int]]:
    first, second = paths.paths
    if first[1] == second[1] and first[0] > second[0]:
        first, second = second, first
    return [first, second]


def summary(state: CycleState) -> tuple[list[tuple[str, int]], list[dict[str, int]], list[Any]]:
    s = state.read(filtering.PRE_FILTER_KEY)
    return (
        [(c.topology_key, c.max_skew) for c in s.constraints],
        s.match_num,
        [paths_of(p) for p in s.critical_paths],
    )


NODES4 = [
    zn("node-a", "zone1"),
    zn("node-b", "zone1"),
    zn("node-x", "zone2"),
    zn("node-y", "zone2"),
]
NODES3 = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")]
PODS_3_2 = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1"),
    *foo_pods("node-y", "p-y1", "p-y2"),
]
PODS_3_4 = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1"),
    *foo_pods("node-y", "p-y1", "p-y2", "p-y3", "p-y4"),
]
NODE_ABC = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-c", node="node-c", bar=""),
]
NODE_ABC_TAINTED = [
    node("node-a", node="node-a"),
    node("node-b", node="node-b"),
    tainted("node-c", node="node-c", bar=""),
]
PODS_BAR_1_2 = [
    pod("p-a", labels={"bar": ""}, node="node-a"),
    pod("p-b", labels={"bar": ""}, node="node-b"),
    pod("p-c", labels={"bar": ""}, node="node-b"),
    pod("p-d", node="node-c"),
]
FOO_POD = {"foo": ""}
TOLERATE_UNSCHEDULABLE = [
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
]


# PreFilter state ------------------------------------------------------------------------

PRE_FILTER_CASES = [
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(5, "zone", selector={"matchLabels": {"foo": "bar"}})]),
        [],
        NODES4,
        [("zone", 5)],
        [{"zone1": 0, "zone2": 0}],
        [[("zone1", 0), ("zone2", 0)]],
        id="clean-cluster",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        PODS_3_2,
        NODES4,
        [("zone", 1)],
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        id="one-constraint",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", selector=NULL)]),
        PODS_3_2,
        NODES4,
        [("zone", 1)],
        [{"zone1": 0, "zone2": 0}],
        [[("zone1", 0), ("zone2", 0)]],
        id="null-selector-matches-nothing",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        PODS_3_2,
        [*NODES4, zn("node-o", "zone3"), zn("node-p", "zone3")],
        [("zone", 1)],
        [{"zone1": 3, "zone2": 2, "zone3": 0}],
        [[("zone3", 0), ("zone2", 2)]],
        id="three-zones",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        [
            pod("p-a1", labels=FOO_POD, node="node-a"),
            pod("p-a2", ns="ns1", labels=FOO_POD, node="node-a"),
            pod("p-b1", labels=FOO_POD, node="node-b"),
            pod("p-y1", ns="ns2", labels=FOO_POD, node="node-y"),
            pod("p-y2", labels=FOO_POD, node="node-y"),
        ],
        NODES4,
        [("zone", 1)],
        [{"zone1": 2, "zone2": 1}],
        [[("zone2", 1), ("zone1", 2)]],
        id="other-namespaces-do-not-count",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone"), tsc(1, "node")]),
        PODS_3_4,
        NODES4,
        [("zone", 1), ("node", 1)],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-x", 0), ("node-b", 1)]],
        id="two-constraints",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            constraints=[tsc(1, "zone", SA), tsc(1, "zone"), tsc(1, "node", SA), tsc(1, "node")],
        ),
        PODS_3_4,
        NODES3,
        [("zone", 1), ("node", 1)],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 1), ("node-a", 2)]],
        id="schedule-anyway-constraints-bypassed",
    ),
    pytest.param(
        pod(
            labels={"foo": "", "bar": ""},
            constraints=[tsc(1, "zone"), tsc(1, "node", selector=BAR)],
        ),
        [pod("p-a", labels=FOO_POD, node="node-a"), pod("p-b", labels={"bar": ""}, node="node-b")],
        NODES3,
        [("zone", 1), ("node", 1)],
        [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
        [[("zone2", 0), ("zone1", 1)], [("node-a", 0), ("node-y", 0)]],
        id="different-selectors-simple",
    ),
    pytest.param(
        pod(
            labels={"foo": "", "bar": ""},
            constraints=[tsc(1, "zone"), tsc(1, "node", selector=BAR)],
        ),
        [
            pod("p-a1", labels=FOO_POD, node="node-a"),
            pod("p-a2", labels={"foo": "", "bar": ""}, node="node-a"),
            pod("p-b1", labels=FOO_POD, node="node-b"),
            pod("p-y1", labels=FOO_POD, node="node-y"),
            pod("p-y2", labels={"foo": "", "bar": ""}, node="node-y"),
            pod("p-y3", labels=FOO_POD, node="node-y"),
            pod("p-y4", labels={"foo": "", "bar": ""}, node="node-y"),
        ],
        NODES3,
        [("zone", 1), ("node", 1)],
        [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 0), ("node-a", 1)]],
        id="different-selectors-complex",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("node", "NotIn", "node-x"),
            constraints=[tsc(1, "zone"), tsc(1, "node")],
        ),
        PODS_3_4,
        NODES4,
        [("zone", 1), ("node", 1)],
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
        [[("zone1", 3), ("zone2", 4)], [("node-b", 1), ("node-a", 2)]],
        id="node-affinity-excludes-node",
    ),
    pytest.param(
        pod(labels=FOO_POD, node_selector={"foo": ""}, constraints=[tsc(1, "node", selector=BAR)]),
        PODS_BAR_1_2,
        NODE_ABC,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2}],
        [[("node-a", 1), ("node-b", 2)]],
        id="node-affinity-policy-honored-node-selector",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            node_selector={"foo": ""},
            constraints=[tsc(1, "node", selector=BAR, nodeAffinityPolicy="Ignore")],
        ),
        PODS_BAR_1_2,
        NODE_ABC,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        id="node-affinity-policy-ignored-node-selector",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("foo", "In", ""),
            constraints=[tsc(1, "node", selector=BAR)],
        ),
        PODS_BAR_1_2,
        NODE_ABC,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2}],
        [[("node-a", 1), ("node-b", 2)]],
        id="node-affinity-policy-honored-node-affinity",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("foo", "In", ""),
            constraints=[tsc(1, "node", selector=BAR, nodeAffinityPolicy="Ignore")],
        ),
        PODS_BAR_1_2,
        NODE_ABC,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        id="node-affinity-policy-ignored-node-affinity",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node", selector=BAR)]),
        PODS_BAR_1_2,
        NODE_ABC_TAINTED,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        id="node-taints-policy-ignored-by-default",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node", selector=BAR, nodeTaintsPolicy="Honor")]),
        PODS_BAR_1_2,
        NODE_ABC_TAINTED,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2}],
        [[("node-a", 1), ("node-b", 2)]],
        id="node-taints-policy-honored",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            tolerations=TOLERATE_UNSCHEDULABLE,
            constraints=[tsc(1, "node", selector=BAR, nodeTaintsPolicy="Honor")],
        ),
        PODS_BAR_1_2,
        NODE_ABC_TAINTED,
        [("node", 1)],
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
        [[("node-c", 0), ("node-a", 1)]],
        id="node-taints-policy-honored-tolerated-taint",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            node_selector={"foo": ""},
            constraints=[tsc(1, "zone"), tsc(1, "node", nodeAffinityPolicy="Ignore")],
        ),
        [*foo_pods("node-b", "p-b1", "p-b2"), *foo_pods("node-x", "p-x1")],
        [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo="")],
        [("zone", 1), ("node", 1)],
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        [[("zone1", 0), ("zone2", 1)], [("node-a", 0), ("node-x", 1)]],
        id="per-constraint-policies-honor-ignore",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", nodeTaintsPolicy="Honor"), tsc(1, "node")]),
        [*foo_pods("node-b", "p-b1", "p-b2"), *foo_pods("node-x", "p-x1")],
        [
            zn("node-a", "zone1", foo=""),
            tainted("node-b", zone="zone1", node="node-b"),
            zn("node-x", "zone2", foo=""),
        ],
        [("zone", 1), ("node", 1)],
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
        [[("zone1", 0), ("zone2", 1)], [("node-a", 0), ("node-x", 1)]],
        id="per-constraint-policies-taints-honored-for-zone-only",
    ),
    pytest.param(
        pod(
            labels=FOO_POD, node_selector={"foo": ""}, constraints=[tsc(1, "zone"), tsc(1, "node")]
        ),
        [
            *foo_pods("node-a", "p-a1", "p-a2"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        [
            zn("node-a", "zone1"),
            tainted("node-b", zone="zone1", node="node-b", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        [("zone", 1), ("node", 1)],
        [{"zone1": 0, "zone2": 1}, {"node-b": 0, "node-x": 1}],
        [[("zone1", 0), ("zone2", 1)], [("node-b", 0), ("node-x", 1)]],
        id="per-constraint-policies-affinity-honored-taints-ignored",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            node_selector={"foo": ""},
            constraints=[
                tsc(1, "zone", nodeAffinityPolicy="Ignore"),
                tsc(1, "node", nodeTaintsPolicy="Honor"),
            ],
        ),
        [
            *foo_pods("node-a", "p-a1", "p-a2"),
            *foo_pods("node-x", "p-x1", "p-x2"),
            *foo_pods("node-y", "p-y1"),
        ],
        [
            zn("node-a", "zone1"),
            tainted("node-b", zone="zone1", node="node-b", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", foo=""),
        ],
        [("zone", 1), ("node", 1)],
        [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
        [[("zone1", 2), ("zone2", 3)], [("node-y", 1), ("node-x", 2)]],
        id="per-constraint-policies-ignore-then-honor-both",
    ),
    pytest.param(
        pod(labels={"foo": "", "bar": "a"}, constraints=[tsc(1, "zone", matchLabelKeys=["bar"])]),
        [
            pod("p-a1", labels=FOO_POD, node="node-a"),
            pod("p-a2", labels={"foo": "", "bar": "a"}, node="node-a"),
            pod("p-b1", labels=FOO_POD, node="node-b"),
            pod("p-y1", labels={"foo": "", "bar": "a"}, node="node-y"),
            pod("p-y2", labels={"bar": ""}, node="node-y"),
        ],
        NODES4,
        [("zone", 1)],
        [{"zone1": 1, "zone2": 1}],
        [[("zone1", 1), ("zone2", 1)]],
        id="match-label-keys-anded-with-selector",
    ),
    pytest.param(
        pod(labels={"foo": "a"}, constraints=[tsc(1, "zone", selector={}, matchLabelKeys=["foo"])]),
        [
            *foo_pods("node-a", "p-a1", "p-a2", foo="a"),
            *foo_pods("node-b", "p-b1", foo="a"),
            *foo_pods("node-y", "p-y1", "p-y2", foo="a"),
        ],
        NODES4,
        [("zone", 1)],
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        id="match-label-keys-with-empty-selector",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", selector=NULL, matchLabelKeys=["bar"])]),
        [*foo_pods("node-a", "p-a1", "p-a2", foo="a"), *foo_pods("node-y", "p-y1", foo="a")],
        NODES4,
        [("zone", 1)],
        [{"zone1": 0, "zone2": 0}],
        [[("zone1", 0), ("zone2", 0)]],
        id="match-label-keys-ignored-with-null-selector",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", matchLabelKeys=["bar"])]),
        [
            *foo_pods("node-a", "p-a1", "p-a2", foo="a"),
            *foo_pods("node-b", "p-b1", foo="a"),
            *foo_pods("node-y", "p-y1", "p-y2", foo="a"),
        ],
        NODES4,
        [("zone", 1)],
        [{"zone1": 3, "zone2": 2}],
        [[("zone2", 2), ("zone1", 3)]],
        id="match-label-keys-missing-from-pod-labels",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node")]),
        [
            pod("p-a", labels=FOO_POD, node="node-a", terminating=True),
            pod("p-b", labels=FOO_POD, node="node-b"),
        ],
        [node("node-a", node="node-a"), node("node-b", node="node-b")],
        [("node", 1)],
        [{"node-a": 0, "node-b": 1}],
        [[("node-a", 0), ("node-b", 1)]],
        id="terminating-pods-not-counted",
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "nodes", "want_constraints", "want_counts", "want_paths"), PRE_FILTER_CASES
)
def test_pre_filter_state(
    incoming: Pod,
    pods: list[Pod],
    nodes: list[Node],
    want_constraints: list[tuple[str, int]],
    want_counts: list[dict[str, int]],
    want_paths: list[list[tuple[str, int]]],
) -> None:
    _, state, _, status = pre_filter(incoming, pods, nodes)
    assert status == SUCCESS
    assert summary(state) == (want_constraints, want_counts, want_paths)


SENTINEL = ("", MAX_INT32)
DEFAULT_LIST_ARGS = {
    "defaultingType": "List",
    "defaultConstraints": [
        tsc(3, "node", selector=NULL),
        tsc(2, "node", SA, NULL),
        tsc(5, "rack", selector=NULL),
    ],
}


def test_pre_filter_default_constraints_and_a_service() -> None:
    incoming = pod(labels={"foo": "bar", "baz": "kar"})
    _, state, _, status = pre_filter(
        incoming, [], [], DEFAULT_LIST_ARGS, FakeWorkloads([{"foo": "bar"}])
    )
    assert status == SUCCESS
    assert summary(state) == (
        [("node", 3), ("rack", 5)],
        [{}, {}],
        [[SENTINEL, SENTINEL], [SENTINEL, SENTINEL]],
    )
    s = state.read(filtering.PRE_FILTER_KEY)
    assert all(c.selector.matches({"foo": "bar"}) for c in s.constraints)
    assert not any(c.selector.matches({"foo": "other"}) for c in s.constraints)


@pytest.mark.parametrize(
    ("incoming", "args", "workloads"),
    [
        pytest.param(
            pod(labels={"foo": "bar"}),
            {"defaultingType": "List", "defaultConstraints": [tsc(3, "node", selector=NULL)]},
            FakeWorkloads([{"baz": "kep"}]),
            id="default-constraints-service-does-not-match",
        ),
        pytest.param(
            pod(labels={"foo": "bar"}),
            {"defaultingType": "List", "defaultConstraints": [tsc(2, "node", SA, NULL)]},
            FakeWorkloads([{"foo": "bar"}]),
            id="default-soft-constraints-only",
        ),
        pytest.param(
            pod(labels={"foo": "bar"}),
            {"defaultingType": "List", "defaultConstraints": [tsc(3, "node", selector=NULL)]},
            None,
            id="default-constraints-without-workload-lister",
        ),
        pytest.param(
            pod(labels=FOO_POD), None, FakeWorkloads([{"foo": ""}]), id="system-defaults-are-soft"
        ),
        pytest.param(pod(labels=FOO_POD), {"defaultingType": "List"}, None, id="no-constraints"),
    ],
)
def test_pre_filter_skips(
    incoming: Pod, args: dict[str, Any] | None, workloads: FakeWorkloads | None
) -> None:
    _, state, _, status = pre_filter(incoming, [], NODES4, args, workloads)
    assert status == SKIP
    assert state.get(filtering.PRE_FILTER_KEY) is None


def test_pre_filter_pod_constraints_override_defaults() -> None:
    incoming = pod(
        labels={"foo": "bar", "baz": "tar"},
        constraints=[
            tsc(1, "zone", selector={"matchLabels": {"baz": "tar"}}),
            tsc(2, "planet", SA, {"matchLabels": {"fot": "rok"}}),
        ],
    )
    args = {"defaultingType": "List", "defaultConstraints": [tsc(2, "node", selector=NULL)]}
    _, state, _, status = pre_filter(incoming, [], [], args, FakeWorkloads([{"foo": "bar"}]))
    assert status == SUCCESS
    assert summary(state)[0] == [("zone", 1)]


def test_default_selector_combines_workloads() -> None:
    owner = LabelSelector(requirements=[LabelSelector.parse(FOO, "s").requirements[0]])
    workloads = FakeWorkloads([{"app": "web"}, {"tier": "front"}], owner)
    plugin, _ = setup(
        [],
        [],
        {"defaultingType": "List", "defaultConstraints": [tsc(1, "zone", selector=NULL)]},
        workloads,
    )
    selector = plugin.constraint_source.default_selector(
        pod(labels={"app": "web", "tier": "front", "foo": ""})
    )
    assert selector.matches({"app": "web", "tier": "front", "foo": "x"})
    assert not selector.matches({"app": "web", "tier": "front"})
    assert not selector.matches({"app": "web", "foo": ""})
    assert common.combine_selectors([LabelSelector.nothing()]).is_empty()


# Filter ----------------------------------------------------------------------------------


def run_filter(incoming: Pod, pods: list[Pod], nodes: list[Node]) -> dict[str, Code]:
    plugin, state, snapshot, status = pre_filter(incoming, pods, nodes)
    assert status == SUCCESS
    return {
        info.name: plugin.filter(state, incoming, info).code for info in snapshot.node_info_list
    }


PODS_2_1_0_3 = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1"),
    *foo_pods("node-y", "p-y1", "p-y2", "p-y3"),
]
NODE_LABEL_ONLY_ABC = [
    node("node-a", node="node-a"),
    node("node-b", node="node-b"),
    node("node-c", node="node-c"),
]
PODS_2_2_1 = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1", "p-b2"),
    *foo_pods("node-c", "p-c1"),
]
PODS_ZONE_2_1 = [
    *foo_pods("node-a", "p-b1"),
    *foo_pods("node-b", "p-b2"),
    *foo_pods("node-y", "p-y1"),
]
FOO_NODES_Y_BARE = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-x", node="node-x", foo=""),
    node("node-y", node="node-y"),
]
FOO_NODES_Y_TAINTED = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-x", node="node-x", foo=""),
    tainted("node-y", node="node-y"),
]
PODS_1_1_0_1 = [
    *foo_pods("node-a", "p-b1"),
    *foo_pods("node-b", "p-b2"),
    *foo_pods("node-y", "p-y1"),
]


def codes(
    *values: Code, names: tuple[str, ...] = ("node-a", "node-b", "node-x", "node-y")
) -> dict[str, Code]:
    return dict(zip(names, values, strict=True))


SINGLE_CONSTRAINT_CASES = [
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        [],
        NODES4,
        codes(OK, OK, OK, OK),
        id="no-existing-pods",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", selector=BAR)]),
        [],
        NODES4,
        codes(OK, OK, OK, OK),
        id="pod-does-not-match-itself",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        [
            pod("p-a1", ns="ns1", labels=FOO_POD, node="node-a"),
            pod("p-b1", ns="ns2", labels=FOO_POD, node="node-a"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        NODES4,
        codes(OK, OK, FAIL, FAIL),
        id="other-namespaces-do-not-count",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", selector=NULL)]),
        [*foo_pods("node-x", "p-x1"), *foo_pods("node-y", "p-y1")],
        NODES4,
        codes(OK, OK, OK, OK),
        id="null-selector",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        [
            *foo_pods("node-a", "p-a1", "p-a2"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-y", "p-y1", "p-y2", "p-y3"),
        ],
        NODES4,
        codes(OK, OK, OK, OK),
        id="zones-3-3-all-fit",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone")]),
        [
            *foo_pods("node-a", "p-a1"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        [
            zn("node-a", "zone1"),
            node("node-b", zon="zone1", node="node-b"),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        codes(OK, UAU, FAIL, FAIL),
        id="node-missing-topology-key",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "rack")]),
        [],
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        codes(UAU, UAU, names=("node-a", "node-x")),
        id="no-node-has-topology-key",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node")]),
        PODS_2_1_0_3,
        NODES4,
        codes(FAIL, FAIL, OK, FAIL),
        id="nodes-2-1-0-3",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(2, "node")]),
        PODS_2_1_0_3,
        NODES4,
        codes(FAIL, OK, OK, FAIL),
        id="nodes-2-1-0-3-max-skew-2",
    ),
    pytest.param(
        pod(labels={"bar": ""}, constraints=[tsc(1, "node")]),
        PODS_2_1_0_3,
        NODES4,
        codes(FAIL, OK, OK, FAIL),
        id="nodes-2-1-0-3-no-self-match",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("node", "In", "node-a", "node-y"),
            constraints=[tsc(1, "node")],
        ),
        PODS_2_1_0_3,
        NODES4,
        codes(OK, OK, OK, FAIL),
        id="node-affinity-limits-domains",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node")]),
        [
            pod("p-a", labels=FOO_POD, node="node-a", terminating=True),
            pod("p-b", labels=FOO_POD, node="node-b"),
        ],
        [node("node-a", node="node-a"), node("node-b", node="node-b")],
        codes(OK, FAIL, names=("node-a", "node-b")),
        id="terminating-pods-excluded",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("node", "NotIn", "node-b"),
            constraints=[tsc(1, "zone")],
        ),
        [*foo_pods("node-b", "p-b1", "p-b2"), *foo_pods("node-y", "p-y1")],
        NODES4,
        codes(OK, OK, FAIL, FAIL),
        id="node-affinity-excludes-crowded-node",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(2, "node", minDomains=4)]),
        PODS_2_2_1,
        NODE_LABEL_ONLY_ABC,
        codes(FAIL, FAIL, OK, names=("node-a", "node-b", "node-c")),
        id="fewer-domains-than-min-domains",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(2, "node", minDomains=2)]),
        PODS_2_2_1,
        NODE_LABEL_ONLY_ABC,
        codes(OK, OK, OK, names=("node-a", "node-b", "node-c")),
        id="more-domains-than-min-domains",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(2, "zone", minDomains=3)]),
        PODS_ZONE_2_1,
        NODES4,
        codes(FAIL, FAIL, OK, OK),
        id="zones-fewer-than-min-domains",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(2, "zone", minDomains=1)]),
        PODS_ZONE_2_1,
        NODES4,
        codes(OK, OK, OK, OK),
        id="zones-more-than-min-domains",
    ),
    pytest.param(
        pod(labels=FOO_POD, node_selector={"foo": ""}, constraints=[tsc(1, "node")]),
        PODS_1_1_0_1,
        FOO_NODES_Y_BARE,
        codes(FAIL, FAIL, OK, OK),
        id="node-affinity-policy-honored",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            node_selector={"foo": ""},
            constraints=[tsc(1, "node", nodeAffinityPolicy="Ignore")],
        ),
        PODS_1_1_0_1,
        FOO_NODES_Y_BARE,
        codes(FAIL, FAIL, OK, FAIL),
        id="node-affinity-policy-ignored",
    ),
    pytest.param(
        pod(labels=FOO_POD, affinity=node_affinity("foo", "In", ""), constraints=[tsc(1, "node")]),
        PODS_1_1_0_1,
        FOO_NODES_Y_BARE,
        codes(FAIL, FAIL, OK, OK),
        id="node-affinity-policy-honored-required-affinity",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            affinity=node_affinity("foo", "In", ""),
            constraints=[tsc(1, "node", nodeAffinityPolicy="Ignore")],
        ),
        PODS_1_1_0_1,
        FOO_NODES_Y_BARE,
        codes(FAIL, FAIL, OK, FAIL),
        id="node-affinity-policy-ignored-required-affinity",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node", nodeTaintsPolicy="Honor")]),
        PODS_1_1_0_1,
        FOO_NODES_Y_TAINTED,
        codes(FAIL, FAIL, OK, OK),
        id="node-taints-policy-honored",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "node")]),
        PODS_1_1_0_1,
        FOO_NODES_Y_TAINTED,
        codes(FAIL, FAIL, OK, FAIL),
        id="node-taints-policy-ignored",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), SINGLE_CONSTRAINT_CASES)
def test_single_constraint(
    incoming: Pod, pods: list[Pod], nodes: list[Node], want: dict[str, Code]
) -> None:
    assert run_filter(incoming, pods, nodes) == want


TWO_FOO = [tsc(1, "zone"), tsc(1, "node")]
FOO_BAR_CONSTRAINTS = [tsc(1, "zone"), tsc(1, "node", selector=BAR)]
FOO_BAR = {"foo": "", "bar": ""}

MULTIPLE_CONSTRAINT_CASES = [
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        PODS_2_1_0_3,
        NODES4,
        codes(FAIL, FAIL, OK, FAIL),
        id="spreads-3-3-and-2-1-0-3",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        [*PODS_2_1_0_3, *foo_pods("node-y", "p-y4")],
        NODES4,
        codes(FAIL, FAIL, FAIL, FAIL),
        id="spreads-3-4-and-2-1-0-4-no-node",
    ),
    pytest.param(
        pod(labels=FOO_BAR, constraints=FOO_BAR_CONSTRAINTS),
        [*foo_pods("node-a", "p-a1"), pod("p-y1", labels={"bar": ""}, node="node-y")],
        NODES4,
        codes(FAIL, FAIL, OK, FAIL),
        id="different-selectors-1-0-and-1-0-0-1",
    ),
    pytest.param(
        pod(labels=FOO_BAR, constraints=FOO_BAR_CONSTRAINTS),
        [
            *foo_pods("node-a", "p-a1"),
            pod("p-x1", labels={"bar": ""}, node="node-x"),
            pod("p-y1", labels={"bar": ""}, node="node-y"),
        ],
        NODES4,
        codes(FAIL, FAIL, FAIL, FAIL),
        id="different-selectors-1-0-and-0-0-1-1",
    ),
    pytest.param(
        pod(labels=FOO_BAR, constraints=FOO_BAR_CONSTRAINTS),
        [
            *foo_pods("node-a", "p-a1"),
            pod("p-a2", labels=FOO_BAR, node="node-a"),
            *foo_pods("node-y", "p-y1"),
            pod("p-y2", labels=FOO_BAR, node="node-y"),
            *foo_pods("node-y", "p-y3"),
        ],
        NODES4,
        codes(FAIL, OK, FAIL, FAIL),
        id="different-selectors-2-3-and-1-0-0-1",
    ),
    pytest.param(
        pod(labels={"bar": ""}, constraints=FOO_BAR_CONSTRAINTS),
        [
            *foo_pods("node-a", "p-a1"),
            pod("p-x1", labels={"bar": ""}, node="node-x"),
            pod("p-y1", labels={"bar": ""}, node="node-y"),
        ],
        NODES4,
        codes(OK, OK, FAIL, FAIL),
        id="different-selectors-no-self-match-on-zone",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-y", "p-y3")],
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            node("node-x", zone="zone2"),
            zn("node-y", "zone2"),
        ],
        codes(FAIL, OK, UAU, FAIL),
        id="node-x-missing-node-label",
    ),
    pytest.param(
        pod(
            labels=FOO_POD,
            node_selector={"foo": ""},
            constraints=[tsc(1, "zone"), tsc(1, "node", nodeAffinityPolicy="Ignore")],
        ),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-b", "p-b1"), *foo_pods("node-y", "p-y1")],
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        codes(FAIL, FAIL, OK, FAIL),
        id="policies-zone-honor-node-ignore",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=[tsc(1, "zone", nodeTaintsPolicy="Honor"), tsc(1, "node")]),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-b", "p-b1"), *foo_pods("node-y", "p-y1")],
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1", foo=""),
            zn("node-x", "zone2", foo=""),
            tainted("node-y", zone="zone2", node="node-y"),
        ],
        codes(FAIL, FAIL, OK, FAIL),
        id="policies-zone-taints-honored",
    ),
    pytest.param(
        pod(labels=FOO_POD, node_selector={"foo": ""}, constraints=TWO_FOO),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-b", "p-b1"), *foo_pods("node-y", "p-y1")],
        [
            zn("node-a", "zone1", foo=""),
            zn("node-b", "zone1"),
            zn("node-x", "zone2", foo=""),
            tainted("node-y", zone="zone2", node="node-y", foo=""),
        ],
        codes(FAIL, OK, OK, FAIL),
        id="policies-affinity-honored-taints-ignored",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "want"), MULTIPLE_CONSTRAINT_CASES)
def test_multiple_constraints(
    incoming: Pod, pods: list[Pod], nodes: list[Node], want: dict[str, Code]
) -> None:
    assert run_filter(incoming, pods, nodes) == want


def test_filter_reasons() -> None:
    incoming = pod(labels=FOO_POD, constraints=[tsc(1, "zone")])
    nodes = [zn("node-a", "zone1"), node("node-b", node="node-b"), zn("node-x", "zone2")]
    plugin, state, snapshot, _ = pre_filter(incoming, [*foo_pods("node-a", "p1", "p2")], nodes)
    statuses = [plugin.filter(state, incoming, info) for info in snapshot.node_info_list]
    assert statuses == [
        Status(Code.UNSCHEDULABLE, "node(s) didn't match pod topology spread constraints"),
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't match pod topology spread constraints (missing required label)",
        ),
        SUCCESS,
    ]
    assert REASON_CONSTRAINTS_NOT_MATCH in statuses[0].reasons
    assert REASON_NODE_LABEL_NOT_MATCH in statuses[1].reasons


def test_filter_without_pre_filter_state_is_an_error() -> None:
    plugin, snapshot = setup([], NODES4)
    status = plugin.filter(CycleState(), pod(), snapshot.node_info_list[0])
    assert status.code == Code.ERROR
    assert "PreFilterPodTopologySpread" in status.message()


# PreFilter extensions --------------------------------------------------------------------

NODE_C = [tsc(1, "node")]
ZONE_C = [tsc(1, "zone")]
AB_ZONE1 = [zn("node-a", "zone1"), zn("node-b", "zone1")]
AFFINITY_NODES = [zn("node-a", "zone1", foo="bar"), zn("node-b", "zone2", foo="")]
NOT_IN_BAR = node_affinity("foo", "NotIn", "bar")

ADD_POD_CASES = [
    pytest.param(
        pod(labels=FOO_POD, constraints=NODE_C),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        [],
        AB_ZONE1,
        [{"node-a": 1, "node-b": 0}],
        [[("node-b", 0), ("node-a", 1)]],
        id="both-nodes-at-min",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=NODE_C),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        foo_pods("node-b", "p-b1"),
        AB_ZONE1,
        [{"node-a": 1, "node-b": 1}],
        [[("node-a", 1), ("node-b", 1)]],
        id="only-node-a-at-min",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=NODE_C),
        pod("p-a1", ns="ns1", labels=FOO_POD, node="node-a"),
        foo_pods("node-b", "p-b1"),
        AB_ZONE1,
        [{"node-a": 0, "node-b": 1}],
        [[("node-a", 0), ("node-b", 1)]],
        id="other-namespace-ignored",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=NODE_C),
        pod("p-b2", labels=FOO_POD, node="node-b"),
        foo_pods("node-b", "p-b1"),
        AB_ZONE1,
        [{"node-a": 0, "node-b": 2}],
        [[("node-a", 0), ("node-b", 2)]],
        id="non-critical-node",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        [],
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 1, "zone2": 0}, {"node-a": 1, "node-x": 0}],
        [[("zone2", 0), ("zone1", 1)], [("node-x", 0), ("node-a", 1)]],
        id="zone-and-node-both-at-min",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        foo_pods("node-x", "p-x1"),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-x": 1}],
        [[("zone1", 1), ("zone2", 1)], [("node-a", 1), ("node-x", 1)]],
        id="zone-and-node-only-a-at-min",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        [*foo_pods("node-b", "p-b1", "p-b2"), *foo_pods("node-x", "p-x1")],
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 3, "zone2": 1}, {"node-a": 1, "node-b": 2, "node-x": 1}],
        [[("zone2", 1), ("zone1", 3)], [("node-a", 1), ("node-x", 1)]],
        id="node-a-critical-for-node-x-for-zone",
    ),
    pytest.param(
        pod(labels=FOO_BAR, constraints=FOO_BAR_CONSTRAINTS),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        [
            pod("p-b1", labels=FOO_BAR, node="node-b"),
            pod("p-x1", labels=FOO_BAR, node="node-x"),
            pod("p-x2", labels={"bar": ""}, node="node-x"),
        ],
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 2, "zone2": 1}, {"node-a": 0, "node-b": 1, "node-x": 2}],
        [[("zone2", 1), ("zone1", 2)], [("node-a", 0), ("node-b", 1)]],
        id="different-selectors-added-pod-matches-zone-only",
    ),
    pytest.param(
        pod(labels=FOO_BAR, constraints=FOO_BAR_CONSTRAINTS),
        pod("p-a1", labels=FOO_BAR, node="node-a"),
        [
            pod("p-b1", labels={"bar": ""}, node="node-b"),
            pod("p-x1", labels=FOO_BAR, node="node-x"),
            pod("p-x2", labels={"bar": ""}, node="node-x"),
        ],
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 1, "zone2": 1}, {"node-a": 1, "node-b": 1, "node-x": 2}],
        [[("zone1", 1), ("zone2", 1)], [("node-a", 1), ("node-b", 1)]],
        id="different-selectors-added-pod-matches-both",
    ),
    pytest.param(
        pod(labels=FOO_POD, affinity=NOT_IN_BAR, constraints=ZONE_C),
        pod("p-a1", labels=FOO_POD, node="node-a"),
        [pod("p-a2", labels=FOO_POD, node="node-a"), pod("p-b1", labels=FOO_POD, node="node-b")],
        AFFINITY_NODES,
        [{"zone2": 1}],
        [[("zone2", 1), SENTINEL]],
        id="node-outside-preemptor-affinity",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        pod("p-b1", labels=FOO_POD, node="node-b"),
        [pod("p-a1", labels=FOO_POD, node="node-a"), pod("p-b2", labels=FOO_POD, node="node-b")],
        AFFINITY_NODES,
        [{"zone1": 1, "zone2": 2}],
        [[("zone1", 1), ("zone2", 2)]],
        id="node-inside-preemptor-affinity",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        pod("p-b1", node="node-b"),
        [pod("p-a1", labels=FOO_POD, node="node-a"), pod("p-b2", labels=FOO_POD, node="node-b")],
        AFFINITY_NODES,
        [{"zone1": 1, "zone2": 1}],
        [[("zone1", 1), ("zone2", 1)]],
        id="added-pod-not-selected",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        pod("p-b1", labels=FOO_POD, node="node-b"),
        [pod("p-a1", labels=FOO_POD, node="node-a"), pod("p-b2", labels=FOO_POD, node="node-b")],
        [tainted("node-a", zone="zone1", node="node-a"), zn("node-b", "zone2")],
        [{"zone1": 1, "zone2": 2}],
        [[("zone1", 1), ("zone2", 2)]],
        id="taints-ignored-by-default",
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "added", "pods", "nodes", "want_counts", "want_paths"), ADD_POD_CASES
)
def test_pre_filter_state_add_pod(
    preemptor: Pod,
    added: Pod,
    pods: list[Pod],
    nodes: list[Node],
    want_counts: list[dict[str, int]],
    want_paths: list[list[tuple[str, int]]],
) -> None:
    plugin, state, snapshot, status = pre_filter(preemptor, pods, nodes)
    assert status == SUCCESS
    node_info = snapshot.get(added.node_name)
    assert node_info is not None
    assert plugin.add_pod(state, preemptor, added, node_info) == SUCCESS
    _, counts, paths = summary(state)
    assert counts == want_counts
    assert paths == want_paths


REMOVE_POD_CASES = [
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-b", "p-b1"), *foo_pods("node-x", "p-x1")],
        0,
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 1, "zone2": 1}],
        [[("zone1", 1), ("zone2", 1)]],
        id="zone-min-unchanged",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        [
            *foo_pods("node-a", "p-a1"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        0,
        NODES4,
        [{"zone1": 1, "zone2": 2}],
        [[("zone1", 1), ("zone2", 2)]],
        id="zone-min-changed",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        [
            pod("p-a0", labels={"bar": ""}, node="node-a"),
            *foo_pods("node-a", "p-a1"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        0,
        NODES4,
        [{"zone1": 2, "zone2": 2}],
        [[("zone1", 2), ("zone2", 2)]],
        id="irrelevant-pod",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        [
            *foo_pods("node-a", "p-a1"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1"),
            *foo_pods("node-y", "p-y1"),
        ],
        pod("p-a0", labels={"bar": ""}, node="node-a"),
        NODES4,
        [{"zone1": 2, "zone2": 2}],
        [[("zone1", 2), ("zone2", 2)]],
        id="pod-not-in-the-cluster",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=TWO_FOO),
        [
            *foo_pods("node-a", "p-a1", "p-a2"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1", "p-x2"),
        ],
        3,
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [{"zone1": 3, "zone2": 1}, {"node-a": 2, "node-b": 1, "node-x": 1}],
        [[("zone2", 1), ("zone1", 3)], [("node-b", 1), ("node-x", 1)]],
        id="two-constraints",
    ),
    pytest.param(
        pod(labels=FOO_POD, affinity=NOT_IN_BAR, constraints=ZONE_C),
        [pod("p-a2", labels=FOO_POD, node="node-a"), pod("p-b1", labels=FOO_POD, node="node-b")],
        pod("p-a1", labels=FOO_POD, node="node-a"),
        AFFINITY_NODES,
        [{"zone2": 1}],
        [[("zone2", 1), SENTINEL]],
        id="node-outside-preemptor-affinity",
    ),
    pytest.param(
        pod(labels=FOO_POD, constraints=ZONE_C),
        [pod("p-a1", labels=FOO_POD, node="node-a"), pod("p-b2", labels=FOO_POD, node="node-b")],
        pod("p-b1", labels=FOO_POD, node="node-b"),
        AFFINITY_NODES,
        [{"zone1": 1, "zone2": 0}],
        [[("zone2", 0), ("zone1", 1)]],
        id="node-inside-preemptor-affinity",
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "pods", "removed", "nodes", "want_counts", "want_paths"), REMOVE_POD_CASES
)
def test_pre_filter_state_remove_pod(
    preemptor: Pod,
    pods: list[Pod],
    removed: int | Pod,
    nodes: list[Node],
    want_counts: list[dict[str, int]],
    want_paths: list[list[tuple[str, int]]],
) -> None:
    plugin, state, snapshot, status = pre_filter(preemptor, pods, nodes)
    assert status == SUCCESS
    victim = pods[removed] if isinstance(removed, int) else removed
    node_info = snapshot.get(victim.node_name)
    assert node_info is not None
    assert plugin.remove_pod(state, preemptor, victim, node_info) == SUCCESS
    _, counts, paths = summary(state)
    assert counts == want_counts
    assert paths == want_paths


def test_clone_is_independent_and_remove_pod_frees_a_node() -> None:
    """Preemption dry run: removing a victim on a clone lets the node pass, the original not."""
    incoming = pod(labels=FOO_POD, constraints=NODE_C)
    victims = foo_pods("node-a", "p-a1", "p-a2")
    plugin, state, snapshot, _ = pre_filter(incoming, victims, AB_ZONE1)
    node_a = snapshot.get("node-a")
    assert node_a is not None
    assert plugin.filter(state, incoming, node_a).code == FAIL
    original = summary(state)

    clone = state.clone()
    assert clone.read(filtering.PRE_FILTER_KEY) is not state.read(filtering.PRE_FILTER_KEY)
    for victim in victims:
        assert plugin.remove_pod(clone, incoming, victim, node_a) == SUCCESS
    assert plugin.filter(clone, incoming, node_a) == SUCCESS
    assert summary(state) == original
    assert plugin.filter(state, incoming, node_a).code == FAIL


def test_critical_paths_update() -> None:
    paths = filtering.CriticalPaths()
    assert paths.paths == [SENTINEL, SENTINEL]
    for value, num in (("a", 3), ("b", 1), ("c", 2)):
        paths.update(value, num)
    assert paths.paths == [("b", 1), ("c", 2)]
    paths.update("b", 3)  # the minimum moves up past the second path: swap
    assert paths.paths == [("c", 2), ("b", 3)]
    paths.update("a", 0)  # an untracked domain falls below the minimum
    assert paths.paths == [("a", 0), ("c", 2)]


# Scoring ---------------------------------------------------------------------------------


def run_score(
    incoming: Pod,
    pods: list[Pod],
    nodes: list[Node],
    failed: list[Node] | None = None,
    workloads: FakeWorkloads | None = None,
    args: dict[str, Any] | None = None,
) -> list[tuple[str, int]]:
    plugin, snapshot = setup(pods, [*nodes, *(failed or [])], args or {}, workloads)
    filtered = [info for info in snapshot.node_info_list if info.name in {n.name for n in nodes}]
    state = CycleState()
    assert plugin.pre_score(state, incoming, filtered) == SUCCESS
    scores = []
    for info in filtered:
        value, status = plugin.score(state, incoming, info)
        assert status == SUCCESS
        scores.append(NodeScore(info.name, value))
    assert plugin.normalize_score(state, incoming, scores) == SUCCESS
    return [(s.name, s.score) for s in scores]


def hn(name: str, **labels: str) -> Node:
    return node(name, **{HOST: name}, **labels)


HOST_NODES4 = [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")]
HOST_PODS_2_1_0_3 = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1"),
    *foo_pods("node-d", "p-d1", "p-d2", "p-d3"),
]
HOST_PODS_4_3_2_1 = [
    *foo_pods("node-a", "p-a1", "p-a2", "p-a3", "p-a4"),
    *foo_pods("node-b", "p-b1", "p-b2", "p-b3"),
    *foo_pods("node-c", "p-c1", "p-c2"),
    *foo_pods("node-d", "p-d1"),
]
PODS_4_2_1_3 = [
    *foo_pods("node-a", "p-a1", "p-a2", "p-a3", "p-a4"),
    *foo_pods("node-b", "p-b1", "p-b2"),
    *foo_pods("node-x", "p-x1"),
    *foo_pods("node-y", "p-y1", "p-y2", "p-y3"),
]
ZONE_HOST_NODES = [
    hn("node-a", zone="zone1"),
    hn("node-b", zone="zone1"),
    hn("node-x", zone="zone2"),
    hn("node-y", zone="zone2"),
]
PODS_DIFFERENT_SELECTORS = [
    pod("p-a1", labels=FOO_POD, node="node-a"),
    pod("p-b1", labels=FOO_BAR, node="node-b"),
    pod("p-y1", labels=FOO_POD, node="node-y"),
    pod("p-y2", labels={"bar": ""}, node="node-y"),
]
POLICY_NODES = [
    node("node-a", node="node-a", foo=""),
    node("node-b", node="node-b", foo=""),
    node("node-c", node="node-c"),
]
POLICY_TAINT_NODES = [
    node("node-a", node="node-a"),
    node("node-b", node="node-b"),
    tainted("node-c", node="node-c"),
]
POLICY_PODS = [
    *foo_pods("node-a", "p-a1", "p-a2"),
    *foo_pods("node-b", "p-b1"),
    *foo_pods("node-c", "p-c1"),
]
ABCD_ZONES = [
    hn("node-a", zone="zone1"),
    hn("node-b", zone="zone1"),
    hn("node-c", zone="zone2"),
    hn("node-d", zone="zone2"),
]
MLK_PODS = [
    pod("p-a1", labels=FOO_POD, node="node-a"),
    pod("p-b1", labels=FOO_BAR, node="node-b"),
    pod("p-y1", labels=FOO_POD, node="node-c"),
    pod("p-y2", labels={"bar": ""}, node="node-c"),
]


def _soft(*constraints: dict[str, Any], labels: dict[str, str] | None = None, **kwargs: Any) -> Pod:
    return pod(labels=labels or FOO_POD, constraints=list(constraints), **kwargs)


SCORE_CASES = [
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        [],
        [hn("node-a"), hn("node-b")],
        [],
        [("node-a", 100), ("node-b", 100)],
        id="no-existing-pods",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        [*foo_pods("node-a", "p-a1", "p-a2"), *foo_pods("node-b", "p-b1")],
        [hn("node-a")],
        [hn("node-b")],
        [("node-a", 100)],
        id="single-candidate",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        [*foo_pods("node-a", "p-a1"), *foo_pods("node-b", "p-b1")],
        [hn("node-a"), hn("node-b")],
        [],
        [("node-a", 100), ("node-b", 100)],
        id="same-number-of-pods",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        HOST_PODS_2_1_0_3,
        HOST_NODES4,
        [],
        [("node-a", 20), ("node-b", 60), ("node-c", 100), ("node-d", 0)],
        id="nodes-2-1-0-3",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA, NULL)),
        HOST_PODS_2_1_0_3,
        HOST_NODES4,
        [],
        [("node-a", 100), ("node-b", 100), ("node-c", 100), ("node-d", 100)],
        id="null-selector",
    ),
    pytest.param(
        _soft(tsc(2, HOST, SA)),
        HOST_PODS_2_1_0_3,
        HOST_NODES4,
        [],
        [("node-a", 33), ("node-b", 66), ("node-c", 100), ("node-d", 16)],
        id="nodes-2-1-0-3-max-skew-2",
    ),
    pytest.param(
        _soft(tsc(3, HOST, SA)),
        HOST_PODS_4_3_2_1,
        HOST_NODES4,
        [],
        [("node-a", 44), ("node-b", 66), ("node-c", 77), ("node-d", 100)],
        id="nodes-4-3-2-1-max-skew-3",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        PODS_4_2_1_3,
        [hn("node-a"), hn("node-b"), hn("node-x")],
        [hn("node-y")],
        [("node-a", 33), ("node-b", 83), ("node-x", 100)],
        id="three-of-four-candidates",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        PODS_4_2_1_3,
        [hn("node-a"), node("node-b", n="node-b"), hn("node-x")],
        [hn("node-y")],
        [("node-a", 16), ("node-b", 0), ("node-x", 100)],
        id="candidate-missing-topology-key-is-ignored",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA)),
        PODS_4_2_1_3,
        ZONE_HOST_NODES[:3],
        ZONE_HOST_NODES[3:],
        [("node-a", 75), ("node-b", 75), ("node-x", 100)],
        id="zone-three-of-four-candidates",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA)),
        [
            *foo_pods("node-a", "p-a1", "p-a2"),
            *foo_pods("node-b", "p-b1"),
            *foo_pods("node-x", "p-x1", "p-x2"),
            *foo_pods("node-y", "p-y1", "p-y2", "p-y3", "p-y4"),
        ],
        [ZONE_HOST_NODES[0], ZONE_HOST_NODES[2]],
        [ZONE_HOST_NODES[1], ZONE_HOST_NODES[3]],
        [("node-a", 100), ("node-x", 63)],
        id="zone-and-hostname-two-of-four-candidates",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA, BAR), labels=FOO_BAR),
        PODS_DIFFERENT_SELECTORS,
        ZONE_HOST_NODES,
        [],
        [("node-a", 60), ("node-b", 20), ("node-x", 100), ("node-y", 60)],
        id="different-selectors",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA, BAR), labels=FOO_BAR),
        [
            pod("p-b1", labels={"bar": ""}, node="node-b"),
            pod("p-x1", labels=FOO_POD, node="node-x"),
            pod("p-y1", labels=FOO_BAR, node="node-y"),
        ],
        ZONE_HOST_NODES,
        [],
        [("node-a", 100), ("node-b", 60), ("node-x", 40), ("node-y", 0)],
        id="different-selectors-some-empty-nodes",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA, BAR), labels=FOO_BAR),
        PODS_DIFFERENT_SELECTORS,
        ZONE_HOST_NODES[:3],
        ZONE_HOST_NODES[3:],
        [("node-a", 50), ("node-b", 25), ("node-x", 100)],
        id="different-selectors-three-candidates",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        [
            pod("p-a1", ns="ns1", labels=FOO_POD, node="node-a"),
            *foo_pods("node-a", "p-a2"),
            *foo_pods("node-b", "p-b1", "p-b2"),
        ],
        [hn("node-a"), hn("node-b")],
        [],
        [("node-a", 100), ("node-b", 33)],
        id="other-namespaces-do-not-count",
    ),
    pytest.param(
        _soft(tsc(1, HOST, SA)),
        [
            pod("p-a", labels=FOO_POD, node="node-a", terminating=True),
            pod("p-b", labels=FOO_POD, node="node-b"),
        ],
        [hn("node-a"), hn("node-b")],
        [],
        [("node-a", 100), ("node-b", 0)],
        id="terminating-pods-excluded",
    ),
    pytest.param(
        _soft(tsc(1, "node", SA), node_selector={"foo": ""}),
        POLICY_PODS,
        POLICY_NODES,
        [],
        [("node-a", 0), ("node-b", 33), ("node-c", 100)],
        id="node-affinity-policy-honored",
    ),
    pytest.param(
        _soft(tsc(1, "node", SA, nodeAffinityPolicy="Ignore"), node_selector={"foo": ""}),
        POLICY_PODS,
        POLICY_NODES,
        [],
        [("node-a", 66), ("node-b", 100), ("node-c", 100)],
        id="node-affinity-policy-ignored",
    ),
    pytest.param(
        _soft(tsc(1, "node", SA), affinity=node_affinity("foo", "In", "")),
        POLICY_PODS,
        POLICY_NODES,
        [],
        [("node-a", 0), ("node-b", 33), ("node-c", 100)],
        id="node-affinity-policy-honored-required-affinity",
    ),
    pytest.param(
        _soft(
            tsc(1, "node", SA, nodeAffinityPolicy="Ignore"), affinity=node_affinity("foo", "In", "")
        ),
        POLICY_PODS,
        POLICY_NODES,
        [],
        [("node-a", 66), ("node-b", 100), ("node-c", 100)],
        id="node-affinity-policy-ignored-required-affinity",
    ),
    pytest.param(
        _soft(tsc(1, "node", SA, nodeTaintsPolicy="Honor")),
        POLICY_PODS,
        POLICY_TAINT_NODES,
        [],
        [("node-a", 0), ("node-b", 33), ("node-c", 100)],
        id="node-taints-policy-honored",
    ),
    pytest.param(
        _soft(tsc(1, "node", SA)),
        POLICY_PODS,
        POLICY_TAINT_NODES,
        [],
        [("node-a", 66), ("node-b", 100), ("node-c", 100)],
        id="node-taints-policy-ignored",
    ),
    pytest.param(
        _soft(
            tsc(1, "zone", SA, {}, matchLabelKeys=["foo"]),
            tsc(1, HOST, SA, {}, matchLabelKeys=["bar"]),
            labels=FOO_BAR,
        ),
        MLK_PODS,
        ABCD_ZONES,
        [],
        [("node-a", 60), ("node-b", 20), ("node-c", 60), ("node-d", 100)],
        id="match-label-keys-with-empty-selectors",
    ),
    pytest.param(
        _soft(
            tsc(1, "zone", SA),
            tsc(1, HOST, SA, BAR, matchLabelKeys=["baz"]),
            labels={"foo": "", "bar": "", "baz": ""},
        ),
        [
            pod("p-a1", labels=FOO_POD, node="node-a"),
            pod("p-b1", labels={"foo": "", "bar": "", "baz": ""}, node="node-b"),
            pod("p-c1", labels=FOO_POD, node="node-c"),
            pod("p-c2", labels={"bar": ""}, node="node-c"),
            pod("p-d3", labels={"bar": "", "baz": ""}, node="node-c"),
        ],
        ABCD_ZONES,
        [],
        [("node-a", 60), ("node-b", 20), ("node-c", 60), ("node-d", 100)],
        id="match-label-keys-with-selector",
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "nodes", "failed", "want"), SCORE_CASES)
def test_pod_topology_spread_score(
    incoming: Pod,
    pods: list[Pod],
    nodes: list[Node],
    failed: list[Node],
    want: list[tuple[str, int]],
) -> None:
    assert run_score(incoming, pods, nodes, failed) == want


def test_system_defaulting_uses_workload_selector() -> None:
    nodes = HOST_NODES4
    with_service = run_score(
        pod(labels=FOO_POD), HOST_PODS_4_3_2_1, nodes, workloads=FakeWorkloads([{"foo": ""}])
    )
    assert with_service == [("node-a", 44), ("node-b", 66), ("node-c", 77), ("node-d", 100)]


def test_system_defaulting_without_workloads_skips_scoring() -> None:
    plugin, snapshot = setup(HOST_PODS_4_3_2_1, HOST_NODES4, {})
    state = CycleState()
    assert plugin.pre_score(state, pod(labels=FOO_POD), snapshot.node_info_list) == SKIP


@pytest.mark.parametrize(
    ("incoming", "nodes", "args", "workloads"),
    [
        pytest.param(
            pod(),
            [hn("node-a"), hn("node-b")],
            {"defaultingType": "List"},
            None,
            id="no-soft-constraints",
        ),
        pytest.param(
            pod(labels={"foo": "bar", "baz": "sup"}),
            [node("node-a", planet="mars")],
            {"defaultingType": "List", "defaultConstraints": [tsc(2, "planet", SA, NULL)]},
            FakeWorkloads(),
            id="default-constraints-no-workload-selects-pod",
        ),
        pytest.param(_soft(tsc(1, HOST, SA)), [], {}, None, id="no-nodes"),
    ],
)
def test_pre_score_skips(
    incoming: Pod, nodes: list[Node], args: dict[str, Any], workloads: FakeWorkloads | None
) -> None:
    plugin, snapshot = setup([], nodes, args, workloads)
    state = CycleState()
    assert plugin.pre_score(state, incoming, snapshot.node_info_list) == SKIP
    assert state.get(scoring.PRE_SCORE_KEY) is None


def w(size: int) -> float:
    return scoring.topology_normalizing_weight(size)


PRE_SCORE_STATE_CASES = [
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x", zone="zone2")],
        {"defaultingType": "List"},
        None,
        set(),
        [{"zone1": 0, "zone2": 0}, {}],
        [w(2), w(3)],
        id="normal",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA), tsc(1, HOST, SA, BAR)),
        [hn("node-a", zone="zone1"), hn("node-b", zone="zone1"), hn("node-x")],
        {"defaultingType": "List"},
        None,
        {"node-x"},
        [{"zone1": 0}, {}],
        [w(1), w(2)],
        id="node-without-zone-ignored",
    ),
    pytest.param(
        pod(labels={"foo": "tar", "baz": "sup"}),
        [
            hn("node-a", **{ZONE: "mars"}),
            hn("node-b", **{ZONE: "mars"}),
            hn("node-c"),
            hn("node-d"),
        ],
        {},
        FakeWorkloads(owner=LabelSelector.parse(FOO, "selector")),
        set(),
        [{}, {"mars": 0, "": 0}],
        [w(4), w(2)],
        id="system-defaults-nodes-without-zone-form-a-zone",
    ),
    pytest.param(
        pod(labels={"foo": "tar", "baz": "sup"}),
        [node("node-a", rack="rack1", planet="mars", **{HOST: "node-a"})],
        {
            "defaultingType": "List",
            "defaultConstraints": [
                tsc(1, HOST, SA, NULL),
                tsc(2, "rack", DNS, NULL),
                tsc(2, "planet", SA, NULL),
            ],
        },
        FakeWorkloads(owner=LabelSelector.parse(FOO, "selector")),
        set(),
        [{}, {"mars": 0}],
        [w(1), w(1)],
        id="list-defaults-soft-only",
    ),
    pytest.param(
        _soft(tsc(1, "zone", SA, BAR), node_selector={"foo": ""}),
        [
            hn("node-a", zone="zone1", foo=""),
            hn("node-b", zone="zone1", foo=""),
            hn("node-x", zone="zone2"),
        ],
        {"defaultingType": "List"},
        None,
        set(),
        [{"zone1": 0, "zone2": 0}],
        [w(2)],
        id="domains-come-from-scored-nodes",
    ),
]


@pytest.mark.parametrize(
    ("incoming", "nodes", "args", "workloads", "want_ignored", "want_counts", "want_weights"),
    PRE_SCORE_STATE_CASES,
)
def test_pre_score_state(
    incoming: Pod,
    nodes: list[Node],
    args: dict[str, Any],
    workloads: FakeWorkloads | None,
    want_ignored: set[str],
    want_counts: list[dict[str, int]],
    want_weights: list[float],
) -> None:
    plugin, snapshot = setup([], nodes, args, workloads)
    state = CycleState()
    assert plugin.pre_score(state, incoming, snapshot.node_info_list) == SUCCESS
    s = state.read(scoring.PRE_SCORE_KEY)
    assert s.ignored_nodes == want_ignored
    assert s.pod_counts == want_counts
    assert s.weights == want_weights


def test_normalize_score_ignored_nodes_and_all_zero() -> None:
    state = scoring.PreScoreState([], {"ignored"}, [], [])
    scores = [NodeScore("a", 0), NodeScore("ignored", 7), NodeScore("b", 0)]
    assert scoring.normalize(state, scores) == SUCCESS
    assert [s.score for s in scores] == [100, 0, 100]
    scores = [NodeScore("a", 3), NodeScore("b", 6), NodeScore("ignored", 1)]
    assert scoring.normalize(state, scores) == SUCCESS
    assert [s.score for s in scores] == [100, 50, 0]


# Go float arithmetic ----------------------------------------------------------------------


def test_go_log_matches_fdlibm_bit_for_bit() -> None:
    # log(3) is one of the inputs where the C library and Go's algorithm differ in the last
    # bit; Go (like fdlibm) gives ...030a.
    assert common.go_log(3.0).hex() == "0x1.193ea7aad030ap+0"
    assert common.go_log(4.0) == math.log(4.0)
    for n in range(1, 2000):
        assert abs(common.go_log(float(n)) - math.log(n)) <= math.ulp(math.log(n))
    assert common.go_log(0.0) == -math.inf
    assert math.isnan(common.go_log(-1.0))


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param(0.5, 1, id="half-up"),
        pytest.param(1.5, 2, id="one-and-half-up"),
        pytest.param(2.5, 3, id="two-and-half-away-from-zero"),
        pytest.param(-2.5, -3, id="negative-half-away-from-zero"),
        pytest.param(0.49999999999999994, 0, id="just-below-half"),
        pytest.param(5.375278407684165, 5, id="ordinary"),
    ],
)
def test_go_round(value: float, want: int) -> None:
    assert common.go_round(value) == want


# Arguments -------------------------------------------------------------------------------


def test_args_defaults() -> None:
    args = pod_topology_spread.Args.parse(None)
    assert args.defaulting_type == "System"
    assert args.default_constraints == ()
    plugin, _ = setup([], [], {})
    assert plugin.constraint_source.system_defaulted
    assert [
        (c.topology_key, c.max_skew, c.when_unsatisfiable)
        for c in plugin.constraint_source.default_constraints
    ] == [
        (HOST, 3, SA),
        (ZONE, 5, SA),
    ]


def test_args_list_defaulting() -> None:
    args = pod_topology_spread.Args.parse(
        {
            "defaultingType": "List",
            "defaultConstraints": [tsc(1, "zone", SA, NULL), tsc(2, "zone", DNS, NULL)],
        }
    )
    assert [
        (c.topology_key, c.max_skew, c.when_unsatisfiable) for c in args.default_constraints
    ] == [
        ("zone", 1, SA),
        ("zone", 2, DNS),
    ]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param(
            {"defaultingType": "Other"}, "args.defaultingType", id="unknown-defaulting-type"
        ),
        pytest.param(
            {"defaultConstraints": [tsc(1, "zone", SA, NULL)]},
            "args.defaultingType",
            id="system-with-constraints",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [tsc(1, "zone", SA, FOO)]},
            "args.defaultConstraints[0].labelSelector",
            id="selector-forbidden",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [tsc(0, "zone", SA, NULL)]},
            "args.defaultConstraints[0].maxSkew",
            id="max-skew-zero",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [tsc(1, "", SA, NULL)]},
            "args.defaultConstraints[0].topologyKey",
            id="empty-topology-key",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": [tsc(1, "zone", "Sometimes", NULL)]},
            "args.defaultConstraints[0].whenUnsatisfiable",
            id="bad-when-unsatisfiable",
        ),
        pytest.param(
            {
                "defaultingType": "List",
                "defaultConstraints": [tsc(1, "zone", SA, NULL), tsc(3, "zone", SA, NULL)],
            },
            "args.defaultConstraints[1]",
            id="duplicate-constraint",
        ),
        pytest.param(
            {"defaultingType": "List", "defaultConstraints": {}},
            "args.defaultConstraints",
            id="not-a-list",
        ),
        pytest.param({"extra": 1}, "args.extra", id="unknown-field"),
    ],
)
def test_args_invalid(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidArgsError) as error:
        pod_topology_spread.Args.parse(raw)
    assert error.value.field == field


# Queueing hints and events --------------------------------------------------------------

QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP
TARGET = pod("target", labels=FOO_POD, constraints=[tsc(1, "zone"), tsc(1, "node")], uid="target")
TARGET_HONOR = pod(
    "target", labels=FOO_POD, constraints=[tsc(1, "zone", nodeTaintsPolicy="Honor")], uid="target"
)


def assigned(labels: dict[str, str] | None = None, ns: str = "default") -> Pod:
    return pod("other", ns=ns, labels=labels, node="fake-node", uid="other")


POD_HINT_CASES = [
    pytest.param(TARGET, None, assigned(FOO_POD), QUEUE, id="add-matching-pod"),
    pytest.param(
        TARGET,
        None,
        pod("other", labels=FOO_POD, uid="other"),
        QUEUE_SKIP,
        id="add-unscheduled-pod",
    ),
    pytest.param(
        TARGET, None, assigned(FOO_POD, ns="other"), QUEUE_SKIP, id="add-pod-in-other-namespace"
    ),
    pytest.param(TARGET, None, assigned({"bar": ""}), QUEUE_SKIP, id="add-non-matching-pod"),
    pytest.param(
        TARGET, assigned({"bar": ""}), assigned(FOO_POD), QUEUE, id="update-label-starts-matching"
    ),
    pytest.param(
        TARGET,
        assigned({"foo": "", "bar": ""}),
        assigned(FOO_POD),
        QUEUE_SKIP,
        id="update-unrelated-label",
    ),
    pytest.param(
        TARGET, assigned(FOO_POD), assigned(FOO_POD), QUEUE_SKIP, id="update-without-label-change"
    ),
    pytest.param(TARGET, assigned(FOO_POD), None, QUEUE, id="delete-matching-pod"),
    pytest.param(TARGET, assigned({"bar": ""}), None, QUEUE_SKIP, id="delete-non-matching-pod"),
    pytest.param(
        TARGET_HONOR,
        pod("target", labels=FOO_POD, uid="target"),
        pod("target", labels=FOO_POD, uid="target", tolerations=TOLERATE_UNSCHEDULABLE),
        QUEUE,
        id="target-gains-toleration-with-honor-policy",
    ),
    pytest.param(
        TARGET,
        pod("target", labels=FOO_POD, uid="target"),
        pod("target", labels=FOO_POD, uid="target", tolerations=TOLERATE_UNSCHEDULABLE),
        QUEUE_SKIP,
        id="target-gains-toleration-with-ignore-policy",
    ),
]


@pytest.mark.parametrize(("target", "old", "new", "want"), POD_HINT_CASES)
def test_is_schedulable_after_pod_change(
    target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    plugin, _ = setup([], [])
    assert plugin.is_schedulable_after_pod_change(target, old, new) == want


NODE_HINT_CASES = [
    pytest.param(None, zn("node-a", "zone1"), QUEUE, id="add-node-with-keys"),
    pytest.param(None, node("node-a", zone="zone1"), QUEUE_SKIP, id="add-node-missing-a-key"),
    pytest.param(zn("node-a", "zone1"), None, QUEUE, id="delete-node-with-keys"),
    pytest.param(node("node-a", zone="zone1"), None, QUEUE_SKIP, id="delete-node-missing-a-key"),
    pytest.param(node("node-a", zone="zone1"), zn("node-a", "zone1"), QUEUE, id="node-gains-key"),
    pytest.param(zn("node-a", "zone1"), node("node-a", zone="zone1"), QUEUE, id="node-loses-key"),
    pytest.param(zn("node-a", "zone1"), zn("node-a", "zone2"), QUEUE, id="key-value-changes"),
    pytest.param(
        zn("node-a", "zone1"), zn("node-a", "zone1", other="x"), QUEUE_SKIP, id="unrelated-label"
    ),
    pytest.param(
        zn("node-a", "zone1"),
        tainted("node-a", zone="zone1", node="node-a"),
        QUEUE,
        id="taints-change",
    ),
    pytest.param(
        node("node-a", zone="zone1"),
        tainted("node-a", zone="zone1"),
        QUEUE_SKIP,
        id="taints-change-missing-key",
    ),
]


@pytest.mark.parametrize(("old", "new", "want"), NODE_HINT_CASES)
def test_is_schedulable_after_node_change(
    old: Node | None, new: Node | None, want: QueueingHint
) -> None:
    plugin, _ = setup([], [])
    assert plugin.is_schedulable_after_node_change(TARGET, old, new) == want


def test_events_to_register() -> None:
    plugin, _ = setup([], [])
    events = plugin.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (
            EventResource.POD,
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATIONS
            | ActionType.DELETE,
        ),
        (
            EventResource.NODE,
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT,
        ),
    ]
    assert all(e.hint is not None for e in events)


def test_plugin_anatomy() -> None:
    plugin, _ = setup([], [])
    assert pod_topology_spread.NAME == "PodTopologySpread"
    assert plugin.name == "PodTopologySpread"
    assert plugin.pre_filter_extensions() is plugin
    assert plugin.score_extensions() is plugin
    assert isinstance(FakeWorkloads(), pod_topology_spread.WorkloadSelectors)
