"""List-then-watch of one collection, delivering raw objects to a callback (client-go's Reflector).

Pods are the one collection whose events arrive by the thousand per second while a scheduler is
busy: every pod is created, bound and started, so each brings at least three events. kopf
processes every event of every object through its per-object worker, cause detection, handler
invocation with a dozen keyword arguments and patch application. Profiled end to end on the local
control plane (py-spy, 2,200 pods on 1,000 nodes), that took a third of the process's CPU, about
0.7 ms per pod event: more than the scheduling cycles and the bindings together, and every
binding waiting to resume in the same event loop waited behind it. The scheduler needs none of
that machinery for pods (it never patches through kopf, has no change handlers, keeps its own
state), so pods are watched here with one streaming request and one JSON decode per event; the
less busy collections stay with kopf. With this, end-to-end throughput on the same run rose from
0.6x to 1.2x kube-scheduler's.

Nodes came next: on 5,000 kwok nodes, kopf's own handling of the node events (its initial
listing, which repeats the scheduler's, and the periodic status refreshes) cost about 2 ms per
event, a tenth of the process's CPU over a 10,000-pod run (py-spy), for a handler that only
updates the cache. They are reflected here too.

Semantics follow client-go's reflector:

- :meth:`Reflector.list` LISTs the collection, delivers every object as ``ADDED``, delivers
  ``DELETED`` for objects it knew that are gone, and remembers the list's resourceVersion. The
  first listing asks for ``resourceVersion=0`` in one request, which the API server answers from
  its watch cache, as client-go's first listing does; a listing after ``410 Gone`` is a
  consistent read, in pages of 500. (Paged consistent reads were the first listing here before:
  on 5,000 kwok nodes with 10,000 pending pods, 22 pages of pods, each a round trip to a
  saturated API server, made start-up take three times kube-scheduler's.)
- :meth:`Reflector.run` WATCHes from the last resourceVersion with bookmarks, delivers each event,
  and opens the next watch where the previous one ended; after ``410 Gone`` (the version is too
  old) it lists again, so deletions that happened in between are still delivered; after other
  failures it waits with a capped exponential backoff and resumes from the same version.

Each watch event is delivered in a turn of the event loop of its own, even when one read of the
stream brought several. kube-scheduler's informers and its scheduling loop run side by side: a
pod that an event makes schedulable (a victim's deletion frees its preemptor) is popped and its
cycle takes its snapshot at once, while the informer goes on with the next event. When kwok
removed two victims of one preemption in the same millisecond, kube-scheduler ran its preemptor's
cycle between the two removals in every run (a second ``FailedScheduling``, "not eligible due to
a terminating pod on the nominated node"), while a reader that applied both deletions before
yielding let the preemptor find the node empty.

Objects are kept and delivered without ``metadata.managedFields``, as kube-scheduler's pod
informer drops them: the server-side-apply bookkeeping of every writer (the creator, the kubelet's
status updates) is often the largest part of a pod, the scheduler never reads it, and each pod's
decoded copy lives as long as the pod does.

For every object a watch adds (not a listing: those may be days old), the lag from its
``creationTimestamp`` to the moment its event is handled here is observed in
``kopf_scheduler_watch_delivery_lag_seconds``: a pod's latency from creation to binding starts
with this delivery, and without it the time a pod spends before the scheduler knows of it is
invisible from inside the scheduler.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.client import Api, ListResult
from kopf_scheduler.k8s.errors import TransportError
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.timeutil import parse_timestamp
from kopf_scheduler.ports import ApiError

logger = structlog.get_logger("kopf_scheduler.k8s.reflector")

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"

MIN_WATCH_SECONDS = 300
"""Watches ask the server to end them after 5–10 minutes (random), as client-go's do, so that a
silently broken connection does not go unnoticed forever."""
TIMEOUT_SLACK = 30.0
INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0

Deliver = Callable[[str, dict[str, Any]], None]


class ResourceExpiredError(ApiError):
    """The watch's resourceVersion is older than the server keeps: list again."""

    def __init__(self, message: str) -> None:
        super().__init__(410, "Expired", message)


