"""Leader election on a ``coordination.k8s.io/v1`` Lease, following client-go's leaderelection.

Several replicas may run; only the one holding the Lease schedules. The rules are client-go's:

* **Acquire**: read the Lease; create it if it does not exist; take it over when its holder is
  empty or its lease has expired. Expiry is judged by *our* clock only: a record counts as
  expired ``leaseDurationSeconds`` after we last saw it *change*, never by comparing the holder's
  ``renewTime`` with our time, so clock skew between replicas does not matter. Candidates retry
  every ``retry_period`` plus up to 120% jitter.
* **Renew**: the leader rewrites ``renewTime`` every ``retry_period`` with a PUT that carries the
  ``resourceVersion`` it last read, so two writers cannot both win (the loser gets 409). If no
  renewal succeeds within ``renew_deadline``, it stops leading.
* **Release**: on a graceful stop the leader writes an empty holder and a one-second duration,
  so a standby takes over at its next try instead of waiting out the lease.

Two deliberate differences: a renewal round ends at once when the Lease shows another holder
(client-go keeps polling until the deadline, which cannot succeed then), and on a graceful stop
``on_stopped_leading`` runs *before* the release, so this replica has stopped scheduling by the
time another one can take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.errors import TransportError
from kopf_scheduler.k8s.real_clocks import WallClock, micro_time
from kopf_scheduler.k8s.retry import NO_RETRY
from kopf_scheduler.ports import ApiError, Clock, ConflictError, NotFoundError

logger = structlog.get_logger("kopf_scheduler.k8s.lease")

JITTER_FACTOR = 1.2
API_VERSION = "coordination.k8s.io/v1"

Callback = Callable[[], Awaitable[None] | None]


def leases_path(namespace: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/leases"


@dataclass(frozen=True)
class LeaderElectionRecord:
    """The Lease spec fields leader election uses, kept in wire form so equality is exact."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    leader_transitions: int

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }


