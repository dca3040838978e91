"""Gang scheduling end to end in the simulator: groups that cannot fit wait quietly, victims'
grace periods run out while members wait at Permit, gang preemption respects ``minResources``
and shows in the report, and a profile without Coscheduling says that it schedules members of
a PodGroup one by one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import structlog

from kopf_scheduler.cli import main
from kopf_scheduler.config.loader import API_VERSION as CONFIG_API
from kopf_scheduler.config.loader import KIND as CONFIG_KIND
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report, render_table
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import load_scenario
from tests.sim.support import node, pod, write_yaml
from tests.sim.test_pod_groups import (
    EXAMPLE,
    SHIPPED_CONFIG,
    gang_config,
    member,
    pod_group,
    simulate,
)

Raw = dict[str, Any]
LOW, HIGH = 10, 1000


def high_member(name: str, group: str, cpu: str) -> Raw:
    raw = member(name, group, cpu=cpu)
    raw["spec"]["priority"] = HIGH
    return raw


def statuses(result: SimulationResult) -> dict[str, str]:
    return {p["name"]: p["status"] for p in build_report(result)["pods"]}


def test_two_groups_that_cannot_fit_do_not_requeue_each_other(tmp_path: Path) -> None:
    # Each group needs four members of 3 CPUs on three nodes of 4 CPUs: three fit and wait at
    # Permit, the fourth finds no node, and the waiting three give their room back. That room
    # was free when the other group failed: it is no news to it.
    objects: list[Raw] = [node(f"n{i}") for i in range(3)]
    for group in ("a", "b"):
        objects.append(pod_group(group, 4))
        objects.extend(member(f"{group}-{i}", group, cpu="3") for i in range(4))
    path = write_yaml(tmp_path / "s.yaml", objects)
    simulation = Simulation(gang_config(), max_virtual_seconds=3600)
    result = sim_loop.run(simulation.run(load_scenario([path])))
    assert set(statuses(result).values()) == {"Pending"}
    per_pod: dict[str, int] = {}
    for attempt in result.attempts:
        per_pod[attempt.pod] = per_pod.get(attempt.pod, 0) + 1
    # A first attempt; for the member that found no node, one retry on the other group's room
    # (turned away at PreFilter); then only the flushes of unschedulable pods, which the
    # simulation gives while the cluster still changes: a handful, not one per failure of the
    # other group.
    assert max(per_pod.values()) <= 4, per_pod
    assert result.virtual_seconds < 3600


def test_the_virtual_time_cap_holds_while_members_wait_at_permit(tmp_path: Path) -> None:
    # Nine of ten members fit: a gap within 10 % leaves them waiting at Permit for a day.
    objects: list[Raw] = [node("n1", cpu="9"), pod_group("g", 10, scheduleTimeoutSeconds=86400)]
    objects.extend(member(f"w-{i}", "g", cpu="1") for i in range(10))
    path = write_yaml(tmp_path / "s.yaml", objects)
    simulation = Simulation(gang_config(), max_virtual_seconds=600)
    result = sim_loop.run(simulation.run(load_scenario([path])))
    assert result.virtual_seconds <= 600
    assert "Bound" not in statuses(result).values()


def _preemption_scenario(tmp_path: Path, *, grace: int) -> Path:
    # n1 is free; n2 is full with a low-priority pod whose grace period is ``grace`` seconds.
    # The group's first member fits on n1 and waits at Permit; the second preempts on n2.
    return write_yaml(
        tmp_path / "s.yaml",
        [
            node("n1"),
            node("n2"),
            pod("low", cpu="4", node_name="n2", priority=LOW, grace=grace),
            pod_group("g", 2, scheduleTimeoutSeconds=60),
            high_member("g-0", "g", cpu="4"),
            high_member("g-1", "g", cpu="4"),
        ],
    )


def test_victims_go_when_their_grace_period_ends_while_members_wait_at_permit(
    tmp_path: Path,
) -> None:
    result = simulate(gang_config(), _preemption_scenario(tmp_path, grace=30))
    report = build_report(result)
    assert statuses(result) == {"g-0": "Bound", "g-1": "Bound", "low": "Preempted"}
    messages = [e["message"] for e in report["events"]]
    assert not [m for m in messages if "timeout" in m], messages
    bound_at = [e["time"] for e in report["events"] if e["reason"] == "Scheduled"]
    assert len(bound_at) == 2
    assert max(bound_at) < 60, bound_at


def test_gang_preemption_victims_are_in_the_preemptions_table(tmp_path: Path) -> None:
    result = simulate(gang_config(), _preemption_scenario(tmp_path, grace=0))
    report = build_report(result)
    assert report["summary"]["preempted"] == 1
    assert [(p["preemptor"], p["node"], p["victims"]) for p in report["preemptions"]] == [
        ("default/g-1", "n2", ["default/low"])
    ]
    table = render_table(report)
    assert "PREEMPTIONS" in table
    assert "default/low" in table.split("PREEMPTIONS", 1)[1]


def test_explain_says_why_gang_preemption_planned_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two members of 4 CPUs, one node: no eviction completes the group.
    path = write_yaml(
        tmp_path / "s.yaml",
        [
            node("n1"),
            pod("low", cpu="4", node_name="n1", priority=LOW),
            pod_group("g", 2),
            high_member("g-0", "g", cpu="4"),
            high_member("g-1", "g", cpu="4"),
        ],
    )
    result = simulate(gang_config(), path, explain=True)
    assert statuses(result)["low"] == "Bound"
    records = [a.as_dict() for a in result.attempts if a.pod.startswith("default/g-")]
    gang_records = [
        r["preemption"]
        for r in records
        if r.get("preemption") and "PodGroup default/g" in r["preemption"]["reason"]
    ]
    assert gang_records, records
    assert gang_records[0]["outcome"] == "NoCandidate"
    assert gang_records[0]["reason"] == (
        "gang preemption: no room can be made for 2 members of PodGroup default/g"
    )
    assert main(["simulate", str(path), "--config", str(SHIPPED_CONFIG), "--explain"]) == 0
    assert (
        "  preemption: NoCandidate (gang preemption: no room can be made for 2 members of "
        "PodGroup default/g)"
    ) in capsys.readouterr().out


def test_min_resources_beyond_the_whole_cluster_evict_nothing(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "s.yaml",
        [
            node("n1"),
            node("n2"),
            pod("low-1", cpu="4", node_name="n1", priority=LOW),
            pod("low-2", cpu="4", node_name="n2", priority=LOW),
            pod_group("g", 2, minResources={"cpu": "100"}),
            high_member("g-0", "g", cpu="2"),
            high_member("g-1", "g", cpu="2"),
        ],
    )
    result = simulate(gang_config(), path)
    report = build_report(result)
    assert report["summary"]["preempted"] == 0
    assert all(p["nominatedNode"] is None for p in report["pods"])


def test_min_resources_beyond_the_free_room_nominate_no_member(tmp_path: Path) -> None:
    # The members fit without victims, but the group's minimum does not fit the free room: no
    # member is nominated, so no later pod is kept from that room or preempts for it.
    path = write_yaml(
        tmp_path / "s.yaml",
        [
            node("n1"),
            pod("low-1", cpu="3", node_name="n1", priority=LOW),
            pod_group("g", 1, minResources={"cpu": "2"}),
            high_member("g-0", "g", cpu="1"),
        ],
    )
    result = simulate(gang_config(), path)
    report = build_report(result)
    assert report["summary"]["preempted"] == 0
    assert all(p["nominatedNode"] is None for p in report["pods"])


def test_a_profile_without_coscheduling_warns_once_about_pod_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(
        tmp_path / "s.yaml",
        [node("n1"), pod_group("g", 2), member("w-0", "g"), member("w-1", "g")],
    )
    result = simulate(default_config(), path)
    report = build_report(result)
    assert report["warnings"] == [
        "profile kopf-scheduler schedules pods of PodGroups one by one: it does not enable "
        "Coscheduling (first seen: default/w-0 of PodGroup g)"
    ]
    assert "warning: profile kopf-scheduler schedules pods of PodGroups one by one" in (
        render_table(report)
    )


@pytest.mark.parametrize(
    "args", [pytest.param(["--example", "gangs"], id="by-name"), pytest.param([str(EXAMPLE)])]
)
def test_the_bundled_gang_example_runs_as_shipped(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", *args]) == 0
    captured = capsys.readouterr()
    assert "default/training  4           4        0      4        no" in captured.out
    assert "default/etl       3           3        3      0        yes" in captured.out
    assert "warning" not in captured.out + captured.err


def test_config_overrides_the_scenarios_own_configuration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    defaults = write_yaml(
        tmp_path / "config.yaml",
        [{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}],
    )
    assert main(["simulate", "--example", "gangs", "--config", str(defaults)]) == 0
    out = capsys.readouterr().out
    assert "(no profile enables Coscheduling: the scheduler ignores PodGroups" in out


@pytest.mark.parametrize(
    ("documents", "reason"),
    [
        pytest.param(
            [{"apiVersion": CONFIG_API, "kind": CONFIG_KIND, "profiles": "many"}],
            "KubeSchedulerConfiguration #1: profiles: ",
            id="invalid",
        ),
        pytest.param(
            [{"apiVersion": CONFIG_API, "kind": CONFIG_KIND}] * 2,
            "KubeSchedulerConfiguration #2: a scenario holds one configuration at most",
            id="twice",
        ),
    ],
)
def test_a_scenarios_configuration_is_checked(
    documents: list[Raw], reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(tmp_path / "s.yaml", [*documents, node("n1")])
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {reason}"), err
    assert "Traceback" not in err


def test_the_warning_is_logged_once_per_profile(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "s.yaml",
        [node("n1"), pod_group("g", 2), member("w-0", "g"), member("w-1", "g")],
    )
    with structlog.testing.capture_logs() as logs:
        simulate(default_config(), path)
    warned = [entry for entry in logs if entry["event"] == "pod_group_without_coscheduling"]
    assert [(e["log_level"], e["profile"], e["pod"], e["pod_group"]) for e in warned] == [
        ("warning", "kopf-scheduler", "default/w-0", "g")
    ]


def test_a_zero_schedule_timeout_is_read_and_the_group_binds(tmp_path: Path) -> None:
    path = write_yaml(
        tmp_path / "s.yaml",
        [
            node("n1"),
            pod_group("g", 2, scheduleTimeoutSeconds=0),
            member("w-0", "g"),
            member("w-1", "g"),
        ],
    )
    result = simulate(gang_config(), path)
    assert statuses(result) == {"w-0": "Bound", "w-1": "Bound"}


def _device_scenario(tmp_path: Path, gpus: int) -> Path:
    """n1 is full with a low-priority pod and has ``gpus`` GPUs; each of the two members needs
    1 CPU and a GPU of its own (a claim made from a template)."""
    driver = "gpu.example.com"
    objects: list[Raw] = [
        node("n1"),
        pod("low", cpu="4", node_name="n1", priority=LOW),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpus"},
            "spec": {
                "driver": driver,
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{index}"} for index in range(gpus)],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]
                    }
                }
            },
        },
        pod_group("g", 2),
    ]
    for index in range(2):
        raw = high_member(f"g-{index}", "g", cpu="1")
        raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        objects.append(raw)
    return write_yaml(tmp_path / "s.yaml", objects)


def test_gang_preemption_gives_no_device_to_two_members(tmp_path: Path) -> None:
    # Evicting "low" makes CPU room for both members, but there is one GPU for two members:
    # no plan completes the group, so nothing is evicted.
    result = simulate(gang_config(), _device_scenario(tmp_path, gpus=1), explain=True)
    report = build_report(result)
    assert report["summary"]["preempted"] == 0
    assert statuses(result)["low"] == "Bound"
    reasons = [
        a.preemption["reason"]
        for a in result.attempts
        if a.pod.startswith("default/g-") and a.preemption
    ]
    assert "gang preemption: no room can be made for 2 members of PodGroup default/g" in reasons


def test_gang_preemption_gives_each_member_a_device_of_its_own(tmp_path: Path) -> None:
    result = simulate(gang_config(), _device_scenario(tmp_path, gpus=2))
    assert statuses(result) == {"low": "Preempted", "g-0": "Bound", "g-1": "Bound"}
    claims = result.cluster.storage["ResourceClaim"].values()
    devices = [r["device"] for c in claims for r in c["status"]["allocation"]["devices"]["results"]]
    assert sorted(devices) == ["gpu-0", "gpu-1"]
