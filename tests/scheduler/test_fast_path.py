"""The vectorised fast path decides exactly like the per-node reference path, and steps aside
whenever it cannot prove that.

The properties build random clusters (allocatable amounts, labels, taints, cordons, images,
existing pods, nominated pods, PodDisruptionBudgets) and schedule random pods (requests, node
selectors, tolerations, required and preferred node affinity, images, priorities) one after the
other with two algorithms over the same cache: one with the fast path, one without. Every
attempt must agree on the chosen host, the evaluated and feasible nodes, the per-plugin scores,
every node's status, the FitError message, the round-robin start index and the RNG state; the
preemption dry runs of failed attempts must find the same candidates, victims and statuses.
The unit tests below show each eligibility rule keeping the fast path out, and the pods that
relate to other pods (spreading, pod affinity) being served; those are exercised at random in
``test_fast_path_pod_relations``.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.config.loader import API_VERSION, KIND, parse_config
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.config.types import Profile
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.types import Diagnosis, FitError, NodePluginScores, NominatingInfo
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.selectors import LabelSelector
from kopf_scheduler.plugins.node_affinity import node_names_from_required
from kopf_scheduler.preemption.candidates import DryRunResult, dry_run_preemption, potential_nodes
from kopf_scheduler.preemption.record import (
    CandidateCriteria,
    CandidateRecord,
    PreemptionRecord,
    preemption_as_dict,
)
from kopf_scheduler.queue.nominator import Nominator
from kopf_scheduler.scheduler.algorithm import Algorithm, SchedulingError
from kopf_scheduler.scheduler.explain import AttemptRecord, NodeVerdict
from kopf_scheduler.scheduler.fast_path import FastPath
from kopf_scheduler.scheduler.fast_path.rng import BULK_AVAILABLE, _bulk_draws, randrange_many
from kopf_scheduler.scheduler.fast_path.victim_search import VictimSearch
from tests.builders import PodBuilder, make_node, make_pdb, make_pod

SCHEDULER = "kopf-scheduler"
ZONES = ("a", "b", "c")
IMAGES = ("web:1.0", "db", "docker.io/library/cache:7", "tools@sha256:abc")
TAINT_KEYS = ("dedicated", "gpu")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
LABEL_KEYS = ("topology.kubernetes.io/zone", "disk", "gen", "absent")
GPU = "example.com/gpu"
"""An extended resource some nodes have and some pods request."""

# ---------------------------------------------------------------------------------------------
# Random worlds.


@dataclass
class World:
    nodes: list[dict[str, Any]]
    running: list[dict[str, Any]]
    nominated: list[tuple[dict[str, Any], str, bool]]
    """(pending pod, node it is nominated to, whether the queue still holds it)"""
    pdbs: list[PodDisruptionBudget]
    pending: list[dict[str, Any]]
    percentage: int | None
    profile: Profile = field(default_factory=Profile)
    changes: list[tuple[str, Any]] = field(default_factory=list)
    """Node changes applied before each attempt: ("update" | "add", raw) or ("remove", name)."""
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    """Namespace labels (for namespaceSelector in pod affinity terms)."""
    workload_selectors: Any = None
    """The handle's selectors of workloads (default topology spreading)."""


def _quantity(draw: st.DrawFn, unit: str, values: tuple[int, ...]) -> str:
    return f"{draw(st.sampled_from(values))}{unit}"


@st.composite
def node_raw(draw: st.DrawFn, name: str) -> dict[str, Any]:
    capacity: dict[str, Any] = {
        "cpu": draw(st.sampled_from(["0", "500m", "1", "2", "4", "8"])),
        "memory": draw(st.sampled_from(["0", "1Gi", "2Gi", "4Gi", "16Gi"])),
        "pods": draw(st.integers(0, 8)),
    }
    if draw(st.booleans()):
        capacity["ephemeral-storage"] = draw(st.sampled_from(["0", "10Gi", "50Gi"]))
    if draw(st.integers(0, 2)) == 0:
        capacity[GPU] = draw(st.sampled_from([0, 1, 2, 4]))
    builder = make_node(name).capacity(**capacity)
    if draw(st.integers(0, 3)):
        builder.zone(draw(st.sampled_from(ZONES)))
    if draw(st.booleans()):
        builder.label("disk", draw(st.sampled_from(["ssd", "hdd"])))
    if draw(st.booleans()):
        builder.label("gen", draw(st.sampled_from(["1", "5", "10", "x"])))
    for _ in range(draw(st.integers(0, 2))):
        builder.taint(
            draw(st.sampled_from(TAINT_KEYS)),
            draw(st.sampled_from(["", "yes"])),
            draw(st.sampled_from(EFFECTS)),
        )
    if draw(st.integers(0, 5)) == 0:
        builder.unschedulable()
    for _ in range(draw(st.integers(0, 2))):
        image = draw(st.sampled_from(IMAGES))
        names = [image if ":" in image or "@" in image else image + ":latest"]
        builder.image(names, draw(st.sampled_from([10, 300, 900, 2500])) * 1024 * 1024)
    return builder.obj()


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(LABEL_KEYS))
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    if operator in ("In", "NotIn"):
        pool = ["a", "b", "ssd", "hdd", "1", "10", "bad value!"]
        values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
        return {"key": key, "operator": operator, "values": values}
    if operator in ("Gt", "Lt"):
        return {"key": key, "operator": operator, "values": [str(draw(st.integers(0, 11)))]}
    return {"key": key, "operator": operator}


