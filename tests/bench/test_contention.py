"""The contention benchmark: the busy neighbours really load a CPU and are gone afterwards, the
rounds alternate, and the degradations are read the right way round."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import main
from bench.contention import LOADED, QUIET
from bench.neighbours import BusyNeighbours
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
    assert "S2@0.2 at qps 5000/5000, 1 busy process(es), 2 round(s)" in text
    assert "| 2 | kopf | create→bound p99, ms | 2000 | 4000 |" in text
    assert "| create→bound p99, ms | 3.00 (2.00–4.00) | 1.10 (1.10–1.11) |" in text
    assert "Loaded create→bound p99, kopf over upstream: 3.01 (2.02–4.00)." in text


def test_nonsense_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["contention", "S2", "--processes", "0"])
    assert "--processes and --rounds must be at least 1" in capsys.readouterr().err
