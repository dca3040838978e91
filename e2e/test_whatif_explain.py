"""What-if and explanations against the real API server.

``simulate --from-cluster`` must answer "who would be preempted?" from the live state while
writing nothing: it runs here as an identity that can only read. ``explain`` must render the
decision record the running scheduler stored on an unschedulable pod. The kubectl plugin runs
through the real kubectl, as an admin runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from e2e.support.clusters import service_account_kubeconfig
from e2e.support.env import TestEnv
from e2e.support.kubectl import Kubectl, is_terminating
from e2e.support.polling import wait_until
from e2e.support.schedulers import Schedulers

READER_RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"], "verbs": ["get", "list"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list"]},
    {
        "apiGroups": [""],
        "resources": ["persistentvolumes", "persistentvolumeclaims"],
        "verbs": ["list"],
    },
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": [
            "storageclasses",
            "csinodes",
            "csidrivers",
            "csistoragecapacities",
            "volumeattachments",
        ],
        "verbs": ["list"],
    },
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": [
            "deviceclasses",
            "resourceslices",
            "resourceclaims",
            "resourceclaimtemplates",
        ],
        "verbs": ["list"],
    },
]


def _cli(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kopf_scheduler", *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _reader(kube: Kubectl, env: TestEnv, tmp_path: Path) -> Path:
    name = f"e2e-reader-{env.id}"
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "reader", "namespace": env.namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": READER_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": env.namespace}],
        },
    )
    return service_account_kubeconfig(kube, tmp_path / "reader.kubeconfig", "reader", env.namespace)


def _cleanup_reader(kube: Kubectl, env: TestEnv) -> None:
    name = f"e2e-reader-{env.id}"
    kube.delete("clusterrolebinding", name)
    kube.delete("clusterrole", name)


def _snapshot(env: TestEnv) -> dict[str, Any]:
    pods = env.pods()
    return {
        "pods": {
            name: (pod["metadata"]["resourceVersion"], is_terminating(pod))
            for name, pod in pods.items()
        },
        "events": len(env.events()),
    }


def test_what_if_names_the_victim_and_writes_nothing(
    kube: Kubectl, env: TestEnv, schedulers: Schedulers, tmp_path: Path
) -> None:
    [node] = env.create_nodes(1)
    low = [f"low-{i}" for i in range(2)]
    env.create(*(env.pod(name, cpu="2", priority_class="e2e-p10", grace=5) for name in low))
    for name in low:
        assert env.wait_bound(name) == node
    reader = _reader(kube, env, tmp_path)
    try:
        denied = kube.run(
            "auth", "can-i", "create", "pods", "--kubeconfig", str(reader), check=False
        )
        assert denied.stdout.strip() == "no", "the what-if identity must not be able to write"
        added = env.pod("would-be", cpu="2", priority_class="e2e-p100")
        add_file = tmp_path / "add.yaml"
        add_file.write_text(yaml.safe_dump(added))
        before = _snapshot(env)

        result = _cli(
            "simulate", "--from-cluster", "--add", str(add_file), "-o", "json", kubeconfig=reader
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        [answer] = report["whatIf"]
        assert answer["name"] == "would-be"
        assert answer["node"] == node
        assert answer["status"] == "Bound"
        [victim] = answer["preempts"]
        assert victim in {f"{env.namespace}/{name}" for name in low}

        assert _snapshot(env) == before, "the what-if run changed the cluster"
        assert env.get_pod("would-be") is None
    finally:
        _cleanup_reader(kube, env)


def test_explain_renders_the_stored_record(
    kube: Kubectl, env: TestEnv, schedulers: Schedulers, tmp_path: Path
) -> None:
    env.create_nodes(2, cpu="1")
    env.create(env.pod("too-big", cpu="3", priority_class="e2e-p10"))
    env.wait_unschedulable("too-big")
    admin = Path(kube.kubeconfig) if kube.kubeconfig else None
    assert admin is not None

    def stored() -> dict[str, Any] | None:
        pod = env.get_pod("too-big") or {}
        text = (
            (pod.get("metadata") or {}).get("annotations", {}).get("kopf-scheduler.io/explanation")
        )
        return json.loads(text) if text else None

    record = wait_until(stored, timeout=30, what="the explanation annotation")
    assert record["result"] == "unschedulable"
    assert record["nodes"] == []
    # Nodes rejected alike are one group; other tests' nodes (their affinity) are in others.
    [group] = [g for g in record["rejected"] if set(env.node_names) & set(g["nodes"])]
    assert group["plugin"] == "NodeResourcesFit"
    assert group["reasons"] == ["Insufficient cpu"]
    assert sorted(group["nodes"]) == sorted(env.node_names)

    result = _cli("explain", f"{env.namespace}/too-big", kubeconfig=admin)
    assert result.returncode == 0, result.stderr
    for name in env.node_names:
        assert (
            f"{name}: rejected by NodeResourcesFit (UnschedulableAndUnresolvable): Insufficient cpu"
            in result.stdout
        )


def _plugin(kube: Kubectl, *args: str) -> subprocess.CompletedProcess[str]:
    """``kubectl kopf-scheduler ARGS`` with the package's executables first on the PATH."""
    assert kube.kubeconfig is not None
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [kube.binary, "kopf-scheduler", *args, "--kubeconfig", kube.kubeconfig],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PATH": path},
    )


def test_the_kubectl_plugin_lists_and_explains_a_pending_pod(
    kube: Kubectl, env: TestEnv, schedulers: Schedulers
) -> None:
    env.create_nodes(2, cpu="1")
    env.create(env.pod("too-big", cpu="3", priority_class="e2e-p10"))
    env.wait_unschedulable("too-big")

    pending = _plugin(kube, "pending", "-n", env.namespace, "-o", "json")
    assert pending.returncode == 0, pending.stderr
    [item] = json.loads(pending.stdout)["items"]
    assert (item["name"], item["reason"]) == ("too-big", "Unschedulable")
    # The pod is kept to this test's two nodes by affinity; the cluster's other nodes are turned
    # away by that, these two by their cpu: the top reason is whichever turned away more.
    [condition] = [
        c for c in env.get_pod("too-big")["status"]["conditions"] if c["type"] == "PodScheduled"
    ]
    counts = {
        reason: int(count)
        for count, reason in re.findall(
            r"(\d+) (Insufficient cpu|node\(s\) didn't match Pod's node affinity/selector)",
            condition["message"].split(" preemption: ")[0],
        )
    }
    assert counts["Insufficient cpu"] == 2
    top = max(counts, key=lambda reason: counts[reason])
    assert item["topReason"] == f"{counts[top]} {top}"

    def explained() -> subprocess.CompletedProcess[str] | None:
        done = _plugin(kube, "explain", "too-big", "-n", env.namespace)
        return done if "rejected by NodeResourcesFit" in done.stdout else None

    result = wait_until(explained, timeout=30, what="the explanation through kubectl")
    for name in env.node_names:
        assert f"{name}: rejected by NodeResourcesFit" in result.stdout