@st.composite
def selector_term(draw: st.DrawFn, node_names: list[str]) -> dict[str, Any]:
    term: dict[str, Any] = {
        "matchExpressions": draw(st.lists(requirement(), min_size=0, max_size=2))
    }
    if node_names and draw(st.integers(0, 4)) == 0:
        term["matchFields"] = [
            {
                "key": "metadata.name",
                "operator": draw(st.sampled_from(["In", "NotIn"])),
                "values": [draw(st.sampled_from(node_names))],
            }
        ]
    return term


def _requests(draw: st.DrawFn, builder: PodBuilder, big: bool) -> None:
    cpus = ["0", "100m", "250m", "900m", "1500m"] + (["3", "9"] if big else [])
    memories = ["0", "128Mi", "500Mi", "1Gi"] + (["3Gi", "20Gi"] if big else [])
    requests: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        requests["cpu"] = draw(st.sampled_from(cpus))
    if draw(st.integers(0, 4)):
        requests["memory"] = draw(st.sampled_from(memories))
    if draw(st.integers(0, 5)) == 0:
        requests["ephemeral_storage"] = draw(st.sampled_from(["1Gi", "20Gi"]))
    if draw(st.integers(0, 5)) == 0:
        requests[GPU] = draw(st.sampled_from(["1", "2"] + (["5"] if big else [])))
    if requests:
        builder.req(**requests)


@st.composite
def pending_raw(draw: st.DrawFn, name: str, node_names: list[str]) -> dict[str, Any]:
    builder = make_pod(name).scheduler(SCHEDULER).priority(draw(st.integers(0, 5)))
    _requests(draw, builder, big=True)
    if draw(st.integers(0, 3)) == 0:
        builder.node_selector(**{LABEL_KEYS[0]: draw(st.sampled_from(ZONES))})
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            builder.toleration(operator="Exists")
        elif kind == 1:
            builder.toleration(
                draw(st.sampled_from(TAINT_KEYS)),
                operator="Exists",
                effect=draw(st.sampled_from(EFFECTS)),
            )
        else:
            builder.toleration(
                draw(st.sampled_from(TAINT_KEYS)),
                draw(st.sampled_from(["yes", "no"])),
                draw(st.sampled_from(("", *EFFECTS))),
            )
    if draw(st.integers(0, 5)) == 0:
        builder.toleration("node.kubernetes.io/unschedulable", operator="Exists")
    node_affinity: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": draw(st.lists(selector_term(node_names), min_size=1, max_size=2))
        }
    if draw(st.integers(0, 2)) == 0:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": draw(st.integers(1, 100)),
                "preference": {
                    "matchExpressions": draw(st.lists(requirement(), min_size=1, max_size=2))
                },
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    if node_affinity:
        builder.affinity({"nodeAffinity": node_affinity})
    if draw(st.booleans()):
        builder.image(draw(st.sampled_from(IMAGES)))
    if draw(st.integers(0, 3)) == 0:
        builder.container(image=draw(st.sampled_from(IMAGES)))
    raw = builder.obj()
    if any("bad value!" in str(term) for term in node_affinity.get(_PREFERRED, [])):
        # A malformed preferred term fails PreScore on both paths; keep such pods rare.
        node_affinity.pop(_PREFERRED)
        raw["spec"]["affinity"] = {"nodeAffinity": node_affinity}
    return raw


_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@st.composite
def existing_raw(draw: st.DrawFn, name: str, node: str) -> dict[str, Any]:
    builder = make_pod(name).node(node).priority(draw(st.integers(0, 3)))
    builder.start_time(f"2026-01-01T00:00:{draw(st.integers(0, 3)):02d}Z")
    _requests(draw, builder, big=False)
    if draw(st.booleans()):
        builder.labels(app=draw(st.sampled_from(["a", "b"])))
    return builder.obj()