def object_key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = str(metadata.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def _resource_version(raw: Mapping[str, Any]) -> str:
    return str((raw.get("metadata") or {}).get("resourceVersion") or "")


class Reflector:
    """Keeps ``deliver`` informed of every object of ``path`` (e.g. ``/api/v1/pods``).

    ``deliver`` is called synchronously for each object, in the order the server sent them; an
    exception from it is logged and does not stop the watch. ``query`` adds selectors to both the
    LIST and the WATCH. ``wall_clock`` gives the seconds since the epoch that creation timestamps
    are compared with for the delivery lag, reported to ``api.metrics``.
    """

    def __init__(
        self,
        api: Api,
        path: str,
        deliver: Deliver,
        *,
        query: Mapping[str, str] | None = None,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._api = api
        self.path = path
        self._resource = path.rstrip("/").rsplit("/", 1)[-1]
        """The ``resource`` label of the delivery lag: the collection, e.g. ``pods``."""
        self._wall_clock = wall_clock
        self._deliver = deliver
        self._query = dict(query or {})
        self._rng = rng if rng is not None else random.Random()
        self._known: dict[str, dict[str, Any]] = {}
        self.resource_version = ""
        self.synced = False

    def __len__(self) -> int:
        return len(self._known)

    async def list(self) -> None:
        """LIST everything, deliver it, and deliver the deletion of what disappeared meanwhile."""
        self.deliver_listing(await self.fetch_listing())

    async def fetch_listing(self) -> ListResult:
        """The collection as :meth:`list` gets it, not yet delivered (see
        :meth:`deliver_listing`): so that several collections can be fetched at once and still
        be delivered in order."""
        if self.synced:
            return await self._api.list(self.path, self._query)
        query = {**self._query, "resourceVersion": "0"}
        return await self._api.list(self.path, query, page_size=0)

    def deliver_listing(self, result: ListResult) -> None:
        """Deliver a listing from :meth:`fetch_listing` and watch on from its resourceVersion."""
        fresh: dict[str, dict[str, Any]] = {}
        for raw in result.items:
            _drop_managed_fields(raw)
            fresh[object_key(raw)] = raw
            self._safely_deliver(ADDED, raw)
        for key, gone in self._known.items():
            if key not in fresh:
                self._safely_deliver(DELETED, gone)
        self._known = fresh
        self.resource_version = result.resource_version
        self.synced = True

    async def run(self) -> None:
        """Watch until cancelled; list first if :meth:`list` has not been called."""
        backoff = INITIAL_BACKOFF
        while True:
            try:
                if not self.resource_version:
                    await self.list()
                await self.watch_once()
                backoff = INITIAL_BACKOFF
            except ResourceExpiredError as error:
                logger.info("watch_expired", path=self.path, reason=str(error))
                self.resource_version = ""
            except ApiError as error:
                # Without a reply the API client's outage report has said it once for everyone;
                # a reply that refused the watch is this watch's own news.
                log = logger.debug if isinstance(error, TransportError) else logger.warning
                log("watch_failed", path=self.path, reason=str(error), retry_in=round(backoff, 2))
                await self._api.clock.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)

    async def watch_once(self) -> None:
        """One WATCH request from the last resourceVersion, until the server ends it."""
        seconds = MIN_WATCH_SECONDS + int(self._rng.random() * MIN_WATCH_SECONDS)
        query = {
            **self._query,
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(seconds),
        }
        async for event in self._api.watch(self.path, query, timeout=seconds + TIMEOUT_SLACK):
            self._on_event(event)
            # One event per turn of the event loop, even when a read brought several: a
            # scheduling cycle this event made possible starts before the next is applied.
            await asyncio.sleep(0)

    def _on_event(self, event: Mapping[str, Any]) -> None:
        event_type = event.get("type")
        raw = event.get("object")
        if not isinstance(raw, dict):
            return
        if event_type == ERROR:
            code = raw.get("code")
            message = str(raw.get("message") or raw.get("reason") or "watch error")
            if code == 410:
                raise ResourceExpiredError(message)
            raise ApiError(int(code) if isinstance(code, int) else 500, "WatchError", message)
        version = _resource_version(raw)
        if event_type == BOOKMARK:
            if version:
                self.resource_version = version
            return
        if event_type not in (ADDED, MODIFIED, DELETED):
            return
        _drop_managed_fields(raw)
        key = object_key(raw)
        if event_type == DELETED:
            self._known.pop(key, None)
        else:
            self._known[key] = raw
        if version:
            self.resource_version = version
        if event_type == ADDED:
            self._observe_delivery_lag(raw)
        self._safely_deliver(event_type, raw)

    def _observe_delivery_lag(self, raw: Mapping[str, Any]) -> None:
        try:
            created = parse_timestamp(
                (raw.get("metadata") or {}).get("creationTimestamp"), "metadata.creationTimestamp"
            )
        except InvalidObjectError:
            return  # the handler reports a malformed object; the lag is simply unknown
        if created is None:
            return
        lag = max(0.0, self._wall_clock() - created)
        self._api.metrics.observe(m.WATCH_DELIVERY_LAG, lag, {"resource": self._resource})

    def _safely_deliver(self, event_type: str, raw: dict[str, Any]) -> None:
        try:
            self._deliver(event_type, raw)
        except Exception:
            # A bug in one event must not stop the watch of every other object.
            logger.exception("event_handling_failed", path=self.path, event_type=event_type)


def _drop_managed_fields(raw: dict[str, Any]) -> None:
    metadata = raw.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
