"""``capacity --from-cluster`` against kube-scheduler v1.34.10 creating the copies for real.

cluster-capacity, the tool whose question and JSON ``capacity`` takes over, is not served as a
Go module, so the reference is the thing it emulates: kube-scheduler on the same control plane,
given copies of the template one at a time until one stays unschedulable. On 100 nodes of three
shapes, some already running pods, the count must be the same, and so must the reason the next
copy failed (kube-scheduler's message up to what its PostFilter plugins add, which
``capacity`` without ``--preemption`` does not run). The snapshot is taken first and nothing is
written by it: the copies in the namespace are the ones this test creates afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.support.clusters import Cluster
from e2e.support.env import TestEnv
from e2e.support.kubectl import Kubectl, node_name, unschedulable_message
from e2e.support.schedulers import UPSTREAM_SCHEDULER_NAME

UPSTREAM_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": UPSTREAM_SCHEDULER_NAME}],
}
"""kube-scheduler's defaults, under its own scheduler name."""


def _running_pod(env: TestEnv, name: str, node: str, cpu: str, memory: str) -> dict[str, Any]:
    raw = env.pod(name, cpu=cpu, memory=memory, scheduler=UPSTREAM_SCHEDULER_NAME)
    raw["spec"]["nodeName"] = node
    return raw


def _capacity(kube: Kubectl, tmp_path: Path, template: dict[str, Any]) -> dict[str, Any]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(UPSTREAM_CONFIG))
    podspec = tmp_path / "copy.yaml"
    podspec.write_text(yaml.safe_dump(template))
    assert kube.kubeconfig is not None
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kopf_scheduler",
            "capacity",
            "--from-cluster",
            "--kubeconfig",
            kube.kubeconfig,
            "--config",
            str(config),
            "--podspec",
            str(podspec),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    review: dict[str, Any] = json.loads(done.stdout)
    return review


def _real_copies(env: TestEnv, template: dict[str, Any], limit: int) -> tuple[int, str]:
    """Create copies one at a time until one stays unschedulable; (bound copies, its message)."""
    for index in range(limit):
        name = f"copy-{index}"
        raw = json.loads(json.dumps(template))
        raw["metadata"]["name"] = name
        env.create(raw)

        event = env.watch.wait_first(
            lambda e: node_name(e.pod) is not None or unschedulable_message(e.pod) is not None,
            name=name,
            timeout=60,
            what=f"{name} bound or unschedulable",
        )
        if node_name(event.pod) is None:
            return index, str(unschedulable_message(event.pod))
    pytest.fail(f"{limit} copies were all bound: the cluster is larger than this test expects")


def test_capacity_counts_what_kube_scheduler_places(
    cluster: Cluster, kube: Kubectl, env: TestEnv, upstream_scheduler: Path | None, tmp_path: Path
) -> None:
    if not cluster.serves_default_scheduler():
        pytest.skip("no kube-scheduler serves default-scheduler on this cluster")
    small = env.create_nodes(50, cpu="2", memory="4Gi")
    memory_bound = env.create_nodes(30, cpu="4", memory="4Gi")
    cpu_bound = env.create_nodes(20, cpu="3", memory="8Gi")
    running = [
        *(_running_pod(env, f"run-s{i}", small[i * 5], "1", "1Gi") for i in range(10)),
        *(_running_pod(env, f"run-m{i}", memory_bound[i * 3], "1", "1Gi") for i in range(10)),
        *(_running_pod(env, f"run-c{i}", cpu_bound[i * 4], "500m", "1Gi") for i in range(5)),
    ]
    env.create(*running)
    for raw in running:
        env.wait_bound(raw["metadata"]["name"])
    template = env.pod("copy", cpu="1500m", memory="3Gi", scheduler=UPSTREAM_SCHEDULER_NAME)

    review = _capacity(kube, tmp_path, template)
    assert set(env.pods()) == {raw["metadata"]["name"] for raw in running}, "capacity wrote pods"
    # By hand: small nodes 1 copy each unless running a pod (40); memory-bound nodes 1 each
    # (30); cpu-bound nodes 2 each, 1 where a pod runs (35).
    assert review["status"]["replicas"] == 105

    placed, message = _real_copies(env, template, limit=130)
    assert placed == review["status"]["replicas"]
    assert review["status"]["failReason"]["failType"] == "Unschedulable"
    # kube-scheduler's message goes on with what its PostFilter plugins (DynamicResources,
    # DefaultPreemption) add; the fit error before it is the same.
    ours = review["status"]["failReason"]["failMessage"]
    assert ours.endswith(".")
    assert message.startswith(f"{ours} "), (message, ours)