PROFILES = (
    Profile(),
    Profile(
        plugin_config={
            "NodeResourcesFit": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
                }
            },
            "NodeResourcesBalancedAllocation": {"resources": [{"name": "memory"}, {"name": "cpu"}]},
        }
    ),
    Profile(
        plugin_config={
            "NodeResourcesFit": {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": 5}],
                }
            },
            "NodeResourcesBalancedAllocation": {"resources": [{"name": "cpu"}]},
        }
    ),
    # No batch form for this strategy: NodeResourcesFit scores node by node beside the others'
    # batch forms.
    Profile(
        plugin_config={
            "NodeResourcesFit": {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 0, "score": 10},
                            {"utilization": 60, "score": 3},
                            {"utilization": 100, "score": 0},
                        ]
                    },
                }
            }
        }
    ),
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    count = draw(st.one_of(st.integers(1, 12), st.integers(100, 125)))
    names = [f"n{i}" for i in range(count)]
    nodes = [draw(node_raw(name)) for name in names]
    running = [
        draw(existing_raw(f"run{i}", draw(st.sampled_from(names))))
        for i in range(draw(st.integers(0, 2 * count)))
    ]
    nominated = [
        (
            draw(pending_raw(f"nom{i}", names)),
            draw(st.sampled_from(names)),
            draw(st.integers(0, 3)) > 0,
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    pdbs = [
        make_pdb(f"pdb-{app}", {"app": app}, draw(st.integers(0, 2)))
        for app in ("a", "b")
        if draw(st.booleans())
    ]
    pending = [draw(pending_raw(f"p{i}", names)) for i in range(draw(st.integers(1, 4)))]
    changes: list[tuple[str, Any]] = []
    for number in range(len(pending)):
        kind = draw(st.sampled_from(["none", "none", "update", "add", "remove"]))
        if kind == "update":
            changes.append((kind, draw(node_raw(draw(st.sampled_from(names))))))
        elif kind == "add":
            changes.append((kind, draw(node_raw(f"extra{number}"))))
        elif kind == "remove" and count > 1:
            changes.append((kind, draw(st.sampled_from(names))))
        else:
            changes.append(("none", None))
    return World(
        nodes,
        running,
        nominated,
        pdbs,
        pending,
        draw(st.sampled_from([None, None, 1, 40, 100])),
        draw(st.sampled_from(PROFILES)),
        changes,
    )


# ---------------------------------------------------------------------------------------------
# Running both paths.


@dataclass
class Setup:
    cache: Cache
    snapshot: Snapshot
    framework: Framework
    nominator: Nominator
    queued: dict[str, Pod]


def build(world: World, workload_selectors: Any = None) -> Setup:
    cache = Cache(lambda: 0.0)
    for name, labels in world.namespaces.items():
        cache.set_namespace(name, labels)
    for raw in world.nodes:
        cache.add_node(Node(raw))
    for raw in world.running:
        cache.add_pod(Pod(raw))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    queued: dict[str, Pod] = {}
    nominator = Nominator(lookup=queued.get)
    for raw, node, held in world.nominated:
        pod = Pod(raw)
        if held:
            queued[pod.key] = pod
        nominator.add_nominated_pod(pod, NominatingInfo.override(node))
    handle = Handle(
        snapshot=snapshot,
        nominator=nominator,
        scheduler_name=SCHEDULER,
        pdbs=lambda: list(world.pdbs),
        workload_selectors=(
            workload_selectors if workload_selectors is not None else world.workload_selectors
        ),
    )
    framework = Framework(
        SCHEDULER, build_profile_plugins(world.profile, handle), handle, world.percentage
    )
    return Setup(cache, snapshot, framework, nominator, queued)


def _diagnosis(diagnosis: Diagnosis) -> tuple[Any, ...]:
    statuses = diagnosis.node_to_status
    return (
        [(name, s.code, s.reasons, s.plugin) for name, s in statuses],
        (statuses.absent.code, statuses.absent.reasons),
        sorted(diagnosis.unschedulable_plugins),
        sorted(diagnosis.pending_plugins),
        diagnosis.pre_filter_msg,
    )


def _scores(scores: list[NodePluginScores]) -> list[tuple[str, list[tuple[str, int]], int]]:
    return [(s.name, list(s.scores.items()), s.total) for s in scores]


def attempt(
    algorithm: Algorithm, setup: Setup, pod: Pod
) -> tuple[tuple[Any, ...], CycleState, FitError | None]:
    state = CycleState()
    try:
        decision = algorithm.schedule_pod(setup.framework, state, pod, setup.snapshot)
    except FitError as fit:
        return ("fit", str(fit), _diagnosis(fit.diagnosis)), state, fit
    except SchedulingError as error:
        return ("error", error.status.code, error.status.message()), state, None
    outcome = (
        "scheduled",
        decision.suggested_host,
        decision.evaluated_nodes,
        decision.feasible_nodes,
        _scores(decision.scores),
        _diagnosis(decision.diagnosis),
    )
    return outcome, state, None


def _dry_run(result: DryRunResult) -> tuple[Any, ...]:
    return (
        [(c.node, [v.key for v in c.victims], c.num_pdb_violations) for c in result.candidates],
        [(name, s.code, s.reasons, s.plugin) for name, s in result.node_to_status],
        [(s.code, s.message()) for s in result.errors],
        result.evaluated,
        [(c.node, [v.key for v in c.victims]) for c in result.dropped],
    )


def compare_dry_runs(setup: Setup, state: CycleState, pod: Pod, fit: FitError, seed: int) -> int:
    framework = setup.framework
    nodes = potential_nodes(setup.snapshot, fit.diagnosis.node_to_status)
    if not nodes:
        return 0
    offset = random.Random(seed).randrange(len(nodes))
    wanted = (1, 3, 100, 100)[seed % 4]
    now = 1767225600.0
    pdbs = list(setup.framework.handle.pdbs())
    accelerator = framework.dry_run_accelerator
    assert isinstance(accelerator, VictimSearch)
    served = accelerator.served
    fast = dry_run_preemption(
        framework, state, pod, nodes, pdbs, offset=offset, num_candidates=wanted, now=now
    )
    framework.dry_run_accelerator = None
    try:
        reference = dry_run_preemption(
            framework, state, pod, nodes, pdbs, offset=offset, num_candidates=wanted, now=now
        )
    finally:
        framework.dry_run_accelerator = accelerator
    assert _dry_run(fast) == _dry_run(reference)
    return accelerator.served - served


def run_both(world: World, seed: int) -> tuple[FastPath, int]:
    setup = build(world)
    fast = Algorithm(random.Random(seed))
    reference = Algorithm(random.Random(seed), fast_path=False)
    assert fast.fast_path is not None
    setup.framework.dry_run_accelerator = VictimSearch(fast.fast_path)
    start = seed % max(1, len(world.nodes))
    fast.next_start_node_index = reference.next_start_node_index = start
    served = 0
    for number, raw in enumerate(world.pending):
        pod = Pod(raw)
        change = world.changes[number] if number < len(world.changes) else ("none", None)
        if change[0] in ("update", "add"):
            setup.cache.update_node(Node(change[1]))
        elif change[0] == "remove":
            setup.cache.remove_node(change[1])
        setup.cache.update_snapshot(setup.snapshot)
        if not setup.snapshot.node_info_list:
            continue
        used = fast.fast_path.used_filter
        outcome, state, fit = attempt(fast, setup, pod)
        expected, _, _ = attempt(reference, setup, pod)
        assert outcome == expected
        assert fast.next_start_node_index == reference.next_start_node_index
        assert fast.rng.getstate() == reference.rng.getstate()
        required = pod.node_affinity_required
        restricted = required is not None and node_names_from_required(required) is not None
        if outcome[0] != "error" and not restricted and not pod.nominated_node_name:
            assert fast.fast_path.used_filter == used + 1, "the fast path did not serve the pod"
        if fit is not None:
            served += compare_dry_runs(setup, state, pod, fit, seed + number)
        elif outcome[0] == "scheduled":
            setup.cache.assume_pod(pod.assigned_to(outcome[1]))
    return fast.fast_path, served


@st.composite
def busy_worlds(draw: st.DrawFn) -> World:
    """Clusters full of lower-priority pods, where most failures can be fixed by preemption."""
    count = draw(st.one_of(st.integers(1, 10), st.integers(100, 110)))
    names = [f"n{i}" for i in range(count)]
    nodes = []
    for name in names:
        builder = make_node(name).capacity(
            cpu=draw(st.sampled_from(["2", "3", "4"])),
            memory=draw(st.sampled_from(["4Gi", "8Gi"])),
            pods=draw(st.integers(2, 6)),
        )
        if draw(st.integers(0, 9)) == 0:
            builder.taint("dedicated", "yes", draw(st.sampled_from(EFFECTS)))
        nodes.append(builder.obj())
    running = []
    for name in names:
        for j in range(draw(st.integers(1, 5))):
            builder = make_pod(f"run-{name}-{j}").node(name).priority(draw(st.integers(0, 3)))
            builder.req(cpu=draw(st.sampled_from(["500m", "700m", "900m"])), memory="500Mi")
            builder.start_time(f"2026-01-01T00:00:{draw(st.integers(0, 2)):02d}Z")
            if draw(st.booleans()):
                builder.labels(app=draw(st.sampled_from(["a", "b"])))
            running.append(builder.obj())
    nominated = [
        (
            make_pod(f"nom{i}")
            .scheduler(SCHEDULER)
            .priority(draw(st.integers(0, 5)))
            .req(cpu=draw(st.sampled_from(["500m", "2"])))
            .obj(),
            draw(st.sampled_from(names)),
            draw(st.integers(0, 3)) > 0,
        )
        for i in range(draw(st.integers(0, max(1, count // 3))))
    ]
    pdbs = [
        make_pdb(f"pdb-{app}", {"app": app}, draw(st.integers(0, 3)))
        for app in ("a", "b")
        if draw(st.booleans())
    ]
    pending = [
        make_pod(f"p{i}")
        .scheduler(SCHEDULER)
        .priority(draw(st.integers(1, 5)))
        .req(cpu=draw(st.sampled_from(["1500m", "2", "2500m", "3500m"])), memory="1Gi")
        .obj()
        for i in range(draw(st.integers(1, 3)))
    ]
    return World(nodes, running, nominated, pdbs, pending, None)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=busy_worlds(), seed=st.integers(0, 2**16))
def test_fast_preemption_dry_runs_match_on_busy_clusters(world: World, seed: int) -> None:
    run_both(world, seed)


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=worlds(), seed=st.integers(0, 2**16))
def test_fast_path_decides_like_the_per_node_path(world: World, seed: int) -> None:
    run_both(world, seed)


def _crowded_world(nodes: int, pods_per_node: int, pending: int) -> World:
    names = [f"n{i}" for i in range(nodes)]
    return World(
        [make_node(n).capacity(cpu="4", memory="8Gi", pods=110).obj() for n in names],
        [
            make_pod(f"low-{n}-{j}")
            .node(n)
            .req(cpu="900m", memory="500Mi")
            .labels(app="a" if j % 2 else "b")
            .start_time(f"2026-01-01T00:00:0{j}Z")
            .obj()
            for n in names
            for j in range(pods_per_node)
        ],
        [
            (make_pod(f"nom{i}").req(cpu="3", memory="500Mi").priority(10).obj(), names[i], True)
            for i in range(0, nodes, 3)
        ],
        [make_pdb("pdb-a", {"app": "a"}, 1)],
        [
            make_pod(f"high{i}")
            .scheduler(SCHEDULER)
            .priority(10)
            .req(cpu="3", memory="500Mi")
            .obj()
            for i in range(pending)
        ],
        None,
    )


@pytest.mark.parametrize(
    ("nodes", "seed"),
    [
        pytest.param(12, 1, id="small"),
        pytest.param(110, 2, id="window-of-100"),
        pytest.param(130, 3, id="over-the-minimum"),
    ],
)
def test_preemption_dry_runs_match_on_full_clusters(nodes: int, seed: int) -> None:
    fast, served = run_both(_crowded_world(nodes, 4, 3), seed)
    assert fast.used_filter == 3
    assert served > 0, "the accelerated victim search was never used"


# ---------------------------------------------------------------------------------------------
# Eligibility: the fast path must stay out.


def _basic_world(pending: list[dict[str, Any]], **changes: Any) -> World:
    world = World(
        [make_node(f"n{i}").zone(ZONES[i % 3]).obj() for i in range(6)],
        [make_pod(f"run{i}").node(f"n{i}").req(cpu="1").labels(app="web").obj() for i in range(3)],
        [],
        [],
        pending,
        None,
    )
    return dataclasses.replace(world, **changes)


def _used(world: World, workload_selectors: Any = None) -> tuple[int, int]:
    """How many attempts the fast path's filter and score served (both paths must agree)."""
    setup = build(world, workload_selectors)
    fast = Algorithm(random.Random(1))
    reference = Algorithm(random.Random(1), fast_path=False)
    assert fast.fast_path is not None
    for raw in world.pending:
        pod = Pod(raw)
        assert attempt(fast, setup, pod)[0] == attempt(reference, setup, pod)[0]
    return fast.fast_path.used_filter, fast.fast_path.used_score


class _Selectors:
    def selectors_for(self, pod: Pod) -> list[LabelSelector]:
        return [LabelSelector({"app": "web"})]


_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "web"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
_PREFERRED_AFFINITY = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                },
            }
        ]
    }
}


