"""Leader election on a Lease: create, renew, expiry by observed time, lost races, release."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.lease import LeaderElector
from kopf_scheduler.k8s.real_clocks import micro_time
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.k8s.support import START, LeaseServer, drive

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/my-scheduler"


def at(offset: float) -> str:
    return micro_time(START + offset)


def spec_of(holder: str, renewed: str, transitions: int = 3) -> dict[str, Any]:
    return {
        "holderIdentity": holder,
        "leaseDurationSeconds": 15,
        "acquireTime": "2020-01-01T00:00:00.000000Z",
        "renewTime": renewed,
        "leaseTransitions": transitions,
    }


@pytest.fixture
def vclock() -> VirtualClock:
    return VirtualClock(start=START)


@pytest.fixture
def leases(kmock: kmock.RawHandler) -> LeaseServer:
    server = LeaseServer()
    kmock[re.compile(r"/apis/coordination\.k8s\.io/v1/namespaces/kube-system/leases(/[^/]+)?")] << (
        server
    )
    return server


def elector(api: Api, clock: VirtualClock, identity: str = "me", **kwargs: Any) -> LeaderElector:
    return LeaderElector(
        api, "kube-system", "my-scheduler", identity, clock=clock, rng=random.Random(1), **kwargs
    )


def methods(kmock: kmock.RawHandler) -> list[str]:
    return [r.method.value for r in kmock]


async def test_creates_a_missing_lease(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)

    assert await candidate.try_acquire_or_renew()

    assert methods(kmock) == ["GET", "POST"]
    [created] = kmock["post"]
    assert created.url.path == "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert created.data == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "my-scheduler", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "acquireTime": at(0),
            "renewTime": at(0),
            "leaseTransitions": 0,
        },
    }
    assert candidate.holds_lease()


async def test_the_leader_renews_with_its_resource_version(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    await candidate.try_acquire_or_renew()
    created_version = leases.leases["my-scheduler"]["metadata"]["resourceVersion"]

    vclock.advance_to(START + 2)
    assert await candidate.try_acquire_or_renew()

    # The fast path writes on top of the last write without reading first.
    assert methods(kmock) == ["GET", "POST", "PUT"]
    [renewal] = kmock["put"]
    assert renewal.url.path == LEASE
    assert renewal.data["metadata"]["resourceVersion"] == created_version
    assert renewal.data["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": at(0),
        "renewTime": at(2),
        "leaseTransitions": 0,
    }


async def test_a_lease_held_by_another_is_left_alone(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", spec_of("other", at(0)))

    assert not await elector(api, vclock).try_acquire_or_renew()
    assert methods(kmock) == ["GET"]


async def test_expiry_is_judged_from_when_the_record_was_last_seen_to_change(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    # The holder's renewTime is years old by our clock, but clocks may be skewed: only a record
    # that stays unchanged for leaseDurationSeconds of our own time counts as expired.
    leases.put_lease("my-scheduler", spec_of("other", "2020-01-01T00:00:00.000000Z"))
    candidate = elector(api, vclock)

    assert not await candidate.try_acquire_or_renew()
    vclock.advance_to(START + 14)
    assert not await candidate.try_acquire_or_renew()
    vclock.advance_to(START + 15.5)
    assert await candidate.try_acquire_or_renew()

    takeover = list(kmock["put"])[-1]
    assert takeover.data["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": at(15.5),
        "renewTime": at(15.5),
        "leaseTransitions": 4,
    }


async def test_a_renewal_by_the_holder_restarts_the_expiry(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", spec_of("other", at(0)))
    candidate = elector(api, vclock)
    assert not await candidate.try_acquire_or_renew()

    vclock.advance_to(START + 10)
    leases.put_lease("my-scheduler", spec_of("other", at(10)))
    assert not await candidate.try_acquire_or_renew()
    vclock.advance_to(START + 20)
    assert not await candidate.try_acquire_or_renew()
    vclock.advance_to(START + 25.5)
    assert await candidate.try_acquire_or_renew()


async def test_an_empty_holder_is_taken_at_once(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", {**spec_of("", at(0)), "leaseDurationSeconds": 1})

    assert await elector(api, vclock).try_acquire_or_renew()
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == "me"


async def test_losing_the_race_for_an_expired_lease(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", spec_of("gone", at(0)))
    candidate = elector(api, vclock)
    assert not await candidate.try_acquire_or_renew()
    vclock.advance_to(START + 16)
    # Another candidate takes the lease between our read and our write.
    leases.after_get = lambda: leases.put_lease("my-scheduler", spec_of("rival", at(16), 4))

    assert not await candidate.try_acquire_or_renew()

    assert [r.method.value for r in kmock][-2:] == ["GET", "PUT"]
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == "rival"
    assert not candidate.holds_lease()


async def test_two_candidates_creating_the_lease_only_one_wins(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    first, second = elector(api, vclock, "a"), elector(api, vclock, "b")
    leases.after_get = lambda: None

    results = await asyncio.gather(first.try_acquire_or_renew(), second.try_acquire_or_renew())

    assert sorted(results) == [False, True]
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] in ("a", "b")


async def test_a_leader_overtaken_falls_back_to_reading_and_steps_down(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    await candidate.try_acquire_or_renew()
    leases.put_lease("my-scheduler", spec_of("rival", at(1)))
    vclock.advance_to(START + 2)

    assert not await candidate.try_acquire_or_renew()

    assert methods(kmock) == ["GET", "POST", "PUT", "GET"]
    assert not candidate.holds_lease()


async def test_release_hands_the_lease_over_at_once(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leader, standby = elector(api, vclock, "me"), elector(api, vclock, "standby")
    await leader.try_acquire_or_renew()
    assert not await standby.try_acquire_or_renew()

    vclock.advance_to(START + 3)
    assert await leader.release()

    released = list(kmock["put"])[-1].data["spec"]
    assert released == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": at(3),
        "renewTime": at(3),
        "leaseTransitions": 0,
    }
    assert await standby.try_acquire_or_renew()
    assert leases.leases["my-scheduler"]["spec"]["leaseTransitions"] == 1


async def test_release_without_holding_sends_nothing(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    assert await elector(api, vclock).release()
    assert len(kmock) == 0


async def test_run_leads_until_stopped_then_releases(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    calls: list[str] = []

    async def started() -> None:
        calls.append("started")

    def stopped() -> None:
        calls.append(f"stopped, holder={leases.leases['my-scheduler']['spec']['holderIdentity']}")

    candidate = elector(api, vclock, on_started_leading=started, on_stopped_leading=stopped)
    stop = asyncio.Event()
    task = asyncio.create_task(candidate.run(stop))

    await drive(vclock, lambda: candidate.is_leader)
    await drive(vclock, lambda: vclock.now() >= START + 7)
    renewals = leases.leases["my-scheduler"]["spec"]["renewTime"]
    stop.set()
    await task

    assert renewals > at(0)
    assert calls == ["started", "stopped, holder=me"]
    assert not candidate.is_leader
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == ""


async def test_run_stops_leading_when_renewals_fail_past_the_deadline(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    stopped_at: list[float] = []
    candidate = elector(api, vclock, on_stopped_leading=lambda: stopped_at.append(vclock.now()))
    stop = asyncio.Event()
    task = asyncio.create_task(candidate.run(stop))
    await drive(vclock, lambda: candidate.is_leader)
    failing_since = vclock.now()
    leases.failures = [500] * 1000

    await drive(vclock, task.done)

    assert not candidate.is_leader
    assert len(stopped_at) == 1
    # A round retries every 2 s while the next try still fits in the 10 s deadline, so the leader
    # keeps trying for 8 s (tries at +0, +2, ..., +8) of a round that starts at most one retry
    # period after the failures began.
    assert failing_since + 8 <= stopped_at[0] <= failing_since + 2 + 10
    # Five tries, each an optimistic PUT and then a GET.
    assert len(leases.failures) == 1000 - 10
    # Not released: the stop was not asked for (and the API is failing anyway).
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == "me"


async def test_run_waits_for_an_expired_lease_then_leads(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", spec_of("other", at(0)))
    candidate = elector(api, vclock)
    stop = asyncio.Event()
    task = asyncio.create_task(candidate.run(stop))

    await drive(vclock, lambda: candidate.is_leader)
    became_leader_at = vclock.now()
    stop.set()
    await task

    assert became_leader_at > START + 15
    # Retries come every 2 s plus up to 120% jitter, so the takeover is within one retry.
    assert became_leader_at <= START + 15 + 2 * 2.2


async def test_cancelling_run_releases_the_lease(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    task = asyncio.create_task(candidate.run(asyncio.Event()))
    await drive(vclock, lambda: candidate.is_leader)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"identity": ""}, "identity", id="no-identity"),
        pytest.param({"lease_duration": 10.0}, "lease_duration", id="duration-not-above-deadline"),
        pytest.param({"retry_period": 9.0}, "retry_period", id="deadline-not-above-jittered-retry"),
        pytest.param({"retry_period": 0.0}, "retry_period", id="zero-retry"),
    ],
)
def test_rejects_inconsistent_timings(api: Api, kwargs: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"identity": "me", **kwargs}
    identity = arguments.pop("identity")
    with pytest.raises(ValueError, match=message):
        LeaderElector(api, "kube-system", "my-scheduler", identity, **arguments)


async def test_release_after_an_unseen_renewal_rereads_the_lease(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    await candidate.try_acquire_or_renew()
    # A renewal landed but its reply never reached us: our resourceVersion is stale.
    leases.put_lease("my-scheduler", spec_of("me", at(1), 0))

    assert await candidate.release()

    assert methods(kmock) == ["GET", "POST", "PUT", "GET", "PUT"]
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == ""


async def test_release_after_losing_the_lease_leaves_the_new_holder_alone(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    await candidate.try_acquire_or_renew()
    leases.put_lease("my-scheduler", spec_of("rival", at(1)))

    assert await candidate.release()

    assert methods(kmock) == ["GET", "POST", "PUT", "GET"]
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == "rival"


async def test_a_long_running_term_does_not_hold_up_renewals(
    kmock: kmock.RawHandler, leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    term_state: list[str] = []

    async def schedule_forever() -> None:
        term_state.append("running")
        try:
            await asyncio.Event().wait()
        finally:
            term_state.append("cancelled")

    candidate = elector(api, vclock, on_started_leading=schedule_forever)
    stop = asyncio.Event()
    task = asyncio.create_task(candidate.run(stop))

    await drive(vclock, lambda: len(kmock["put"]) >= 3)
    assert term_state == ["running"]
    stop.set()
    await task

    assert term_state == ["running", "cancelled"]
    assert leases.leases["my-scheduler"]["spec"]["holderIdentity"] == ""


async def test_a_leader_that_stops_renewing_becomes_unhealthy_after_the_tolerance(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    candidate = elector(api, vclock)
    assert await candidate.try_acquire_or_renew()

    vclock.advance_to(START + 15 + 20)  # leaseDuration + tolerance: still within
    assert candidate.renewal_problem(tolerance=20.0) is None
    vclock.advance_to(START + 15 + 20.5)
    assert candidate.renewal_problem(tolerance=20.0) == (
        "failed election to renew leadership on lease my-scheduler"
    )

    assert await candidate.try_acquire_or_renew()  # a renewal makes it healthy again
    assert candidate.renewal_problem(tolerance=20.0) is None


async def test_a_follower_is_healthy_however_old_its_view_of_the_lease(
    leases: LeaseServer, api: Api, vclock: VirtualClock
) -> None:
    leases.put_lease("my-scheduler", spec_of("other", at(0)))
    candidate = elector(api, vclock)
    assert not await candidate.try_acquire_or_renew()

    vclock.advance_to(START + 3600)

    assert candidate.renewal_problem(tolerance=20.0) is None
