"""The benchmark clusters: scheduler_perf's runs without the controllers that taint nodes, and a
cluster of one kind is never reused for the other."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from bench.cluster import BenchCluster, SchedulerPerfCluster
from e2e.localcluster.cluster import LocalCluster

CONTROLLERS = (
    "--controllers=disruption,nodelifecycle,taint-eviction-controller,persistentvolume-binder"
)
RATE = ("--kube-api-qps=100", "--kube-api-burst=200")


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    calls: list[tuple[str, list[str]]] = []

    def record(self: LocalCluster, name: str, args: Sequence[str]) -> None:
        calls.append((name, list(args)))

    monkeypatch.setattr(LocalCluster, "_launch", record)
    return calls


def test_scheduler_perf_runs_no_node_lifecycle_and_upstreams_client_rate(
    tmp_path: Path, launched: list[tuple[str, list[str]]]
) -> None:
    cluster = SchedulerPerfCluster(tmp_path)
    cluster._launch("kube-controller-manager", ["kcm", CONTROLLERS, *RATE, "--v=1"])
    assert launched == [
        (
            "kube-controller-manager",
            [
                "kcm",
                "--controllers=disruption,persistentvolume-binder",
                "--v=1",
                "--kube-api-qps=5000",
                "--kube-api-burst=5000",
            ],
        )
    ]


def test_other_benchmarks_keep_node_lifecycle_and_the_e2e_client_rate(
    tmp_path: Path, launched: list[tuple[str, list[str]]]
) -> None:
    BenchCluster(tmp_path)._launch("kube-controller-manager", ["kcm", CONTROLLERS, *RATE])
    assert launched == [("kube-controller-manager", ["kcm", CONTROLLERS, *RATE])]


@pytest.mark.parametrize("started", [BenchCluster, SchedulerPerfCluster])
def test_a_cluster_of_the_other_kind_is_not_reused(
    tmp_path: Path,
    launched: list[tuple[str, list[str]]],
    monkeypatch: pytest.MonkeyPatch,
    started: type[BenchCluster],
) -> None:
    started(tmp_path)._launch("kube-controller-manager", ["kcm", CONTROLLERS])
    monkeypatch.setattr(BenchCluster, "is_healthy", lambda self: True)
    monkeypatch.setattr(BenchCluster, "bench_tokens", lambda self: {"user": "token"})
    (tmp_path / "logs").mkdir(exist_ok=True)
    monkeypatch.setattr(BenchCluster, "audit_log", property(lambda self: tmp_path / "logs" / "a"))
    other = SchedulerPerfCluster if started is BenchCluster else BenchCluster
    assert started(tmp_path).ready_for_bench()
    assert not other(tmp_path).ready_for_bench()