def _pod(name: str = "p") -> PodBuilder:
    return make_pod(name).scheduler(SCHEDULER).req(cpu="100m", memory="100Mi")


@pytest.mark.parametrize(
    ("world", "selectors", "expected"),
    [
        pytest.param(_basic_world([_pod().obj()]), None, (1, 1), id="eligible-pod-is-served"),
        pytest.param(_basic_world([_pod().host_port(8080).obj()]), None, (0, 0), id="host-ports"),
        pytest.param(
            _basic_world(
                [
                    _pod()
                    .affinity(
                        {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchFields": [
                                                {
                                                    "key": "metadata.name",
                                                    "operator": "In",
                                                    "values": ["n1"],
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        }
                    )
                    .obj()
                ]
            ),
            None,
            (0, 0),
            id="prefilter-restricts-nodes",
        ),
        pytest.param(
            _basic_world([_pod().req(**{f"example.com/r{i}": "1" for i in range(5)}).obj()]),
            None,
            (0, 0),
            id="more-extended-resources-than-the-batch-filter-numbers",
        ),
        pytest.param(_basic_world([_pod().node("n1").obj()]), None, (0, 0), id="spec-node-name"),
        pytest.param(
            _basic_world(
                [_pod().obj()],
                profile=Profile(
                    plugin_config={
                        "NodeResourcesFit": {
                            "scoringStrategy": {
                                "type": "RequestedToCapacityRatio",
                                "requestedToCapacityRatio": {
                                    "shape": [
                                        {"utilization": 0, "score": 0},
                                        {"utilization": 100, "score": 10},
                                    ]
                                },
                            }
                        }
                    }
                ),
            ),
            None,
            (1, 1),  # that plugin scores node by node, the others in their batch forms
            id="unmodelled-scoring-strategy",
        ),
        pytest.param(
            _basic_world(
                [_pod().obj()],
                profile=Profile(
                    plugin_config={
                        "NodeAffinity": {
                            "addedAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {
                                            "matchExpressions": [
                                                {
                                                    "key": "topology.kubernetes.io/zone",
                                                    "operator": "In",
                                                    "values": ["a"],
                                                }
                                            ]
                                        }
                                    ]
                                }
                            }
                        }
                    }
                ),
            ),
            None,
            (0, 0),
            id="added-node-affinity",
        ),
    ],
)
def test_fast_path_steps_aside(world: World, selectors: Any, expected: tuple[int, int]) -> None:
    assert _used(world, selectors) == expected


