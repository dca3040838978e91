"""Every run's waves start at the same point within a wall-clock second, whatever the moment
the runner reaches them: deletions and start times are kept to the second, so that point
decides races the comparison is not about."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from differential.runner import WAVE_PHASE, Lab, seconds_to_phase
from differential.scenario import Wave

from differential import runner
from tests.clock import FakeClock


@pytest.mark.parametrize("wall", [1000.0, 1000.2, 1000.21, 1000.5, 1000.99, 1234567.05])
def test_the_wait_reaches_the_phase_within_a_second(wall: float) -> None:
    wait = seconds_to_phase(wall)
    assert 0.0 <= wait < 1.0
    assert (wall + wait) % 1.0 == pytest.approx(WAVE_PHASE, abs=1e-6)


def _runner_time(monkeypatch: pytest.MonkeyPatch, start: float) -> FakeClock:
    """The runner's ``time`` module replaced by a clock that starts at ``start``."""
    clock = FakeClock(start)
    monkeypatch.setattr(runner, "time", clock.as_time_module())
    return clock


class WaveRecorder:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.created: list[tuple[str, float]] = []

    def _create_wave(self, wave: Wave) -> None:
        self.created.append((wave.pods[0]["metadata"]["name"], self.clock.t))


def _wave(name: str, after: float) -> Wave:
    return Wave(after_seconds=after, pods=[{"metadata": {"name": name}}])


@pytest.mark.parametrize("start", [700.0, 700.35, 700.9])
def test_waves_keep_their_offsets_from_the_same_point_in_the_second(
    monkeypatch: pytest.MonkeyPatch, start: float
) -> None:
    clock = _runner_time(monkeypatch, start)
    lab: Any = WaveRecorder(clock)
    Lab._create_waves(lab, [_wave("first", 0.0), _wave("second", 1.5)])
    (first, first_at), (second, second_at) = lab.created
    assert (first, second) == ("first", "second")
    assert first_at % 1.0 == pytest.approx(WAVE_PHASE, abs=1e-6)
    assert second_at - first_at == pytest.approx(1.5)


@pytest.mark.parametrize("not_before", [700.1, 700.25, 700.9])
def test_waves_after_a_backlog_wait_for_its_head_start(
    monkeypatch: pytest.MonkeyPatch, not_before: float
) -> None:
    clock = _runner_time(monkeypatch, 700.0)
    lab: Any = WaveRecorder(clock)
    Lab._create_waves(lab, [_wave("first", 0.0)], not_before=not_before)
    ((_, first_at),) = lab.created
    assert first_at >= not_before
    assert first_at - not_before < 1.0
    assert first_at % 1.0 == pytest.approx(WAVE_PHASE, abs=1e-6)


class SlowStarter:
    """A scheduler that decides on the backlog ``latency`` seconds after it is started."""

    name = "slow"

    def __init__(self, clock: FakeClock, watch: BacklogWatch, latency: float) -> None:
        self.clock = clock
        self.watch = watch
        self.latency = latency

    def start(self) -> None:
        self.clock.advance(self.latency)
        self.watch.decide("b01", self.clock.t)


class BacklogWatch:
    def __init__(self) -> None:
        self.seen: list[SimpleNamespace] = []

    def decide(self, name: str, at: float) -> None:
        pod = {"metadata": {"name": name}, "status": {"conditions": [UNSCHEDULABLE]}}
        self.seen.append(SimpleNamespace(received=at, name=name, pod=pod))

    def events(self) -> list[SimpleNamespace]:
        return self.seen


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


@pytest.mark.parametrize("latency", [0.27, 1.8, 2.45])
def test_a_backlog_run_starts_its_scheduler_so_that_the_first_decision_meets_the_phase(
    monkeypatch: pytest.MonkeyPatch, latency: float
) -> None:
    clock = _runner_time(monkeypatch, 700.63)
    lab: Any = SimpleNamespace(_start_latency={})
    backlog = _wave("b01", 0.0)

    decisions = []
    for _ in range(2):
        watch = BacklogWatch()
        side = SlowStarter(clock, watch, latency)
        decisions.append(Lab._start_on_phase(lab, side, watch, backlog))
        clock.advance(13.37)  # the rest of the run

    assert lab._start_latency == {"slow": pytest.approx(latency)}
    assert decisions[0] % 1.0 != pytest.approx(WAVE_PHASE, abs=1e-3)
    assert decisions[1] % 1.0 == pytest.approx(WAVE_PHASE, abs=1e-6)


def test_a_backlog_nothing_decides_on_leaves_the_waves_timed_from_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _runner_time(monkeypatch, 700.0)
    lab: Any = SimpleNamespace(_start_latency={})
    watch = BacklogWatch()
    gated = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    watch.seen.append(
        SimpleNamespace(received=700.0, name="b01", pod={"status": {"conditions": [gated]}})
    )
    side = SimpleNamespace(name="slow", start=lambda: None)

    assert Lab._start_on_phase(lab, side, watch, _wave("b01", 0.0)) >= 700.0
    assert lab._start_latency == {}
