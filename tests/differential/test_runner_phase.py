"""Every run's waves start at the same point within a wall-clock second, whatever the moment
the runner reaches them: deletions and start times are kept to the second, so that point
decides races the comparison is not about."""

from __future__ import annotations

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
    clock = FakeClock(start)
    monkeypatch.setattr(runner, "time", clock.as_time_module())
    lab: Any = WaveRecorder(clock)
    Lab._create_waves(lab, [_wave("first", 0.0), _wave("second", 1.5)])
    (first, first_at), (second, second_at) = lab.created
    assert (first, second) == ("first", "second")
    assert first_at % 1.0 == pytest.approx(WAVE_PHASE, abs=1e-6)
    assert second_at - first_at == pytest.approx(1.5)
