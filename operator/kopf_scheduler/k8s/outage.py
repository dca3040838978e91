"""Whether the API server answers at all, told once per outage instead of once per request.

When the API server goes away, every watch, the Lease renewal, every binding in flight and each
of kopf's watches fails and retries on its own schedule: two minutes of outage made about 160
error lines, one per retried request, and hid what an operator wants to know (when it went, why,
when it came back). Every request that gets no reply at all (connection refused or reset, no
answer in time) reports here instead of logging, and so does every reply; the first failure logs
one ``api_unreachable`` warning with its reason, the first reply after it one ``api_reachable``
line with how long it lasted and how many requests failed meanwhile. A reply with an error
status (403, 429, 5xx) is not an outage: the server answered, and the caller logs what it said.

Before the caches are first filled, start-up reports each failed attempt itself (with the wait
before the next one, ``service/startup.py``), so the report stays quiet until :meth:`arm`.
"""

from __future__ import annotations

import structlog

from kopf_scheduler.k8s.real_clocks import MonotonicClock
from kopf_scheduler.ports import Clock

logger = structlog.get_logger("kopf_scheduler.k8s.outage")


class OutageReport:
    """Counts requests that got no reply and logs the start and the end of each outage."""

    def __init__(self, clock: Clock | None = None, server: str = "") -> None:
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self.server = server
        self.armed = False
        self.down_since: float | None = None
        """When the current outage began (``None`` while the server answers)."""
        self.failed_requests = 0
        """Requests without a reply since the current outage began."""

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def arm(self) -> None:
        """Start logging outages (until now, whoever made the requests reported the failures)."""
        self.armed = True

    def no_reply(self, reason: str) -> None:
        """A request got no reply; the first of an outage logs ``api_unreachable``."""
        self.failed_requests += 1
        if self.down_since is not None:
            return
        self.down_since = self._clock.now()
        if self.armed:
            logger.warning(
                "api_unreachable",
                server=self.server,
                reason=reason,
                detail="retrying every request with back-off; logged again once it answers",
            )

    def replied(self) -> None:
        """A request got a reply; the first after an outage logs ``api_reachable``."""
        if self.down_since is None:
            return
        if self.armed:
            logger.info(
                "api_reachable",
                server=self.server,
                down_seconds=round(self._clock.now() - self.down_since, 1),
                failed_requests=self.failed_requests,
            )
        self.down_since = None
        self.failed_requests = 0
