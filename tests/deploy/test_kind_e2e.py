"""The kind end-to-end harness (e2e/kind) and the GitHub workflows, checked without Docker."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e.localcluster.versions import HELM_VERSION

from tests.deploy.manifest_files import KIND, ROOT, load_documents

RUN_SH = KIND / "run.sh"
KIND_VALUES = KIND / "values.yaml"
CHART = ROOT / "charts" / "kopf-scheduler"
WORKFLOWS = ROOT / ".github" / "workflows"


def workflow(name: str) -> dict[str, Any]:
    (doc,) = load_documents(WORKFLOWS / name)
    assert isinstance(doc, dict)
    return doc


def run_lines(doc: dict[str, Any]) -> list[str]:
    return [step["run"] for job in doc["jobs"].values() for step in job["steps"] if "run" in step]


def uses(doc: dict[str, Any]) -> list[str]:
    return [step["uses"] for job in doc["jobs"].values() for step in job["steps"] if "uses" in step]


def test_kind_cluster_has_one_control_plane_and_three_workers() -> None:
    (config,) = load_documents(KIND / "kind-config.yaml")
    assert config["kind"] == "Cluster"
    assert config["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [node["role"] for node in config["nodes"]] == ["control-plane"] + ["worker"] * 3


def test_run_sh_is_a_strict_executable_bash_script() -> None:
    text = RUN_SH.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -euo pipefail" in text
    assert os.access(RUN_SH, os.X_OK), "run.sh is not executable"
    result = subprocess.run(
        ["bash", "-n", str(RUN_SH)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_kind_values_use_the_loaded_image_and_never_pull() -> None:
    (values,) = load_documents(KIND_VALUES)
    assert values == {
        "scheduler": {
            "image": {"repository": "kopf-scheduler", "tag": "e2e", "pullPolicy": "Never"}
        }
    }


def test_run_sh_builds_loads_and_installs_the_image_the_chart_values_name() -> None:
    text = RUN_SH.read_text(encoding="utf-8")
    (image,) = re.findall(r'^IMAGE="([^"]+)"', text, flags=re.MULTILINE)
    (values,) = load_documents(KIND_VALUES)
    assert (
        image
        == f"{values['scheduler']['image']['repository']}:{values['scheduler']['image']['tag']}"
    )
    assert CHART.is_dir()
    for step in (
        'create cluster "${create_args[@]}"',
        '--config "$ROOT/e2e/kind/kind-config.yaml"',
        '"$DOCKER" build',
        '-t "$IMAGE"',
        'load docker-image "$IMAGE" --name "$CLUSTER_NAME"',
        'upgrade --install "$RELEASE" "$ROOT/charts/kopf-scheduler"',
        '--namespace "$NAMESPACE" --values "$ROOT/e2e/kind/values.yaml" --wait',
        "pod-security.kubernetes.io/enforce=restricted",
        "rollout status deployment/kopf-scheduler",
        'E2E_CLUSTER=kind "$PYTHON" -m pytest e2e',
        'export KUBECONFIG="$ARTIFACTS_DIR/kubeconfig"',
        'if [[ "${KEEP_CLUSTER:-0}" == "1" ]]',
        'delete cluster --name "$CLUSTER_NAME"',
        "trap on_exit EXIT",
    ):
        assert step in text, step
    # The release and namespace are what the suite's DeploymentSchedulers drives.
    assert 'RELEASE="kopf-scheduler"' in text
    assert 'NAMESPACE="kopf-scheduler"' in text
    order = (
        '"$DOCKER" build',
        '"$KIND" load docker-image',
        '"$KUBECTL" label --overwrite namespace',
        '"$HELM" upgrade --install',
        'E2E_CLUSTER=kind "$PYTHON"',
    )
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions), "build, load, label, install, test: in that order"


def test_shellcheck_passes_on_run_sh() -> None:
    binary = shutil.which("shellcheck")
    if binary is None:
        pytest.skip("shellcheck is not installed")
    result = subprocess.run(
        [binary, str(RUN_SH)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_workflow_runs_make_test_and_make_lint() -> None:
    doc = workflow("ci.yaml")
    lines = run_lines(doc)
    assert "make test" in lines
    assert "make lint" in lines
    assert doc["permissions"] == {"contents": "read"}


def test_kind_workflow_runs_the_script_with_a_pinned_kind() -> None:
    doc = workflow("kind-e2e.yaml")
    assert any("e2e/kind/run.sh" in line for line in run_lines(doc))
    kind_steps = [
        step
        for job in doc["jobs"].values()
        for step in job["steps"]
        if step.get("uses", "").startswith("helm/kind-action@")
    ]
    (step,) = kind_steps
    assert step["with"]["install_only"] is True
    assert re.fullmatch(r"v\d+\.\d+\.\d+", doc["env"]["KIND_VERSION"])
    assert step["with"]["version"] == "${{ env.KIND_VERSION }}"
    assert doc["permissions"] == {"contents": "read"}


def test_kind_workflow_installs_the_helm_the_chart_tests_use() -> None:
    doc = workflow("kind-e2e.yaml")
    assert doc["env"]["HELM_VERSION"] == f"v{HELM_VERSION}"
    (step,) = [
        step
        for job in doc["jobs"].values()
        for step in job["steps"]
        if step.get("uses", "").startswith("azure/setup-helm@")
    ]
    assert step["with"]["version"] == "${{ env.HELM_VERSION }}"


@pytest.mark.parametrize("name", ["ci.yaml", "kind-e2e.yaml"])
def test_workflow_actions_are_pinned_to_a_version(name: str) -> None:
    for action in uses(workflow(name)):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+(\.\d+)*|[\w.-]+/[\w.-]+@[0-9a-f]{40}", action)


def test_workflow_files_are_all_known() -> None:
    assert {p.name for p in Path(WORKFLOWS).iterdir()} == {"ci.yaml", "kind-e2e.yaml"}
