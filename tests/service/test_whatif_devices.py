"""What-if lists DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates when a
profile enables DynamicResources (the default profile does), so a pod added with a template gets
its claim made by the simulated controller and lands where a free device is; without the plugin
none of them is asked for."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.service.whatif import cluster_scenario, named_plugins
from kopf_scheduler.sim import loop as sim_loop
from kopf_scheduler.sim.report import build_report
from kopf_scheduler.sim.runner import Simulation
from kopf_scheduler.sim.scenario import Scenario
from tests.service.test_whatif_pod_groups import ListOnlyApi
from tests.sim.support import node, pod, write_yaml

Raw = dict[str, Any]
RESOURCE = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def _slice(node_name: str) -> Raw:
    return {
        "metadata": {"name": f"{node_name}-gpus", "uid": f"uid-{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }


def _taken(claim_name: str, node_name: str) -> Raw:
    """A claim of the live cluster, allocated n1's only GPU."""
    return {
        "metadata": {"name": claim_name, "namespace": "default", "uid": f"uid-{claim_name}"},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "g", "driver": DRIVER, "pool": node_name, "device": "gpu-0"}
                    ]
                }
            }
        },
    }


def live_cluster() -> dict[str, list[Raw]]:
    return {
        "/api/v1/nodes": [node("n1"), node("n2")],
        f"{RESOURCE}/deviceclasses": [
            {
                "metadata": {"name": "gpu", "uid": "uid-gpu"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        ],
        f"{RESOURCE}/resourceslices": [_slice("n1"), _slice("n2")],
        f"{RESOURCE}/resourceclaims": [_taken("busy", "n1")],
        f"{RESOURCE}/resourceclaimtemplates": [
            {
                "metadata": {"name": "one-gpu", "namespace": "default", "uid": "uid-t"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]
                        }
                    }
                },
            }
        ],
    }


def what_if(tmp_path: Path, added: list[Raw], plugins: set[str]) -> tuple[Scenario, ListOnlyApi]:
    api = ListOnlyApi(live_cluster())
    path = write_yaml(tmp_path / "add.yaml", added)
    scenario, _ = asyncio.run(cluster_scenario(cast(Api, api), [path], plugins))
    return scenario, api


def _with_template(raw: Raw) -> Raw:
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    return raw


def test_the_default_profile_enables_dynamic_resources() -> None:
    assert "DynamicResources" in named_plugins(default_config())


def test_device_objects_are_listed_and_steer_the_added_pod(tmp_path: Path) -> None:
    scenario, api = what_if(tmp_path, [_with_template(pod("trainer"))], {"DynamicResources"})
    assert f"{RESOURCE}/resourceclaimtemplates" in api.listed
    assert sorted(d["kind"] for d in scenario.dra) == [
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        "ResourceSlice",
    ]
    result = sim_loop.run(Simulation(default_config()).run(scenario))
    placed = {p["name"]: p["node"] for p in build_report(result)["pods"]}
    assert placed == {"trainer": "n2"}  # n1's GPU is taken by the live claim


def test_without_dynamic_resources_nothing_of_it_is_listed(tmp_path: Path) -> None:
    scenario, api = what_if(tmp_path, [pod("plain")], set())
    assert not [path for path in api.listed if path.startswith(RESOURCE)]
    assert scenario.dra == []


def test_an_added_claim_that_exists_is_refused(tmp_path: Path) -> None:
    added = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **_taken("busy", "n2")}]
    with pytest.raises(ValueError) as info:
        what_if(tmp_path, added, {"DynamicResources"})
    assert str(info.value) == "--add: ResourceClaim default/busy already exists in the cluster"
