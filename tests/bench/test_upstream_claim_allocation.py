"""Upstream's allocResourceClaims op: claims allocated before any pod, without reusing a device."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, cast

import pytest
from bench.e2e import DEVICE_CLASSES_PATH, SLICES_PATH, namespace_claims_path
from bench.kube import Client
from bench.upstream.claim_allocation import ALL_CLAIMS_PATH
from bench.upstream.ops import Execution, OpError
from bench.upstream.podstate import PodState
from bench.upstream.suite import Op, TestCase
from e2e.support import dra

from tests.bench.recording import RecordingClient

Raw = dict[str, Any]
DRIVER = dra.PERF_DRIVER
TEST_CASE = TestCase(
    "Case", Path("performance-config.yaml"), labels=(), feature_gates={}, ops=(), raw_workloads=()
)


def _node(name: str) -> Raw:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def _claim(name: str, namespace: str, allocated_on: tuple[str, str] | None = None) -> Raw:
    claim = dra.claim(name, namespace, dra.claim_spec([dra.exactly("req-0", "test-class")]))
    claim["metadata"]["resourceVersion"] = "7"
    if allocated_on is not None:
        node, device = allocated_on
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "req-0", "driver": DRIVER, "pool": node, "device": device}
                    ]
                }
            }
        }
    return claim


def _cluster(claims: list[Raw], elsewhere: list[Raw]) -> RecordingClient:
    """Two nodes with three devices each and one without any."""
    return RecordingClient(
        {
            "/api/v1/nodes": [_node("dra-a"), _node("dra-b"), _node("plain")],
            SLICES_PATH: [dra.perf_slice("dra-a", 3), dra.perf_slice("dra-b", 3)],
            DEVICE_CLASSES_PATH: [dra.device_class("test-class", DRIVER)],
            namespace_claims_path("init"): claims,
            ALL_CLAIMS_PATH: claims + elsewhere,
        }
    )


def _execution(client: RecordingClient, seed: int) -> Execution:
    async def no_metrics() -> str:
        return ""

    return Execution(
        cast(Client, client),
        PodState(),
        TEST_CASE,
        "kopf-scheduler",
        no_metrics,
        rng=random.Random(seed),
    )


def _stored(client: RecordingClient) -> dict[str, Raw]:
    return {
        path: body
        for method, path, body, _ in client.calls
        if method == "PUT" and path.endswith("/status")
    }


@pytest.mark.parametrize("seed", range(5))
async def test_each_unallocated_claim_gets_a_free_device_on_a_node_that_has_it(seed: int) -> None:
    claims = [
        _claim("test-claim-0", "init"),
        _claim("test-claim-1", "init", allocated_on=("dra-a", "instance-0")),
        _claim("test-claim-2", "init"),
        _claim("test-claim-3", "init"),
    ]
    elsewhere = [_claim("held", "other", allocated_on=("dra-b", "instance-1"))]
    client = _cluster(claims, elsewhere)
    execution = _execution(client, seed)

    done = await execution.run(Op(5, "allocResourceClaims", {"namespace": "init"}))

    stored = _stored(client)
    prefix = "/apis/resource.k8s.io/v1/namespaces/init/resourceclaims/"
    assert sorted(stored) == [f"{prefix}test-claim-{i}/status" for i in (0, 2, 3)]
    taken = [("dra-a", "instance-0"), ("dra-b", "instance-1")]
    for body in stored.values():
        allocation = body["status"]["allocation"]
        (result,) = allocation["devices"]["results"]
        assert result["driver"] == DRIVER and result["request"] == "req-0"
        device = (result["pool"], result["device"])
        assert device not in taken
        taken.append(device)
        (term,) = allocation["nodeSelector"]["nodeSelectorTerms"]
        assert term["matchFields"][0]["values"] == [result["pool"]]
        assert body["metadata"]["resourceVersion"] == "7"
    # A node's devices go in the order its driver lists them.
    for node in ("dra-a", "dra-b"):
        on_node = sorted(int(d[len("instance-") :]) for n, d in taken[2:] if n == node)
        free = [i for i in range(3) if (node, f"instance-{i}") not in taken[:2]]
        assert on_node == free[: len(on_node)]
    assert done.pop("nodes_tried") >= 3
    assert done == {"namespace": "init", "claims": 4, "allocated": 3}
    assert any("allocResourceClaims" in a for a in execution.adaptations)


async def test_a_claim_no_node_can_serve_fails_the_op_by_name() -> None:
    claims = [_claim(f"test-claim-{i}", "init") for i in range(7)]
    client = _cluster(claims, [])

    with pytest.raises(
        OpError, match=r"op 5 allocResourceClaims: could not allocate claim 6 out of 7"
    ):
        await _execution(client, 0).run(Op(5, "allocResourceClaims", {"namespace": "init"}))

    assert len(_stored(client)) == 6
