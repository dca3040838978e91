"""DRA1, scheduler_perf's SchedulingWithResourceClaimTemplate, as objects and requests."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from bench.__main__ import main
from bench.e2e import SLICES_PATH, allocate_init_claims, device_check, ensure_devices
from bench.kube import MERGE_PATCH, Client
from bench.scenarios import SCENARIOS, scenario
from e2e.support import dra

from bench import shapes
from tests.bench.recording import RecordingClient

Raw = dict[str, Any]


def test_dra1_is_the_5000_pod_500_node_workload_with_ten_devices_per_node() -> None:
    dra1 = SCENARIOS["DRA1"]
    assert (dra1.nodes, dra1.init_count, dra1.measured_count) == (500, 2500, 2500)
    assert dra1.devices_per_node == 10
    small = scenario("DRA1@0.1")
    assert (small.nodes, small.init_count, small.measured_count) == (50, 250, 250)
    assert small.devices_per_node == 10


@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - {"DRA1"}))
def test_the_other_scenarios_publish_no_devices(name: str) -> None:
    assert SCENARIOS[name].node_slices() == []


def test_every_node_publishes_the_scheduler_perf_slice() -> None:
    slices = scenario("DRA1@0.01").node_slices()
    assert [s["metadata"]["name"] for s in slices] == [
        "kwok-node-0",
        "kwok-node-1",
        "kwok-node-2",
        "kwok-node-3",
        "kwok-node-4",
    ]
    first = slices[0]["spec"]
    assert first["driver"] == dra.PERF_DRIVER
    assert first["pool"] == {"name": "kwok-node-0", "generation": 0, "resourceSliceCount": 1}
    assert [d["name"] for d in first["devices"]] == [f"instance-{i}" for i in range(10)]
    assert first["devices"][3]["attributes"]["dra.example.com/numa"] == {"int": 3}


def test_init_pods_name_their_own_claim_and_measured_pods_the_template() -> None:
    small = scenario("DRA1@0.01")
    init = small.init_pods("ns", "s")
    measured = small.measured_pods("ns", "s")
    assert init[0]["spec"]["resourceClaims"] == [
        {"name": "resource", "resourceClaimName": "init-dra-0-resource"}
    ]
    assert measured[0]["spec"]["resourceClaims"] == [
        {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
    ]
    assert measured[0]["spec"]["containers"][0]["resources"] == {"claims": [{"name": "resource"}]}


def test_init_claims_take_the_next_free_device_of_their_node() -> None:
    small = scenario("DRA1@0.01")  # 5 nodes, 25 init pods: five per node
    pods = small.init_pods("ns", "s")
    for index, pod in enumerate(pods):
        pod["metadata"]["uid"] = f"uid-{index}"
    fake = RecordingClient({"/api/v1/namespaces/ns/pods": pods})

    asyncio.run(allocate_init_claims(cast(Client, fake), small, "ns"))

    patches = {path: body for _, path, body, kind in fake.calls if kind == MERGE_PATCH}
    claims = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims"
    seventh = patches[f"{claims}/init-dra-7-resource/status"]["status"]
    assert seventh["allocation"]["devices"]["results"] == [
        {
            "request": "req-0",
            "driver": dra.PERF_DRIVER,
            "pool": "kwok-node-2",
            "device": "instance-1",
        }
    ]
    assert seventh["reservedFor"] == [{"resource": "pods", "name": "init-dra-7", "uid": "uid-7"}]
    devices = {
        (
            b["status"]["allocation"]["devices"]["results"][0]["pool"],
            b["status"]["allocation"]["devices"]["results"][0]["device"],
        )
        for b in patches.values()
    }
    assert len(devices) == len(pods) == 25


def test_slices_that_differ_are_replaced_and_current_ones_kept() -> None:
    small = scenario("DRA1@0.01")
    current, changed = small.node_slices()[:2]
    changed = {**changed, "spec": {**changed["spec"], "devices": changed["spec"]["devices"][:3]}}
    leftover = dra.perf_slice("kwok-node-99", 10)
    fake = RecordingClient({SLICES_PATH: [current, changed, leftover]})

    result = asyncio.run(ensure_devices(cast(Client, fake), small))

    deleted = sorted(path for method, path, _, _ in fake.calls if method == "DELETE")
    assert deleted == [f"{SLICES_PATH}/kwok-node-1", f"{SLICES_PATH}/kwok-node-99"]
    created = [
        body["metadata"]["name"] for m, p, body, _ in fake.calls if p == SLICES_PATH and m == "POST"
    ]
    assert created == ["kwok-node-1", "kwok-node-2", "kwok-node-3", "kwok-node-4"]
    assert (result["created"], result["deleted"]) == (4, 2)


def _bound(name: str, node: str, claim: str) -> Raw:
    pod = shapes.pod("dra", name, "ns", "s", shapes.ROLE_MEASURED)
    pod["spec"]["nodeName"] = node
    pod["status"] = {"resourceClaimStatuses": [{"name": "resource", "resourceClaimName": claim}]}
    return pod


def _claim(name: str, node: str, device: str) -> Raw:
    claim = dra.claim(name, "ns", shapes.claim_spec())
    claim["status"] = shapes.init_claim_status(node, int(device.split("-")[1]), "p", "u")
    return claim


def test_the_device_check_finds_a_claim_off_its_pods_node_and_a_device_given_twice() -> None:
    good = device_check(
        [_bound("a", "n1", "a-r"), _bound("b", "n2", "b-r")],
        [_claim("a-r", "n1", "instance-0"), _claim("b-r", "n2", "instance-0")],
    )
    assert good["ok"]
    bad = device_check(
        [_bound("a", "n1", "a-r"), _bound("b", "n2", "b-r")],
        [_claim("a-r", "n1", "instance-0"), _claim("b-r", "n1", "instance-0")],
    )
    assert bad == {
        "bound_without_allocation_on_node": 1,
        "devices_in_two_claims": 1,
        "ok": False,
    }


def test_dra1_cannot_run_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--inprocess", "DRA1@0.01", "--no-write"])
    assert exit_info.value.code == 2
    assert "DRA1@0.01 runs only end to end" in capsys.readouterr().err
