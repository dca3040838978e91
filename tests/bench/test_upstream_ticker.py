"""The ticker that paces deletions and churn keeps upstream's grid and drops missed ticks."""

from __future__ import annotations

from bench.upstream.ticker import Ticker


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def _request_starts(period: float, request_seconds: float, requests: int) -> list[float]:
    time = FakeTime()
    ticker = Ticker(period, clock=time.clock, sleep=time.sleep)
    starts = []
    for _ in range(requests):
        await ticker.tick()
        starts.append(round(time.now, 6))
        time.now += request_seconds
    return starts


async def test_quick_requests_go_out_on_the_grid() -> None:
    assert await _request_starts(1.0, 0.2, 4) == [1.0, 2.0, 3.0, 4.0]


async def test_a_slow_request_is_followed_at_once_by_the_tick_kept_for_it() -> None:
    # 2.5 s a request: each one's kept tick is waiting when it ends, so the requests follow
    # each other; sleeping the period before each would start them at 1, 4.5, 8 and 11.5.
    assert await _request_starts(1.0, 2.5, 4) == [1.0, 3.5, 6.0, 8.5]


async def test_after_a_slow_request_the_grid_resumes_without_catching_up() -> None:
    time = FakeTime()
    ticker = Ticker(1.0, clock=time.clock, sleep=time.sleep)
    await ticker.tick()
    time.now += 3.5  # ticks at 2, 3 and 4 fall while busy: one is kept, two are dropped
    await ticker.tick()
    assert time.now == 4.5
    await ticker.tick()
    assert time.now == 5.0
    await ticker.tick()
    assert time.now == 6.0
