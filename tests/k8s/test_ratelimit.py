"""The token bucket: burst first, then qps; reservations in arrival order; config semantics."""

from __future__ import annotations

import asyncio

import pytest

from kopf_scheduler.k8s.ratelimit import TokenBucket, Unlimited, limiter_for
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.clock import FakeClock
from tests.k8s.support import START


async def test_a_full_bucket_serves_the_burst_without_waiting() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(qps=10, burst=3, clock=clock)

    for _ in range(3):
        await bucket.acquire()

    assert clock.sleeps == []


async def test_beyond_the_burst_each_request_waits_one_token_interval() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(qps=10, burst=2, clock=clock)

    for _ in range(5):
        await bucket.acquire()

    # Each sleep moves the stepping clock, so every later request waits exactly 1/qps.
    assert clock.sleeps == pytest.approx([0.1, 0.1, 0.1])


async def test_idle_time_refills_up_to_the_burst_only() -> None:
    clock = FakeClock(START)
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    await bucket.acquire()
    await bucket.acquire()

    clock.advance(60)

    assert bucket.tokens == 2
    await bucket.acquire()
    await bucket.acquire()
    assert clock.sleeps == []
    await bucket.acquire()
    assert clock.sleeps == pytest.approx([0.1])


async def test_concurrent_waiters_reserve_successive_tokens() -> None:
    clock = VirtualClock(start=0.0)
    bucket = TokenBucket(qps=4, burst=1, clock=clock)
    done: list[int] = []

    async def request(index: int) -> None:
        await bucket.acquire()
        done.append(index)

    tasks = [asyncio.create_task(request(i)) for i in range(4)]
    await asyncio.sleep(0)
    assert done == [0]
    assert clock.next_deadline() == pytest.approx(0.25)

    clock.advance_to(0.5)
    await asyncio.sleep(0)
    assert done == [0, 1, 2]
    assert clock.next_deadline() == pytest.approx(0.75)
    clock.advance_to(0.75)
    await asyncio.gather(*tasks)
    assert done == [0, 1, 2, 3]


async def test_a_cancelled_waiter_returns_its_token() -> None:
    clock = VirtualClock(start=0.0)
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    await bucket.acquire()
    waiter = asyncio.create_task(bucket.acquire())
    await asyncio.sleep(0)
    assert bucket.tokens == -1

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

    assert bucket.tokens == 0


@pytest.mark.parametrize(
    ("qps", "burst", "expected"),
    [
        pytest.param(50.0, 100, (50.0, 100), id="scheduler-defaults"),
        pytest.param(5000.0, 5000, (5000.0, 5000), id="scheduler-perf"),
        pytest.param(0.0, 0, (50.0, 100), id="zero-means-default"),
        pytest.param(20.0, 0, (20.0, 100), id="zero-burst-means-default"),
        pytest.param(-1.0, 10, None, id="negative-qps-disables"),
    ],
)
def test_limiter_for(qps: float, burst: int, expected: tuple[float, int] | None) -> None:
    limiter = limiter_for(qps, burst)
    if expected is None:
        assert isinstance(limiter, Unlimited)
    else:
        assert isinstance(limiter, TokenBucket)
        assert (limiter.qps, limiter.burst) == expected


@pytest.mark.parametrize(
    ("qps", "burst"),
    [pytest.param(0, 1, id="zero-qps"), pytest.param(1, 0, id="zero-burst")],
)
def test_token_bucket_rejects_degenerate_settings(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps, burst)
