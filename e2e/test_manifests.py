"""The shipped manifests are accepted by a real API server.

``kubectl apply -k --dry-run=server`` runs every object through validation and admission
without persisting it. The Deployment's pod template is also submitted as a Pod in dry-run
mode, because admission of the pods themselves (Priority, ServiceAccount, PodSecurity of the
``restricted`` namespace) only happens when the ReplicaSet creates them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from e2e.support.kubectl import Kubectl
from e2e.support.schedulers import Schedulers

OVERLAYS = ["manifests", "manifests/overlays/kube-system"]


@pytest.mark.parametrize("path", OVERLAYS, ids=["base", "kube-system"])
def test_kustomization_passes_server_side_dry_run(
    kube: Kubectl, repo_root: Path, scheduler_pool: Schedulers, path: str
) -> None:
    # scheduler_pool applied the RBAC objects, so the kopf-scheduler namespace exists (a server
    # dry run cannot create it for the namespaced objects that follow).
    directory = repo_root / path
    if not (directory / "kustomization.yaml").exists():
        pytest.skip(f"{path} has no kustomization.yaml")
    rendered = list(yaml.safe_load_all(kube.run("kustomize", str(directory)).stdout))
    kinds = {doc["kind"] for doc in rendered if doc}
    assert {
        "ClusterRole",
        "Deployment",
        "ConfigMap",
        "ServiceAccount",
        "PodDisruptionBudget",
    } <= kinds, kinds

    result = kube.run("apply", "-k", str(directory), "--dry-run=server", check=False)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == len([doc for doc in rendered if doc]), result.stdout
    assert all("(server dry run)" in line for line in lines), result.stdout
    assert "PodSecurity" not in result.stderr, result.stderr


def test_deployment_pods_pass_admission(
    kube: Kubectl, repo_root: Path, scheduler_pool: Schedulers
) -> None:
    rendered = yaml.safe_load_all(kube.run("kustomize", str(repo_root / "manifests")).stdout)
    [deployment] = [doc for doc in rendered if doc and doc["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kopf-scheduler-admission-check",
            "namespace": deployment["metadata"]["namespace"],
            "labels": template["metadata"].get("labels", {}),
        },
        "spec": template["spec"],
    }
    result = kube.run(
        "create", "--dry-run=server", "-o", "json", "-f", "-", input=_json(pod), check=False
    )
    assert result.returncode == 0, result.stderr
    assert "PodSecurity" not in result.stderr, result.stderr


def _json(obj: object) -> str:
    import json

    return json.dumps(obj)
