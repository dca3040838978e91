"""The Helm chart on a real API server.

Every value combination of ``tests/chart/values/`` (but ``monitoring``, which is about the
Prometheus Operator's objects alone) is rendered with ``helm template`` and applied with
``kubectl apply --dry-run=server``, which runs each object through validation and admission
without keeping it; the Prometheus Operator's objects (a ServiceMonitor in ``hardened``) are left
out of the dry run, since the control plane has no CRDs for them (the chart tests render them).
The pod templates of the Deployment and of the configuration check's Job are also submitted as
Pods, in a namespace that enforces the ``restricted`` Pod Security level, because the pods
themselves are only admitted when their controllers create them. Last, one release is installed
for real (without the configuration check, whose pod nothing here runs),
upgraded with a changed scheduler configuration (the Deployment must roll out a new revision)
and uninstalled.

helm is ``$HELM`` when set, else the one built from its Go module into the cache (built here
when missing, like the control plane's binaries).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.localcluster.build import ensure_helm
from e2e.support.kubectl import Kubectl
from e2e.support.polling import wait_until

CHART = "charts/kopf-scheduler"
VALUES = "tests/chart/values"
NAMESPACE = "kopf-scheduler-chart-e2e"
RELEASE = "chart-e2e"
PROMETHEUS_OPERATOR_GROUP = "monitoring.coreos.com/"
# Rendered into kube-system, where the upstream task runs a second scheduler; every other
# combination into the test's own namespace.
DRY_RUN_CASES = ["default", "single-replica", "kube-system", "profile", "hardened"]


class Helm:
    """helm bound to one binary and the suite's kubeconfig."""

    def __init__(self, kube: Kubectl, root: Path) -> None:
        self.binary = os.environ.get("HELM") or str(ensure_helm())
        self.kubeconfig = kube.kubeconfig
        self.root = root

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [self.binary, *args]
        if self.kubeconfig:
            command.append(f"--kubeconfig={self.kubeconfig}")
        result = subprocess.run(
            command, cwd=self.root, capture_output=True, text=True, timeout=300, check=False
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def template(self, case: str, namespace: str) -> str:
        release = "my-scheduler" if case == "kube-system" else "kopf-scheduler"
        args = ["template", release, CHART, "--namespace", namespace]
        return self.run(*args, "--values", f"{VALUES}/{case}.yaml").stdout


@pytest.fixture(scope="module")
def helm(kube: Kubectl, repo_root: Path) -> Helm:
    return Helm(kube, repo_root)


@pytest.fixture(scope="module")
def namespace(kube: Kubectl) -> Iterator[str]:
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": NAMESPACE,
                "labels": {
                    "pod-security.kubernetes.io/enforce": "restricted",
                    "pod-security.kubernetes.io/warn": "restricted",
                },
            },
        }
    )
    try:
        yield NAMESPACE
    finally:
        kube.run("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


def documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


@pytest.mark.parametrize("case", DRY_RUN_CASES)
def test_rendered_chart_passes_server_side_dry_run(
    kube: Kubectl, helm: Helm, namespace: str, case: str
) -> None:
    target = "kube-system" if case == "kube-system" else namespace
    objects = [
        o
        for o in documents(helm.template(case, target))
        if not str(o.get("apiVersion", "")).startswith(PROMETHEUS_OPERATOR_GROUP)
    ]
    rendered = yaml.safe_dump_all(objects)
    assert {"ClusterRole", "Deployment", "ConfigMap", "ServiceAccount"} <= {
        o["kind"] for o in objects
    }

    result = kube.run("apply", "--dry-run=server", "-f", "-", input=rendered, check=False)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len(objects), result.stdout
    assert all("(server dry run)" in line for line in lines), result.stdout
    assert "PodSecurity" not in result.stderr, result.stderr


@pytest.mark.parametrize("case", DRY_RUN_CASES)
def test_deployment_pods_pass_admission_in_a_restricted_namespace(
    kube: Kubectl, helm: Helm, namespace: str, case: str
) -> None:
    objects = documents(helm.template(case, namespace))
    (account,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    # ServiceAccount admission rejects a pod whose account does not exist; it lives in the
    # test's namespace and goes with it.
    kube.apply(account)
    # The scheduler's pods and the configuration check's (a Job's, a hook).
    workloads = [o for o in objects if o["kind"] in ("Deployment", "Job")]
    assert sorted(o["kind"] for o in workloads) == ["Deployment", "Job"]
    for workload in workloads:
        template = workload["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"chart-admission-{case}-{workload['kind'].lower()}",
                "namespace": namespace,
                "labels": template["metadata"]["labels"],
            },
            "spec": template["spec"],
        }
        result = kube.run(
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
            input=json.dumps(pod),
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "PodSecurity" not in result.stderr, result.stderr


def deployment_revision(kube: Kubectl, name: str, namespace: str) -> str | None:
    deployment = kube.get("deployment", name, namespace)
    if deployment is None:
        return None
    annotations = deployment["metadata"].get("annotations") or {}
    revision: str | None = annotations.get("deployment.kubernetes.io/revision")
    return revision


def test_install_rolls_on_a_config_change_and_uninstalls(
    kube: Kubectl, helm: Helm, namespace: str
) -> None:
    # No replicas: nothing on a control plane without a kubelet would run them, and the
    # Deployment controller makes a ReplicaSet (a revision) for every pod template all the same.
    # Nor the configuration check, whose Job's pod nothing would run either (it runs on the
    # real node, e2e/test_real_node.py).
    common = [
        "--namespace",
        namespace,
        "--set",
        f"scheduler.name={RELEASE}",
        "--set",
        "scheduler.replicaCount=0",
        "--set",
        "configCheck.enabled=false",
        "--wait",
        "--timeout",
        "120s",
    ]
    deployment = f"{RELEASE}-kopf-scheduler"
    installed = helm.run("install", RELEASE, CHART, *common)
    try:
        assert f"schedulerName: {RELEASE}" in installed.stdout, installed.stdout
        wait_until(
            lambda: deployment_revision(kube, deployment, namespace) == "1",
            timeout=60,
            what="revision 1 of the Deployment",
        )
        helm.run(
            "upgrade",
            RELEASE,
            CHART,
            *common,
            "--set",
            "pluginConfig[0].name=NodeResourcesFit",
            "--set",
            "pluginConfig[0].args.scoringStrategy.type=MostAllocated",
        )
        wait_until(
            lambda: deployment_revision(kube, deployment, namespace) == "2",
            timeout=60,
            what="revision 2 of the Deployment after the config change",
        )
        config = kube.get("configmap", f"{deployment}-config", namespace)
        assert config is not None
        assert "MostAllocated" in config["data"]["config.yaml"]
    finally:
        helm.run("uninstall", RELEASE, "--namespace", namespace, "--wait", "--timeout", "120s")
    assert kube.get("deployment", deployment, namespace) is None
    assert kube.get("clusterrole", deployment) is None