@pytest.mark.parametrize(
    ("world", "selectors", "expected"),
    [
        pytest.param(
            _basic_world([_pod().labels(app="web").spread(1, "topology.kubernetes.io/zone").obj()]),
            None,
            (1, 1),
            id="do-not-schedule-spread",
        ),
        pytest.param(
            _basic_world(
                [
                    _pod()
                    .labels(app="web")
                    .spread(1, "topology.kubernetes.io/zone", "ScheduleAnyway")
                    .obj()
                ]
            ),
            None,
            (1, 1),
            id="schedule-anyway-spread",
        ),
        pytest.param(
            _basic_world([_pod().labels(app="web").obj()]),
            _Selectors(),
            (1, 1),
            id="system-default-spread-from-workloads",
        ),
        pytest.param(
            _basic_world([_pod().labels(app="web").affinity(_ANTI_AFFINITY).obj()]),
            None,
            (1, 1),
            id="pod-anti-affinity",
        ),
        pytest.param(
            _basic_world([_pod().affinity(_PREFERRED_AFFINITY).obj()]),
            None,
            (1, 1),
            id="preferred-pod-affinity",
        ),
        pytest.param(
            _basic_world(
                [_pod().labels(app="web").obj()],
                running=[
                    make_pod("guard").node("n0").labels(app="web").affinity(_ANTI_AFFINITY).obj()
                ],
            ),
            None,
            (1, 1),
            id="existing-pod-with-required-anti-affinity",
        ),
        pytest.param(
            _basic_world(
                [_pod().labels(app="web").obj()],
                running=[make_pod("fan").node("n0").affinity(_PREFERRED_AFFINITY).obj()],
            ),
            None,
            (1, 1),
            id="existing-pod-with-preferred-affinity",
        ),
    ],
)
def test_fast_path_serves_pods_related_to_other_pods(
    world: World, selectors: Any, expected: tuple[int, int]
) -> None:
    assert _used(world, selectors) == expected


