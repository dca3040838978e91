"""Random small clusters: the explanation records must agree with what really happened.

The ``--explain`` output is only useful if it is true. For random scenarios (2–6 nodes with
random capacity, labels and taints; up to 8 running pods; 1–6 pending pods with random
requests, priorities, node selectors, tolerations and preemption policies) every attempt record
is compared with an independent evaluation of the same moment:

- the state each attempt saw (the pods on every node in the cycle's snapshot, and the nominated
  pods per node) is captured when the algorithm is called, and a small oracle written from
  kube-scheduler's rules (TaintToleration, then NodeAffinity, then NodeResourcesFit, with
  nominated pods of equal or higher priority counted) decides each node again; every verdict
  must match it: feasible or not, the FIRST rejecting plugin, its code and its exact reasons;
- a scheduled pod's node is among the feasible verdicts and has the maximal total score, and a
  total is the sum of its per-plugin scores;
- an unschedulable attempt lists every node, all rejected; an attempt listing a single node is
  the nominated-node fast path;
- and the end state is sound: no node over capacity, bound pods tolerate their node's taints and
  match their selectors, every victim has a lower priority than its preemptor, and a pod whose
  policy is Never preempted nobody.

The scenarios use only node-local features, so the oracle does not need to model affinity or
topology spreading.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.scheduler.algorithm import Decision
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from tests.sim.support import node, pod

UAU = "UnschedulableAndUnresolvable"
UNSCHEDULABLE = "Unschedulable"
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "NoExecute"},
    {"key": "soft", "value": "yes", "effect": "PreferNoSchedule"},
)
SELECTORS = (None, {"zone": "a"}, {"zone": "b"}, {"disk": "ssd"})


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: int  # millicores
    memory: int  # MiB
    pods: int
    labels: Mapping[str, str]
    taints: tuple[int, ...]

    def raw(self) -> dict[str, Any]:
        return node(
            self.name,
            cpu=f"{self.cpu}m",
            memory=f"{self.memory}Mi",
            pods=str(self.pods),
            labels=self.labels,
            taints=[TAINTS[i] for i in self.taints],
        )


@dataclass(frozen=True)
class PodSpec:
    name: str
    cpu: int
    memory: int
    priority: int
    node_name: str | None = None
    selector: Mapping[str, str] | None = None
    tolerations: tuple[Mapping[str, str], ...] = ()
    never: bool = False
    grace: int = 0

    @property
    def key(self) -> str:
        return f"default/{self.name}"

    def raw(self) -> dict[str, Any]:
        return pod(
            self.name,
            cpu=f"{self.cpu}m" if self.cpu else None,
            memory=f"{self.memory}Mi" if self.memory else None,
            node_name=self.node_name,
            priority=self.priority,
            preemption_policy="Never" if self.never else None,
            node_selector=self.selector,
            tolerations=self.tolerations,
            grace=self.grace,
        )


@dataclass
class World:
    nodes: list[NodeSpec]
    running: list[PodSpec]
    pending: list[PodSpec]

    def docs(self) -> list[dict[str, Any]]:
        return [n.raw() for n in self.nodes] + [p.raw() for p in self.running + self.pending]

    def pod(self, key: str) -> PodSpec:
        return next(p for p in self.running + self.pending if p.key == key)

    def node(self, name: str) -> NodeSpec:
        return next(n for n in self.nodes if n.name == name)


def _toleration(draw: Callable[..., Any], taint: int) -> dict[str, str]:
    spec = TAINTS[taint]
    if draw(st.booleans()):
        return {"key": spec["key"], "operator": "Exists"}
    return {
        "key": spec["key"],
        "operator": "Equal",
        "value": spec["value"],
        "effect": spec["effect"],
    }


@st.composite
def worlds(draw: Callable[..., Any]) -> World:
    nodes = []
    for index in range(draw(st.integers(2, 6))):
        labels = {"zone": draw(st.sampled_from(["a", "b"]))}
        if draw(st.booleans()):
            labels["disk"] = "ssd"
        nodes.append(
            NodeSpec(
                name=f"n{index}",
                cpu=draw(st.sampled_from([1000, 2000, 4000])),
                memory=draw(st.sampled_from([1024, 2048, 4096])),
                pods=draw(st.sampled_from([2, 3, 110])),
                labels=labels,
                taints=tuple(draw(st.lists(st.integers(0, 2), max_size=2, unique=True))),
            )
        )
    running: list[PodSpec] = []
    used: dict[str, list[int]] = {n.name: [0, 0, 0] for n in nodes}
    for index in range(draw(st.integers(0, 8))):
        target = draw(st.sampled_from(nodes))
        spec = PodSpec(
            name=f"r{index}",
            cpu=draw(st.sampled_from([0, 250, 500, 1000, 1500])),
            memory=draw(st.sampled_from([0, 128, 512, 1024])),
            priority=draw(st.sampled_from([0, 10, 100])),
            node_name=target.name,
            grace=draw(st.sampled_from([0, 3, 30])),
        )
        cpu, memory, count = used[target.name]
        if (
            cpu + spec.cpu <= target.cpu
            and memory + spec.memory <= target.memory
            and count < target.pods
        ):
            used[target.name] = [cpu + spec.cpu, memory + spec.memory, count + 1]
            running.append(spec)
    pending = []
    for index in range(draw(st.integers(1, 6))):
        tolerated = draw(st.lists(st.integers(0, 2), max_size=3, unique=True))
        pending.append(
            PodSpec(
                name=f"p{index}",
                cpu=draw(st.sampled_from([0, 100, 500, 1000, 2000, 3000, 5000])),
                memory=draw(st.sampled_from([0, 64, 256, 1024, 3000])),
                priority=draw(st.sampled_from([0, 10, 100, 1000])),
                selector=draw(st.sampled_from(SELECTORS)),
                tolerations=tuple(_toleration(draw, t) for t in tolerated),
                never=draw(st.booleans()),
            )
        )
    return World(nodes, running, pending)


# The oracle ---------------------------------------------------------------------------------


def _tolerates(spec: PodSpec, taint: Mapping[str, str]) -> bool:
    for toleration in spec.tolerations:
        if toleration["key"] != taint["key"]:
            continue
        if toleration.get("effect") not in (None, "", taint["effect"]):
            continue
        if toleration["operator"] == "Exists" or toleration.get("value") == taint["value"]:
            return True
    return False


def expected_verdict(
    world: World, spec: PodSpec, target: NodeSpec, on_node: list[str], nominated: list[str]
) -> tuple[str, str, tuple[str, ...]] | None:
    """The first rejecting filter of the default order as (plugin, code, reasons); None = fits."""
    for index in target.taints:
        taint = TAINTS[index]
        if taint["effect"] != "PreferNoSchedule" and not _tolerates(spec, taint):
            return ("TaintToleration", UAU, ("node(s) had untolerated taint(s)",))
    if spec.selector and any(target.labels.get(k) != v for k, v in spec.selector.items()):
        return ("NodeAffinity", UAU, ("node(s) didn't match Pod's node affinity/selector",))
    others = [world.pod(key) for key in on_node]
    others += [
        world.pod(key)
        for key in nominated
        if key != spec.key and world.pod(key).priority >= spec.priority
    ]
    reasons = []
    unresolvable = False
    if len(others) + 1 > target.pods:
        reasons.append("Too many pods")
    cpu_used = sum(p.cpu for p in others)
    memory_used = sum(p.memory for p in others)
    if spec.cpu > 0 and spec.cpu > target.cpu - cpu_used:
        reasons.append("Insufficient cpu")
        unresolvable |= spec.cpu > target.cpu
    if spec.memory > 0 and spec.memory > target.memory - memory_used:
        reasons.append("Insufficient memory")
        unresolvable |= spec.memory > target.memory
    if reasons:
        return ("NodeResourcesFit", UAU if unresolvable else UNSCHEDULABLE, tuple(reasons))
    return None


# Running with the state of every cycle captured -----------------------------------------------


@dataclass
class Moment:
    """What one call of the scheduling algorithm saw."""

    pod: str
    nominated_node: str
    on_node: dict[str, list[str]]
    nominated: dict[str, list[str]]


@dataclass
class Run:
    result: SimulationResult
    moments: dict[str, list[Moment]] = field(default_factory=lambda: defaultdict(list))


async def _run(world: World, seed: int) -> Run:
    simulation = Simulation(default_config(), seed=seed)
    scheduler = simulation.start()
    moments: dict[str, list[Moment]] = defaultdict(list)
    original = scheduler.algorithm.schedule_pod

    def capturing(framework: Any, state: CycleState, pod_: Pod, snapshot: Snapshot) -> Decision:
        nominations = scheduler.queue.nominator.nominations()
        moments[pod_.key].append(
            Moment(
                pod=pod_.key,
                nominated_node=pod_.nominated_node_name or "",
                on_node={info.name: [p.key for p in info.pods] for info in snapshot.node_info_list},
                nominated={name: [ref.key for ref in refs] for name, refs in nominations.items()},
            )
        )
        return original(framework, state, pod_, snapshot)

    scheduler.algorithm.schedule_pod = capturing  # type: ignore[method-assign]
    for raw in world.docs():
        simulation.apply(raw)
    await simulation.run_until_quiet()
    run = Run(simulation.result())
    run.moments = moments
    return run


def _check_attempt(world: World, record: AttemptRecord, moment: Moment) -> None:
    spec = world.pod(record.pod)
    all_nodes = {n.name for n in world.nodes}
    listed = [v.node for v in record.nodes]
    assert len(listed) == len(set(listed)), listed
    assert not record.unlisted_status, record.unlisted_status
    if set(listed) != all_nodes:
        # The nominated-node fast path: only that node was evaluated, and it fit.
        assert len(record.nodes) == 1 and record.nodes[0].feasible, record.as_dict()
        assert record.nodes[0].node == moment.nominated_node
    for verdict in record.nodes:
        expected = expected_verdict(
            world,
            spec,
            world.node(verdict.node),
            moment.on_node[verdict.node],
            moment.nominated.get(verdict.node, []),
        )
        if verdict.feasible:
            assert expected is None, (verdict, expected)
            assert verdict.total == sum(verdict.scores.values())
        else:
            assert verdict.plugin, verdict
            assert verdict.reasons, verdict
            assert (verdict.plugin, verdict.code, tuple(verdict.reasons)) == expected, verdict
    feasible = [v for v in record.nodes if v.feasible]
    if record.result == "scheduled":
        chosen = [v for v in feasible if v.node == record.node]
        assert chosen, record.as_dict()
        if any(v.scores for v in feasible):
            assert chosen[0].total == max(v.total for v in feasible), record.as_dict()
        else:
            assert len(feasible) == 1
    else:
        assert record.result == "unschedulable", record.as_dict()
        assert not feasible, record.as_dict()
        assert set(listed) == all_nodes


def _check_end_state(world: World, run: Run) -> None:
    cluster = run.result.cluster
    load: dict[str, list[int]] = {n.name: [0, 0, 0] for n in world.nodes}
    for key, raw in cluster.pods.items():
        node_name = raw["spec"].get("nodeName")
        if not node_name:
            continue
        spec = world.pod(key)
        load[node_name] = [
            load[node_name][0] + spec.cpu,
            load[node_name][1] + spec.memory,
            load[node_name][2] + 1,
        ]
        if spec.node_name is None:
            assert _fits_selector_and_taints(spec, world.node(node_name)), (key, node_name)
    for name, (cpu, memory, count) in load.items():
        target = world.node(name)
        assert cpu <= target.cpu and memory <= target.memory and count <= target.pods, name
    for attempt in run.result.attempts:
        if not attempt.preemption or not attempt.preemption.get("victims"):
            continue
        preemptor = world.pod(attempt.pod)
        assert not preemptor.never, attempt.preemption
        for victim in attempt.preemption["victims"]:
            assert world.pod(victim).priority < preemptor.priority, attempt.preemption
    report = build_report(run.result)
    preempted = {p["name"] for p in report["pods"] if p["status"] == "Preempted"}
    victims = {v.split("/")[1] for p in report["preemptions"] for v in p["victims"]}
    assert preempted <= victims


def _fits_selector_and_taints(spec: PodSpec, target: NodeSpec) -> bool:
    verdict = expected_verdict(World([target], [], [spec]), spec, target, [], [])
    return verdict is None or verdict[0] == "NodeResourcesFit"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=worlds(), seed=st.integers(0, 3))
def test_explanations_agree_with_decisions(world: World, seed: int) -> None:
    run = sim_loop.run(_run(world, seed))
    try:
        _check_run(world, run)
    except AssertionError:
        note(yaml.safe_dump_all(world.docs(), sort_keys=False))
        raise


def _check_run(world: World, run: Run) -> None:
    records: dict[str, list[AttemptRecord]] = defaultdict(list)
    for record in run.result.attempts:
        records[record.pod].append(record)
    assert set(records) == set(run.moments)
    for key, attempts in records.items():
        moments = run.moments[key]
        assert len(attempts) == len(moments), key
        assert [a.attempt for a in attempts] == list(range(1, len(attempts) + 1)), key
        for record, moment in zip(attempts, moments, strict=True):
            _check_attempt(world, record, moment)
    _check_end_state(world, run)


def test_oracle_rejects_in_filter_order() -> None:
    """The oracle itself: taints before selectors before resources, all resource reasons."""
    target = NodeSpec("n", 1000, 1024, 1, {"zone": "a"}, (0,))
    big = PodSpec("p", 2000, 2048, 0, selector={"zone": "b"})
    world = World([target], [PodSpec("r", 0, 0, 0, node_name="n")], [big])
    assert expected_verdict(world, big, target, [], []) == (
        "TaintToleration",
        UAU,
        ("node(s) had untolerated taint(s)",),
    )
    tolerant = PodSpec(
        "p",
        2000,
        2048,
        0,
        selector={"zone": "b"},
        tolerations=({"key": "dedicated", "operator": "Exists"},),
    )
    world.pending = [tolerant]
    assert expected_verdict(world, tolerant, target, [], [])[0] == "NodeAffinity"  # type: ignore[index]
    placed = PodSpec("p", 2000, 2048, 0, tolerations=tolerant.tolerations)
    world.pending = [placed]
    assert expected_verdict(world, placed, target, ["default/r"], []) == (
        "NodeResourcesFit",
        UAU,
        ("Too many pods", "Insufficient cpu", "Insufficient memory"),
    )
