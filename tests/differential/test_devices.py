"""Devices in the differential suite: scenario sections, the allocations aspect, the profile."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from differential.generator import DEVICE_CLASS, GPU_ENTRY, generate
from differential.normalise import UNALLOCATED, normalise
from differential.record import RunRecord
from differential.scenario import ScenarioError, dump, from_document, render
from e2e.support import dra

NS = "diff-devices-1-upstream1-ab12"
UID_A = "5c436db5-0839-4a0c-bfd2-379350c5169f"


def _record(claims: list[dict[str, Any]]) -> RunRecord:
    return RunRecord(
        scenario="devices-1",
        side="upstream",
        scheduler_name="default-scheduler",
        namespace=NS,
        settled=True,
        seconds=1.0,
        resource_claims=claims,
    )


def _allocated(name: str, node: str, devices: list[str], users: list[str]) -> dict[str, Any]:
    claim = dra.claim(name, NS, dra.claim_spec([dra.exactly("gpu", "gpu-class")]))
    claim["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": dra.EXAMPLE_DRIVER, "pool": node, "device": d}
                    for d in devices
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": u, "uid": UID_A} for u in users],
    }
    return claim


def test_allocations_name_node_devices_and_users() -> None:
    shared = _allocated("shared-gpu", "node-1", ["gpu-0"], ["p02", "p01"])
    outcome = normalise(_record([shared]))
    assert outcome["allocations"] == {
        "shared-gpu": "node-1: gpu gpu.example.com/node-1/gpu-0; reserved for p01, p02"
    }


def test_a_claim_made_from_a_template_is_keyed_by_its_pod_and_entry() -> None:
    made = _allocated("p01-gpu-x7k2q", "node-0", ["gpu-0", "gpu-1"], ["p01"])
    made["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    made["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "p01", "uid": UID_A}]
    pending = dra.claim("p02-gpu-abcde", NS, {"devices": {"requests": []}})
    pending["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    pending["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "p02", "uid": "u"}]
    outcome = normalise(_record([pending, made]))
    assert outcome["allocations"] == {
        "p01/gpu": (
            "node-0: gpu gpu.example.com/node-0/gpu-0, gpu gpu.example.com/node-0/gpu-1; "
            "reserved for p01"
        ),
        "p02/gpu": UNALLOCATED,
    }


def test_a_record_without_resource_claims_still_loads() -> None:
    data = _record([]).to_json()
    del data["resource_claims"]
    assert RunRecord.from_json(data).resource_claims == []


def test_the_devices_profile_publishes_gpus_and_asks_for_them() -> None:
    uses = 0
    for seed in range(1, 11):
        scenario = generate(seed, "devices")
        assert from_document(yaml.safe_load(dump(scenario))) == scenario
        if not scenario.claim_templates and not scenario.resource_claims:
            assert not scenario.resource_slices and not scenario.device_classes
            continue
        uses += 1
        assert [c["metadata"]["name"] for c in scenario.device_classes] == [DEVICE_CLASS]
        nodes = {n["metadata"]["name"] for n in scenario.nodes}
        assert {s["spec"]["nodeName"] for s in scenario.resource_slices} <= nodes
        entries = [
            entry for pod in scenario.pending() for entry in pod["spec"].get("resourceClaims") or []
        ]
        assert entries and all(entry["name"] == GPU_ENTRY for entry in entries)
    assert uses >= 5


def test_render_places_claims_and_templates_in_the_run_and_owns_slices() -> None:
    scenario = next(
        s for s in (generate(seed, "devices") for seed in range(1, 20)) if s.claim_templates
    )
    rendered = render(scenario, "ns-1", "sched")
    assert all(t["metadata"]["namespace"] == "ns-1" for t in rendered.claim_templates)
    assert all(
        s["metadata"]["labels"]["differential.kopf-scheduler/owned"] == "true"
        for s in rendered.resource_slices
    )
    assert any(o["kind"] == "DeviceClass" for o in rendered.cluster_objects)


def _minimal(**sections: Any) -> dict[str, Any]:
    node = generate(1, "mixed").nodes[0]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p01"},
        "spec": {"containers": [{"name": "main", "image": "pause"}]},
    }
    return {"name": "x", "nodes": [node], "waves": [{"afterSeconds": 0, "pods": [pod]}], **sections}


@pytest.mark.parametrize(
    ("sections", "pod_claims", "message"),
    [
        pytest.param(
            {"resourceSlices": [dra.example_gpu_slice("node-9")]},
            None,
            "ResourceSlice node-9-gpu.example.com: spec.nodeName: 'node-9' is not a node",
            id="slice-node",
        ),
        pytest.param(
            {},
            {"templates": {"gpu": "gpu-1"}},
            "Pod p01: no ResourceClaimTemplate 'gpu-1' in the scenario",
            id="template",
        ),
        pytest.param(
            {},
            {"claims": {"gpu": "shared"}},
            "Pod p01: no ResourceClaim 'shared' in the scenario",
            id="claim",
        ),
        pytest.param(
            {
                "resourceClaims": [
                    {
                        "apiVersion": dra.RESOURCE_API,
                        "kind": "ResourceClaim",
                        "metadata": {"name": "c"},
                    }
                ]
            },
            None,
            "ResourceClaim c: spec: must be a mapping",
            id="spec",
        ),
    ],
)
def test_a_broken_device_section_is_reported_in_one_line(
    sections: dict[str, Any], pod_claims: dict[str, Any] | None, message: str
) -> None:
    document = _minimal(**sections)
    if pod_claims is not None:
        pod = document["waves"][0]["pods"][0]
        document["waves"][0]["pods"][0] = dra.with_claims(pod, **pod_claims)
    with pytest.raises(ScenarioError) as error:
        from_document(document, "case.yaml")
    assert message in str(error.value)
    assert "\n" not in str(error.value)
