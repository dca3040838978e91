"""Upstream's ops as the runner carries them out, checked against a recording API client."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
from bench.e2e import SLICES_PATH
from bench.kube import Client
from bench.upstream import support
from bench.upstream.ops import Execution, OpError
from bench.upstream.podstate import PodState
from bench.upstream.runner import threshold_verdict
from bench.upstream.suite import Op, TestCase, Threshold, ThresholdSelector, Workload

from tests.bench.recording import RecordingClient

TEST_CASE = TestCase(
    "Case", Path("performance-config.yaml"), labels=(), feature_gates={}, ops=(), raw_workloads=()
)


async def _no_metrics() -> str:
    return ""


def _execution(client: RecordingClient, pods: PodState | None = None) -> Execution:
    return Execution(
        cast(Client, client), pods or PodState(), TEST_CASE, "kopf-scheduler", _no_metrics
    )


def _pod(
    name: str, namespace: str, node: str = "", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"nodeName": node} if node else {},
    }


def test_the_runner_carries_out_exactly_the_ops_support_declares() -> None:
    handled = set(_execution(RecordingClient()).handlers())
    assert handled | {"createPodSets"} == support.SUPPORTED


async def test_an_op_without_a_handler_is_refused_by_name() -> None:
    with pytest.raises(OpError, match="op 4 createResourceClaims: not carried out"):
        await _execution(RecordingClient()).run(Op(4, "createResourceClaims", {}))


async def test_a_scheduled_barrier_waits_for_the_counted_pods_and_forgets_them() -> None:
    pods = PodState()
    for i in range(3):
        pods.observe("ADDED", _pod(f"p{i}", "a", node="n1"))
    execution = _execution(RecordingClient(), pods)
    execution.pods_per_namespace.update({"a": 3, "b": 0})
    done = await execution.run(Op(2, "barrier", {"namespaces": ["a"]}))
    assert done == {"namespaces": ["a"], "stage": "Scheduled"}
    assert execution.pods_per_namespace == {"b": 0}
    with pytest.raises(OpError, match="unknown namespaces"):
        await execution.run(Op(3, "barrier", {"namespaces": ["a"]}))


async def test_an_attempted_barrier_counts_pods_with_a_scheduling_condition() -> None:
    pods = PodState()
    gated = _pod("g", "a")
    gated["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
    pods.observe("ADDED", gated)
    execution = _execution(RecordingClient(), pods)
    execution.pods_per_namespace["a"] = 1
    await execution.run(Op(2, "barrier", {"stageRequirement": "Attempted"}))
    assert execution.pods_per_namespace == {"a": 1}


async def test_deleting_at_a_rate_deletes_the_matching_pods_one_by_one() -> None:
    pods = PodState()
    pods.observe("ADDED", _pod("x1", "ns", labels={"app": "x"}))
    pods.observe("ADDED", _pod("x2", "ns", labels={"app": "x"}))
    pods.observe("ADDED", _pod("y1", "ns", labels={"app": "y"}))
    client = RecordingClient()
    op = Op(
        4,
        "deletePods",
        {"namespace": "ns", "labelSelector": {"app": "x"}, "deletePodsPerSecond": 1000},
    )
    execution = _execution(client, pods)
    done = await execution.run(op)
    assert done["pods"] == 2
    assert [(m, p) for m, p, _, _ in client.calls] == [
        ("DELETE", "/api/v1/namespaces/ns/pods/x1"),
        ("DELETE", "/api/v1/namespaces/ns/pods/x2"),
    ]
    assert execution.reported_later[4]["deleting_seconds"] >= 0.002


async def test_deleting_at_once_deletes_the_collection_by_selector() -> None:
    requests: list[tuple[str, str, dict[str, str] | None]] = []

    class Client(RecordingClient):
        async def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            requests.append((method, path, kwargs.get("params")))

    op = Op(4, "deletePods", {"namespace": "ns", "labelSelector": {"app": "x"}})
    await _execution(Client()).run(op)
    assert requests == [("DELETE", "/api/v1/namespaces/ns/pods", {"labelSelector": "app=x"})]


async def test_the_resource_driver_publishes_a_slice_for_each_matching_node() -> None:
    nodes = [
        {"metadata": {"name": n}}
        for n in ("scheduler-perf-dra-abc", "node-0-x", "scheduler-perf-dra-def")
    ]
    client = RecordingClient({"/api/v1/nodes": nodes})
    op = Op(
        2,
        "createResourceDriver",
        {
            "driverName": "test-driver.cdi.k8s.io",
            "nodes": "scheduler-perf-dra-*",
            "maxClaimsPerNode": 3,
        },
    )
    execution = _execution(client)
    assert await execution.run(op) == {"nodes": 2, "devices_per_node": 3}
    posted = [
        body for method, path, body, _ in client.calls if method == "POST" and path == SLICES_PATH
    ]
    assert [s["spec"]["nodeName"] for s in posted] == [
        "scheduler-perf-dra-abc",
        "scheduler-perf-dra-def",
    ]
    assert all(len(s["spec"]["devices"]) == 3 for s in posted)
    assert {s["spec"]["driver"] for s in posted} == {"test-driver.cdi.k8s.io"}
    assert execution.cluster_objects == [
        f"{SLICES_PATH}/scheduler-perf-dra-abc",
        f"{SLICES_PATH}/scheduler-perf-dra-def",
    ]


def _workload(threshold: float, selector: ThresholdSelector) -> Workload:
    return Workload("w", TEST_CASE, {}, (), Threshold(threshold), selector, {})


def test_the_threshold_is_held_against_every_collected_window() -> None:
    average = ThresholdSelector()
    windows = [
        {"SchedulingThroughput": {"Average": 300.0}},
        {"SchedulingThroughput": {"Average": 200.0}},
    ]
    assert threshold_verdict(_workload(250, average), windows)["met"] is False
    assert threshold_verdict(_workload(150, average), windows)["met"] is True
    assert threshold_verdict(_workload(0, average), windows) == {
        "threshold": None,
        "metric": "SchedulingThroughput",
    }
    no_samples = [{"SchedulingThroughput": {"samples": 0}}]
    assert threshold_verdict(_workload(150, average), no_samples)["met"] is False
    other = ThresholdSelector(
        name="scheduler_pod_scheduling_sli_duration_seconds", data_bucket="Perc99"
    )
    assert threshold_verdict(_workload(1, other), windows)["met"] is None


class _NodeServer(RecordingClient):
    """Keeps the nodes posted to it: kwok has made them Ready, and the API server tainted them
    not-ready, as it taints every new node; a merge patch replaces their taints."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes: dict[str, dict[str, Any]] = {}

    async def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        stored = await super().request(method, path, body, **kwargs)
        if method == "POST" and path == "/api/v1/nodes":
            name = body["metadata"]["name"]
            self.nodes[name] = {
                "metadata": {"name": name, "resourceVersion": "7"},
                "spec": {
                    "taints": [
                        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                    ]
                },
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
        if method == "PATCH" and path.startswith("/api/v1/nodes/"):
            node = self.nodes[path.rsplit("/", 1)[1]]
            node["spec"] = {"taints": body["spec"]["taints"]}
        return stored

    async def list_all(self, path: str, *args: Any, **kwargs: Any) -> tuple[list[Any], str]:
        if path == "/api/v1/nodes":
            return list(self.nodes.values()), "1"
        return await super().list_all(path, *args, **kwargs)


async def test_new_nodes_lose_the_not_ready_taint_once_ready() -> None:
    client = _NodeServer()
    execution = _execution(client)
    done = await asyncio.wait_for(execution.run(Op(0, "createNodes", {"count": 2})), 10)
    assert done["count"] == 2
    patches = [(path, body) for method, path, body, _ in client.calls if method == "PATCH"]
    assert sorted(path for path, _ in patches) == sorted(
        f"/api/v1/nodes/{name}" for name in client.nodes
    )
    for _, body in patches:
        assert body["metadata"] == {"resourceVersion": "7"}
        assert body["spec"]["taints"] == [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
        ]
    assert "Node: not-ready taint lifted by the runner once Ready" in execution.adaptations


async def test_a_collection_window_says_how_often_the_pods_were_listed_again_within_it() -> None:
    pods = PodState()
    pods.lists = 1
    execution = _execution(RecordingClient(), pods)
    await execution.run(Op(1, "startCollectingMetrics", {"name": "w", "namespaces": ["a"]}))
    pods.observe("ADDED", _pod("p0", "a", node="n1"))
    pods.lists += 2
    await execution.run(Op(2, "stopCollectingMetrics", {}))
    (window,) = execution.collected
    assert (window["scheduled"], window["pod_relists"]) == (1, 2)