def _gpu_world(
    pending: list[dict[str, Any]],
    nominated: list[tuple[dict[str, Any], str, bool]] | None = None,
) -> World:
    """Six nodes, the even ones with two GPUs (an extended resource), one of them in use."""
    nodes = [
        make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10, **{GPU: 2}).obj()
        if i % 2 == 0
        else make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).obj()
        for i in range(6)
    ]
    running = [make_pod("trainer").node("n0").req(cpu="1", **{GPU: "1"}).obj()]
    return World(nodes, running, nominated or [], [], pending, None)


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        pytest.param(_gpu_world([_pod().req(**{GPU: "1"}).obj()]), (1, 1), id="fits-some"),
        pytest.param(_gpu_world([_pod().req(**{GPU: "2"}).obj()]), (1, 1), id="fits-fewer"),
        pytest.param(_gpu_world([_pod().req(**{GPU: "3"}).obj()]), (1, 0), id="fits-none"),
        pytest.param(
            _gpu_world(
                [_pod().req(**{GPU: "1"}).obj()],
                nominated=[(_pod("ahead").priority(5).req(**{GPU: "2"}).obj(), "n2", True)],
            ),
            (1, 1),
            id="nominated-pod-holds-a-gpu",
        ),
        pytest.param(
            _gpu_world([_pod().req(**{GPU: "1", "hugepages-2Mi": "4Mi"}).obj()]),
            (1, 0),
            id="and-hugepages-no-node-has",
        ),
    ],
)
def test_fast_path_serves_extended_resource_requests(
    world: World, expected: tuple[int, int]
) -> None:
    """The batch Filter compares scalar resources through the mirror's columns, with the same
    verdicts and statuses as the plugins' own pass (``_used`` compares both)."""
    assert _used(world) == expected


