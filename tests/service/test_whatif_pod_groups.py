"""What-if lists PodGroups when a profile enables Coscheduling, as the scheduler itself does, so
the gangs already in the cluster and the ones added are simulated whole; without Coscheduling it
never asks for them (a cluster may not have the CRD, an identity may not read it)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from kopf_scheduler.config.loader import check_config_file, default_config
from kopf_scheduler.k8s.client import Api, ListResult
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL
from kopf_scheduler.service.whatif import cluster_scenario, named_plugins
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import Scenario
from tests.sim.support import node, pod, write_yaml

PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
SHIPPED_CONFIG = Path(__file__).parents[2] / "manifests/base/config.yaml"

Raw = dict[str, Any]


class ListOnlyApi:
    def __init__(self, collections: Mapping[str, list[Raw]]) -> None:
        self.collections = collections
        self.listed: list[str] = []

    async def list(self, path: str, query: Mapping[str, str] | None = None) -> ListResult:
        self.listed.append(path)
        return ListResult([dict(item) for item in self.collections.get(path, [])], "42")


def pod_group(name: str, min_member: int) -> Raw:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"minMember": min_member},
        "status": {"phase": "Scheduling"},
    }


def member(name: str, group: str, node_name: str | None = None, cpu: str = "1") -> Raw:
    return pod(name, cpu=cpu, node_name=node_name, labels={POD_GROUP_LABEL: group})


def live_cluster() -> dict[str, list[Raw]]:
    """Two nodes of 4 CPUs; the group "running" has two members bound, one pending."""
    return {
        "/api/v1/nodes": [node("n1"), node("n2")],
        "/api/v1/pods": [
            member("running-0", "running", "n1"),
            member("running-1", "running", "n2"),
            member("running-2", "running"),
        ],
        PODGROUPS: [pod_group("running", 3)],
    }


def what_if(tmp_path: Path, added: list[Raw], plugins: set[str]) -> tuple[Scenario, ListOnlyApi]:
    api = ListOnlyApi(live_cluster())
    path = write_yaml(tmp_path / "add.yaml", added)
    scenario, _ = asyncio.run(cluster_scenario(cast(Api, api), [path], plugins))
    return scenario, api


def test_the_shipped_configuration_names_coscheduling() -> None:
    assert "Coscheduling" in named_plugins(check_config_file(SHIPPED_CONFIG).config)
    assert "Coscheduling" not in named_plugins(default_config())


def test_pod_groups_are_listed_with_coscheduling_and_simulated_whole(tmp_path: Path) -> None:
    added = [
        {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", **pod_group("new", 4)},
        *(member(f"new-{index}", "new", cpu="2") for index in range(4)),
    ]
    scenario, api = what_if(tmp_path, added, {"Coscheduling"})
    assert PODGROUPS in api.listed
    groups = {g["metadata"]["name"]: g for g in scenario.pod_groups}
    assert sorted(groups) == ["new", "running"]
    assert groups["running"]["kind"] == "PodGroup"
    assert groups["running"]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"

    config = check_config_file(SHIPPED_CONFIG).config
    result = sim_loop.run(Simulation(config).run(scenario))
    report = build_report(result)
    bound = {p["name"] for p in report["pods"] if p["status"] == "Bound"}
    # The live group's third member completes it; the new gang needs 8 CPUs where 5 are free
    # (2 per member, only one member per node fits), so none of its members takes any.
    assert bound == {"running-0", "running-1", "running-2"}
    assert {g["name"]: g["complete"] for g in report["podGroups"]} == {
        "new": False,
        "running": True,
    }


def test_without_coscheduling_pod_groups_are_not_listed(tmp_path: Path) -> None:
    scenario, api = what_if(tmp_path, [pod("plain")], set())
    assert PODGROUPS not in api.listed
    assert scenario.pod_groups == []


def test_an_added_pod_group_that_exists_is_refused(tmp_path: Path) -> None:
    added = [
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            **pod_group("running", 2),
        }
    ]
    with pytest.raises(ValueError) as info:
        what_if(tmp_path, added, {"Coscheduling"})
    assert str(info.value) == "--add: PodGroup default/running already exists in the cluster"
