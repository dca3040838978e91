"""Dynamic resource allocation end to end in the simulator: the bundled example (claims made from
templates by the resource-claim controller, a constraint, a CEL selector on capacity, a shared
claim, a missing class), the allocation and reservation written on the claims, claims released
when their pod is gone, and bad input reported on the pod with upstream's texts while the
scheduler carries on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.model.resource_claim import FINALIZER
from kopf_scheduler.sim.claim_controller import generated_claim_base
from kopf_scheduler.sim.runner import Simulation, SimulationResult
from kopf_scheduler.sim.scenario import load_scenario
from tests.sim.support import placements, report
from tests.sim.volume_support import write_yaml

EXAMPLE = Path(__file__).parents[2] / "operator/kopf_scheduler/scenarios/devices.yaml"
DRIVER = "gpu.example.com"


def _claims(result: SimulationResult) -> dict[str, dict[str, Any]]:
    return {key.split("/")[1]: raw for key, raw in result.cluster.storage["ResourceClaim"].items()}


def _devices(claim: dict[str, Any]) -> list[tuple[str, str]]:
    results = claim["status"]["allocation"]["devices"]["results"]
    return [(r["pool"], r["device"]) for r in results]


async def _simulate(path: Path) -> SimulationResult:
    return await Simulation(default_config()).run(load_scenario([path]))


async def test_the_bundled_example_places_pods_where_their_devices_are() -> None:
    result = await _simulate(EXAMPLE)
    rep = report(result)
    assert placements(rep) == {
        "trainer": ("Bound", "node-a"),
        "notebook": ("Bound", "node-b"),
        "viewer-1": ("Bound", "node-b"),
        "viewer-2": ("Bound", "node-b"),
        "late": ("Pending", None),
    }
    late = next(p for p in rep["pods"] if p["name"] == "late")
    assert late["message"].startswith(
        "0/2 nodes are available: request fpga: device class fpga.example.com does not exist. "
        "no new claims to deallocate, preemption: "
    )
    claims = _claims(result)
    pods = result.cluster.pods
    trainer_status = pods["default/trainer"]["status"]["resourceClaimStatuses"]
    assert [entry["name"] for entry in trainer_status] == ["gpus"]
    trainer_claim = claims[trainer_status[0]["resourceClaimName"]]
    assert re.fullmatch(r"trainer-gpus-[a-z0-9]{5}", trainer_claim["metadata"]["name"])
    assert (
        trainer_claim["metadata"]["ownerReferences"][0]["uid"]
        == (pods["default/trainer"]["metadata"]["uid"])
    )
    assert _devices(trainer_claim) == [("node-a", "gpu-0"), ("node-a", "gpu-1")]
    assert trainer_claim["metadata"]["finalizers"] == [FINALIZER]
    notebook_claim = claims[
        pods["default/notebook"]["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    ]
    assert _devices(notebook_claim) == [("node-b", "gpu-0")]
    shared = claims["shared-gpu"]
    assert _devices(shared) == [("node-b", "gpu-1")]
    assert [entry["name"] for entry in shared["status"]["reservedFor"]] == [
        "viewer-1",
        "viewer-2",
    ]


def test_the_bundled_example_runs_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLE), "--explain", "-o", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    trainer = next(a for a in rep["attempts"] if a["pod"] == "default/trainer")
    rejected = {n["node"]: n["reasons"] for n in trainer["nodes"] if not n["feasible"]}
    assert rejected == {"node-b": ["cannot allocate all claims"]}
    summary = trainer["plugins"]["DynamicResources"]["summary"]
    assert re.fullmatch(
        r"default/trainer-gpus-[a-z0-9]{5}: allocated "
        r"gpu\.example\.com/node-a/gpu-0, gpu\.example\.com/node-a/gpu-1",
        summary,
    )


async def test_a_gone_pod_releases_its_devices(tmp_path: Path) -> None:
    simulation = Simulation(default_config())
    result = await simulation.run(load_scenario([EXAMPLE]))
    cluster = result.cluster
    trainer = cluster.pods["default/trainer"]
    generated = trainer["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    viewer = cluster.pods["default/viewer-1"]
    cluster._remove("default/trainer")
    cluster._remove("default/viewer-1")
    cluster.run_controllers()
    claims = _claims(result)
    assert generated not in claims  # made for the pod: deleted with it
    shared = claims["shared-gpu"]
    reserved = [entry["uid"] for entry in shared["status"]["reservedFor"]]
    assert viewer["metadata"]["uid"] not in reserved
    assert shared["status"]["allocation"] is not None  # viewer-2 still uses it
    cluster._remove("default/viewer-2")
    cluster.run_controllers()
    released = _claims(result)["shared-gpu"]
    assert "allocation" not in released["status"]
    assert FINALIZER not in released["metadata"].get("finalizers", [])


def test_long_names_are_shortened_in_proportion() -> None:
    assert generated_claim_base("trainer", "gpus") == "trainer-gpus-"
    base = generated_claim_base("p" * 40, "c" * 40)
    assert base == "p" * 27 + "-" + "c" * 27


# Bad input --------------------------------------------------------------------------------------


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _class(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def _slice(node: str, *devices: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": device} for device in devices],
        },
    }


def _claim(name: str, class_name: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": class_name}}]}
        },
    }
    if status is not None:
        raw["status"] = status
    return raw


def _pod(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "resourceClaims": [{"name": "g", "resourceClaimName": claim}],
        },
    }


GOOD_CLASS = _class("gpu", f'device.driver == "{DRIVER}"')
ELSEWHERE = {
    "allocation": {
        "devices": {"results": [{"request": "r", "driver": DRIVER, "pool": "n9", "device": "d"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n9"]}]}
            ]
        },
    },
    "reservedFor": [{"resource": "pods", "name": "other", "uid": "other-uid"}],
}


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        pytest.param(
            [GOOD_CLASS, _slice("n1", "gpu-0", "gpu-0"), _claim("c", "gpu")],
            'running "DynamicResources" filter plugin: pool n1 is invalid: '
            "duplicate device name gpu-0",
            id="slice-with-a-duplicate-device",
        ),
        pytest.param(
            [_class("broken", "device.driver ==="), _slice("n1", "gpu-0"), _claim("c", "broken")],
            'running "DynamicResources" filter plugin: class broken: selector #0: '
            "CEL compile error: compilation failed: ERROR: <input>:1:17: "
            "Syntax error: token recognition error at: '='",
            id="class-selector-that-does-not-compile",
        ),
        pytest.param(
            [_slice("n1", "gpu-0"), _claim("c", "nothing")],
            "0/1 nodes are available: request r: device class nothing does not exist. "
            "no new claims to deallocate, preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling.",
            id="claim-naming-a-missing-class",
        ),
        pytest.param(
            [GOOD_CLASS, _slice("n1", "gpu-0"), _claim("c", "gpu", ELSEWHERE)],
            "0/1 nodes are available: 1 resourceclaim not available on the node. "
            "still not schedulable, preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling.",
            id="claim-allocated-elsewhere-and-reserved-for-another-pod",
        ),
    ],
)
async def test_bad_input_is_reported_on_the_pod(
    tmp_path: Path, objects: list[dict[str, Any]], message: str
) -> None:
    plain = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    docs = [_node("n1"), *objects, _pod("victim", "c"), plain]
    result = await _simulate(write_yaml(tmp_path / "scenario.yaml", docs))
    assert placements(report(result)) == {"victim": ("Pending", None), "plain": ("Bound", "n1")}
    condition = next(
        c
        for c in result.cluster.pods["default/victim"]["status"]["conditions"]
        if c["type"] == "PodScheduled"
    )
    # The first line: a CEL compile error goes on with the expression and a caret below it.
    first_line = condition["message"].split("\n")[0]
    assert (condition["status"], first_line) == ("False", message)
    events = [e.message for e in result.cluster.events if e.object == "default/victim"]
    assert events[0] == condition["message"]


async def test_preemption_does_not_free_devices(tmp_path: Path) -> None:
    """As kube-scheduler v1.34.10 answers on a live cluster: a higher-priority pod whose device
    a lower-priority pod holds is not placed by preempting it."""
    held = {
        "allocation": {
            "devices": {
                "results": [{"request": "r", "driver": DRIVER, "pool": "n1", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "low", "uid": "low-uid"}],
    }
    low = _pod("low", "low-gpu")
    low["metadata"]["uid"] = "low-uid"
    low["spec"]["nodeName"] = "n1"
    high = _pod("high", "high-gpu")
    high["spec"]["priority"] = 1000
    docs = [
        _node("n1"),
        GOOD_CLASS,
        _slice("n1", "gpu-0"),
        _claim("low-gpu", "gpu", held),
        _claim("high-gpu", "gpu"),
        low,
        high,
    ]
    result = await _simulate(write_yaml(tmp_path / "scenario.yaml", docs))
    assert placements(report(result)) == {"low": ("Bound", "n1"), "high": ("Pending", None)}
    events = [e.message for e in result.cluster.events if e.object == "default/high"]
    assert events[0] == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_the_explanation_says_which_request_failed_on_a_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(EXAMPLE), "--explain", "-o", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)

    def detail(pod: str, node: str) -> str:
        attempt = next(a for a in rep["attempts"] if a["pod"] == f"default/{pod}")
        verdict = next(n for n in attempt["nodes"] if n["node"] == node)
        assert verdict["reasons"] == ["cannot allocate all claims"]
        return str(verdict["detail"])

    assert re.fullmatch(
        r"claim default/trainer-gpus-[a-z0-9]{5}: no choice of free devices meets its constraints",
        detail("trainer", "node-b"),
    )
    assert re.fullmatch(
        r"claim default/notebook-gpu-[a-z0-9]{5}, request gpu: "
        r"no device matches class gpu\.example\.com and its selectors",
        detail("notebook", "node-a"),
    )
    assert detail("viewer-1", "node-a") == (
        "claim default/shared-gpu, request gpu: needs 1, 2 match, 0 of them free"
    )
