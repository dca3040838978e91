"""Odd pods never wedge the scheduler: whatever strange (but API-valid) pod arrives, the cycle
ends in a binding or a FailedScheduling, no exception escapes it, and the next ordinary pod is
still scheduled.

The pods are drawn at random: requests far beyond any node (1e18 CPU, 100Ei), extended resources
no node has, ``Gt``/``Lt`` on values that are not integers, topology keys no node has, huge
``maxSkew``, thousands of tolerations, self-matching (anti-)affinity, hostPort edge cases,
``nodeName`` of a node that does not exist, init and sidecar containers, pod overhead.
"""

from __future__ import annotations

import logging
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod

SCHED = "kopf-scheduler"
ZONE = "topology.kubernetes.io/zone"

quantities = st.sampled_from(["0", "1m", "100m", "1", "64", "1e18", "100Ei", "9223372036854775807"])
memory = st.sampled_from(["0", "1", "1Ki", "1Gi", "100Ei", "1e18", "0.5"])
label_values = st.sampled_from(
    ["", "a", "b", "1", "-3", "007", "1.5", "four", "99999999999999999999"]
)
keys = st.sampled_from(["app", ZONE, "kubernetes.io/hostname", "no-node-has-this", "cpu-count"])
operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    operator = draw(operators)
    entry: dict[str, Any] = {"key": draw(keys), "operator": operator}
    if operator in ("In", "NotIn"):
        entry["values"] = draw(st.lists(label_values, min_size=1, max_size=3))
    elif operator in ("Gt", "Lt"):
        entry["values"] = [draw(label_values)]
    return entry


@st.composite
def node_affinity(draw: st.DrawFn) -> dict[str, Any]:
    terms = draw(
        st.lists(
            st.builds(lambda e: {"matchExpressions": e}, st.lists(requirement(), max_size=3)),
            min_size=1,
            max_size=3,
        )
    )
    affinity: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
    }
    if draw(st.booleans()):
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": draw(st.integers(1, 100)), "preference": {"matchExpressions": [e]}}
            for e in draw(
                st.lists(
                    requirement().filter(lambda e: e["operator"] not in ("Gt", "Lt")), max_size=2
                )
            )
        ]
    return affinity


@st.composite
def pod_affinity_term(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["odd", "other"]))}},
        "topologyKey": draw(keys),
    }


@st.composite
def odd_pod(draw: st.DrawFn, name: str) -> dict[str, Any]:
    builder = make_pod(name).scheduler(SCHED).label("app", "odd")
    builder.req(
        **draw(
            st.dictionaries(
                st.sampled_from(["cpu", "memory", "example.com/gpu", "hugepages-2Mi"]),
                quantities,
                max_size=3,
            )
        )
    )
    for _ in range(draw(st.integers(0, 2))):
        builder.init_container(
            sidecar=draw(st.booleans()), cpu=draw(quantities), memory=draw(memory)
        )
    for _ in range(draw(st.integers(0, 2))):
        builder.host_port(
            draw(st.sampled_from([1, 80, 65535])),
            draw(st.sampled_from(["TCP", "UDP", "SCTP"])),
            draw(st.sampled_from(["", "0.0.0.0", "127.0.0.1", "::"])),
        )
    tolerations = draw(st.sampled_from([0, 1, 3000]))
    for index in range(tolerations):
        builder.toleration(f"key-{index}", effect="NoSchedule")
    if draw(st.booleans()):
        builder.toleration(operator="Exists")
    affinity: dict[str, Any] = {}
    if draw(st.booleans()):
        affinity["nodeAffinity"] = draw(node_affinity())
    if draw(st.booleans()):
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [draw(pod_affinity_term())]
        }
    if draw(st.booleans()):
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [draw(pod_affinity_term())]
        }
    if affinity:
        builder.affinity(affinity)
    for _ in range(draw(st.integers(0, 2))):
        builder.spread(
            draw(st.sampled_from([1, 2, 2_147_483_647])),
            draw(keys),
            draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
            {"app": "odd"},
        )
    if draw(st.booleans()):
        builder.node_selector(**{draw(keys): draw(label_values)})
    raw = builder.obj()
    if draw(st.booleans()):
        raw["spec"]["overhead"] = {"cpu": draw(quantities), "memory": draw(memory)}
    if draw(st.integers(0, 9)) == 0:
        raw["spec"]["nodeName"] = "no-such-node"
    return raw


@st.composite
def cluster(draw: st.DrawFn) -> list[dict[str, Any]]:
    nodes = []
    for index in range(draw(st.integers(1, 4))):
        builder = make_node(f"n{index}").capacity(
            cpu=draw(st.sampled_from(["2", "64"])), memory="8Gi", pods=110
        )
        builder.zone(draw(st.sampled_from(["a", "b"])))
        builder.label("cpu-count", draw(label_values))
        if draw(st.booleans()):
            builder.taint(draw(st.sampled_from(["key-1", "dedicated"])))
        nodes.append(builder.obj())
    return nodes


class Failures(logging.Handler):
    """Every error the scheduler logs (a bug caught at a task's edge is logged, not raised)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(nodes=cluster(), pods=st.lists(st.integers(), min_size=1, max_size=4), data=st.data())
def test_odd_pods_end_in_a_decision_and_the_scheduler_keeps_going(
    nodes: list[dict[str, Any]], pods: list[int], data: st.DataObject
) -> None:
    odd = [data.draw(odd_pod(f"odd-{index}")) for index in range(len(pods))]

    async def scenario() -> Simulation:
        sim = Simulation(default_config())
        sim.start()
        for raw in nodes:
            sim.apply(raw)
        for raw in odd:
            sim.apply(raw)
        await sim.run_until_quiet()
        sim.apply(make_node("roomy").capacity(cpu="8", memory="8Gi", pods=110).obj())
        sim.apply(make_pod("ordinary").scheduler(SCHED).req(cpu="100m").obj())
        await sim.run_until_quiet()
        return sim

    failures = Failures()
    root = logging.getLogger()
    root.addHandler(failures)
    try:
        sim = sim_loop.run(scenario())
    finally:
        root.removeHandler(failures)

    assert [record.getMessage() for record in failures.records] == []
    assert sim.cluster.pods["default/ordinary"]["spec"].get("nodeName")
    decided = {
        e.object for e in sim.cluster.events if e.reason in ("Scheduled", "FailedScheduling")
    }
    for raw in odd:
        key = f"default/{raw['metadata']['name']}"
        live = sim.cluster.pods.get(key)
        if live is None or raw["spec"].get("nodeName"):
            continue  # preempted, or never the scheduler's to place
        assert live["spec"].get("nodeName") or key in decided, key
