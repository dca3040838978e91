"""Posting ``events.k8s.io/v1`` Events about pods, off the scheduling path and without floods.

``record()`` only puts the event into a bounded queue: the scheduling loop never waits for the API
server, and when the queue is full the event is dropped (events are best effort; errors are logged,
never raised). A few background senders take events from the queue, so up to ``senders`` requests
are in flight at once, all through the shared rate limit: like client-go's recorder, which sends
every event from a goroutine of its own, the events keep pace with hundreds of bindings per
second instead of overflowing the queue behind one request at a time.

When the API server throttles or is away, memory stays bounded and what is lost is counted: the
queue never holds more than ``queue_size`` events, the series table more than ``max_series``, and
each event that is never written (dropped from a full queue, left queued at shutdown, or refused
or unanswered on its last try) counts in ``kopf_scheduler_events_dropped_total``, with at most one
warning per ``drop_log_interval`` saying how many went since the last. A write that fails for a
reason that may pass (no reply, 429, 5xx, after the client's own retries) is tried again after
about ten seconds, up to twelve tries, as client-go's event sink does; the sender that holds it
is one of the ``senders``, so a long outage fills the queue rather than the heap.

Repeats are folded into a series the way client-go's events recorder does: an event like one
sent within the last ``series_window`` seconds (same reason, action, type and controller about the
same version of the same pod, with the same related pod) does not create a new Event object,
whatever its note says; it bumps ``series.count`` and ``series.lastObservedTime`` on the existing
one with a JSON merge patch, and the note of the first stays. So a pod that fails again with
another message before anything wrote to it keeps the first message, as with kube-scheduler.
Such patches are sent at most once per ``min_patch_interval`` per series, and counts that arrive
in between are written by the periodic flush, so a pod failing to schedule every second costs one
request per half minute, not one per attempt. A series whose Event object expired on the server
(404 on the patch) is created again with its count.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.client import JSON, MERGE_PATCH, Api
from kopf_scheduler.k8s.errors import NO_RESPONSE
from kopf_scheduler.k8s.real_clocks import WallClock, micro_time
from kopf_scheduler.k8s.retry import is_retryable_status
from kopf_scheduler.ports import ApiError, Clock, Event, Metrics, NotFoundError, ObjectRef, PodRef

logger = structlog.get_logger("kopf_scheduler.k8s.events")
"""A stable name, part of every line it logs (log queries select on it), not the module path."""

DEFAULT_QUEUE_SIZE = 1000
DEFAULT_SENDERS = 64
DEFAULT_SERIES_WINDOW = 600.0
DEFAULT_MIN_PATCH_INTERVAL = 30.0
DEFAULT_FLUSH_INTERVAL = 5.0
DEFAULT_MAX_SERIES = 10_000
DEFAULT_SINK_TRIES = 12
"""Tries of one write when the API server throttles, fails or is away (client-go's)."""
DEFAULT_SINK_RETRY_INTERVAL = 10.0
"""Seconds between those tries, plus up to a quarter more at random (client-go's)."""
SINK_RETRY_JITTER = 0.25
DEFAULT_DROP_LOG_INTERVAL = 10.0
"""At most one warning about dropped events per this many seconds."""
DROPPED_QUEUE_FULL = "queue_full"
DROPPED_SHUTDOWN = "shutdown"
DROPPED_SEND_FAILED = "send_failed"
NOTE_LENGTH_LIMIT = 1024
"""Bytes the API server accepts in ``note``."""
NAME_PREFIX_LIMIT = 253 - 1 - 16
"""Room for the pod name in ``<pod>.<16 hex digits>`` within the 253-character name limit."""
FIELD_LENGTH_LIMIT = 128
"""Characters the API server accepts in ``reportingController``/``reportingInstance``."""

SeriesKey = tuple[str, str, str, str, str, str, str, str, str, str, str]


def events_path(namespace: str) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"


def object_reference(pod: PodRef) -> dict[str, str]:
    api_version, kind = (pod.api_version, pod.kind) if isinstance(pod, ObjectRef) else ("v1", "Pod")
    return {
        "apiVersion": api_version,
        "kind": kind,
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
    }


def truncate_note(note: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    """``note`` cut to ``limit`` UTF-8 bytes without splitting a character."""
    encoded = note.encode("utf-8")
    if len(encoded) <= limit:
        return note
    return encoded[:limit].decode("utf-8", "ignore")


def series_key(event: Event) -> SeriesKey:
    related = event.related
    return (
        event.reporting_controller,
        event.action,
        event.reason,
        event.type,
        event.regarding.namespace,
        event.regarding.name,
        event.regarding.uid,
        event.regarding_revision,
        related.key if related is not None else "",
        related.uid if related is not None else "",
        event.related_revision,
    )


@dataclass
class _Series:
    namespace: str
    name: str
    body: dict[str, Any]
    count: int
    last_observed: float
    written_count: int
    last_write: float

    @property
    def dirty(self) -> bool:
        return self.count > self.written_count


_TICK = None


def worth_retrying(error: ApiError) -> bool:
    """A failure that may pass: no reply at all, or one the client retries (429, 5xx)."""
    return error.status == NO_RESPONSE or is_retryable_status(error.status)


class ApiEventRecorder:
    """:class:`kopf_scheduler.ports.EventRecorder` over the API server.

    Call :meth:`start` once the event loop runs and :meth:`stop` on shutdown; events recorded
    before :meth:`start` wait in the queue.
    """

    def __init__(
        self,
        api: Api,
        *,
        hostname: str | None = None,
        clock: Clock | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        series_window: float = DEFAULT_SERIES_WINDOW,
        min_patch_interval: float = DEFAULT_MIN_PATCH_INTERVAL,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        max_series: int = DEFAULT_MAX_SERIES,
        senders: int = DEFAULT_SENDERS,
        metrics: Metrics | None = None,
        sink_tries: int = DEFAULT_SINK_TRIES,
        sink_retry_interval: float = DEFAULT_SINK_RETRY_INTERVAL,
        drop_log_interval: float = DEFAULT_DROP_LOG_INTERVAL,
        rng: random.Random | None = None,
    ) -> None:
        """``metrics`` defaults to the client's own sink."""
        self._api = api
        self._metrics: Metrics = metrics if metrics is not None else api.metrics
        self._hostname = hostname if hostname is not None else socket.gethostname()
        self._clock: Clock = clock if clock is not None else WallClock()
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue(maxsize=queue_size)
        self._series_window = series_window
        self._min_patch_interval = min_patch_interval
        self._flush_interval = flush_interval
        self._max_series = max_series
        self._series: OrderedDict[SeriesKey, _Series] = OrderedDict()
        self._last_stamp = 0
        self._senders = max(1, senders)
        self._workers: list[asyncio.Task[None]] = []
        self._ticker: asyncio.Task[None] | None = None
        self._closed = False
        self._sink_tries = max(1, sink_tries)
        self._sink_retry_interval = sink_retry_interval
        self._drop_log_interval = drop_log_interval
        self._rng = rng if rng is not None else random.Random()
        self._drops_since_log = 0
        self._last_drop_log: float | None = None
        self.dropped = 0
        """Events never written: dropped from a full queue, left at shutdown, or failed."""

    # The port ----------------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        if self._closed:
            self._drop(DROPPED_SHUTDOWN, event)
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._drop(DROPPED_QUEUE_FULL, event)

    @property
    def queued(self) -> int:
        """Events (and flush ticks) waiting for a sender."""
        return self._queue.qsize()

    def _count_dropped(self, reason: str, count: int = 1) -> None:
        """Count ``count`` events that will never be written."""
        self.dropped += count
        self._metrics.inc(m.EVENTS_DROPPED, {"reason": reason}, count)

    def _drop(self, reason: str, event: Event | None, count: int = 1) -> None:
        """Count dropped events; warn at most once per interval."""
        self._count_dropped(reason, count)
        self._drops_since_log += count
        now = self._clock.now()
        if self._last_drop_log is not None and now - self._last_drop_log < self._drop_log_interval:
            return
        latest = (
            f"{event.reason} {event.type} on {event.regarding.key}" if event is not None else "-"
        )
        logger.warning(
            "events_dropped",
            since_last_report=self._drops_since_log,
            in_all=self.dropped,
            reason=reason,
            latest=latest,
            detail="events are best effort, scheduling goes on",
        )
        self._drops_since_log = 0
        self._last_drop_log = now

    # Lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._workers:
            return
        self._closed = False
        self._workers = [
            asyncio.create_task(self._work(), name=f"event-recorder-{index}")
            for index in range(self._senders)
        ]
        self._ticker = asyncio.create_task(self._tick(), name="event-recorder-flush")

    async def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued and the final series counts, for at most ``timeout`` seconds."""
        self._closed = True
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        if not self._workers:
            return
        try:
            await asyncio.wait_for(self._drain(), timeout)
        except TimeoutError:
            pending = self._queue.qsize()
            if pending:
                self._drop(DROPPED_SHUTDOWN, None, pending)
            logger.warning("event_recorder_stopped_with_events_unsent", unsent=pending)
        finally:
            for worker in self._workers:
                worker.cancel()
            await asyncio.gather(*self._workers, return_exceptions=True)
            self._workers = []

    async def _drain(self) -> None:
        await self._queue.join()
        await self.flush(final=True)

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                if item is _TICK:
                    await self.flush()
                else:
                    await self.process(item)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("event_recording_failed")
            finally:
                self._queue.task_done()

    async def _tick(self) -> None:
        while True:
            await self._clock.sleep(self._flush_interval)
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(_TICK)

    # Sending -----------------------------------------------------------------------------------

    async def process(self, event: Event) -> None:
        """Send one event now: a new Event object, or a bump of the series it repeats."""
        now = self._clock.now()
        key = series_key(event)
        series = self._series.get(key)
        if series is not None and now - series.last_observed > self._series_window:
            if series.dirty:
                await self._write_series(series, now)
            del self._series[key]
            series = None
        if series is not None:
            series.count += 1
            series.last_observed = now
            self._series.move_to_end(key)
            if now - series.last_write >= self._min_patch_interval:
                await self._write_series(series, now)
            return
        body = self._event_body(event, now)
        series = _Series(
            namespace=body["metadata"]["namespace"],
            name=body["metadata"]["name"],
            body=body,
            count=1,
            last_observed=now,
            written_count=1,
            last_write=now,
        )
        self._series[key] = series
        while len(self._series) > self._max_series:
            self._series.popitem(last=False)
        await self._create(series.namespace, body)

    async def flush(self, *, final: bool = False) -> None:
        """Write series counts that are due (all of them when ``final``); forget ended series."""
        now = self._clock.now()
        for key, series in list(self._series.items()):
            if series.dirty and (final or now - series.last_write >= self._min_patch_interval):
                await self._write_series(series, now)
            if now - series.last_observed > self._series_window and not series.dirty:
                self._series.pop(key, None)

    def _event_body(self, event: Event, now: float) -> dict[str, Any]:
        regarding = event.regarding
        namespace = regarding.namespace or "default"
        stamp = max(int(now * 1e9), self._last_stamp + 1)
        self._last_stamp = stamp
        controller = event.reporting_controller[:FIELD_LENGTH_LIMIT]
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{regarding.name[:NAME_PREFIX_LIMIT]}.{stamp:x}",
                "namespace": namespace,
            },
            "eventTime": micro_time(now),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self._hostname}"[:FIELD_LENGTH_LIMIT],
            "action": event.action,
            "reason": event.reason,
            "type": event.type,
            "note": truncate_note(event.note),
            "regarding": object_reference(regarding),
        }
        if event.related is not None:
            body["related"] = object_reference(event.related)
        return body

    async def _send(
        self, method: str, path: str, body: dict[str, Any], content_type: str = JSON
    ) -> None:
        """One write, tried again after a failure that may pass, as client-go's sink does."""
        for attempt in range(1, self._sink_tries + 1):
            try:
                await self._api.request(method, path, body, content_type=content_type)
                return
            except ApiError as error:
                if attempt == self._sink_tries or not worth_retrying(error):
                    raise
                delay = self._sink_retry_interval * (1 + SINK_RETRY_JITTER * self._rng.random())
                logger.debug(
                    "event_write_retrying",
                    method=method,
                    path=path,
                    reason=str(error),
                    delay_seconds=round(delay, 1),
                )
                await self._clock.sleep(delay)

    async def _create(self, namespace: str, body: dict[str, Any]) -> None:
        try:
            await self._send("POST", events_path(namespace), body)
        except ApiError as error:
            self._log_failure("creating", body, error)
            if error.status != 409:  # 409: the event is there already (a retried create)
                self._count_dropped(DROPPED_SEND_FAILED)  # _log_failure has said why

    async def _write_series(self, series: _Series, now: float) -> None:
        patch = {
            "series": {"count": series.count, "lastObservedTime": micro_time(series.last_observed)}
        }
        series.written_count = series.count
        series.last_write = now
        try:
            await self._send(
                "PATCH",
                f"{events_path(series.namespace)}/{series.name}",
                patch,
                content_type=MERGE_PATCH,
            )
        except NotFoundError:
            # The Event object expired (the API server keeps events for an hour): recreate it.
            await self._create(series.namespace, {**series.body, **patch})
        except ApiError as error:
            self._log_failure("updating", series.body, error)

    @staticmethod
    def _log_failure(doing: str, body: dict[str, Any], error: ApiError) -> None:
        regarding = body.get("regarding", {})
        where = f"{regarding.get('namespace')}/{regarding.get('name')}"
        about = {"doing": doing, "event_reason": body.get("reason"), "regarding": where}
        if error.status == 409:
            logger.debug("event_write_conflict", **about, reason=str(error))
        else:
            logger.warning("event_write_failed", **about, reason=str(error))
