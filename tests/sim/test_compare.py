"""``simulate --compare-config``: the same scenario under two configurations, what differs, and
an exit code a CI job can gate a configuration change on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kopf_scheduler.cli import main
from tests.cli.support import (
    AuditedApi,
    assert_one_line_error,
    environment,
    kopf_scheduler,
    write_kubeconfig,
)
from tests.sim.support import SCHEDULER, node, pod, write_yaml

Raw = dict[str, Any]


def fit_config(path: Path, **node_resources_fit: Any) -> Path:
    """A one-profile configuration file with these NodeResourcesFit args (none: defaults)."""
    profile: Raw = {"schedulerName": SCHEDULER}
    if node_resources_fit:
        profile["pluginConfig"] = [{"name": "NodeResourcesFit", "args": node_resources_fit}]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [profile],
            }
        )
    )
    return path


def two_nodes_one_busy(tmp_path: Path) -> Path:
    """Two equal nodes, n1 half busy, and a new pod: spreading sends it to n2, packing to n1."""
    return write_yaml(
        tmp_path / "cluster.yaml",
        [
            node("n1", cpu="4", memory="8Gi"),
            node("n2", cpu="4", memory="8Gi"),
            pod("busy", cpu="2", memory="2Gi", node_name="n1"),
            pod("new", cpu="1", memory="1Gi"),
        ],
    )


def test_a_scoring_change_that_moves_a_pod_is_reported_with_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spread = fit_config(tmp_path / "spread.yaml")
    pack = fit_config(tmp_path / "pack.yaml", scoringStrategy={"type": "MostAllocated"})
    code = main(
        [
            "simulate",
            str(two_nodes_one_busy(tmp_path)),
            "--compare-config",
            str(spread),
            str(pack),
            "-o",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert report["changed"] is True
    # LeastAllocated spreads to the empty node, MostAllocated packs onto the busy one.
    assert report["moved"] == [
        {
            "pod": "default/new",
            "a": {"status": "Bound", "node": "n2"},
            "b": {"status": "Bound", "node": "n1"},
        }
    ]
    [difference] = report["scoreDifferences"]
    assert (difference["nodeA"], difference["nodeB"]) == ("n2", "n1")
    n2 = difference["nodes"]["n2"]["NodeResourcesFit"]
    n1 = difference["nodes"]["n1"]["NodeResourcesFit"]
    assert n2["a"] > n1["a"]  # why A chose n2
    assert n1["b"] > n2["b"]  # why B chose n1


def test_the_same_decisions_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spread = fit_config(tmp_path / "spread.yaml")
    again = fit_config(tmp_path / "again.yaml", scoringStrategy={"type": "LeastAllocated"})
    code = main(
        ["simulate", str(two_nodes_one_busy(tmp_path)), "--compare-config", str(spread), str(again)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "DECISIONS THAT DIFFER  (none)" in out
    assert out.endswith("unchanged\n")


def test_an_eviction_under_one_configuration_only_is_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write_yaml(
        tmp_path / "preempt.yaml",
        [
            node("n1", cpu="2"),
            pod("low", cpu="2", node_name="n1", priority=0),
            pod("high", cpu="2", priority=100),
        ],
    )
    with_preemption = fit_config(tmp_path / "on.yaml")
    without = tmp_path / "off.yaml"
    without.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {
                        "schedulerName": SCHEDULER,
                        "plugins": {"postFilter": {"disabled": [{"name": "*"}]}},
                    }
                ],
            }
        )
    )
    code = main(
        [
            "simulate",
            str(scenario),
            "--compare-config",
            str(with_preemption),
            str(without),
            "-o",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert report["evictedOnlyUnder"] == {"a": ["default/low"], "b": []}


def test_compare_config_refuses_a_single_config_too(tmp_path: Path) -> None:
    config = fit_config(tmp_path / "a.yaml")
    outcome = kopf_scheduler(
        "simulate",
        str(two_nodes_one_busy(tmp_path)),
        "--config",
        str(config),
        "--compare-config",
        str(config),
        str(config),
        env=environment(tmp_path),
    )
    assert_one_line_error(
        outcome, 2, "--compare-config names both configurations; leave out --config"
    )


def test_the_live_cluster_with_added_pods_is_compared_after_listing_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = AuditedApi(
        {
            "/api/v1/namespaces": [{"metadata": {"name": "default"}}],
            "/api/v1/nodes": [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="4", memory="8Gi")],
            "/api/v1/pods": [pod("busy", cpu="2", memory="2Gi", node_name="n1")],
        }
    )

    async def make_api(kubeconfig: str | None, context: str | None = None) -> AuditedApi:
        return api

    monkeypatch.setattr("kopf_scheduler.k8s.client.make_api", make_api)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1")
    added = write_yaml(tmp_path / "new.yaml", [pod("new", cpu="1", memory="1Gi")])
    spread = fit_config(tmp_path / "spread.yaml")
    pack = fit_config(tmp_path / "pack.yaml", scoringStrategy={"type": "MostAllocated"})
    code = main(
        [
            "simulate",
            "--from-cluster",
            "--kubeconfig",
            str(kubeconfig),
            "--add",
            str(added),
            "--compare-config",
            str(spread),
            str(pack),
            "-o",
            "json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert [entry["pod"] for entry in report["moved"]] == ["default/new"]
    assert all(request.startswith("LIST ") for request in api.requests[:-1])
