"""The runner between and beside scheduler_perf runs: the sweep waits for namespaces as long as
they keep emptying, the client keeps connections for what runs beside the creators, and a run
past its time limit fails with what it measured."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
from bench.kube import Client
from bench.upstream import runner
from bench.upstream.ops import Execution
from bench.upstream.podstate import PodState
from bench.upstream.suite import Op, TestCase

from tests.bench.recording import RecordingClient

NAMESPACE = "namespace-1"
TEST_CASE = TestCase(
    "Case", Path("performance-config.yaml"), labels=(), feature_gates={}, ops=(), raw_workloads=()
)


class EmptyingCluster:
    """One workload namespace whose pods go ``per_step`` at a time (none once ``stuck_at`` are
    left); the namespace goes with its last pod."""

    def __init__(self, pods: int, per_step: int, stuck_at: int = 0) -> None:
        self.pods = pods
        self.per_step = per_step
        self.stuck_at = stuck_at

    async def request(self, method: str, path: str, *_: Any, **__: Any) -> Any:
        if method == "GET" and path == "/api/v1/pods":
            self.pods = max(self.pods - self.per_step, self.stuck_at)
            return {
                "items": [{}] if self.pods else [],
                "metadata": {"remainingItemCount": max(self.pods - 1, 0)},
            }
        if method == "GET":
            return {"items": [], "metadata": {}}
        return None

    async def list_all(self, path: str, **_: Any) -> tuple[list[dict[str, Any]], str]:
        if path == "/api/v1/namespaces":
            names = ["default", *([NAMESPACE] if self.pods else [])]
            return [{"metadata": {"name": n}} for n in names], "1"
        return [], "1"


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Each one-second wait of the sweep takes a minute of the runner's clock."""
    now = [0.0]
    real_sleep = asyncio.sleep

    async def sleep(_: float) -> None:
        now[0] += 60.0
        await real_sleep(0)

    async def nothing(*_: Any, **__: Any) -> None:
        return None

    monkeypatch.setattr(runner.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(runner.asyncio, "sleep", sleep)
    monkeypatch.setattr(runner, "delete_namespace", nothing)
    monkeypatch.setattr(runner, "delete_volumes", nothing)
    return now


def test_a_namespace_that_keeps_emptying_is_waited_for_however_long_it_takes(
    fake_time: list[float],
) -> None:
    cluster = EmptyingCluster(pods=30_000, per_step=1_000)
    seconds = asyncio.run(runner.sweep(cast(Client, cluster)))
    assert cluster.pods == 0
    assert seconds > 1_500  # far beyond SWEEP_STALL: what counts is that pods kept going


def test_a_namespace_that_stops_emptying_fails_the_sweep_with_what_is_left(
    fake_time: list[float],
) -> None:
    cluster = EmptyingCluster(pods=30_000, per_step=1_000, stuck_at=12_000)
    with pytest.raises(RuntimeError, match=r"12000 pods and events left .* \['namespace-1'\]"):
        asyncio.run(runner.sweep(cast(Client, cluster)))
    assert fake_time[0] <= (30_000 - 12_000) / 1_000 * 60 + runner.SWEEP_STALL + 120


def test_the_runner_pool_has_connections_beyond_the_creators_and_the_pod_watch() -> None:
    """A churn's creation gets a connection while every creator holds one and the watch its own."""
    assert runner.RUNNER_CONNECTIONS > runner.CREATOR_CONCURRENCY + 1


async def _metrics() -> str:
    return ""


def _execution() -> Execution:
    return Execution(
        cast(Client, RecordingClient()), PodState(), TEST_CASE, "kopf-scheduler", _metrics
    )


async def test_a_run_past_its_limit_fails_with_the_ops_done_so_far() -> None:
    execution = _execution()
    ops = [
        Op(0, "startCollectingMetrics", {"name": "measured"}),
        Op(1, "sleep", {"duration": "1h"}),
        Op(2, "stopCollectingMetrics", {}),
    ]
    records: list[dict[str, Any]] = []
    with pytest.raises(runner.RunLimitError, match="still running after 0 s"):
        await runner.carry_out(execution, ops, 0.2, records)
    assert [record["index"] for record in records] == [0]


async def test_a_run_within_its_limit_records_every_op() -> None:
    execution = _execution()
    ops = [Op(0, "startCollectingMetrics", {}), Op(1, "stopCollectingMetrics", {})]
    records: list[dict[str, Any]] = []
    await runner.carry_out(execution, ops, 60.0, records)
    assert [record["opcode"] for record in records] == [op.opcode for op in ops]
    assert "cut_short" not in execution.collected[0]


@pytest.mark.parametrize("failed", [True, False])
async def test_the_window_left_open_by_a_failed_run_is_kept_marked_cut_short(failed: bool) -> None:
    execution = _execution()
    await execution.run(Op(0, "startCollectingMetrics", {"name": "measured"}))
    await execution.stop_background(cut_short=failed)
    [window] = execution.collected
    assert window["name"] == "measured"
    assert window.get("cut_short", False) is failed


def test_a_failed_run_has_no_average_to_compare() -> None:
    window = {"SchedulingThroughput": {"samples": 9, "Average": 4.2}}
    assert runner.collected_average({"ok": True, "collected": [window]}) == 4.2
    assert runner.collected_average({"ok": False, "collected": [window]}) is None