@pytest.mark.parametrize(
    "capacity",
    [
        pytest.param({"cpu": "-1", "memory": "1Gi", "pods": 10}, id="negative-allocatable"),
        pytest.param({"cpu": "4", "memory": "2Ei", "pods": 10}, id="huge-allocatable"),
    ],
)
def test_fast_path_steps_aside_for_amounts_it_cannot_keep_exact(capacity: dict[str, Any]) -> None:
    world = _basic_world([_pod().obj()])
    world.nodes[0] = make_node("n0").capacity(**capacity).obj()
    assert _used(world) == (0, 0)


def test_fast_path_off_serves_nothing() -> None:
    algorithm = Algorithm(random.Random(0), fast_path=False)
    assert algorithm.fast_path is None
    setup = build(_basic_world([_pod().obj()]))
    outcome, _, _ = attempt(algorithm, setup, Pod(_pod().obj()))
    assert outcome[0] == "scheduled"


def test_pod_without_requests_still_counts_against_pod_limits() -> None:
    world = _basic_world(
        [make_pod("empty").scheduler(SCHEDULER).obj()],
    )
    world.nodes = [
        make_node(f"n{i}").capacity(cpu="1", memory="1Gi", pods=i % 2).obj() for i in range(4)
    ]
    fast_path, _ = run_both(world, 5)
    assert fast_path.used_filter == 1


# ---------------------------------------------------------------------------------------------
# Configuration switch.


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({}, True, id="default-on"),
        pytest.param({"kopfScheduler": {"fastPath": False}}, False, id="off"),
        pytest.param({"kopfScheduler": {"fastPath": True}}, True, id="on"),
    ],
)
def test_fast_path_config_switch(raw: Mapping[str, Any], expected: bool) -> None:
    config = parse_config({"apiVersion": API_VERSION, "kind": KIND, **raw})
    assert config.extensions.fast_path is expected


def test_fast_path_config_switch_rejects_non_booleans() -> None:
    from kopf_scheduler.config.errors import ConfigError

    with pytest.raises(ConfigError, match=r"kopfScheduler\.fastPath"):
        parse_config({"apiVersion": API_VERSION, "kind": KIND, "kopfScheduler": {"fastPath": "no"}})


# ---------------------------------------------------------------------------------------------
# Building blocks.


@given(
    totals=st.lists(st.integers(0, 6), min_size=1, max_size=80),
    seed=st.integers(0, 2**32),
)
def test_host_selection_draws_like_reservoir_sampling(totals: list[int], seed: int) -> None:
    reference = Algorithm(random.Random(seed), fast_path=False)
    rng = random.Random(seed)
    expected = reference.select_host(
        [NodePluginScores(str(i), {}, t) for i, t in enumerate(totals)]
    )
    chosen = FastPath.select_host(np.array(totals, dtype=np.int64), rng)
    assert str(chosen) == expected
    assert rng.getstate() == reference.rng.getstate()


