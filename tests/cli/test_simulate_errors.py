"""``kopf-scheduler simulate`` on scenario files the API server would refuse: one line, exit 2.

Negative resource quantities used to be simulated as if a cluster could hold them, and a deeply
nested file ended in a RecursionError traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.support import assert_one_line_error, environment, kopf_scheduler
from tests.sim.support import node, pod


def pod_with_init_request(cpu: str) -> dict[str, Any]:
    raw = pod("p")
    raw["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": cpu}}},
    ]
    return raw


def pod_with_overhead(memory: str) -> dict[str, Any]:
    raw = pod("p")
    raw["spec"]["overhead"] = {"memory": memory}
    return raw


def write_documents(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents))
    return path


@pytest.mark.parametrize(
    ("documents", "where"),
    [
        pytest.param(
            [node("n"), pod("p", cpu="-1")],
            'Pod default/p: spec.containers[0].resources.requests[cpu]: Invalid value: "-1"',
            id="container-request",
        ),
        pytest.param(
            [node("n"), pod_with_init_request("-500m")],
            'Pod default/p: spec.initContainers[0].resources.requests[cpu]: Invalid value: "-500m"',
            id="init-container-request",
        ),
        pytest.param(
            [node("n"), pod_with_overhead("-1Gi")],
            'Pod default/p: spec.overhead[memory]: Invalid value: "-1Gi"',
            id="pod-overhead",
        ),
        pytest.param(
            [node("n", cpu="-4")],
            'Node n: status.allocatable[cpu]: Invalid value: "-4"',
            id="node-allocatable",
        ),
    ],
)
def test_negative_quantities_are_refused_like_the_api_server_does(
    tmp_path: Path, documents: list[dict[str, Any]], where: str
) -> None:
    path = write_documents(tmp_path / "scenario.yaml", *documents)
    outcome = kopf_scheduler("simulate", str(path), env=environment(tmp_path))
    assert_one_line_error(outcome, 2, f"{path}: {where}: must be greater than or equal to 0")


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        pytest.param(
            "deep.yaml",
            "kind: " + "[" * 50_000 + "]" * 50_000 + "\n",
            "line 1: nested more than 100 levels deep",
            id="deep-yaml",
        ),
        pytest.param(
            "deep.json",
            '{"kind": ' + "[" * 50_000 + "]" * 50_000 + "}",
            "nested more than 100 levels deep",
            id="deep-json",
        ),
        pytest.param(
            "dup.yaml",
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nmetadata: {name: b}\n",
            'line 4: duplicate key "metadata" (first at line 3)',
            id="duplicate-key",
        ),
        pytest.param(
            "dup.json",
            json.dumps(node("n"))[:-1] + ', "kind": "Pod"}',
            'duplicate key "kind" in a JSON object',
            id="duplicate-json-key",
        ),
    ],
)
def test_files_the_api_server_would_not_read_are_one_line(
    tmp_path: Path, name: str, text: str, reason: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    outcome = kopf_scheduler("simulate", str(path), env=environment(tmp_path))
    assert_one_line_error(outcome, 2, f"{path}: file: {reason}")


def test_from_cluster_with_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    added = write_documents(tmp_path / "pod.yaml", pod("p"))
    absent = tmp_path / "absent"
    outcome = kopf_scheduler(
        "simulate",
        "--from-cluster",
        "--add",
        str(added),
        "--kubeconfig",
        str(absent),
        env=environment(tmp_path),
    )
    assert_one_line_error(outcome, 2, f"kubeconfig {absent}: the file does not exist")
