"""PodGroups in the simulator: scenario files hold them, the in-memory API server stores and
announces them, and the scheduler sees them through the one routing table of the watch path,
only when a profile enables Coscheduling (as on a cluster). The bundled example shows a gang
that binds whole, one that stays unbound, and the group states in ``simulate --explain``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.config.loader import check_config_file, default_config
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.handlers import ADDED, DELETED, MODIFIED
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.report import build_report, render_table
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import ScenarioError, load_scenario
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.sim.support import node, pod, write_yaml

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "operator/kopf_scheduler/scenarios/gangs.yaml"
SHIPPED_CONFIG = ROOT / "manifests/base/config.yaml"

Raw = dict[str, Any]


def pod_group(name: str, min_member: Any = 2, **spec: Any) -> Raw:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, **spec},
    }


def member(name: str, group: str, cpu: str = "1") -> Raw:
    return pod(name, cpu=cpu, labels={POD_GROUP_LABEL: group})


def gang_config() -> SchedulerConfig:
    return check_config_file(SHIPPED_CONFIG).config


def simulate(config: SchedulerConfig, path: Path, *, explain: bool = False) -> SimulationResult:
    simulation = Simulation(config, explain=explain)
    return sim_loop.run(simulation.run(load_scenario([path])))


# Scenario files ---------------------------------------------------------------------------------


def test_a_scenario_holds_pod_groups(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "s.yaml",
        [pod_group("trainer", 4, minResources={"cpu": "8"}), member("w-0", "trainer")],
    )
    scenario = load_scenario([path])
    assert [g["metadata"]["name"] for g in scenario.pod_groups] == ["trainer"]
    assert [p["metadata"]["name"] for p in scenario.pending_pods] == ["w-0"]


@pytest.mark.parametrize(
    ("group", "reason"),
    [
        pytest.param(
            pod_group("g", -1), "spec.minMember: must be at least 0, got -1", id="negative-min"
        ),
        pytest.param(
            pod_group("g", "4"), "spec.minMember: must be an integer, got '4'", id="string-min"
        ),
        pytest.param(
            pod_group("g", 2, scheduleTimeoutSeconds=-1),
            "spec.scheduleTimeoutSeconds: must be at least 0, got -1",
            id="negative-timeout",
        ),
        pytest.param(
            pod_group("g", 2, minResources={"cpu": "-1"}),
            'spec.minResources[cpu]: Invalid value: "-1": must be greater than or equal to 0',
            id="negative-resources",
        ),
    ],
)
def test_a_bad_pod_group_is_named_with_its_field(
    tmp_path: Path, group: Raw, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(tmp_path / "s.yaml", [node("n1"), group])
    with pytest.raises(ScenarioError) as info:
        load_scenario([path])
    assert str(info.value) == f"{path}: PodGroup default/g: {reason}"
    assert main(["simulate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {path}: PodGroup default/g: {reason}\n"


def test_the_same_pod_group_twice_is_refused(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "s.yaml", [pod_group("g"), pod_group("g", 3)])
    with pytest.raises(ScenarioError, match="PodGroup default/g: defined more than once"):
        load_scenario([path])


# The in-memory API server -----------------------------------------------------------------------


def test_the_cluster_stores_and_announces_pod_groups() -> None:
    cluster = InMemoryCluster(VirtualClock())
    seen: list[tuple[str, str, int, str]] = []

    def listen(kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        seen.append(
            (kind, event_type, raw["spec"]["minMember"], raw["metadata"]["resourceVersion"])
        )

    cluster.subscribe(listen)
    created = cluster.create(pod_group("g", 2))
    assert created["metadata"]["namespace"] == "default"
    changed = cluster.update_pod_group({**created, "spec": {"minMember": 3}})
    assert changed["metadata"]["uid"] == created["metadata"]["uid"]
    assert cluster.pod_groups["default/g"]["spec"] == {"minMember": 3}
    cluster.delete_pod_group("default/g")
    assert cluster.pod_groups == {}
    assert seen == [
        ("PodGroup", ADDED, 2, "1"),
        ("PodGroup", MODIFIED, 3, "2"),
        ("PodGroup", DELETED, 3, "3"),
    ]


async def test_a_pod_group_created_later_lets_its_members_in() -> None:
    simulation = Simulation(gang_config())
    simulation.start()
    simulation.apply(node("n1"))
    for index in range(2):
        simulation.apply(member(f"w-{index}", "late"))
    await simulation.run_until_quiet()
    assert not any(p["spec"].get("nodeName") for p in simulation.cluster.pods.values())
    simulation.apply(pod_group("late", 2))
    await simulation.run_until_quiet()
    assert all(p["spec"].get("nodeName") == "n1" for p in simulation.cluster.pods.values())


# The simulation ---------------------------------------------------------------------------------


def test_the_example_binds_one_gang_whole_and_leaves_the_other_unbound() -> None:
    result = simulate(gang_config(), EXAMPLE)
    report = build_report(result)
    status = {p["name"]: p["status"] for p in report["pods"]}
    assert status == {
        "etl-0": "Bound",
        "etl-1": "Bound",
        "etl-2": "Bound",
        "training-0": "Pending",
        "training-1": "Pending",
        "training-2": "Pending",
        "training-3": "Pending",
        "web": "Bound",
    }
    assert len({p["node"] for p in report["pods"] if p["name"].startswith("etl-")}) == 3
    assert report["gangScheduling"] is True
    assert report["podGroups"] == [
        {
            "namespace": "default",
            "name": "etl",
            "minMember": 3,
            "members": 3,
            "bound": 3,
            "pending": 0,
            "complete": True,
        },
        {
            "namespace": "default",
            "name": "training",
            "minMember": 4,
            "members": 4,
            "bound": 0,
            "pending": 4,
            "complete": False,
        },
    ]


def test_without_coscheduling_the_groups_are_not_read() -> None:
    simulation = Simulation(default_config())
    result = sim_loop.run(simulation.run(load_scenario([EXAMPLE])))
    assert simulation.store.pod_groups.groups == {}
    report = build_report(result)
    assert report["gangScheduling"] is False
    # Pod by pod, three training pods take the room the fourth cannot find.
    training = [p for p in report["pods"] if p["name"].startswith("training-")]
    assert sum(p["status"] == "Bound" for p in training) == 3
    assert "no profile enables Coscheduling: the scheduler ignores PodGroups" in render_table(
        report
    )


def test_explain_shows_where_each_members_group_stood() -> None:
    result = simulate(gang_config(), EXAMPLE, explain=True)
    states = [
        (a.pod, a.result, a.plugin_states.get("Coscheduling", {}).get("summary"))
        for a in result.attempts
    ]
    assert ("default/web", "scheduled", None) in states
    assert ("default/etl-0", "scheduled", "3 of 3 members placed: the group is complete") in states
    # The member that found no node, while its three siblings waited at Permit for it.
    first_failure = next(s for s in states if s[0].startswith("default/training-"))
    assert first_failure[1:] == (
        "unschedulable",
        "3 waiting at Permit: 3 of 4 members placed, 1 missing",
    )
    record = next(a for a in result.attempts if a.pod == first_failure[0]).as_dict()
    assert record["plugins"]["Coscheduling"] == {
        "group": "default/training",
        "minMember": 4,
        "members": 4,
        "placed": 3,
        "waiting": 3,
        "missing": 1,
        "summary": "3 waiting at Permit: 3 of 4 members placed, 1 missing",
    }


def test_simulate_explain_prints_the_group_states(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", str(EXAMPLE), "--config", str(SHIPPED_CONFIG), "--explain"])
    out = capsys.readouterr().out
    assert code == 0
    assert "POD GROUPS" in out
    assert "default/training  4           4        0      4        no" in out
    assert (
        "  Coscheduling: 3 waiting at Permit: 3 of 4 members placed, 1 missing "
        "(group default/training, members 4, minMember 4, missing 1, placed 3, waiting 3)"
    ) in out


@pytest.mark.parametrize(
    ("objects", "summary"),
    [
        pytest.param(
            [pod_group("g", 4), member("w-0", "g"), member("w-1", "g")],
            "waiting for members: 2 of 4 pods exist, 2 not created yet",
            id="short-of-members",
        ),
        pytest.param([member("w-0", "g")], "PodGroup default/g not found", id="no-group"),
    ],
)
def test_a_member_turned_away_at_pre_filter_says_why(
    tmp_path: Path, objects: list[Raw], summary: str
) -> None:
    path = write_yaml(tmp_path / "s.yaml", [node("n1"), *objects])
    result = simulate(gang_config(), path, explain=True)
    first = result.attempts[0]
    assert first.result == "unschedulable"
    assert first.plugin_states["Coscheduling"]["summary"] == summary
