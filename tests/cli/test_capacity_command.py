"""``kopf-scheduler capacity`` as a user runs it: cluster-capacity's JSON field names, one-line
errors for bad input, and a live cluster that is only ever listed, never written to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kopf_scheduler.cli import main
from kopf_scheduler.kubectl.plugin import main as kubectl_plugin
from tests.cli.support import (
    AuditedApi,
    assert_one_line_error,
    environment,
    kopf_scheduler,
    write_kubeconfig,
)
from tests.sim.support import node, pod, write_yaml

Raw = dict[str, Any]


def _files(tmp_path: Path) -> tuple[Path, Path]:
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        [node("a", cpu="2"), node("b", cpu="3"), pod("busy", cpu="1", node_name="b")],
    )
    template = write_yaml(tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None)])
    return cluster, template


def test_json_uses_cluster_capacitys_field_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, template = _files(tmp_path)
    assert main(["capacity", str(cluster), "--podspec", str(template), "-o", "json"]) == 0
    review = json.loads(capsys.readouterr().out)
    status = review["status"]
    assert status["replicas"] == 4
    assert status["failReason"] == {
        "failType": "Unschedulable",
        "failMessage": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    assert status["pods"] == [
        {
            "podName": "web",
            "replicasOnNodes": [
                {"nodeName": "a", "replicas": 2},
                {"nodeName": "b", "replicas": 2},
            ],
            "failSummary": [{"reason": "Insufficient cpu", "count": 2}],
        }
    ]
    assert review["spec"]["templates"][0]["metadata"]["name"] == "web"
    requirements = review["spec"]["podRequirements"][0]
    assert requirements["podName"] == "web"
    assert requirements["resources"]["primaryResources"]["cpu"] == "1"


def test_the_table_says_how_many_fit_and_why_the_next_did_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, template = _files(tmp_path)
    assert main(["capacity", str(cluster), "--podspec", str(template)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        "The cluster can schedule 4 instance(s) of web.",
        "",
        "Termination reason: Unschedulable: 0/2 nodes are available: 2 Insufficient cpu.",
        "Fit failure summary on nodes (web): Insufficient cpu (2)",
    ]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--podspec", "{template}"],
            "give scenario files or --from-cluster (the live cluster, only read)",
        ),
        (["{cluster}"], "needs at least one --podspec FILE (or --drain)"),
        (
            ["{cluster}", "--drain", "--podspec", "{template}"],
            "--drain takes no --podspec: it places the pods the nodes already run",
        ),
        (
            ["{cluster}", "--podspec", "{cluster}"],
            "{cluster}: Node a: not a pod template (apiVersion/kind v1/Node); --podspec takes a "
            "Pod, or a Deployment, ReplicaSet, StatefulSet or Job (and at most one PodGroup)",
        ),
        (
            ["{cluster}", "--podspec", "{template}", "--max-limit", "-1"],
            "--max-limit must be 0 (no limit) or more",
        ),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, arguments: list[str], message: str) -> None:
    cluster, template = _files(tmp_path)
    names = {"cluster": str(cluster), "template": str(template)}
    outcome = kopf_scheduler(
        "capacity", *(a.format(**names) for a in arguments), env=environment(tmp_path)
    )
    assert_one_line_error(outcome, 2, message.format(**names))


def test_the_live_cluster_is_only_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = AuditedApi(
        {
            "/api/v1/namespaces": [
                {"metadata": {"name": "default"}},
            ],
            "/api/v1/nodes": [node("a", cpu="3")],
            "/api/v1/pods": [pod("busy", cpu="1", node_name="a")],
        }
    )

    async def make_api(kubeconfig: str | None, context: str | None = None) -> AuditedApi:
        return api

    monkeypatch.setattr("kopf_scheduler.k8s.client.make_api", make_api)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    template = write_yaml(tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None)])
    code = main(
        [
            "capacity",
            "--from-cluster",
            "--kubeconfig",
            str(kubeconfig),
            "--podspec",
            str(template),
            "-o",
            "json",
        ]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["status"]["replicas"] == 2
    assert api.requests[-1] == "close"
    assert all(request.startswith("LIST ") for request in api.requests[:-1])
    assert "LIST /api/v1/pods" in api.requests


def test_a_template_in_a_missing_namespace_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = AuditedApi(
        {"/api/v1/namespaces": [{"metadata": {"name": "default"}}], "/api/v1/nodes": [node("a")]}
    )

    async def make_api(kubeconfig: str | None, context: str | None = None) -> AuditedApi:
        return api

    monkeypatch.setattr("kopf_scheduler.k8s.client.make_api", make_api)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    template = write_yaml(
        tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None, namespace="shop")]
    )
    code = main(
        ["capacity", "--from-cluster", "--kubeconfig", str(kubeconfig), "--podspec", str(template)]
    )
    assert code == 2
    assert capsys.readouterr().err == (f"error: {template}: web: namespace 'shop' does not exist\n")


def test_a_collection_the_credentials_cannot_list_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = AuditedApi({"/api/v1/nodes": [node("a")]}, forbidden=frozenset({"/api/v1/pods"}))

    async def make_api(kubeconfig: str | None, context: str | None = None) -> AuditedApi:
        return api

    monkeypatch.setattr("kopf_scheduler.k8s.client.make_api", make_api)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    template = write_yaml(tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None)])
    code = main(
        ["capacity", "--from-cluster", "--kubeconfig", str(kubeconfig), "--podspec", str(template)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1
    assert err.startswith("error: cannot list /api/v1/pods: ")


def test_the_context_named_on_the_command_line_is_the_one_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    template = write_yaml(tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None)])
    code = main(
        [
            "capacity",
            "--from-cluster",
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "staging",
            "--podspec",
            str(template),
        ]
    )
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert "context 'staging' is not among the contexts (defined: ctx)" in lines[0]


def test_kubectl_capacity_reads_the_live_cluster_of_the_chosen_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = AuditedApi(
        {
            "/api/v1/namespaces": [{"metadata": {"name": "default"}}],
            "/api/v1/nodes": [node("a", cpu="3")],
            "/api/v1/pods": [pod("busy", cpu="1", node_name="a")],
        }
    )
    contexts: list[str | None] = []

    async def make_api(kubeconfig: str | None, context: str | None = None) -> AuditedApi:
        contexts.append(context)
        return api

    monkeypatch.setattr("kopf_scheduler.k8s.client.make_api", make_api)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    template = write_yaml(tmp_path / "web.yaml", [pod("web", cpu="1", scheduler=None)])
    flags = ["--kubeconfig", str(kubeconfig), "--context", "ctx", "-o", "json"]
    code = kubectl_plugin(["capacity", "--podspec", str(template), *flags])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["status"]["replicas"] == 2
    assert contexts == ["ctx"]
    assert all(request.startswith("LIST ") for request in api.requests[:-1])