@given(
    bounds=st.lists(st.integers(1, 2**32 - 1) | st.integers(1, 700), max_size=200),
    seed=st.integers(0, 2**32),
    bulk=st.booleans(),
)
def test_bulk_draws_equal_randrange(bounds: list[int], seed: int, bulk: bool) -> None:
    reference = random.Random(seed)
    drawn = random.Random(seed)
    draws = _bulk_draws(drawn, bounds) if bulk else randrange_many(drawn, bounds)
    assert draws == [reference.randrange(n) for n in bounds]
    assert drawn.getstate() == reference.getstate()


def test_bulk_draws_pass_their_self_check() -> None:
    assert BULK_AVAILABLE


def _record(candidates: int) -> PreemptionRecord:
    records = tuple(
        CandidateRecord(
            f"n{i}",
            (f"default/v{i}", f"default/w{i}"),
            CandidateCriteria(i % 2, i, 2**31 + i, 2, 1.5 * i, i),
            "" if i == 0 else "DryRunOrder",
        )
        for i in range(candidates)
    )
    return PreemptionRecord(
        "default/p",
        "Nominated",
        "n0",
        ("default/v0",),
        1,
        "FewestVictims",
        records,
        "",
        "Strict",
        candidates,
        3,
        100,
        (("n9", "Insufficient cpu"),),
        records[:1],
    )


@pytest.mark.parametrize("candidates", [pytest.param(0, id="none"), pytest.param(3, id="three")])
def test_preemption_record_dict_equals_asdict(candidates: int) -> None:
    record = _record(candidates)
    assert preemption_as_dict(record) == dataclasses.asdict(record)


def test_attempt_record_builds_deferred_fields_on_first_read() -> None:
    calls: list[str] = []

    def verdicts() -> list[NodeVerdict]:
        calls.append("nodes")
        return [NodeVerdict("n1", True)]

    record = AttemptRecord("default/p", SCHEDULER, 1, 1, 0.0, "scheduled", nodes=verdicts)
    record.preemption = lambda: {"outcome": "Nominated"}
    assert calls == []
    assert record.nodes == [NodeVerdict("n1", True)]
    assert record.nodes == [NodeVerdict("n1", True)]
    assert calls == ["nodes"]
    assert record.as_dict()["nodes"] == [{"node": "n1", "feasible": True, "scores": {}, "total": 0}]
    assert record.preemption == {"outcome": "Nominated"}
    plain = AttemptRecord("default/q", SCHEDULER, 1, 1, 0.0, "unschedulable")
    assert plain.nodes == [] and plain.preemption is None
    assert AttemptRecord("default/q", SCHEDULER, 1, 1, 0.0, "x").nodes is not plain.nodes


def test_a_batch_form_that_falls_back_costs_no_per_node_scoring_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When a batch form cannot serve the pod, the per-node path scores the attempt once; a
    plugin without a batch form is not run over the same nodes beforehand as well."""
    profile = Profile(
        plugin_config={
            "NodeResourcesFit": {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [
                            {"utilization": 0, "score": 0},
                            {"utilization": 100, "score": 10},
                        ]
                    },
                }
            }
        }
    )
    world = _basic_world([_pod().obj()], profile=profile)
    setup = build(world)
    framework = setup.framework
    per_node = next(p for p, _ in framework.plugins.score if p.name == "NodeResourcesFit")
    calls: list[str] = []
    real_score = per_node.score

    def counted_score(state: CycleState, pod: Pod, node_info: Any) -> Any:
        calls.append(node_info.node.name)
        return real_score(state, pod, node_info)

    monkeypatch.setattr(per_node, "score", counted_score)
    falling_back = next(
        batch for name, _, batch in framework.batch_scores() if name == "ImageLocality"
    )
    assert falling_back is not None

    def fall_back(*_: Any) -> Any:
        raise Fallback

    monkeypatch.setattr(falling_back, "score_nodes", fall_back)
    fast = Algorithm(random.Random(1))
    outcome = attempt(fast, setup, Pod(world.pending[0]))[0]
    assert outcome[0] == "scheduled"
    assert sorted(calls) == sorted(set(calls)), "a node was scored twice by the same plugin"
    assert len(calls) == len(outcome[3])  # once per feasible node, by the per-node path
