"""The fast path decides like the per-node path for pods whose placement depends on other pods:
PodTopologySpread constraints and inter-pod affinity and anti-affinity.

The properties build random clusters (zones, racks, hostnames that may be missing, taints,
namespaces with labels, existing pods with labels and with required and preferred affinity and
anti-affinity terms, some terminating, nominated pods with labels and terms) and schedule random
pods (spread constraints of both kinds over several topology keys, with minDomains, inclusion
policies and matchLabelKeys; required and preferred affinity and anti-affinity with namespaces
and namespace selectors) one after the other on both paths, assuming each placement so that
later attempts see it, and changing nodes between attempts. Besides every decision, the states
that PreFilter and PreScore write with the fast path's counts must equal those of the plugins'
own walk, and whole simulated runs (preemption and nominations included) must report the same.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kopf_scheduler.config.loader import API_VERSION, KIND, parse_config
from kopf_scheduler.config.types import Profile
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.selectors import LabelSelector
from kopf_scheduler.plugins.inter_pod_affinity import filtering as affinity_filtering
from kopf_scheduler.plugins.inter_pod_affinity import scoring as affinity_scoring
from kopf_scheduler.plugins.pod_topology_spread import filtering as spread_filtering
from kopf_scheduler.plugins.pod_topology_spread import scoring as spread_scoring
from kopf_scheduler.scheduler.algorithm import Algorithm
from kopf_scheduler.scheduler.fast_path import FastPath
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report, render_json
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import load_scenario
from tests.builders import PodBuilder, make_node, make_pod
from tests.scheduler.test_fast_path import SCHEDULER, Setup, World, attempt, build, run_both
from tests.sim.support import write_yaml

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
RACK = "rack"
TOPOLOGY_KEYS = (ZONE, HOSTNAME, RACK)
NAMESPACES = {"default": {"team": "x"}, "other": {"team": "y"}, "third": {}}
APPS = ("a", "b", "c")

# ---------------------------------------------------------------------------------------------
# Random worlds.


@st.composite
def node_raw(draw: st.DrawFn, name: str) -> dict[str, Any]:
    builder = make_node(name).capacity(
        cpu=draw(st.sampled_from(["2", "4", "8"])),
        memory=draw(st.sampled_from(["4Gi", "16Gi"])),
        pods=draw(st.integers(2, 10)),
    )
    if draw(st.integers(0, 4)):
        builder.zone(draw(st.sampled_from(["a", "b", "c", ""])))
    if draw(st.integers(0, 3)):
        builder.label(RACK, draw(st.sampled_from(["r1", "r2", "r3", "r4"])))
    if draw(st.booleans()):
        builder.label("disk", draw(st.sampled_from(["ssd", "hdd"])))
    if draw(st.integers(0, 5)) == 0:
        builder.taint("dedicated", "yes", draw(st.sampled_from(["NoSchedule", "NoExecute"])))
    raw = builder.obj()
    if draw(st.integers(0, 9)) == 0:
        del raw["metadata"]["labels"][HOSTNAME]
    return raw


@st.composite
def selector(draw: st.DrawFn) -> dict[str, Any] | None:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return None
    if kind == 1:
        return {}
    if kind == 2:
        values = draw(st.lists(st.sampled_from(APPS), min_size=1, max_size=2, unique=True))
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": values}]}
    if kind == 3:
        return {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    return {"matchLabels": {"app": draw(st.sampled_from(APPS))}}


@st.composite
def affinity_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS))}
    chosen = draw(selector())
    if chosen is not None:
        term["labelSelector"] = chosen
    namespaces = draw(st.integers(0, 4))
    if namespaces == 1:
        term["namespaces"] = draw(
            st.lists(st.sampled_from(list(NAMESPACES)), min_size=1, max_size=2, unique=True)
        )
    elif namespaces == 2:
        term["namespaceSelector"] = {}
    elif namespaces == 3:
        term["namespaceSelector"] = {"matchLabels": {"team": draw(st.sampled_from(["x", "y"]))}}
    return term


@st.composite
def pod_affinity(draw: st.DrawFn, rich: bool) -> dict[str, Any] | None:
    """Pod (anti-)affinity; ``rich`` allows every kind of term, else mostly anti-affinity."""
    affinity: dict[str, Any] = {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    if draw(st.integers(0, 2)) == 0:
        affinity.setdefault("podAntiAffinity", {})[required] = draw(
            st.lists(affinity_term(), min_size=1, max_size=2)
        )
    if draw(st.integers(0, 3 if rich else 8)) == 0:
        affinity.setdefault("podAffinity", {})[required] = draw(
            st.lists(affinity_term(), min_size=1, max_size=2)
        )
    for part in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 2 if rich else 5)) == 0:
            affinity.setdefault(part, {})[preferred] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": draw(affinity_term())}
                for _ in range(draw(st.integers(1, 2)))
            ]
    return affinity or None


@st.composite
def existing_raw(draw: st.DrawFn, name: str, node: str) -> dict[str, Any]:
    builder = make_pod(name, draw(st.sampled_from(list(NAMESPACES)))).node(node)
    builder.priority(draw(st.integers(0, 3))).req(cpu="100m", memory="100Mi")
    if draw(st.integers(0, 3)):
        builder.labels(app=draw(st.sampled_from(APPS)))
    if draw(st.integers(0, 9)) == 0:
        builder.terminating()
    if draw(st.integers(0, 3)) == 0:
        affinity = draw(pod_affinity(rich=True))
        if affinity is not None:
            builder.affinity(affinity)
    return builder.obj()


@st.composite
def spread_constraint(draw: st.DrawFn, builder: PodBuilder) -> None:
    when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
    extra: dict[str, Any] = {}
    if when == "DoNotSchedule" and draw(st.integers(0, 3)) == 0:
        extra["minDomains"] = draw(st.integers(1, 5))
    if draw(st.integers(0, 2)) == 0:
        extra["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.integers(0, 2)) == 0:
        extra["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.integers(0, 3)) == 0:
        extra["matchLabelKeys"] = ["app"]
    chosen = draw(selector())
    builder.spread(
        draw(st.integers(1, 3)),
        draw(st.sampled_from(TOPOLOGY_KEYS)),
        when,
        **extra,
    )
    builder.spec["topologySpreadConstraints"][-1]["labelSelector"] = chosen


@st.composite
def pending_raw(draw: st.DrawFn, name: str) -> dict[str, Any]:
    builder = make_pod(name, draw(st.sampled_from(["default", "default", "other"])))
    builder.scheduler(SCHEDULER).priority(draw(st.integers(0, 5)))
    builder.req(cpu=draw(st.sampled_from(["100m", "500m", "1500m"])), memory="100Mi")
    if draw(st.integers(0, 4)):
        builder.labels(app=draw(st.sampled_from(APPS)))
    for _ in range(draw(st.integers(0, 2))):
        draw(spread_constraint(builder))
    affinity = draw(pod_affinity(rich=True))
    if draw(st.integers(0, 4)) == 0:
        builder.node_selector(disk=draw(st.sampled_from(["ssd", "hdd"])))
    if draw(st.integers(0, 4)) == 0:
        node_affinity = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": RACK, "operator": "NotIn", "values": ["r1"]}]}
                ]
            }
        }
        affinity = {**(affinity or {}), "nodeAffinity": node_affinity}
    if affinity is not None:
        builder.affinity(affinity)
    if draw(st.integers(0, 3)) == 0:
        builder.toleration("dedicated", operator="Exists")
    return builder.obj()


class AppSelectors:
    """Every pod with an ``app`` label belongs to a workload selecting that label."""

    def selectors_for(self, pod: Pod) -> list[LabelSelector]:
        app = pod.labels.get("app")
        return [LabelSelector({"app": app})] if app is not None else []


PROFILES = (
    Profile(),
    Profile(
        plugin_config={
            "InterPodAffinity": {"hardPodAffinityWeight": 0},
            "PodTopologySpread": {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": RACK, "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
                ],
            },
        }
    ),
    Profile(
        plugin_config={
            "InterPodAffinity": {
                "hardPodAffinityWeight": 7,
                "ignorePreferredTermsOfExistingPods": True,
            }
        }
    ),
)


@st.composite
def related_worlds(draw: st.DrawFn) -> World:
    count = draw(st.one_of(st.integers(1, 12), st.integers(100, 108)))
    names = [f"n{i}" for i in range(count)]
    nodes = [draw(node_raw(name)) for name in names]
    running = [
        draw(existing_raw(f"run{i}", draw(st.sampled_from(names))))
        for i in range(draw(st.integers(0, 2 * count)))
    ]
    nominated = [
        (
            draw(pending_raw(f"nom{i}")),
            draw(st.sampled_from(names)),
            draw(st.integers(0, 3)) > 0,
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    pending = [draw(pending_raw(f"p{i}")) for i in range(draw(st.integers(1, 6)))]
    changes: list[tuple[str, Any]] = []
    for number in range(len(pending)):
        kind = draw(st.sampled_from(["none", "none", "none", "update", "add", "remove"]))
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
        [],
        pending,
        draw(st.sampled_from([None, None, 40])),
        draw(st.sampled_from(PROFILES)),
        changes,
        namespaces=dict(NAMESPACES),
        workload_selectors=draw(st.sampled_from([None, AppSelectors()])),
    )


# ---------------------------------------------------------------------------------------------
# Decisions.


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=related_worlds(), seed=st.integers(0, 2**16))
def test_fast_path_decides_like_the_per_node_path_for_related_pods(world: World, seed: int) -> None:
    run_both(world, seed)


# ---------------------------------------------------------------------------------------------
# The states PreFilter and PreScore write.


def _spread_filter_state(state: CycleState) -> Any:
    written = state.get(spread_filtering.PRE_FILTER_KEY)
    if written is None:
        return None
    return (
        [list(counts.items()) for counts in written.match_num],
        [paths.paths for paths in written.critical_paths],
    )


def _spread_score_state(state: CycleState) -> Any:
    written = state.get(spread_scoring.PRE_SCORE_KEY)
    if written is None:
        return None
    return (
        sorted(written.ignored_nodes),
        [list(counts.items()) for counts in written.pod_counts],
        written.weights,
    )


def _affinity_filter_state(state: CycleState) -> Any:
    written = state.get(affinity_filtering.PRE_FILTER_KEY)
    if written is None:
        return None
    return (
        written.existing_anti_affinity_counts,
        written.affinity_counts,
        written.anti_affinity_counts,
    )


def _affinity_score_state(state: CycleState) -> Any:
    written = state.get(affinity_scoring.PRE_SCORE_KEY)
    return None if written is None else written.topology_scores


def _plugin_states(state: CycleState) -> tuple[Any, ...]:
    return (
        _spread_filter_state(state),
        _spread_score_state(state),
        _affinity_filter_state(state),
        _affinity_score_state(state),
        sorted(state.skip_filter_plugins),
        sorted(state.skip_score_plugins),
    )


def _pre_filter_and_pre_score(
    pod: Pod, fast_path: FastPath | None, setup: Setup
) -> tuple[Any, ...]:
    state = CycleState()
    snapshot = setup.snapshot
    if fast_path is not None:
        fast_path.offer_counters(state, snapshot)
    framework = setup.framework
    nodes = snapshot.node_info_list
    _, status, _ = framework.run_pre_filter(state, pod, nodes)
    pre_score = framework.run_pre_score(state, pod, nodes[: len(nodes) // 2 + 1])
    return (status.code, pre_score.code, *_plugin_states(state))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=related_worlds(), seed=st.integers(0, 2**16))
def test_offered_counts_give_the_plugins_the_states_of_their_own_walk(
    world: World, seed: int
) -> None:
    setup = build(world)
    fast_path = FastPath()
    algorithm = Algorithm(random.Random(seed))
    for number, raw in enumerate(world.pending):
        change = world.changes[number]
        if change[0] in ("update", "add"):
            setup.cache.update_node(Node(change[1]))
        elif change[0] == "remove":
            setup.cache.remove_node(change[1])
        setup.cache.update_snapshot(setup.snapshot)
        if not setup.snapshot.node_info_list:
            continue
        pod = Pod(raw)
        offered = _pre_filter_and_pre_score(pod, fast_path, setup)
        walked = _pre_filter_and_pre_score(pod, None, setup)
        assert offered == walked
        outcome, _, _ = attempt(algorithm, setup, pod)
        if outcome[0] == "scheduled":
            setup.cache.assume_pod(pod.assigned_to(outcome[1]))


# ---------------------------------------------------------------------------------------------
# Whole runs.


def _scenario_docs(seed: int) -> list[dict[str, Any]]:
    """A crowded cluster where spreading and (anti-)affinity pods compete, some of them with
    the priority to preempt: nominations, retries and evictions all happen."""
    rng = random.Random(seed)
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        for name, labels in NAMESPACES.items()
    ]
    names = [f"n{i}" for i in range(24)]
    for index, name in enumerate(names):
        builder = make_node(name).capacity(cpu="2", memory="8Gi", pods=rng.choice([3, 4, 6]))
        builder.zone("abc"[index % 3]).label(RACK, f"r{index % 4}")
        docs.append(builder.obj())
    for index in range(40):
        builder = make_pod(f"low{index}", rng.choice(["default", "other"]))
        builder.node(rng.choice(names)).req(cpu=rng.choice(["300m", "600m"]), memory="100Mi")
        builder.labels(app=rng.choice(APPS)).start_time("2026-01-01T00:00:00Z")
        docs.append(builder.obj())
    for index in range(36):
        builder = make_pod(f"p{index}").scheduler(SCHEDULER).labels(app=rng.choice(APPS))
        builder.req(cpu=rng.choice(["200m", "500m", "900m"]), memory="100Mi")
        builder.priority(rng.choice([0, 10]))
        kind = index % 4
        if kind == 0:
            builder.spread(
                1, rng.choice([ZONE, RACK]), rng.choice(["DoNotSchedule", "ScheduleAnyway"])
            )
            builder.spec["topologySpreadConstraints"][-1]["labelSelector"] = {
                "matchLabels": {"app": builder.raw["metadata"]["labels"]["app"]}
            }
        else:
            term = {
                "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                "topologyKey": rng.choice(TOPOLOGY_KEYS),
                "namespaceSelector": {} if rng.random() < 0.3 else None,
            }
            term = {key: value for key, value in term.items() if value is not None}
            part = "podAntiAffinity" if kind != 3 else "podAffinity"
            how = (
                "requiredDuringSchedulingIgnoredDuringExecution"
                if kind == 1
                else "preferredDuringSchedulingIgnoredDuringExecution"
            )
            entry: Any = term if kind == 1 else {"weight": 50, "podAffinityTerm": term}
            builder.affinity({part: {how: [entry]}})
        docs.append(builder.obj())
    return docs


def _simulated_report(path: Path, fast_path: bool, seed: int) -> str:
    config = parse_config(
        {"apiVersion": API_VERSION, "kind": KIND, "kopfScheduler": {"fastPath": fast_path}}
    )
    result = sim_loop.run(Simulation(config, seed=seed).run(load_scenario([path])))
    return render_json(build_report(result, explain=True))


@pytest.mark.parametrize("seed", [1, 3, 7])
def test_whole_simulated_runs_match_with_and_without_the_fast_path(
    tmp_path: Path, seed: int
) -> None:
    path = write_yaml(tmp_path / "related.yaml", _scenario_docs(seed))
    fast = _simulated_report(path, True, seed)
    reference = _simulated_report(path, False, seed)
    assert fast == reference
    assert json.loads(fast)["preemptions"], "no pod preempted: the scenario lost its purpose"
