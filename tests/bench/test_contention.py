"""The contention benchmark: the busy neighbours really load a CPU and are gone afterwards, the
rounds alternate, and the degradations are read the right way round."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import main
from bench.contention import LOADED, QUIET
from bench.kube import for_each
from bench.neighbours import BusyNeighbours
from bench.scenarios import scenario
from e2e.localcluster import procfs

from bench import contention


def test_busy_neighbours_spin_until_stopped() -> None:
    neighbours = BusyNeighbours(2)
    neighbours.start()
    try:
        pids = neighbours.pids
        assert len(pids) == 2
        time.sleep(1.5)
        assert all(procfs.stat_fields(pid) is not None for pid in pids)
    finally:
        cpu_seconds = neighbours.stop()
    assert cpu_seconds > 0.2  # two spinning processes, 1.5 s, however busy the machine is
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)
    assert neighbours.pids == []


def test_rounds_alternate_the_schedulers_and_the_modes() -> None:
    assert contention.round_plan(3, ("kopf", "upstream")) == [
        ((QUIET, "kopf", "upstream"), (LOADED, "kopf", "upstream")),
        ((LOADED, "upstream", "kopf"), (QUIET, "upstream", "kopf")),
        ((QUIET, "kopf", "upstream"), (LOADED, "kopf", "upstream")),
    ]


def _run(throughput: float, p50: float, p99: float, attempt_p99: float) -> dict[str, Any]:
    return {
        "throughput": {"average": throughput},
        "create_to_bound_ms": {"p50": p50, "p99": p99},
        "scheduler_metrics": {"attempt_duration_scheduled_s": {"p99": attempt_p99}},
    }


def _round(quiet: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    return {QUIET: {"runs": quiet}, LOADED: {"runs": loaded}}


ROUNDS = [
    _round(
        {"kopf": _run(100, 1000, 2000, 0.01), "upstream": _run(110, 900, 1800, 0.002)},
        {"kopf": _run(50, 3000, 8000, 0.04), "upstream": _run(100, 1000, 2000, 0.003)},
    ),
    _round(
        {"kopf": _run(100, 1000, 2000, 0.01), "upstream": _run(110, 900, 1800, 0.002)},
        {"kopf": _run(80, 2000, 4000, 0.02), "upstream": _run(110, 990, 1980, 0.002)},
    ),
]


def test_degradation_is_loaded_over_quiet_and_above_one_when_worse() -> None:
    ours = contention.degradations(ROUNDS, "kopf")
    assert ours["throughput, pods/s"] == [2.0, 1.25]
    assert ours["create→bound p50, ms"] == [3.0, 2.0]
    assert ours["create→bound p99, ms"] == [4.0, 2.0]
    assert ours["attempt p99, s"] == [4.0, 2.0]
    assert "watch delivery p99, s" not in ours  # a figure neither run has is left out
    theirs = contention.degradations(ROUNDS, "upstream")
    assert theirs["create→bound p99, ms"] == [1.11, 1.1]
    assert contention.loaded_ratios(ROUNDS, "kopf", "upstream") == [4.0, 2.02]


def test_the_report_gives_every_round_and_the_spread() -> None:
    text = contention.render(
        {"scenario": "S2@0.2", "qps": "5000/5000", "processes": 1, "rounds": ROUNDS}
    )
    assert (
        "S2@0.2 at qps 5000/5000, 1 busy process(es), pods created as fast as they are taken, "
        "2 round(s)" in text
    )
    assert "| 2 | kopf | create→bound p99, ms | 2000 | 4000 |" in text
    assert "| create→bound p99, ms | 3.00 (2.00–4.00) | 1.10 (1.10–1.11) |" in text
    assert "Loaded create→bound p99, kopf over upstream: 3.01 (2.02–4.00)." in text


def test_the_report_names_the_pace_and_what_each_run_created() -> None:
    paced = [
        _round(
            {"kopf": {**_run(100, 50, 90, 0.01), "creation": {"per_second": 99.8}}},
            {"kopf": {**_run(100, 60, 200, 0.02), "creation": {"per_second": 97.1}}},
        )
    ]
    text = contention.render(
        {
            "scenario": "S2",
            "qps": "5000/5000",
            "processes": 1,
            "creation_rate": 100.0,
            "rounds": paced,
        }
    )
    assert "S2 at qps 5000/5000, 1 busy process(es), pods created at 100/s, 1 round(s)" in text
    assert "| 1 | kopf | created, pods/s | 99.8 | 97.1 |" in text
    assert contention.degradations(paced, "kopf")["created, pods/s"] == [1.03]


async def test_paced_items_start_no_sooner_than_their_slot() -> None:
    started: list[float] = []

    async def note(_: int) -> None:
        started.append(time.perf_counter())

    first = time.perf_counter()
    result = await for_each(list(range(6)), 8, note, rate=20.0)
    offsets = sorted(moment - first for moment in started)
    assert all(offset >= index / 20.0 - 0.005 for index, offset in enumerate(offsets))
    assert offsets[-1] >= 0.25
    assert result["paced_at"] == 20.0
    unpaced = await for_each(list(range(6)), 8, note)
    assert unpaced["seconds"] < 0.2 and unpaced["paced_at"] is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--processes", "0"], "--processes and --rounds must be at least 1"),
        (["--rate", "0"], "--rate 0: expected a positive number of pods a second"),
    ],
)
def test_nonsense_arguments_are_refused(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["contention", "S2", *arguments])
    assert message in capsys.readouterr().err


def test_a_pace_is_refused_for_a_backlog(capsys: pytest.CaptureFixture[str]) -> None:
    assert scenario("D1").drain
    with pytest.raises(SystemExit):
        main(["contention", "D1", "--rate", "50"])
    assert "are all created before the scheduler starts" in capsys.readouterr().err


@pytest.mark.parametrize("warm_up", [True, False])
def test_the_warm_up_is_round_ones_first_run_kept_apart(
    warm_up: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Cluster:
        def down(self) -> None:
            pass

    calls: list[tuple[tuple[str, ...], int]] = []

    async def pair(*args: Any, neighbours: int = 0, **_: Any) -> dict[str, Any]:
        order = args[5]
        calls.append((order, neighbours))
        return {"neighbours": neighbours, "runs": {name: _run(100, 10, 20, 0.01) for name in order}}

    monkeypatch.setattr(contention, "start_bench_cluster", Cluster)
    monkeypatch.setattr(contention, "run_pair", pair)
    result = contention.run_rounds("S2@0.01", 1, 2, 5000, 5000, warm_up=warm_up)
    counted = [(("kopf", "upstream"), 0), (("kopf", "upstream"), 1)]
    counted += [(("upstream", "kopf"), 1), (("upstream", "kopf"), 0)]
    assert calls == ([(("kopf",), 0)] if warm_up else []) + counted
    assert len(result["rounds"]) == 2
    text = contention.render(result)
    assert (
        "Warm-up, not counted: kopf quiet, create→bound p50 10 ms, p99 20 ms." in text
    ) is warm_up
    assert contention.degradations(result["rounds"], "kopf")["create→bound p50, ms"] == [1.0, 1.0]