class LeaderElector:
    """Campaigns for the Lease ``namespace/name`` as ``identity`` and reports leadership.

    ``on_started_leading`` may be a plain function or a coroutine function. A coroutine runs as
    a task of its own, like client-go's goroutine, so it may run for the whole term (the
    scheduling loop, say) without holding up renewals; it is cancelled when leadership ends.
    ``on_stopped_leading`` (plain or coroutine, awaited) runs after that, and only if leadership
    was gained. Pass an :class:`Api` with its own limiter (:meth:`Api.with_limiter`) so a backlog
    of writes cannot delay renewals.
    """

    def __init__(
        self,
        api: Api,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Clock | None = None,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        release_on_cancel: bool = True,
        rng: random.Random | None = None,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if retry_period <= 0 or renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period*1.2")
        self._api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock: Clock = clock if clock is not None else WallClock()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._release_on_cancel = release_on_cancel
        self._rng = rng if rng is not None else random.Random()
        self._lease: dict[str, Any] | None = None
        self._observed: LeaderElectionRecord | None = None
        self._observed_time = 0.0
        self._leading = False
        self._term: asyncio.Future[None] | None = None

    # What others read --------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True between gaining leadership and losing or giving it up."""
        return self._leading

    def holds_lease(self) -> bool:
        """Whether the last record seen names this candidate as the holder."""
        return self._observed is not None and self._observed.holder_identity == self.identity

    @property
    def path(self) -> str:
        return f"{leases_path(self.namespace)}/{self.name}"

    def renewal_problem(self, tolerance: float) -> str | None:
        """Why this candidate should be reported unhealthy, or ``None``.

        A candidate that holds the Lease but has not renewed it for ``lease_duration +
        tolerance`` seconds is stuck (a renewal loop that neither succeeds nor gives up); a
        liveness probe should restart it, as client-go's leader-election health adaptor makes
        kubelet do. Followers are always healthy here.
        """
        if not self.holds_lease():
            return None
        if self._clock.now() - self._observed_time > self.lease_duration + tolerance:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # One round ---------------------------------------------------------------------------------

    def _lease_valid(self, now: float) -> bool:
        if self._observed is None:
            return False
        return self._observed_time + self._observed.lease_duration_seconds > now

    def _observe(self, record: LeaderElectionRecord, now: float) -> None:
        self._observed = record
        self._observed_time = now

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the Lease; True if this candidate holds it afterwards."""
        now = self._clock.now()
        stamp = micro_time(now)
        record = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, int(self.lease_duration)),
            acquire_time=stamp,
            renew_time=stamp,
            leader_transitions=0,
        )

        # Fast path: the leader renews on top of what it wrote last, without reading first.
        if self.holds_lease() and self._lease_valid(now) and self._observed is not None:
            renewed = replace(
                record,
                acquire_time=self._observed.acquire_time,
                leader_transitions=self._observed.leader_transitions,
            )
            try:
                await self._update(renewed)
            except ApiError as error:
                log = logger.debug if isinstance(error, TransportError) else logger.info
                log(
                    "lease_optimistic_renewal_failed",
                    lease=self.path,
                    reason=str(error),
                    detail="reading it again",
                )
            else:
                self._observe(renewed, now)
                return True

        try:
            lease = await self._api.request("GET", self.path, retry=NO_RETRY)
        except NotFoundError:
            failure = await self._written(self._create, record, now)
            if failure is not None:
                logger.info("lease_create_failed", lease=self.path, reason=str(failure))
            return failure is None
        except ApiError as error:
            # Without a reply the API client's outage report has said so once per outage.
            log = logger.debug if isinstance(error, TransportError) else logger.warning
            log("lease_read_failed", lease=self.path, reason=str(error))
            return False

        self._lease = lease
        current = LeaderElectionRecord.from_lease(lease)
        if current != self._observed:
            self._observe(current, now)
        if current.holder_identity and self._lease_valid(now) and not self.holds_lease():
            logger.debug("lease_held_by_another", lease=self.path, holder=current.holder_identity)
            return False

        if self.holds_lease():
            record = replace(
                record,
                acquire_time=current.acquire_time,
                leader_transitions=current.leader_transitions,
            )
        else:
            record = replace(record, leader_transitions=current.leader_transitions + 1)
        failure = await self._written(self._update, record, now)
        if failure is not None:
            logger.info("lease_update_failed", lease=self.path, reason=str(failure))
        return failure is None

    async def _written(
        self,
        write: Callable[[LeaderElectionRecord], Awaitable[None]],
        record: LeaderElectionRecord,
        now: float,
    ) -> ApiError | None:
        """Create or update the Lease with ``record`` and observe it; the error if it failed."""
        try:
            await write(record)
        except ApiError as error:
            return error
        self._observe(record, now)
        return None

    async def release(self) -> bool:
        """Give the Lease up if this candidate holds it, so another can take it at once."""
        if not self.holds_lease() or self._observed is None:
            return True
        stamp = micro_time(self._clock.now())
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=stamp,
            renew_time=stamp,
            leader_transitions=self._observed.leader_transitions,
        )
        try:
            try:
                await self._update(record)
            except ConflictError:
                # Our last renewal may have landed without us seeing the reply (it was cancelled
                # by the very shutdown that releases now): read again and release that version.
                self._lease = await self._api.request("GET", self.path, retry=NO_RETRY)
                current = LeaderElectionRecord.from_lease(self._lease)
                if current.holder_identity != self.identity:
                    self._observe(current, self._clock.now())
                    return True
                record = replace(record, leader_transitions=current.leader_transitions)
                await self._update(record)
        except ApiError as error:
            logger.warning("lease_release_failed", lease=self.path, reason=str(error))
            return False
        self._observe(record, self._clock.now())
        return True

    async def _create(self, record: LeaderElectionRecord) -> None:
        body = {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        self._lease = await self._api.request(
            "POST", leases_path(self.namespace), body, retry=NO_RETRY
        )

    async def _update(self, record: LeaderElectionRecord) -> None:
        if self._lease is None:
            raise ApiError(0, "NotRead", "the lease has not been read yet")
        body = {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            **{k: v for k, v in self._lease.items() if k not in ("apiVersion", "kind", "spec")},
            "spec": record.to_spec(),
        }
        self._lease = await self._api.request("PUT", self.path, body, retry=NO_RETRY)

    # The campaign ------------------------------------------------------------------------------

    async def run(self, stop_event: asyncio.Event) -> None:
        """Campaign until ``stop_event`` is set or leadership is lost, then return.

        After a loss the caller decides what to do (kube-scheduler exits; running ``run`` again
        campaigns anew).
        """
        cancelled = False
        try:
            if not await self._acquire(stop_event):
                return
            self._leading = True
            logger.info("became_leader", identity=self.identity, lease=self.path)
            self._start_term()
            await self._renew(stop_event)
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            if self._leading:
                self._leading = False
                logger.info("stopped_leading", identity=self.identity, lease=self.path)
                await self._end_term()
                await self._call(self._on_stopped, "on_stopped_leading")
                if self._release_on_cancel and (cancelled or stop_event.is_set()):
                    await self.release()

    async def _acquire(self, stop_event: asyncio.Event) -> bool:
        while not stop_event.is_set():
            if await self.try_acquire_or_renew():
                return True
            jitter = self._rng.random() * JITTER_FACTOR * self.retry_period
            await self._wait(self.retry_period + jitter, stop_event)
        return False

    async def _renew(self, stop_event: asyncio.Event) -> None:
        """Keep renewing every ``retry_period``; return when stopped or when a round fails."""
        while not stop_event.is_set():
            if not await self._renew_round(stop_event):
                return
            await self._wait(self.retry_period, stop_event)

    async def _renew_round(self, stop_event: asyncio.Event) -> bool:
        deadline = self._clock.now() + self.renew_deadline
        while not stop_event.is_set():
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    if await self.try_acquire_or_renew():
                        return True
            except TimeoutError:
                logger.info("lease_renewal_timed_out", lease=self.path)
            if self._observed is not None and not self.holds_lease():
                logger.warning(
                    "lease_taken_over", lease=self.path, holder=self._observed.holder_identity
                )
                return False
            if self._clock.now() + self.retry_period >= deadline:
                break
            await self._wait(self.retry_period, stop_event)
        if stop_event.is_set():
            return True
        logger.warning(
            "lease_renewal_failed", lease=self.path, renew_deadline_seconds=self.renew_deadline
        )
        return False

    async def _wait(self, seconds: float, stop_event: asyncio.Event) -> None:
        if stop_event.is_set():
            return
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        stopper = asyncio.ensure_future(stop_event.wait())
        try:
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, stopper):
                task.cancel()
            for task in (sleeper, stopper):
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _start_term(self) -> None:
        if self._on_started is None:
            return
        try:
            result = self._on_started()
        except Exception:
            logger.exception("leader_election_callback_failed", callback="on_started_leading")
            return
        if inspect.isawaitable(result):
            self._term = asyncio.ensure_future(result)

    async def _end_term(self) -> None:
        term, self._term = self._term, None
        if term is None:
            return
        term.cancel()
        try:
            await term
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("leader_election_callback_failed", callback="on_started_leading")

    @staticmethod
    async def _call(callback: Callback | None, what: str) -> None:
        if callback is None:
            return
        try:
            result = callback()
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("leader_election_callback_failed", callback=what)
